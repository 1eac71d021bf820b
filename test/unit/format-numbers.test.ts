import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { NumberResult } from '../../src/format/numbers.ts';
import { makeNumberRules, normalizeNumber } from '../../src/format/numbers.ts';

const CO = makeNumberRules();

function ok(number: string, country: string): NumberResult {
  return { ok: true, number, country, value: Number(number) };
}

function norm(raw: string, rules = CO): NumberResult {
  return normalizeNumber(raw, rules);
}

describe('docs/format.md "Numbers", formatting: spaces, NBSP, - . ( ) removed before the rules', () => {
  it.each([
    '3001234567',
    '300 123 4567',
    '(300) 123-4567',
    '300.123.4567',
    '300\u00a0123\u00a04567',
    '300\u202f123\u202f4567',
    '  3001234567  ',
    '\t3001234567\r\n',
    '\ufeff3001234567',
    '3 0 0 1 2 3 4 5 6 7',
  ])('%j → 573001234567', (raw) => {
    expect(norm(raw)).toEqual(ok('573001234567', 'CO'));
  });

  it.each([
    '300\t1234567', // a TAB separates numbers, it never formats one
    '300\n1234567',
    '300/123/4567',
    '300_123_4567',
    '300 123 4567 ext 2',
    '3001234567+',
    '300+1234567',
    '++573001234567',
    '',
    '   ',
    '-().',
    '+',
  ])('%j → INVALID_NUMBER', (raw) => {
    expect(norm(raw)).toEqual({ ok: false, code: 'INVALID_NUMBER' });
  });
});

