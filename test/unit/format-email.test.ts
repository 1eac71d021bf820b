// FORMAT.md 8.3 addresses as dropline reads them (src/format/email.ts; docs/format.md "Email files").
import { describe, expect, it } from 'vitest';
import { maskEmail, normalizeEmail } from '../../src/format/email.ts';

describe('normalizeEmail', () => {
  it.each([
    ['ana@example.com', 'ana@example.com'],
    ['ana.maria+factura@mail.example.co', 'ana.maria+factura@mail.example.co'],
    ['  <Ana@Example.COM>  ', 'Ana@example.com'],
    ["o'brien!#$%&*=?^_`{|}~-@x.io", "o'brien!#$%&*=?^_`{|}~-@x.io"],
    ['josé@bücher.de', 'josé@xn--bcher-kva.de'],
    ['ñandú@España.com', 'ñandú@xn--espaa-rta.com'],
    ['a@b-c.d-e.co', 'a@b-c.d-e.co'],
    [`${'a'.repeat(64)}@x.co`, `${'a'.repeat(64)}@x.co`],
  ])('%s is sent as %s', (raw, address) => {
    expect(normalizeEmail(raw)).toEqual({ ok: true, address });
  });

  it.each([
    ['', /missing/],
    ['ana.example.com', /has an @/],
    ['ana@@example.com', /one @/],
    ['a@b@example.com', /one @/],
    ['@example.com', /nothing before the @/],
    ['ana@', /no domain after the @/],
    ['ana@localhost', /has a dot/],
    ['.ana@x.co', /a dot may not start/],
    ['ana.@x.co', /a dot may not start or end/],
    ['an..a@x.co', /nor follow another/],
    ['ana@x..co', /empty label|not a valid domain/],
    ['ana@.x.co', /empty label|not a valid domain/],
    [`ana@${'a'.repeat(64)}.co`, /at most 63|not a valid domain/],
    [`${'a'.repeat(65)}@x.co`, /at most 64 octets/],
    // 33 two-octet characters: 66 octets.
    [`${'é'.repeat(33)}@x.co`, /at most 64 octets/],
    // 64 + 1 + 63 + 1 + 63 + 1 + 60 + 3 = 256 octets.
    [`${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(60)}.co`, /at most 254 octets/],
    ['an a@x.co', /no spaces/],
    ['ana@x.co\u0007', /control/],
    ['"ana maria"@x.co', /quoted local part/],
    ['ana@[192.0.2.1]', /IP address/],
    ['ana@x-.co', /hyphen/],
    ['ana@-x.co', /hyphen/],
    ['ana@x.123', /not all digits|not a valid domain/],
    ['mailto:ana@x.co', /mailto/],
    ['Ana <ana@x.co>', /no spaces/],
    ['ana(x)@x.co', /may not appear before the @/],
    ['a«b@x.co', /may not appear before the @/],
    ['ana@x_y.co', /letters, digits and hyphens|not a valid domain/],
  ])('%s is INVALID_EMAIL (%s)', (raw, why) => {
    const r = normalizeEmail(raw);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(why);
  });

  it('a long value is cut in the message', () => {
    const r = normalizeEmail(`${'x'.repeat(200)}`);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message.length).toBeLessThan(100);
  });
});

describe('maskEmail', () => {
  it('keeps the first character and the domain', () => {
    expect(maskEmail('ana.maria@example.com')).toBe('a***@example.com');
    expect(maskEmail('josé@xn--bcher-kva.de')).toBe('j***@xn--bcher-kva.de');
    expect(maskEmail('用户@example.com')).toBe('用***@example.com');
  });
  it('never shows a malformed value whole', () => {
    expect(maskEmail('no-at-sign')).toBe('n***');
    expect(maskEmail('@x.co')).toBe('***');
    expect(maskEmail('')).toBe('***');
  });
});
