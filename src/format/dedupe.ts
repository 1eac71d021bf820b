// Duplicate detection over millions of recipients in ~12 bytes each (docs/architecture.md
// "The guarantees and where they live"): an open-addressing table over typed arrays holding
// a 64-bit key and the first line (~8 bytes without lines: FingerprintTable).
//
// Keys: a sent number has at most 15 digits, so it fits exactly in 53 bits. In bulk files
// the key is the number itself (exact). In personalized files it is the number mixed with
// a 32-bit hash of the text: two different texts for the same number collide with
// probability 2^-32; different numbers never collide with each other through the number
// part alone. messageIds use two independent 32-bit hashes of the id.

const EMPTY = 0;
const MAX_LOAD = 0.8;

/** murmur3's finaliser: every bit of `h` moves every bit of the answer (unsigned). */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function mix(h: number, k: number): number {
  k = Math.imul(k, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  h ^= Math.imul(k, 0x1b873593);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** murmur3 (32-bit) over the string's UTF-16 code units taken two at a time: messageIds. */
export function hashString(s: string, seed = 0x811c9dc5): number {
  let h = seed;
  const n = s.length;
  let i = 0;
  for (; i + 1 < n; i += 2) h = mix(h, s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16));
  if (i < n) h = mix(h, s.charCodeAt(i));
  return fmix32(h ^ n);
}

// The hash of a message's text: a polynomial over its UTF-16 code units in two 32-bit lanes,
// h = h·B + c (mod 2^32) for each unit c, with odd bases, finished by fmix32. Two texts of
// the same length that differ in one code unit never share a lane. Unlike murmur it is
// composable: the hash of A + P is hash(A)·B^|P| + hash(P), so a template's literal parts
// are hashed once (hashPiece) and each record reads only its values (hashJoined). Two
// units a step: h·B² + (a·B + b) keeps one multiply on the dependency chain.
const B1 = 0x01000193;
const B2 = 0x5bd1e995;
const B1_SQ = Math.imul(B1, B1);
const B2_SQ = Math.imul(B2, B2);

/** A fixed piece of text (a template's literal part): its lanes, and B^length of each. */
export interface HashPiece {
  readonly length: number;
  readonly h1: number;
  readonly h2: number;
  readonly p1: number;
  readonly p2: number;
}

export function hashPiece(s: string): HashPiece {
  let h1 = 0;
  let h2 = 0;
  let p1 = 1;
  let p2 = 1;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = (Math.imul(h1, B1) + c) | 0;
    h2 = (Math.imul(h2, B2) + c) | 0;
    p1 = Math.imul(p1, B1);
    p2 = Math.imul(p2, B2);
  }
  return { length: s.length, h1, h2, p1, p2 };
}

/** Set by hashJoined: whether every value was plain GSM (isPlainGsm), as textScan.plain. */
export const joinedScan = { valuesPlain: false };

/**
 * scanText(literals[0] + values[0] + literals[1] + … + values[n - 1] + literals[n]), the
 * literals given as hashPiece(literal), without joining the pieces (a merged text is a V8
 * cons string, flattened into a new string when read whole) and without reading the
 * literals again. Whether the values are plain GSM goes to joinedScan.
 */