describe('docs/format.md "Numbers" rule 1: 10 digits starting 3 → Colombian mobile, 57 prefixed', () => {
  it('positive cases', () => {
    expect(norm('3001234567')).toEqual(ok('573001234567', 'CO'));
    expect(norm('3109876543')).toEqual(ok('573109876543', 'CO'));
    expect(norm('320 444 5566')).toEqual(ok('573204445566', 'CO'));
    expect(norm('(300) 123-4567')).toEqual(ok('573001234567', 'CO'));
  });
  it('negative cases: 9 or 11 digits starting 3 are not rule 1', () => {
    expect(norm('300123456')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
    // 11 digits starting 3 go to rule 5 (+30 Greece): not a Colombian mobile whatever it is
    const r = norm('30012345678');
    expect(r.ok && r.country === 'CO').toBe(false);
  });
  it('10 digits starting with neither 3 nor 60 → INVALID_NUMBER (rule 6)', () => {
    expect(norm('1234567890')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
    expect(norm('6123456789')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
    expect(norm('0300123456')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
  });
});

describe('docs/format.md "Numbers" rule 2: 10 digits starting 60 → Colombian landline, NOT_MOBILE', () => {
  it('positive cases', () => {
    expect(norm('6012345678')).toEqual({
      ok: false,
      code: 'NOT_MOBILE',
      number: '576012345678',
      country: 'CO',
    });
    expect(norm('604 444 5566')).toMatchObject({ ok: false, code: 'NOT_MOBILE' });
  });
  it('negative cases: 60 with other lengths is not rule 2', () => {
    expect(norm('601234567')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
  });
});

describe('docs/format.md "Numbers" rule 3: 12 digits starting 57 → must continue with 3, else NOT_MOBILE', () => {
  it('positive cases', () => {
    expect(norm('573001234567')).toEqual(ok('573001234567', 'CO'));
    expect(norm('57 300 123 4567')).toEqual(ok('573001234567', 'CO'));
  });
  it('57 not followed by 3 → NOT_MOBILE', () => {
    expect(norm('576012345678')).toEqual({
      ok: false,
      code: 'NOT_MOBILE',
      number: '576012345678',
      country: 'CO',
    });
    expect(norm('571234567890')).toMatchObject({ ok: false, code: 'NOT_MOBILE' });
  });
  it('negative cases: 57 with other lengths → INVALID_NUMBER', () => {
    expect(norm('57300')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
    expect(norm('57300123456')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
    expect(norm('5730012345678')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
  });
});

describe('docs/format.md "Numbers" rule 4: leading + or 00 → international E.164 (libphonenumber-js)', () => {
  it('+57 numbers follow rules 1 to 3', () => {
    expect(norm('+57 300 123 4567')).toEqual(ok('573001234567', 'CO'));
    expect(norm('+573001234567')).toEqual(ok('573001234567', 'CO'));
    expect(norm('(+57) 300-123.4567')).toEqual(ok('573001234567', 'CO'));
    expect(norm('+57 601 234 5678')).toEqual({
      ok: false,
      code: 'NOT_MOBILE',
      number: '576012345678',
      country: 'CO',
    });
    expect(norm('+57 300 123')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
    expect(norm('+57 300 123 45678')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
  });
  it('00 is the same as +', () => {
    expect(norm('0057 3001234567')).toEqual(ok('573001234567', 'CO'));
    expect(norm('0057 6012345678')).toMatchObject({ ok: false, code: 'NOT_MOBILE' });
    expect(norm('0052 55 1234 5678')).toEqual(ok('525512345678', 'MX'));
  });
  it('valid foreign mobiles → sent form with the country code first', () => {
    expect(norm('+525512345678')).toEqual(ok('525512345678', 'MX'));
    expect(norm('+52 1 55 1234 5678')).toEqual(ok('5215512345678', 'MX'));
    expect(norm('+34 612 345 678')).toEqual(ok('34612345678', 'ES'));
    expect(norm('+44 7400 123456')).toEqual(ok('447400123456', 'GB'));
    expect(norm('+49 151 23456789')).toEqual(ok('4915123456789', 'DE'));
  });
  it('a US number (FIXED_LINE_OR_MOBILE) is accepted', () => {
    expect(norm('+1 (202) 555-0123')).toEqual(ok('12025550123', 'US'));
  });
  it('a valid foreign fixed line → NOT_MOBILE', () => {
    expect(norm('+44 20 7183 8750')).toEqual({
      ok: false,
      code: 'NOT_MOBILE',
      number: '442071838750',
      country: 'GB',
    });
    expect(norm('+34 912 345 678')).toMatchObject({ ok: false, code: 'NOT_MOBILE', country: 'ES' });
  });
  it('other valid types (toll-free) → INVALID_NUMBER', () => {
    expect(norm('+1 800 555 1234')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
    expect(norm('+800 1234 5678')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
  });
  it('invalid international numbers → INVALID_NUMBER', () => {
    expect(norm('+44 1')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
    expect(norm('+99 9999 9999')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
    expect(norm('+0 300 123 4567')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
    expect(norm('+0057 3001234567')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
    expect(norm('+1234567890123456')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
  });
  it('cached answers are the same as fresh ones and are not shared objects', () => {
    const a = norm('+44 7400 123456');
    const b = norm('+447400123456');
    expect(b).toEqual(a);
    expect(b).not.toBe(a);
  });
});

describe('docs/format.md "Numbers" rule 5: 11 to 15 digits not starting 57 → international as rule 4', () => {
  it('positive cases', () => {
    expect(norm('5215512345678')).toEqual(ok('5215512345678', 'MX'));
    expect(norm('525512345678')).toEqual(ok('525512345678', 'MX'));
    expect(norm('12025550123')).toEqual(ok('12025550123', 'US'));
    expect(norm('447400123456')).toEqual(ok('447400123456', 'GB'));
  });
  it('negative cases', () => {
    expect(norm('442071838750')).toMatchObject({ ok: false, code: 'NOT_MOBILE', country: 'GB' });
    expect(norm('03001234567')).toEqual({ ok: false, code: 'INVALID_NUMBER' }); // no country code starts 0
    expect(norm('99999999999')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
  });
});

describe('docs/format.md "Numbers" rule 6: anything else → INVALID_NUMBER', () => {
  it.each([
    ['letters', 'abc'],
    ['letters among digits', '300123456a'],
    ['a spelled number', 'tres cero cero'],
    ['too short', '300123'],
    ['one digit', '3'],
    ['16 digits', '3001234567890123'],
    ['16 digits with +', '+3001234567890123'],
    ['a very long digit run', '3'.repeat(10_000)],
    ['57300', '57300'],
    ['14 digits starting 57', '57300123456789'],
  ])('%s: %j', (_name, raw) => {
    expect(norm(raw)).toEqual({ ok: false, code: 'INVALID_NUMBER' });
  });
});

describe('docs/format.md "Numbers" allowedCountries → COUNTRY_NOT_ALLOWED (checked after validity)', () => {
  const onlyCo = makeNumberRules('CO', ['CO']);
  const coMx = makeNumberRules('CO', ['co', 'MX']);
  it('allowed countries pass', () => {
    expect(norm('3001234567', onlyCo)).toEqual(ok('573001234567', 'CO'));
    expect(norm('+525512345678', coMx)).toEqual(ok('525512345678', 'MX'));
  });
  it('other countries are refused, naming number and country', () => {
    expect(norm('+525512345678', onlyCo)).toEqual({
      ok: false,
      code: 'COUNTRY_NOT_ALLOWED',
      number: '525512345678',
      country: 'MX',
    });
    expect(norm('3001234567', makeNumberRules('CO', ['MX']))).toMatchObject({ code: 'COUNTRY_NOT_ALLOWED' });
  });
  it('invalid or landline numbers keep their own code', () => {
    expect(norm('+44 20 7183 8750', onlyCo)).toMatchObject({ code: 'NOT_MOBILE' });
    expect(norm('6012345678', makeNumberRules('CO', ['MX']))).toMatchObject({ code: 'NOT_MOBILE' });
    expect(norm('abc', onlyCo)).toMatchObject({ code: 'INVALID_NUMBER' });
  });
});

describe('docs/format.md "Numbers" default country (configurable): MX', () => {
  const MX = makeNumberRules('MX');
  it('national numbers of the default country', () => {
    expect(norm('55 1234 5678', MX)).toEqual(ok('525512345678', 'MX'));
    expect(norm('(55) 1234-5678', MX)).toEqual(ok('525512345678', 'MX'));
  });
  it('rules 1 and 2 are Colombian only: 10 digits starting 3 are parsed as MX', () => {
    const r = norm('3001234567', MX);
    expect(r.ok && r.country === 'CO').toBe(false);
  });
  it('rule 3, rule 4 and rule 5 still apply', () => {
    expect(norm('573001234567', MX)).toEqual(ok('573001234567', 'CO'));
    expect(norm('576012345678', MX)).toMatchObject({ code: 'NOT_MOBILE' });
    expect(norm('+57 300 123 4567', MX)).toEqual(ok('573001234567', 'CO'));
    expect(norm('+44 7400 123456', MX)).toEqual(ok('447400123456', 'GB'));
    expect(norm('12025550123', MX)).toEqual(ok('12025550123', 'US'));
  });
  it('a national number with a trunk 0 (GB)', () => {
    expect(norm('07400 123456', makeNumberRules('GB'))).toEqual(ok('447400123456', 'GB'));
    expect(norm('020 7183 8750', makeNumberRules('GB'))).toMatchObject({ code: 'NOT_MOBILE' });
  });
  it('invalid national numbers', () => {
    expect(norm('12345', MX)).toEqual({ ok: false, code: 'INVALID_NUMBER' });
  });
});

describe('makeNumberRules', () => {
  it('defaults to CO with every country allowed', () => {
    expect(makeNumberRules()).toEqual({ defaultCountry: 'CO', allowedCountries: null });
    expect(makeNumberRules('co', null)).toEqual({ defaultCountry: 'CO', allowedCountries: null });
  });
  it('upper-cases and validates the allowed list', () => {
    expect(makeNumberRules('CO', [' mx ', 'CO']).allowedCountries).toEqual(new Set(['MX', 'CO']));
  });
  it('throws naming the bad code', () => {
    expect(() => makeNumberRules('XX')).toThrow(/"XX"/);
    expect(() => makeNumberRules('Colombia')).toThrow(/"Colombia"/);
    expect(() => makeNumberRules('CO', ['MX', 'ZZ'])).toThrow(/"ZZ"/);
    expect(() => makeNumberRules('CO', [])).toThrow(/empty/);
  });
});

describe('docs/format.md "Numbers" properties', () => {
  const coRules = makeNumberRules();
  const mxRules = makeNumberRules('MX', ['MX', 'US']);
  const numberish = fc
    .array(
      fc.constantFrom('0', '1', '3', '5', '7', '6', '9', ' ', '-', '.', '(', ')', '+', '\u00a0', 'a', '\t'),
      {
        maxLength: 24,
      },
    )
    .map((a) => a.join(''));

  it('never throws on arbitrary strings; an ok result is 10 to 15 digits', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), numberish), (raw) => {
        for (const rules of [coRules, mxRules]) {
          const r = normalizeNumber(raw, rules);
          if (r.ok) {
            expect(r.number).toMatch(/^[1-9]\d{9,14}$/);
            expect(r.country).toMatch(/^([A-Z]{2}|001)$/);
            expect(r.value).toBe(Number(r.number));
          }
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('formatting never changes the answer for a Colombian mobile', () => {
    const sep = fc.constantFrom('', ' ', '-', '.', '\u00a0');
    fc.assert(
      fc.property(
        fc.stringMatching(/^3\d{9}$/),
        fc.array(sep, { minLength: 11, maxLength: 11 }),
        (d, seps) => {
          let formatted = seps[0]!;
          for (let i = 0; i < d.length; i++) formatted += d[i]! + seps[i + 1]!;
          expect(norm(formatted)).toEqual(ok('57' + d, 'CO'));
          expect(norm('+57' + formatted)).toEqual(ok('57' + d, 'CO'));
          expect(norm('57' + d)).toEqual(ok('57' + d, 'CO'));
        },
      ),
    );
  });

  // Bare digits (most numbers of most files) take a shorter path than formatted ones; a
  // space in front sends the same digits through the general one.
  it('bare digits get the answer the general path gives them, any default country', () => {
    const digits = fc
      .array(fc.constantFrom('0', '1', '3', '5', '7', '9'), { minLength: 8, maxLength: 14 })
      .map((a) => a.join(''));
    const mobiles = fc.oneof(
      fc.stringMatching(/^3\d{9}$/),
      fc.stringMatching(/^573\d{9}$/),
      fc.stringMatching(/^57\d{10}$/),
    );
    fc.assert(
      fc.property(fc.oneof(digits, mobiles), (raw) => {
        for (const rules of [coRules, mxRules])
          expect(normalizeNumber(raw, rules)).toEqual(normalizeNumber(` ${raw}`, rules));
      }),
      { numRuns: 5000 },
    );
    expect(norm('3001234567')).toEqual(ok('573001234567', 'CO'));
    expect(norm('573001234567')).toEqual(ok('573001234567', 'CO'));
    expect(normalizeNumber('573001234567', mxRules)).toEqual({
      ok: false,
      code: 'COUNTRY_NOT_ALLOWED',
      number: '573001234567',
      country: 'CO',
    });
    expect(norm('2001234567')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
    // Twelve digits not starting 57 (rule 5: +56 is Chile, and this is no Chilean mobile).
    expect(norm('563001234567')).toEqual({ ok: false, code: 'INVALID_NUMBER' });
  });

  it('the sent form of an ok result normalises to itself', () => {
    fc.assert(
      fc.property(numberish, (raw) => {
        const r = normalizeNumber(raw, coRules);
        if (r.ok) expect(normalizeNumber('+' + r.number, coRules)).toEqual(r);
      }),
      { numRuns: 3000 },
    );
  });
});
