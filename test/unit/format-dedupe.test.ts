import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  FingerprintTable,
  hashJoined,
  hashPiece,
  hashString,
  INDEX_BATCH,
  joinedScan,
  RecipientIndex,
  scanText,
  textScan,
} from '../../src/format/dedupe.ts';
import { isPlainGsm } from '../../src/format/segments.ts';
import { prng } from '../helpers/prng.ts';

describe('docs/format.md "Messages": duplicate index', () => {
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

  it('probes that run across the regions written as keys arrive, and wrap at the end, lose no key', () => {
    // The table is written (zero-filled) 4096 slots at a time, when a probe first reaches a
    // region. Keys that all start at one slot just before a region's end (or the table's)
    // run on into the next region; a key that starts there later must find them, not
    // write its region over them.
    for (const lines of [true, false]) {
      const table = new FingerprintTable(10_000, lines);
      const capacity = Math.ceil(10_000 / 0.8) + 1;
      /** Keys (0, x) whose probe starts at `slot`. */
      const startingAt = (slot: number, n: number): number[] => {
        const found: number[] = [];
        for (let x = 1; found.length < n; x++) if (table.slotOf(0, x) === slot) found.push(x);
        return found;
      };
      const runs = [...startingAt(4090, 20), ...startingAt(capacity - 3, 20)];
      runs.forEach((x, i) => {
        expect(table.add(0, x, i + 1)).toBe(0);
      });
      // Keys that start inside the regions those probes ran into: slots 4096… and 0….
      const later = [...startingAt(4100, 3), ...startingAt(2, 3)];
      later.forEach((x, i) => {
        expect(table.add(0, x, 100 + i)).toBe(0);
      });
      runs.forEach((x, i) => {
        expect(table.add(0, x, 999), `key ${x}`).toBe(lines ? i + 1 : 1);
      });
      later.forEach((x, i) => {
        expect(table.add(0, x, 999)).toBe(lines ? 100 + i : 1);
      });
      expect(table.size).toBe(runs.length + later.length);
    }
  });

  it('without lines: the same keys seen as with them (answered 1), in two thirds of the bytes, growing too', () => {
    const rand = prng(0xd0b1e);
    const withLines = new FingerprintTable(1);
    const without = new FingerprintTable(1, false);
    // Random keys, repeats among them, and the keys an empty slot looks like: (0, 0) and (0, 1).
    const keys: [number, number][] = [
      [0, 0],
      [0, 1],
      [1, 0],
    ];
    for (let i = 0; i < 20_000; i++) {
      const r = rand();
      if (r < 0.2) keys.push(keys[Math.floor(rand() * keys.length)]!);
      else keys.push([Math.floor(rand() * 16), Math.floor(rand() * 2 ** 32)]);
    }
    keys.push([0, 0], [0, 1]);
    for (let i = 0; i < keys.length; i++) {
      const [hi, lo] = keys[i]!;
      const first = withLines.add(hi, lo, i + 1);
      const seen = without.add(hi, lo, i + 1);
      // (0, 0) is kept as (0, 1): the one pair of keys told apart only with lines, so the
      // first (0, 1), key 1, is seen already.
      expect(seen, `key ${i} (${hi}, ${lo})`).toBe(first === 0 && i !== 1 ? 0 : 1);
    }
    expect(without.size).toBe(withLines.size - 1);
    expect(without.bytes * 3).toBe(withLines.bytes * 2);
  });
});