export function hashJoined(
  literals: readonly HashPiece[],
  values: readonly string[],
  n: number,
  /**
   * The bytes the values were read from, when they are ASCII (a byte a code unit; see
   * TextBytes), and where each value starts in them (`at[k]`, -1: read the string). Bytes
   * are read ~2.5x faster than a string's code units, a slice's above all.
   */
  bytes: Uint8Array | null = null,
  at: Int32Array | null = null,
): number {
  const first = literals[0]!;
  let h1 = first.h1;
  let h2 = first.h2;
  let total = first.length;
  let bad = 0;
  for (let k = 0; k < n; k++) {
    const s = values[k]!;
    const len = s.length;
    total += len;
    let i = 0;
    const o = bytes === null ? -1 : at![k]!;
    if (o >= 0) {
      const b8 = bytes!;
      for (; i + 1 < len; i += 2) {
        const a = b8[o + i]!;
        const b = b8[o + i + 1]!;
        bad |= (PLAIN[a]! & PLAIN[b]!) ^ 1;
        h1 = (Math.imul(h1, B1_SQ) + Math.imul(a, B1) + b) | 0;
        h2 = (Math.imul(h2, B2_SQ) + Math.imul(a, B2) + b) | 0;
      }
      if (i < len) {
        const a = b8[o + i]!;
        bad |= PLAIN[a]! ^ 1;
        h1 = (Math.imul(h1, B1) + a) | 0;
        h2 = (Math.imul(h2, B2) + a) | 0;
      }
      i = len;
    }
    for (; i + 1 < len; i += 2) {
      const a = s.charCodeAt(i);
      const b = s.charCodeAt(i + 1);
      bad |= (a | b) > 127 ? 1 : (PLAIN[a]! & PLAIN[b]!) ^ 1;
      h1 = (Math.imul(h1, B1_SQ) + Math.imul(a, B1) + b) | 0;
      h2 = (Math.imul(h2, B2_SQ) + Math.imul(a, B2) + b) | 0;
    }
    if (i < len) {
      const a = s.charCodeAt(i);
      bad |= a > 127 ? 1 : PLAIN[a]! ^ 1;
      h1 = (Math.imul(h1, B1) + a) | 0;
      h2 = (Math.imul(h2, B2) + a) | 0;
    }
    const lit = literals[k + 1]!;
    h1 = (Math.imul(h1, lit.p1) + lit.h1) | 0;
    h2 = (Math.imul(h2, lit.p2) + lit.h2) | 0;
    total += lit.length;
  }
  joinedScan.valuesPlain = bad === 0;
  const h = finish(h1, h2, total);
  if (byteCheck.on && bytes !== null) checkBytes(hashJoined(literals, values, n), bad === 0, h, 'hashJoined');
  return h;
}

/**
 * Tests turn this on: every hash read from bytes is compared with the same hash read from
 * the strings, and a difference throws (a value's place in the bytes was wrong).
 */
export const byteCheck = { on: false, checked: 0 };

function checkBytes(want: number, plain: boolean, got: number, what: string): void {
  byteCheck.checked++;
  const wantPlain = what === 'hashJoined' ? joinedScan.valuesPlain : textScan.plain;
  if (want !== got || wantPlain !== plain)
    throw new Error(`${what}: the bytes gave ${got} (plain ${plain}), the text ${want} (plain ${wantPlain})`);
}

function finish(h1: number, h2: number, length: number): number {
  return fmix32(h1 ^ fmix32(h2 ^ length));
}

// The characters of segments.ts's isPlainGsm (LF, space to Z, _, a to z). A byte of any
// value may be looked up (bytes are ASCII when read, but a table read out of bounds costs).
const PLAIN = new Uint8Array(256);
PLAIN[10] = 1;
PLAIN[95] = 1;
for (let c = 32; c <= 90; c++) PLAIN[c] = 1;
for (let c = 97; c <= 122; c++) PLAIN[c] = 1;

/** Set by scanText: whether the text was plain GSM (isPlainGsm) too. */
export const textScan = { plain: false };

/**
 * The text's hash (above) and isPlainGsm(s) in one pass over the text, the answer to the
 * second in `textScan.plain`: both are needed for every personalized message.
 */
export function scanText(s: string): number {
  // hashJoined of one value, written out: a call through it costs ~15% on this hot path
  // (test/unit/format-dedupe.test.ts compares the two).
  let h1 = 0;
  let h2 = 0;
  const n = s.length;
  let bad = 0;
  let i = 0;
  for (; i + 1 < n; i += 2) {
    const a = s.charCodeAt(i);
    const b = s.charCodeAt(i + 1);
    bad |= (a | b) > 127 ? 1 : (PLAIN[a]! & PLAIN[b]!) ^ 1;
    h1 = (Math.imul(h1, B1_SQ) + Math.imul(a, B1) + b) | 0;
    h2 = (Math.imul(h2, B2_SQ) + Math.imul(a, B2) + b) | 0;
  }
  if (i < n) {
    const a = s.charCodeAt(i);
    bad |= a > 127 ? 1 : PLAIN[a]! ^ 1;
    h1 = (Math.imul(h1, B1) + a) | 0;
    h2 = (Math.imul(h2, B2) + a) | 0;
  }
  textScan.plain = bad === 0;
  return finish(h1, h2, n);
}

