// Email files' addresses as dropline reads them (src/format/email.ts; docs/format.md "Email files").
import { describe, expect, it } from 'vitest';
import { maskEmail, normalizeEmail } from '../../src/format/email.ts';

describe('normalizeEmail: valid addresses and how they are sent', () => {
  it.each([
    ['plain', 'ana@example.com', 'ana@example.com'],
    ['plus-addressing', 'ana.maria+factura@example.com', 'ana.maria+factura@example.com'],
    ['subdomains', 'ana@mail.eu.example.co', 'ana@mail.eu.example.co'],
    ['IDN domain to punycode', 'josé@bücher.de', 'josé@xn--bcher-kva.de'],
    ['IDN domain, upper case', 'ñandú@España.com', 'ñandú@xn--espaa-rta.com'],
    ['UTF-8 local part', '用户@example.com', '用户@example.com'],
    ['angle brackets removed', '<ana@example.com>', 'ana@example.com'],
    ['surrounding spaces and tabs removed', ' \t ana@example.com\t ', 'ana@example.com'],
    ['spaces around brackets removed', '  <ana@example.com>  ', 'ana@example.com'],
    ['upper-case domain lowered, local part kept', 'Ana.Maria@Example.COM', 'Ana.Maria@example.com'],
    ['every atext character', "o'brien!#$%&*=?^_`{|}~-/@x.io", "o'brien!#$%&*=?^_`{|}~-/@x.io"],
    ['hyphens inside labels', 'a@b-c.d-e.co', 'a@b-c.d-e.co'],
    ['64-octet local part', `${'a'.repeat(64)}@x.co`, `${'a'.repeat(64)}@x.co`],
    ['32 two-octet characters (64 octets)', `${'é'.repeat(32)}@x.co`, `${'é'.repeat(32)}@x.co`],
    ['63-octet label', `ana@${'b'.repeat(63)}.co`, `ana@${'b'.repeat(63)}.co`],
    // 64 + 1 + 63 + 1 + 63 + 1 + 57 + 1 + 3 = 254 octets.
    [
      '254-octet address',
      `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`,
      `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`,
    ],
  ])('%s: %s is sent as %s', (_name, raw, address) => {
    expect(normalizeEmail(raw)).toEqual({ ok: true, address });
  });
});

