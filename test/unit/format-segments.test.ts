import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  countJoined,
  countSegments,
  gsm7Septets,
  isPlainGsm,
  literalStats,
} from '../../src/format/segments.ts';
import { prng } from '../helpers/prng.ts';

// 3GPP TS 23.038 6.2.1, row by row (0x00-0x7F); ESC (0x1B) left out, as it is no character.
const GSM_ROWS = [
  '@£$¥èéùìòÇ\nØø\rÅå',
  'Δ_ΦΓΛΩΠΨΣΘΞÆæßÉ',
  ' !"#¤%&\'()*+,-./',
  '0123456789:;<=>?',
  '¡ABCDEFGHIJKLMNO',
  'PQRSTUVWXYZÄÖÑÜ§',
  '¿abcdefghijklmno',
  'pqrstuvwxyzäöñüà',
];
const GSM_BASIC = new Set(GSM_ROWS.join(''));
const GSM_EXT = new Set(['\f', '^', '{', '}', '\\', '[', '~', ']', '|', '€']);

/** A deliberately plain reference: code points, greedy parts, no shortcuts. */
function reference(text: string): {
  encoding: string;
  segments: number;
  gsm7Segments: number;
  nonGsm: string[];
} {
  const cps = Array.from(text);
  const nonGsm: string[] = [];
  for (const ch of cps) if (!GSM_BASIC.has(ch) && !GSM_EXT.has(ch) && !nonGsm.includes(ch)) nonGsm.push(ch);
  const greedy = (costs: number[], single: number, multi: number): number => {
    const total = costs.reduce((a, b) => a + b, 0);
    if (total === 0) return 0;
    if (total <= single) return 1;
    let parts = 1;
    let used = 0;
    for (const c of costs) {
      if (used + c > multi) {
        parts++;
        used = 0;
      }
      used += c;
    }
    return parts;
  };
  const gsm7Segments = greedy(
    cps.map((ch) => (GSM_EXT.has(ch) ? 2 : 1)),
    160,
    153,
  );
  if (nonGsm.length === 0) return { encoding: 'gsm7', segments: gsm7Segments, gsm7Segments, nonGsm };
  const ucs2 = greedy(
    cps.map((ch) => ch.length),
    70,
    67,
  );
  return { encoding: 'ucs2', segments: ucs2, gsm7Segments, nonGsm };
}

describe('docs/format.md "Messages" segments: the GSM-7 alphabet (3GPP TS 23.038)', () => {
  it('every basic character costs one septet', () => {
    for (const ch of GSM_BASIC) expect(gsm7Septets(ch.charCodeAt(0)), ch).toBe(1);
    expect(GSM_BASIC.size).toBe(127);
  });
  it('the extension characters ^ { } \\ [ ~ ] | € and form feed cost two', () => {
    for (const ch of GSM_EXT) expect(gsm7Septets(ch.charCodeAt(0)), ch).toBe(2);
  });
  it('Spanish á í ó ú, lower-case ç, ESC and others are not GSM-7', () => {
    for (const ch of 'áíóúçÁÍÓÚâêîôûãõœ`\u001b\t\u00a0ΑΒ’“”…–') {
      expect(gsm7Septets(ch.charCodeAt(0)), ch).toBe(0);
    }
  });
  it('Spanish ñ Ñ ü Ü é É ¿ ¡ and the Greek capitals are GSM-7', () => {
    const info = countSegments('ñÑüÜéÉàòìèùÇäöÄÖ¿¡ßÅåÆæØø¤£¥§ΔΦΓΛΩΠΨΣΘΞ');
    expect(info).toEqual({ encoding: 'gsm7', segments: 1, gsm7Segments: 1, nonGsm: [] });
  });
  it('agrees with the table for every BMP code unit', () => {
    for (let c = 0; c < 0x10000; c++) {
      const ch = String.fromCharCode(c);
      const want = GSM_BASIC.has(ch) ? 1 : GSM_EXT.has(ch) ? 2 : 0;
      if (gsm7Septets(c) !== want) expect.fail(`U+${c.toString(16)}: ${gsm7Septets(c)} != ${want}`);
    }
  });
});