/**
 * scanText(text), read from `bytes` at `at` where the text is, byte for byte (ASCII: see
 * TextBytes), when `bytes` is given and `at` is not -1: ~2.5x faster than reading the string.
 */
export function scanTextAt(text: string, bytes: Uint8Array | null, at: number): number {
  if (bytes === null || at < 0) return scanText(text);
  let h1 = 0;
  let h2 = 0;
  const n = text.length;
  let bad = 0;
  let i = 0;
  for (; i + 1 < n; i += 2) {
    const a = bytes[at + i]!;
    const b = bytes[at + i + 1]!;
    bad |= (PLAIN[a]! & PLAIN[b]!) ^ 1;
    h1 = (Math.imul(h1, B1_SQ) + Math.imul(a, B1) + b) | 0;
    h2 = (Math.imul(h2, B2_SQ) + Math.imul(a, B2) + b) | 0;
  }
  if (i < n) {
    const a = bytes[at + i]!;
    bad |= PLAIN[a]! ^ 1;
    h1 = (Math.imul(h1, B1) + a) | 0;
    h2 = (Math.imul(h2, B2) + a) | 0;
  }
  const h = finish(h1, h2, n);
  if (byteCheck.on) checkBytes(scanText(text), bad === 0, h, 'scanTextAt');
  textScan.plain = bad === 0;
  return h;
}

/** The duplicate index is written 2^12 slots at a time (32 or 48 KiB) before they are read. */
const REGION_SHIFT = 12;

/**
 * A new array of `n` zeros, written once. A large typed array is fresh memory that the
 * kernel maps on first touch; a page first *read* (touch(), or `a[i] |= x`) is mapped to
 * the shared zero page, and the write that follows must take that mapping back from every
 * CPU the process runs on (a TLB shootdown: an interrupt to each, a VM exit in a VM). Written
 * first, a page is simply mapped. perf on validate of a million lines: ~50 ms of the
 * duplicate index's adds were those shootdowns.
 */
export function zeroed(n: number): Uint32Array {
  const a = new Uint32Array(n);
  a.fill(0);
  return a;
}

/**
 * Slots of three 32-bit words [hi, lo, line] side by side in one array, so a probe costs
 * one cache miss, not three: at millions of keys the table is far larger than the cache
 * and those misses are most of its cost. Without lines (`lines` false: whether a key was
 * seen is all the caller asks) a slot is the two key words: a third smaller, and as many
 * fewer cache lines and pages to miss (~30% faster at a million keys, measured). An empty
 * slot is one whose line is 0, or without lines whose key is (0, 0): a key (0, 0) is then
 * stored as (0, 1), which no sent number is (its key is the number itself: at least 7
 * digits), and a hashed key is with odds of 2^-64.
 */
export class FingerprintTable {
  private slots: Uint32Array;
  /**
   * A flag a region of REGION slots: written (zero-filled). The table is written a region at
   * a time, when a probe first reaches it, never read first (see zeroed): its memory is taken
   * as keys arrive, so an estimate far above the keys (a file of blank lines) costs none.
   */
  private written: Uint8Array;
  private capacity: number;
  private count = 0;
  /** Words a slot: 3 with lines, 2 without. */
  private readonly width: number;

  /** `expected`: an estimate of distinct keys; the table grows when it is exceeded. */
  constructor(expected: number, lines = true) {
    this.width = lines ? 3 : 2;
    this.capacity = Math.max(1024, Math.ceil(expected / MAX_LOAD) + 1);
    this.slots = new Uint32Array(this.capacity * this.width);
    this.written = new Uint8Array((this.capacity >>> REGION_SHIFT) + 1);
  }

  get size(): number {
    return this.count;
  }

  get bytes(): number {
    return this.slots.byteLength;
  }

  /**
   * Adds the key with its line; returns 0 when new, else the line it was first seen on
   * (without lines: 1).
   */
  add(hi: number, lo: number, line: number): number {
    hi >>>= 0;
    lo >>>= 0;
    this.reserve(1);
    const start = this.slotOf(hi, lo);
    this.prepare(start);
    return this.addAt(start, hi, lo, line);
  }