describe('FingerprintTable.slotOf', () => {
  it('is a slot of the table, and reaches its far end, whatever its size', () => {
    const rand = prng(0x5107);
    for (const expected of [1, 1000, 12_345, 1_000_000, 5_000_000]) {
      const table = new FingerprintTable(expected, false);
      const capacity = table.bytes / 8;
      let highest = 0;
      for (let i = 0; i < 20_000; i++) {
        const slot = table.slotOf(Math.floor(rand() * 2 ** 32), Math.floor(rand() * 2 ** 32));
        expect(Number.isInteger(slot) && slot >= 0 && slot < capacity, `${slot} of ${capacity}`).toBe(true);
        highest = Math.max(highest, slot);
      }
      expect(highest, `capacity ${capacity}`).toBeGreaterThan(capacity * 0.99);
    }
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

// ---- hashJoined: a template's merged text hashed from its literal parts and its values ----

describe('hashJoined (template fast path) against scanText of the joined text', () => {
  /** Code units of every class: plain GSM, other ASCII, control, Latin-1, BMP, surrogates. */
  const UNITS = [
    ...'aZz09 _.\n',
    ...'`{|}~^[]\\@\t\r\f\u0000\u007f',
    ...'ñéáü€中',
    '\ud83d',
    '\ude00',
    '\uffff',
    '\u8000',
  ];

  function piece(rand: () => number, length: number): string {
    let s = '';
    const plain = rand() < 0.5;
    for (let i = 0; i < length; i++) {
      s += plain
        ? String.fromCharCode(97 + Math.floor(rand() * 26))
        : UNITS[Math.floor(rand() * UNITS.length)]!;
    }
    return s;
  }

  /** hashJoined against scanText(joined) and its plain flag against isPlainGsm of each value. */
  function check(literals: string[], values: string[]): void {
    const n = values.length;
    const text = literals[0]! + values.map((v, k) => v + literals[k + 1]!).join('');
    const label = JSON.stringify({ literals, values });
    const want = scanText(text);
    joinedScan.valuesPlain = !values.every(isPlainGsm);
    expect(hashJoined(literals.map(hashPiece), values, n), label).toBe(want);
    expect(joinedScan.valuesPlain, label).toBe(values.every(isPlainGsm));
  }

  it('every combination of piece lengths 0 to 3 (odd and even, one or two placeholders)', () => {
    const rand = prng(0xd1ce);
    for (let n = 0; n <= 2; n++) {
      const pieces = 2 * n + 1;
      for (let code = 0; code < 4 ** pieces; code++) {
        const lengths = Array.from({ length: pieces }, (_, i) => Math.floor(code / 4 ** i) % 4);
        const all = lengths.map((len) => piece(rand, len));
        check(all.slice(0, n + 1), all.slice(n + 1));
      }
    }
  });

  it('hand-picked: plain and not plain values, a value alone, long pieces', () => {
    check(['Hola ', ', su cita es el ', '.'], ['Ana', '12 de mayo']);
    check(['Hola ', '.'], ['Ramón']);
    check(['', ''], ['x']);
    check(['', '', ''], ['ab', 'c']);
    check(['a'], []);
    check([''], []);
    check(['Total: ', ''], ['{100}']); // `{` is GSM-7 but not plain
    check(['', ''], ['`']);
    check(['', ''], ['Ana\r']); // CR: not plain
    check(['', ''], ['a\tb']);
    check(['😀', '😀'], ['😀']);
    check(['x\ud83d', ''], ['\ude00']); // a pair split across the pieces
    check(['a'.repeat(501), 'b'.repeat(64)], ['c'.repeat(999)]);
    check(['Señor ', ', ', ''], ['Núñez', 'x'.repeat(1000)]);
  });

  it('seeded random templates with pieces of any length', () => {
    const rand = prng(0x4a5e);
    for (let run = 0; run < 3000; run++) {
      const n = Math.floor(rand() * 6);
      const len = () => Math.floor(rand() * (rand() < 0.1 ? 300 : 9));
      const literals = Array.from({ length: n + 1 }, () => piece(rand, len()));
      const values = Array.from({ length: n }, () => piece(rand, len()));
      check(literals, values);
    }
  });

  it('pieces that join to the same text hash alike; a different text does not', () => {
    const a = hashJoined(['Hola ', '!'].map(hashPiece), ['Ana'], 1);
    expect(hashJoined(['Hol', '!'].map(hashPiece), ['a Ana'], 1)).toBe(a);
    expect(hashJoined(['Hola Ana!'].map(hashPiece), [], 0)).toBe(a);
    expect(hashJoined(['Hola ', '!'].map(hashPiece), ['Ann'], 1)).not.toBe(a);
    expect(hashJoined(['Hola ', '!'].map(hashPiece), ['Ana '], 1)).not.toBe(a);
  });
});
