import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  FingerprintTable,
  hashString,
  INDEX_BATCH,
  RecipientIndex,
  scanText,
  textScan,
} from '../../src/format/dedupe.ts';
import { isPlainGsm } from '../../src/format/segments.ts';

describe('FORMAT 6: duplicate index', () => {
  it('scanText classifies like isPlainGsm, and two texts one code unit apart never hash alike', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (s) => {
        scanText(s);
        expect(textScan.plain).toBe(isPlainGsm(s));
      }),
    );
    scanText('Hola, su cita es el lunes');
    expect(textScan.plain).toBe(true);
    scanText('Hola, mañana');
    expect(textScan.plain).toBe(false);
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 300 }),
        fc.nat(),
        fc.integer({ min: 1, max: 0xffff }),
        (s, at, delta) => {
          const i = at % s.length;
          const other =
            s.slice(0, i) + String.fromCharCode((s.charCodeAt(i) + delta) % 0x10000) + s.slice(i + 1);
          expect(scanText(other)).not.toBe(scanText(s));
        },
      ),
    );
    // Texts of different lengths: the length is hashed too.
    expect(scanText('\u0000')).not.toBe(scanText(''));
    expect(scanText('a\u0000')).not.toBe(scanText('a'));
  });

  it('the same number with the same text is a duplicate of its first line; another text is not', () => {
    const index = new RecipientIndex(10);
    const hola = hashString('Hola');
    expect(index.add('573001234567', hola, 1)).toBe(0);
    expect(index.add('573001234567', hashString('Adios'), 2)).toBe(0);
    expect(index.add('573001234568', hola, 3)).toBe(0);
    expect(index.add('573001234567', hola, 4)).toBe(1);
    // bulk: the number alone
    const bulk = new RecipientIndex(10);
    expect(bulk.add('5215512345678', 0, 7)).toBe(0);
    expect(bulk.add('5215512345678', 0, 9)).toBe(7);
  });

  it('keeps every key exactly when it grows far past its estimate', () => {
    const table = new FingerprintTable(1);
    for (let i = 1; i <= 50_000; i++) expect(table.add(i >>> 7, i * 2654435761, i)).toBe(0);
    for (let i = 1; i <= 50_000; i++) expect(table.add(i >>> 7, i * 2654435761, 999_999)).toBe(i);
    expect(table.size).toBe(50_000);
  });
});

describe('RecipientIndex.addBatch', () => {
  it('answers as add() one by one would, duplicates inside one batch included', () => {
    const one = new RecipientIndex(16);
    const batched = new RecipientIndex(16);
    const numbers: string[] = [];
    const hashes: number[] = [];
    for (let i = 0; i < 500; i++) {
      numbers.push(`5730000${String(i % 97).padStart(5, '0')}`);
      hashes.push(i % 3 === 0 ? 0 : hashString(`texto ${i % 5}`));
    }
    const want = numbers.map((n, i) => one.add(n, hashes[i]!, i + 1));
    expect(want.filter((f) => f !== 0).length).toBeGreaterThan(50);
    const got: number[] = [];
    const firsts = new Uint32Array(INDEX_BATCH);
    for (let start = 0; start < numbers.length; start += INDEX_BATCH) {
      const n = Math.min(INDEX_BATCH, numbers.length - start);
      const lines = Uint32Array.from({ length: n }, (_, i) => start + i + 1);
      batched.addBatch(
        numbers.slice(start, start + n),
        Uint32Array.from(hashes.slice(start, start + n)),
        lines,
        n,
        firsts,
      );
      got.push(...firsts.subarray(0, n));
    }
    expect(got).toEqual(want);
  });
});