  /** Makes room for `n` more keys now, so that slotOf stays valid across the next n adds. */
  reserve(n: number): void {
    while (this.count + n > this.capacity * MAX_LOAD) this.grow();
  }

  /** The slot where the probe for a key (unsigned halves) starts. */
  slotOf(hi: number, lo: number): number {
    if (this.width === 2 && (hi | lo) === 0) lo = 1;
    const h = fmix32(lo ^ Math.imul(hi, 0x9e3779b1));
    // floor(h · capacity / 2^32), in two exact halves: a multiply, not h % capacity's
    // division (~8.5 ns against ~2.4 a slot, measured).
    const c = this.capacity;
    return Math.floor(((h >>> 16) * c + Math.floor(((h & 0xffff) * c) / 65536)) / 65536);
  }

  /** Writes the region of `slot` unless it is written already. */
  private prepare(slot: number): void {
    const region = slot >>> REGION_SHIFT;
    if (this.written[region] === 1) return;
    const width = this.width;
    const to = Math.min(this.capacity, (region + 1) << REGION_SHIFT);
    this.slots.fill(0, (region << REGION_SHIFT) * width, to * width);
    this.written[region] = 1;
  }

  /** A probe reached `slot`, the first of a region (or the end): the slot it goes on at, written. */
  private enter(slot: number): number {
    const s = slot === this.capacity ? 0 : slot;
    this.prepare(s);
    return s;
  }

  /** The first slot after the region of `slot`. */
  private regionEnd(slot: number): number {
    return Math.min(this.capacity, ((slot >>> REGION_SHIFT) + 1) << REGION_SHIFT);
  }

  /**
   * Reads the first word of each slot: the loads are independent, so the memory system
   * serves them side by side, and the adds that follow find them in the cache. At millions
   * of keys the table is far larger than the cache; one add at a time waits for each miss
   * (~200 ns here), a batch of 64 overlaps them (~100 ns a key).
   */
  touch(starts: Uint32Array, n: number): void {
    const table = this.slots;
    const width = this.width;
    for (let i = 0; i < n; i++) this.prepare(starts[i]!);
    let sum = 0;
    for (let i = 0; i < n; i++) sum += table[starts[i]! * width]!;
    this.touched ^= sum; // kept, so that the loads are not optimised away
  }

  private touched = 0;

  /** add() with the probe's start from slotOf, its region written (after reserve, touch). */
  addAt(start: number, hi: number, lo: number, line: number): number {
    const slots = this.slots;
    let s = start;
    let end = this.regionEnd(s);
    if (this.width === 2) {
      if ((hi | lo) === 0) lo = 1;
      for (;;) {
        const i = s * 2;
        const a = slots[i]!;
        const b = slots[i + 1]!;
        if ((a | b) === 0) {
          slots[i] = hi;
          slots[i + 1] = lo;
          this.count++;
          return 0;
        }
        if (a === hi && b === lo) return 1;
        if (++s === end) {
          s = this.enter(s);
          end = this.regionEnd(s);
        }
      }
    }
    for (;;) {
      const i = s * 3;
      const seen = slots[i + 2]!;
      if (seen === EMPTY) {
        slots[i] = hi;
        slots[i + 1] = lo;
        slots[i + 2] = line;
        this.count++;
        return 0;
      }
      if (slots[i] === hi && slots[i + 1] === lo) return seen;
      if (++s === end) {
        s = this.enter(s);
        end = this.regionEnd(s);
      }
    }
  }

  private grow(): void {
    const old = this.slots;
    const oldWritten = this.written;
    const width = this.width;
    this.capacity *= 2;
    this.slots = new Uint32Array(this.capacity * width);
    this.written = new Uint8Array((this.capacity >>> REGION_SHIFT) + 1);
    this.count = 0;
    // Only the regions written hold keys (the others were never read: not read now either).
    for (let r = 0; r < oldWritten.length; r++) {
      if (oldWritten[r] === 0) continue;
      const to = Math.min(old.length, ((r + 1) << REGION_SHIFT) * width);
      for (let i = (r << REGION_SHIFT) * width; i < to; i += width) {
        const taken = width === 2 ? (old[i]! | old[i + 1]!) !== 0 : old[i + 2] !== EMPTY;
        if (taken) this.add(old[i]!, old[i + 1]!, width === 2 ? 1 : old[i + 2]!);
      }
    }
  }
}

