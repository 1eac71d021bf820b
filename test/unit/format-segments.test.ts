import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countSegments, gsm7Septets } from '../../src/format/segments.ts';

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

describe('FORMAT 6 segments: the GSM-7 alphabet (3GPP TS 23.038)', () => {
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

describe('FORMAT 6 segments: GSM-7 160 for one part, 153 per part when longer', () => {
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

describe('FORMAT 6 segments: extension characters count two', () => {
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

describe('FORMAT 6 segments: UCS-2 70 for one part, 67 per part when longer', () => {
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

describe('FORMAT 6 segments: emoji and other characters outside the BMP', () => {
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

describe('FORMAT 6 segments: properties', () => {
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