describe('docs/format.md "Messages" segments: GSM-7 160 for one part, 153 per part when longer', () => {
  it('the empty text costs 0 parts', () => {
    expect(countSegments('')).toEqual({ encoding: 'gsm7', segments: 0, gsm7Segments: 0, nonGsm: [] });
  });
  it.each([
    [1, 1],
    [160, 1],
    [161, 2],
    [306, 2],
    [307, 3],
    [459, 3],
    [460, 4],
    [1530, 10],
    [1531, 11],
  ])('%i GSM characters → %i parts', (n, parts) => {
    const info = countSegments('a'.repeat(n));
    expect(info).toEqual({ encoding: 'gsm7', segments: parts, gsm7Segments: parts, nonGsm: [] });
  });
  it('line breaks are GSM-7 and cost one each', () => {
    expect(countSegments('Hola\r\nAna\n'.repeat(16)).segments).toBe(1); // 160
    expect(countSegments('Hola\r\nAna\n'.repeat(16) + '!').segments).toBe(2);
  });
});

describe('docs/format.md "Messages" segments: extension characters count two', () => {
  it('80 € fit one part, 81 do not', () => {
    expect(countSegments('€'.repeat(80))).toMatchObject({ encoding: 'gsm7', segments: 1 });
    expect(countSegments('€'.repeat(81))).toMatchObject({ encoding: 'gsm7', segments: 2 });
    expect(countSegments('a' + '{'.repeat(79) + 'b')).toMatchObject({ segments: 1 }); // 160 septets
    expect(countSegments('a' + '{'.repeat(80))).toMatchObject({ segments: 2 }); // 161 septets
    expect(countSegments('\f'.repeat(80)).segments).toBe(1);
  });
  it('an escape and its character are never split across parts', () => {
    // 152 septets, then an extension character: 154 does not fit in part one, it opens part two
    const text = 'a'.repeat(152) + '[' + 'a'.repeat(152);
    // septets = 306 (exactly 2 × 153) but the split costs one more part
    expect(countSegments(text).segments).toBe(3);
    expect(countSegments('a'.repeat(151) + '[' + 'a'.repeat(153)).segments).toBe(2); // 153 + 153
    expect(countSegments('€'.repeat(153)).segments).toBe(3); // 76 per part: 76+76+1
    expect(countSegments('€'.repeat(152)).segments).toBe(2);
  });
});

describe('docs/format.md "Messages" segments: UCS-2 70 for one part, 67 per part when longer', () => {
  it('á forces UCS-2: 70 / 71 characters → 1 / 2 parts', () => {
    expect(countSegments('á'.repeat(70))).toEqual({
      encoding: 'ucs2',
      segments: 1,
      gsm7Segments: 1,
      nonGsm: ['á'],
    });
    expect(countSegments('á' + 'a'.repeat(69)).segments).toBe(1);
    expect(countSegments('á' + 'a'.repeat(70))).toEqual({
      encoding: 'ucs2',
      segments: 2,
      gsm7Segments: 1,
      nonGsm: ['á'],
    });
  });
  it.each([
    [134, 2],
    [135, 3],
    [201, 3],
    [202, 4],
  ])('%i characters with an á → %i parts', (n, parts) => {
    expect(countSegments('á'.repeat(n)).segments).toBe(parts);
  });
  it('nonGsm names á and ú once each, in order of first appearance', () => {
    const info = countSegments('Mañana: reunión a las 10. Último día, ¡aquí está! Más info: ú á');
    expect(info.encoding).toBe('ucs2');
    expect(info.nonGsm).toEqual(['ó', 'Ú', 'í', 'á', 'ú']);
    expect(countSegments('úáúáúá').nonGsm).toEqual(['ú', 'á']);
  });
  it('extension characters cost one unit in UCS-2', () => {
    expect(countSegments('á' + '€'.repeat(69))).toMatchObject({
      encoding: 'ucs2',
      segments: 1,
      gsm7Segments: 1,
    });
  });
  it('gsm7Segments is the GSM-7 cost with each offending character replaced by one', () => {
    // 150 characters: 2 UCS-2 parts (67 + 67 + 16 → 3), 1 GSM-7 part
    const text = 'Hola, su cita del día 12 está confirmada. '.padEnd(150, 'x');
    expect(countSegments(text)).toEqual({
      encoding: 'ucs2',
      segments: 3,
      gsm7Segments: 1,
      nonGsm: ['í', 'á'],
    });
    // 200 characters with two extension characters: 202 septets → 2 GSM-7 parts
    const ext = ('á{' + 'a'.repeat(98)).repeat(2);
    expect(countSegments(ext)).toMatchObject({ segments: 3, gsm7Segments: 2 });
  });
});