const TWO_32 = 2 ** 32;
/** Recipients RecipientIndex.addBatch takes at once. */
export const INDEX_BATCH = 64;

/**
 * Recipients seen in a file: the sent number, mixed with the text hash when there is one (0:
 * none). With `lines` false, a recipient seen before is answered 1, not its first line.
 */
export class RecipientIndex {
  private readonly table: FingerprintTable;
  constructor(expected: number, lines = true) {
    this.table = new FingerprintTable(expected, lines);
  }
  /** 0 when new, else the line where the same recipient was first seen. */
  add(number: string, textHash: number, line: number): number {
    this.keyOf(Number(number), textHash);
    return this.table.add(this.hi, this.lo, line);
  }

  private hi = 0;
  private lo = 0;
  private readonly his = new Uint32Array(INDEX_BATCH);
  private readonly los = new Uint32Array(INDEX_BATCH);
  private readonly starts = new Uint32Array(INDEX_BATCH);
  private values = new Float64Array(INDEX_BATCH);

  /**
   * add() for n recipients at once (n ≤ INDEX_BATCH), in order: `firsts[i]` gets what add
   * would have returned for the i-th. Their table slots are touched together first (touch).
   */
  addBatch(
    numbers: readonly string[],
    hashes: Uint32Array,
    lines: Uint32Array,
    n: number,
    firsts: Uint32Array,
  ): void {
    for (let i = 0; i < n; i++) this.values[i] = Number(numbers[i]!);
    this.addValues(this.values, hashes, lines, n, firsts);
  }

  /** addBatch with each number given as its numeric value (Number(number), exact: at most 15 digits). */
  addValues(
    values: Float64Array,
    hashes: Uint32Array,
    lines: Uint32Array,
    n: number,
    firsts: Uint32Array,
  ): void {
    for (let i = 0; i < n; i++) {
      this.keyOf(values[i]!, hashes[i]!);
      this.his[i] = this.hi;
      this.los[i] = this.lo;
    }
    this.insert(lines, n, firsts);
  }

  /**
   * addValues for recipients whose key is not a number (email addresses): `his` and `los`,
   * two independent 32-bit hashes of it, mixed with the text hash as keyOf mixes a value.
   */
  addKeys(
    his: Uint32Array,
    los: Uint32Array,
    hashes: Uint32Array,
    lines: Uint32Array,
    n: number,
    firsts: Uint32Array,
  ): void {
    for (let i = 0; i < n; i++) {
      const t = hashes[i]!;
      this.his[i] = t === 0 ? his[i]! : (his[i]! ^ fmix32(t ^ 0x2545f491)) >>> 0;
      this.los[i] = t === 0 ? los[i]! : (los[i]! ^ fmix32(t)) >>> 0;
    }
    this.insert(lines, n, firsts);
  }

  /** The n keys in his and los added: their slots found and touched together, then filled in order. */
  private insert(lines: Uint32Array, n: number, firsts: Uint32Array): void {
    this.table.reserve(n);
    for (let i = 0; i < n; i++) this.starts[i] = this.table.slotOf(this.his[i]!, this.los[i]!);
    this.table.touch(this.starts, n);
    for (let i = 0; i < n; i++)
      firsts[i] = this.table.addAt(this.starts[i]!, this.his[i]!, this.los[i]!, lines[i]!);
  }

  /** The table key of a recipient (its number's value), into this.hi and this.lo (unsigned). */
  private keyOf(n: number, textHash: number): void {
    const hi = Math.floor(n / TWO_32);
    const lo = n >>> 0;
    if (textHash === 0) {
      this.hi = hi >>> 0;
      this.lo = lo;
      return;
    }
    this.hi = (hi ^ fmix32(textHash ^ 0x2545f491)) >>> 0;
    this.lo = (lo ^ fmix32(textHash)) >>> 0;
  }
}

/** messageIds seen in a file, by two independent 32-bit hashes of the id. */
export class MessageIdIndex {
  private readonly table: FingerprintTable;
  constructor(expected: number) {
    this.table = new FingerprintTable(expected);
  }
  add(id: string, line: number): number {
    return this.table.add(hashString(id, 0x811c9dc5), hashString(id, 0x01234567), line);
  }
}