describe('normalizeEmail: invalid addresses say which rule failed', () => {
  it.each([
    ['empty', '', /missing/],
    ['only spaces', '   ', /missing/],
    ['no @', 'ana.example.com', /no @/],
    ['two @', 'a@b@example.com', /more than one @/],
    ['two @ together', 'ana@@example.com', /more than one @/],
    ['empty local part', '@example.com', /nothing before the @/],
    ['empty domain', 'ana@', /no domain after the @/],
    ['no dot in the domain', 'ana@localhost', /no dot/],
    ['leading dot', '.ana@x.co', /a dot starts or ends/],
    ['trailing dot', 'ana.@x.co', /a dot starts or ends/],
    ['double dot', 'an..a@x.co', /follows another dot/],
    ['double dot in the domain', 'ana@x..co', /empty label/],
    ['trailing dot in the domain', 'ana@x.co.', /empty label/],
    ['label of 64', `ana@${'a'.repeat(64)}.co`, /more than 63 octets/],
    ['local part of 65', `${'a'.repeat(65)}@x.co`, /more than 64 octets before the @/],
    // 33 two-octet characters: 33 characters but 66 octets.
    ['local part of 33 two-octet characters', `${'é'.repeat(33)}@x.co`, /more than 64 octets before the @/],
    // 64 + 1 + 63 + 1 + 63 + 1 + 58 + 1 + 3 = 255 octets.
    [
      'address of 255',
      `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(58)}.com`,
      /more than 254 octets/,
    ],
    ['space inside', 'an a@x.co', /spaces/],
    ['no-break space inside', 'ana@x\u00a0y.co', /spaces/],
    ['control character', 'ana@x.co\u0007y', /control/],
    ['zero-width character', 'ana\u200b@x.co', /control/],
    ['quoted local part', '"ana maria"@x.co', /quoted local part/],
    ['IP literal', 'ana@[192.0.2.1]', /IP address/],
    ['IP address without brackets', 'ana@192.0.2.1', /IP address/],
    ['label ending with a hyphen', 'ana@x-.co', /hyphen/],
    ['label starting with a hyphen', 'ana@-x.co', /hyphen/],
    ['numeric TLD', 'ana@x.123', /all digits|not a valid domain/],
    ['numeric TLD after a hex label', 'ana@0x7f.1', /all digits/],
    ['mailto: prefix', 'mailto:ana@x.co', /mailto/],
    ['mailto: inside brackets', '<MAILTO:ana@x.co>', /mailto/],
    ['display name', 'Ana <ana@x.co>', /display name/],
    ['quoted display name', '"Ana Pérez" <ana@x.co>', /display name/],
    ['parenthesis in the local part', 'ana(x)@x.co', /\( is not accepted before the @/],
    ['non-ASCII symbol in the local part', 'a«b@x.co', /« is not accepted before the @/],
    ['underscore in the domain', 'ana@x_y.co', /other than letters, digits, hyphens and dots/],
    // The host parser would percent-decode these and send to another domain (xa.co, x.co).
    ['percent-escape in the domain', 'ana@x%41.co', /other than letters, digits, hyphens and dots/],
    ['percent-escaped dot', 'ana@x%2e%63o', /other than letters, digits, hyphens and dots/],
    ['unbalanced bracket', '<ana@x.co', /< is not accepted before the @/],
  ])('%s: %s is refused (%s)', (_name, raw, why) => {
    const r = normalizeEmail(raw);
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.message).toMatch(why);
  });

  it('names the value as written in the message', () => {
    expect(normalizeEmail('ana@localhost')).toEqual({
      ok: false,
      message: 'ana@localhost: the domain has no dot (example.com)',
    });
  });

  it('cuts a long value to 60 characters in the message', () => {
    const raw = `${'x'.repeat(50)}${'y'.repeat(150)}`;
    const r = normalizeEmail(raw);
    const message = r.ok ? '' : r.message;
    expect(message).toBe(`${'x'.repeat(50)}${'y'.repeat(7)}...: there is no @`);
    expect(message).not.toContain('y'.repeat(8));
  });

  it('cuts between characters, never inside one', () => {
    const r = normalizeEmail(`${'😀'.repeat(70)}@x.co`);
    const message = r.ok ? '' : r.message;
    expect(message.startsWith(`${'😀'.repeat(57)}...: `)).toBe(true);
    expect(message.isWellFormed()).toBe(true);
  });

  it('escapes control characters so a report cannot be rewritten by the value', () => {
    const r = normalizeEmail('ana@x.co\u001b[2J');
    const message = r.ok ? '' : r.message;
    expect(message).toBe('ana@x.co\\u{1b}[2J: spaces and control characters are not accepted');
    expect(message).not.toContain('\u001b');
  });
});

describe('maskEmail', () => {
  it.each([
    ['ana.maria@example.com', 'a***@example.com'],
    ['a@example.com', 'a***@example.com'],
    ['josé@xn--bcher-kva.de', 'j***@xn--bcher-kva.de'],
    ['用户@example.com', '用***@example.com'],
    ['😀x@example.com', '😀***@example.com'],
    // Malformed values: never shown whole.
    ['no-at-sign', 'n***'],
    ['a@b@c.co', 'a***@c.co'],
    ['@x.co', '***@x.co'],
    ['', '***'],
  ])('%s is shown as %s', (address, masked) => {
    expect(maskEmail(address)).toBe(masked);
  });

  it('does not throw on a value that is not a string', () => {
    expect(maskEmail(undefined as unknown as string)).toBe('***');
    expect(maskEmail(12345 as unknown as string)).toBe('1***');
  });
});