describe('docs/format.md "Messages" segments: emoji and other characters outside the BMP', () => {
  it('an emoji counts two UTF-16 units', () => {
    expect(countSegments('😀'.repeat(35))).toEqual({
      encoding: 'ucs2',
      segments: 1,
      gsm7Segments: 1,
      nonGsm: ['😀'],
    });
    expect(countSegments('😀'.repeat(36)).segments).toBe(2);
  });
  it('a surrogate pair is never split across parts', () => {
    // 66 units then an emoji: 68 does not fit in part one (67), the pair opens part two
    const text = 'á'.repeat(66) + '😀' + 'a'.repeat(66);
    expect(text.length).toBe(134); // 2 × 67 if split were allowed
    expect(countSegments(text).segments).toBe(3);
    expect(countSegments('á'.repeat(65) + '😀' + 'a'.repeat(67)).segments).toBe(2);
  });
  it('one emoji costs one GSM-7 replacement character in gsm7Segments', () => {
    expect(countSegments('😀' + 'a'.repeat(159))).toMatchObject({ segments: 3, gsm7Segments: 1 });
  });
  it('lone surrogates are counted as one unit each and named', () => {
    const info = countSegments('a\ud800b\udc00');
    expect(info).toEqual({ encoding: 'ucs2', segments: 1, gsm7Segments: 1, nonGsm: ['\ud800', '\udc00'] });
  });
  it('distinct emoji are listed once each', () => {
    expect(countSegments('👍 ok 👍 🎉').nonGsm).toEqual(['👍', '🎉']);
  });
});

describe('docs/format.md "Messages" segments: properties', () => {
  const alphabet = fc.constantFrom(
    'a',
    'Z',
    ' ',
    '\n',
    'ñ',
    'é',
    '€',
    '{',
    '\f',
    'á',
    'ú',
    'ç',
    '😀',
    '👍🏽',
    '\ud800',
    '中',
  );
  const messages = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 400 }),
    fc.array(alphabet, { maxLength: 400 }).map((a) => a.join('')),
  );

  it('never throws and agrees with a plain reference implementation', () => {
    fc.assert(
      fc.property(messages, (text) => {
        expect(countSegments(text)).toEqual(reference(text));
      }),
      { numRuns: 3000 },
    );
  });

  it('bounds: segments ≥ ceil(len/153), UCS-2 ≥ ceil(len/67), gsm7Segments ≤ segments', () => {
    fc.assert(
      fc.property(messages, (text) => {
        const info = countSegments(text);
        expect(info.segments).toBeGreaterThanOrEqual(Math.ceil(text.length / 153));
        if (info.encoding === 'ucs2') {
          expect(info.segments).toBeGreaterThanOrEqual(Math.ceil(text.length / 67));
          expect(info.nonGsm.length).toBeGreaterThan(0);
        } else {
          expect(info.nonGsm).toEqual([]);
          expect(info.gsm7Segments).toBe(info.segments);
        }
        expect(info.gsm7Segments).toBeLessThanOrEqual(info.segments);
        expect(info.segments === 0).toBe(text.length === 0);
      }),
      { numRuns: 3000 },
    );
  });
});

// ---- countJoined: a template's merged text counted from its literal parts' stats and its values ----

describe('countJoined (template fast path) against countSegments of the joined text', () => {
  /** Characters the pieces are drawn from: every class countJoined treats apart. */
  const ATOMS = [
    ...'aZ0 .,:!?_@$\n',
    ...'ñéÑüäÇ¿¡£¥§ΔΩ', // GSM-7 basic, not plain
    ...'€{}[]~^\\|', // GSM-7 extension (two septets)
    ...'áíóúçâ“”…’中ж', // outside GSM-7, one code unit
    '😀',
    '👍🏽',
    '🎉', // surrogate pairs
    '\ud83d', // lone high
    '\ude00', // lone low
    '\t',
    '\r',
    '\f',
    '\u0001',
    '\u001b',
    '\u007f',
    '\u0085',
  ];
  /** Mostly plain ASCII, like real names and templates. */
  const PLAIN_ATOMS = [...'abcdefghijklmnopqrstuvwxyzABCXYZ 0123456789.,'];
  /** Lengths (in code units) where the count changes. */
  const BOUNDARIES = [
    0, 1, 66, 67, 68, 69, 70, 71, 72, 133, 134, 135, 152, 153, 154, 159, 160, 161, 162, 305, 306, 307, 308,
    459, 460, 461,
  ];

  function piece(rand: () => number, maxAtoms: number): string {
    const plainOnly = rand() < 0.45;
    const n = Math.floor(rand() * (maxAtoms + 1));
    let s = '';
    for (let i = 0; i < n; i++) {
      const pool = plainOnly || rand() < 0.6 ? PLAIN_ATOMS : ATOMS;
      s += pool[Math.floor(rand() * pool.length)]!;
    }
    return s;
  }

  /** Literal parts and values; often padded so that the joined text lands on a boundary. */
  function draw(rand: () => number): { literals: string[]; values: string[] } {
    const n = Math.floor(rand() * 5);
    const maxAtoms = rand() < 0.2 ? 120 : 12;
    const literals = Array.from({ length: n + 1 }, () => piece(rand, maxAtoms));
    const values = Array.from({ length: n }, () => piece(rand, maxAtoms));
    if (rand() < 0.6) {
      // Pad one piece with one repeated character up to a boundary ± 0 (in code units, or in
      // septets for an extension filler: the GSM-7 limits then fall elsewhere).
      const fill = ['a', 'a', 'é', '€', 'á', 'x'][Math.floor(rand() * 6)]!;
      const target = BOUNDARIES[Math.floor(rand() * BOUNDARIES.length)]! + (rand() < 0.3 ? 153 : 0);
      const length = literals.join('').length + values.join('').length;
      const missing = Math.max(0, target - length);
      const pad = fill.repeat(fill === '€' && rand() < 0.5 ? Math.ceil(missing / 2) : missing);
      const at = Math.floor(rand() * (2 * n + 1));
      const where = at <= n ? literals : values;
      const k = at <= n ? at : at - n - 1;
      const split = Math.floor(rand() * (where[k]!.length + 1));
      where[k] = where[k]!.slice(0, split) + pad + where[k]!.slice(split);
    }
    return { literals, values };
  }

  const isControl = (c: number) => c < 0x20 && c !== 0x0a;
  const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
  const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

  /**
   * When countJoined may answer null (the documented cases): a piece with a control
   * character (the reader removes them: the text must be read) or a piece that starts
   * with a low surrogate or ends with a high one; or a count that needs the greedy split
   * (an extension character in a non-plain text over 160 septets, a surrogate pair in a
   * UCS-2 text over 70 code units).
   */
  function mayBeNull(literals: string[], values: string[], text: string): boolean {
    for (const p of [...literals, ...values]) {
      if (p.length === 0) continue;
      if (isLow(p.charCodeAt(0)) || isHigh(p.charCodeAt(p.length - 1))) return true;
      for (let i = 0; i < p.length; i++) if (isControl(p.charCodeAt(i))) return true;
    }
    if (isPlainGsm(text)) return false;
    let septets = 0;
    let extension = false;
    let pairs = false;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      const s = gsm7Septets(c);
      if (s === 2) extension = true;
      if (s === 0 && isHigh(c) && isLow(text.charCodeAt(i + 1))) {
        pairs = true;
        i++;
      }
      septets += s === 0 ? 1 : s;
    }
    const info = countSegments(text);
    return (extension && septets > 160) || (info.encoding === 'ucs2' && pairs && text.length > 70);
  }

  /** countJoined on the pieces; checks it against countSegments(joined). 'null' or 'ok'. */
  function check(
    literals: string[],
    values: string[],
    reuse: ReturnType<typeof countSegments> | null = null,
  ) {
    const n = values.length;
    const text = literals[0]! + values.map((v, k) => v + literals[k + 1]!).join('');
    const want = countSegments(text);
    const stats = literalStats(literals);
    const label = JSON.stringify({ literals, values });
    const joined = { plain: !isPlainGsm(text), length: -1 };
    const got = countJoined(stats, values, n, false, joined, reuse);
    if (got === null) {
      expect(mayBeNull(literals, values, text), `null without cause: ${label}`).toBe(true);
    } else {
      expect(got, label).toEqual(want);
      expect(joined.plain, label).toBe(isPlainGsm(text));
      expect(joined.length, label).toBe(text.length);
      if (reuse !== null && got === reuse) expect(reuse, label).toEqual(want);
    }
    // The caller knows the values are plain GSM (hashJoined told it): they are not read.
    if (values.every(isPlainGsm)) {
      const known = { plain: !isPlainGsm(text), length: -1 };
      const fast = countJoined(stats, values, n, true, known, reuse);
      if (fast === null) {
        expect(mayBeNull(literals, [], text), `null without cause (valuesPlain): ${label}`).toBe(true);
      } else {
        expect(fast, `valuesPlain: ${label}`).toEqual(want);
        expect(known, `valuesPlain: ${label}`).toEqual({ plain: isPlainGsm(text), length: text.length });
      }
      expect(fast === null, `valuesPlain changes the null answer: ${label}`).toBe(got === null);
    }
    return got === null ? 'null' : 'ok';
  }

  it.each([
    ['nothing at all', [''], []],
    ['empty literals, one value', ['', ''], ['Ana']],
    ['empty literals and values', ['', '', ''], ['', '']],
    ['a plain template', ['Hola ', ', su cita es el ', '.'], ['Ana', '12 de mayo']],
    ['accents in the values', ['Hola ', ', su cita es el ', '.'], ['Ramón', 'miércoles']],
    ['GSM-7 letters only (ñ é): GSM-7, not plain', ['Señor ', ''], ['Núñez'.replace('ú', 'u')]],
    ['extension characters count two', ['Total ', ' {', '} [', ']'], ['€100', '~^', '\\|']],
    ['an emoji in a value', ['Hola ', '!'], ['😀']],
    ['an emoji and an accent', ['', ' ', ''], ['👍🏽', 'á']],
    ['the non-GSM list in order, once each', ['ú', 'á', 'ú'], ['á', 'ó']],
    ['the list from literals when values add none', ['ú…', ' ', '“x”'], ['ab', 'cd']],
    ['a lone surrogate inside a value', ['<', '>'], ['a\ud800b']],
    ['a lone high surrogate at the end of a value', ['<', '>'], ['a\ud83d']],
    ['a lone low surrogate at the start of a value', ['<', '>'], ['\ude00b']],
    ['a pair split across a literal and a value', ['x\ud83d', ''], ['\ude00']],
    ['a pair split across a value and a literal', ['', '\ude00y'], ['\ud83d']],
    ['a lone low surrogate at the start of the text', ['\ude00', ''], ['a']],
    ['a tab in a value', ['Hola ', ''], ['Ana\tMaría']],
    ['a control character in a literal', ['Hola\u0001 ', ''], ['Ana']],
    ['CR and FF in values (GSM-7, but removed by the reader)', ['', '', ''], ['a\rb', 'c\fd']],
    ['DEL and C1 characters are not removed: UCS-2', ['', ''], ['a\u007fb\u0085']],
    ['160 plain characters', ['a'.repeat(100), ''], ['b'.repeat(60)]],
    ['161 plain characters', ['a'.repeat(100), ''], ['b'.repeat(61)]],
    ['306 / 307 plain characters', ['a'.repeat(150), 'c'], ['b'.repeat(155)]],
    ['160 septets with an extension character', ['{', 'a'.repeat(100)], ['b'.repeat(57)]],
    [
      '161 septets with an extension character (greedy: null or exact)',
      ['{', 'a'.repeat(100)],
      ['b'.repeat(58)],
    ],
    ['70 UCS-2 units', ['á'.repeat(35), ''], ['b'.repeat(35)]],
    ['71 UCS-2 units', ['á'.repeat(35), ''], ['b'.repeat(36)]],
    ['134 / 135 UCS-2 units', ['ú', 'é'], ['a'.repeat(132)]],
    ['an emoji at 70 units', ['a'.repeat(34), ''], ['😀'.repeat(18)]],
    ['an emoji past 70 units (greedy: null or exact)', ['a'.repeat(35), ''], ['😀'.repeat(18)]],
    [
      'long UCS-2 text without pairs',
      ['Señora ', ', su saldo es ', ' y vence el ', '.'],
      ['María José', 'á'.repeat(300), 'mañana'],
    ],
    ['long GSM-7 text without extension', ['x'.repeat(200), ''], ['é'.repeat(200)]],
    ['long text with extension characters in the literals', ['€'.repeat(90), ''], ['a']],
  ] as const)('%s', (_name, literals, values) => {
    check([...literals], [...values]);
  });

  it('seeded random templates, pieces of every odd and even length, around every boundary', () => {
    const rand = prng(0x5e6_2026);
    let answered = 0;
    const runs = 6000;
    let previous: ReturnType<typeof countSegments> | null = null;
    for (let run = 0; run < runs; run++) {
      const { literals, values } = draw(rand);
      const verdict = check(literals, values, rand() < 0.5 ? previous : null);
      if (verdict === 'ok') answered++;
      previous = countSegments(literals[0]! + values.map((v, k) => v + literals[k + 1]!).join(''));
    }
    // Most drawn templates take the fast path (else this test would compare nothing).
    expect(answered).toBeGreaterThan(runs / 3);
  });

  it('reuse: the earlier answer is given back when it says the same, never when it does not', () => {
    const literals = literalStats(['Hola ', ', su saldo vence el ', '.']);
    const joined = { plain: false, length: 0 };
    const first = countJoined(literals, ['Ana', '15/07'], 2, true, joined)!;
    expect(first).toEqual({ encoding: 'gsm7', segments: 1, gsm7Segments: 1, nonGsm: [] });
    expect(countJoined(literals, ['Luis', '20/07'], 2, true, joined, first)).toBe(first);
    const long = countJoined(literals, ['Luis', 'x'.repeat(200)], 2, true, joined, first)!;
    expect(long).not.toBe(first);
    expect(long.segments).toBe(2);
    const accent = countJoined(literals, ['Ramón', '20/07'], 2, false, joined, first)!;
    expect(accent).not.toBe(first);
    expect(accent).toEqual(countSegments('Hola Ramón, su saldo vence el 20/07.'));
  });
});
