// docs/format.md "Numbers", SUPPRESSED: an opt-out list, a text file of numbers (a local file, an
// S3 object or a file on a source: readSuppressionList takes any byte stream).
//
// Lists can hold millions of numbers, so the file is streamed and each number is kept
// as its sent form's numeric value (at most 15 digits, exact in a double) in a
// Float64Array grouped by a hash (HashedNumbers): about 11 bytes a number with its index
// and filter, where a Set of strings costs ~100.

import { open } from 'node:fs/promises';
import { DroplineError } from '../errors.ts';
import { fmix32, zeroed } from './dedupe.ts';
import { readFileChunks } from './file-chunks.ts';
import { makeNumberRules, type NumberRules, normalizeNumber, sentValue } from './numbers.ts';

export interface SuppressionList {
  /** Whether a sent-form number (digits only, country code first) is suppressed. */
  has(sentNumber: string): boolean;
  /**
   * has() of n numbers at once, each given as its value (numbers.ts sentValue), into out[i]
   * (1: suppressed, 0: not). Optional: a list that has it starts every table read before it
   * waits for any, so that their cache misses overlap (the reader asks in batches; a
   * million lookups one at a time waited ~200 ns each on a busy cache).
   */
  hasValues?(values: Float64Array, n: number, out: Uint8Array): void;
  /** Distinct numbers on the list. */
  readonly size: number;
  /** Non-comment lines that did not normalise to a mobile number (not fatal). */
  readonly invalid: number;
}

/** A list as read: how many of its lines held a number, too (its distinct numbers are `size`). */
export interface ReadList extends SuppressionList {
  /** Lines that held a number, a number written twice counted twice. */
  readonly numberLines: number;
}

/**
 * No number line is anywhere near this long; longer lines are counted invalid unread (a
 * comment, starting with #, is skipped however long).
 */
const MAX_LINE = 1024;
const HASH = 35; // #
const TWO_32 = 2 ** 32;

/** A 32-bit hash of a sent value (at most 15 digits: an integer below 2^53). */
function valueHash(v: number): number {
  return fmix32((v >>> 0) ^ Math.imul(Math.floor(v / TWO_32), 0x9e3779b1));
}

/**
 * The numbers grouped by a hash of their value: bucket b holds values[starts[b]] up to
 * values[starts[b + 1]], each value once, two to four a bucket. In front of them, a bit
 * filter (eight bits a number, two of them set in one 32-bit word) answers most numbers that
 * are not on the list, most of those asked, with one read in a table eight times smaller
 * than the list; the others read one bucket, one or two cache lines. A binary search
 * over a million numbers takes twenty steps, most of them cache misses.
 */
class HashedNumbers implements ReadList {
  readonly #values: Float64Array;
  readonly #starts: Uint32Array;
  readonly #shift: number;
  readonly #filter: Int32Array;
  readonly #filterMask: number;
  readonly invalid: number;
  readonly numberLines: number;
  constructor(
    values: Float64Array,
    starts: Uint32Array,
    shift: number,
    filter: Int32Array,
    invalid: number,
    numberLines: number,
  ) {
    this.#values = values;
    this.#starts = starts;
    this.#shift = shift;
    this.#filter = filter;
    this.#filterMask = filter.length - 1;
    this.invalid = invalid;
    this.numberLines = numberLines;
  }
  get size(): number {
    return this.#values.length;
  }
  has(sentNumber: string): boolean {
    const v = sentValue(sentNumber);
    if (v < 0) return false;
    const h = valueHash(v);
    const bits = filterBits(h);
    return (this.#filter[h & this.#filterMask]! & bits) === bits && this.#inBucket(v, h);
  }

  #scratchHashes = new Int32Array(0);
  #scratchWords = new Int32Array(0);

  hasValues(values: Float64Array, n: number, out: Uint8Array): void {
    if (this.#scratchHashes.length < n) {
      this.#scratchHashes = new Int32Array(n);
      this.#scratchWords = new Int32Array(n);
    }
    const hashes = this.#scratchHashes;
    const words = this.#scratchWords;
    const filter = this.#filter;
    const mask = this.#filterMask;
    for (let i = 0; i < n; i++) hashes[i] = valueHash(values[i]!);
    // Independent loads, no branch between them: the memory system serves them side by side.
    for (let i = 0; i < n; i++) words[i] = filter[hashes[i]! & mask]!;
    for (let i = 0; i < n; i++) {
      const h = hashes[i]! >>> 0;
      const bits = filterBits(h);
      out[i] = (words[i]! & bits) === bits && this.#inBucket(values[i]!, h) ? 1 : 0;
    }
  }

  #inBucket(v: number, h: number): boolean {
    const b = h >>> this.#shift;
    const values = this.#values;
    const end = this.#starts[b + 1]!;
    for (let i = this.#starts[b]!; i < end; i++) if (values[i] === v) return true;
    return false;
  }
}

/** The filter's two bits of a value in its word, from hash bits its word index does not use. */
function filterBits(h: number): number {
  const g = Math.imul(h, 0x2c1b3c6d);
  return (1 << (g >>> 27)) | (1 << ((g >>> 22) & 31));
}

/** A bucket this large is de-duplicated by sorting it (a list of one number repeated). */
const SMALL_BUCKET = 16;

/**
 * HashedNumbers from the `count` first values (duplicates allowed): two to four values a
 * bucket, the bucket count a power of two (4 bytes of index a bucket). Each value's hash is
 * taken once, for its bucket and its filter bits.
 */
function hashNumbers(input: Float64Array, count: number, invalid: number): HashedNumbers {
  let bits = 1;
  while (bits < 30 && 2 ** (bits + 2) <= count) bits++;
  const shift = 32 - bits;
  const buckets = 2 ** bits;
  // Both are read before they are written (a count, a bit set): written first (zeroed).
  const starts = zeroed(buckets + 1);
  let words = 1;
  while (words * 4 < count) words *= 2;
  const filter = new Int32Array(zeroed(words).buffer);
  const mask = words - 1;
  const hashes = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    const h = valueHash(input[i]!);
    hashes[i] = h;
    starts[(h >>> shift) + 1]!++;
    filter[h & mask]! |= filterBits(h);
  }
  for (let b = 0; b < buckets; b++) starts[b + 1]! += starts[b]!;
  // Scatter: `next` is where each bucket's next value goes.
  const next = starts.slice(0, buckets);
  const grouped = new Float64Array(count);
  for (let i = 0; i < count; i++) grouped[next[hashes[i]! >>> shift]!++] = input[i]!;
  // Each value once, compacted in place: bucket b moves down to its new start.
  let n = 0;
  for (let b = 0; b < buckets; b++) {
    const from = starts[b]!;
    const to = starts[b + 1]!;
    starts[b] = n;
    if (to - from > SMALL_BUCKET) {
      const part = grouped.subarray(from, to).sort();
      for (let i = 0; i < part.length; i++) if (i === 0 || part[i] !== part[i - 1]) grouped[n++] = part[i]!;
      continue;
    }
    const first = n;
    for (let i = from; i < to; i++) {
      const v = grouped[i]!;
      let seen = false;
      for (let j = first; j < n; j++) {
        if (grouped[j] === v) {
          seen = true;
          break;
        }
      }
      if (!seen) grouped[n++] = v;
    }
  }
  starts[buckets] = n;
  return new HashedNumbers(
    n === count ? grouped : grouped.slice(0, n),
    starts,
    shift,
    filter,
    invalid,
    count,
  );
}

/** A line that holds a number takes at least this many bytes (seven digits and a break). */
const MIN_NUMBER_LINE = 8;
/** The most numbers a list's size reserves room for at once (128 MB); past it the array grows. */
const MAX_RESERVED = 1 << 24;

class Collector {
  values: Float64Array;
  count = 0;
  invalid = 0;
  readonly rules: NumberRules;
  /** The default country is CO: a ten-digit number starting with 3 is rule 1's. */
  readonly colombian: boolean;
  /**
   * `bytes`: the list's size, when known: room for as many numbers as it can hold is made
   * at once (memory is taken as it is written), not doubled and copied as they arrive.
   */
  constructor(rules: NumberRules, bytes?: number) {
    const room = bytes === undefined ? 1024 : Math.ceil(bytes / MIN_NUMBER_LINE);
    this.values = new Float64Array(Math.min(MAX_RESERVED, Math.max(1024, room)));
    // A suppressed number is suppressed whatever its country.
    this.rules = { ...rules, allowedCountries: null };
    this.colombian = rules.defaultCountry === 'CO';
  }
  line(text: string): void {
    // A number never holds `#`: what follows one is a comment, whole-line or trailing.
    const hash = text.indexOf('#');
    const body = hash >= 0 ? text.slice(0, hash) : text;
    if (body.trim() === '') return;
    const r = normalizeNumber(body, this.rules);
    if (!r.ok) {
      this.invalid++;
      return;
    }
    this.push(r.value);
  }
  /**
   * A line of digits and the formatting normalizeNumber removes (space - . ( )), nothing else:
   * `digits` of them, `value` their value (exact: at most twelve used) and `head` the first three.
   * The two Colombian mobile forms (`3001234567`, `573001234567` in docs/format.md "Numbers") are
   * taken here, as normalizeNumber would take them (test/unit/format-suppression.test.ts compares);
   * any other line goes through `line`. Returns false for those.
   */
  simple(digits: number, value: number, head: number): boolean {
    if (digits === 12 && head === 573) {
      this.push(value);
      return true;
    }
    if (digits === 10 && head >= 300 && head <= 399 && this.colombian) {
      this.push(570_000_000_000 + value);
      return true;
    }
    return false;
  }
  push(value: number): void {
    if (this.count === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.count++] = value;
  }
  finish(): ReadList {
    const list = hashNumbers(this.values, this.count, this.invalid);
    this.values = new Float64Array(0);
    return list;
  }
}

/** UTF-16 when a BOM says so; else UTF-8 (with or without its BOM). */
function encodingOf(head: Uint8Array): string {
  if (head.length >= 2 && head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  if (head.length >= 2 && head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  return 'utf-8';
}

function hasUtf8Bom(head: Uint8Array): boolean {
  return head.length >= 3 && head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf;
}

function fail(what: string, err: unknown): DroplineError {
  const reason = err instanceof Error ? err.message : String(err);
  return new DroplineError('DROPLINE_ERR_SUPPRESSION_LIST', `${what}: ${reason}`, { cause: err });
}

const LF = 10;
const CR = 13;
/** A UTF-16 code unit takes at most three bytes of UTF-8: a line of more bytes is too long unread. */
const MAX_LINE_BYTES = 3 * MAX_LINE;
const POW10 = [1, 10, 100, 1000];
/** The longest line (with its line break) ListLines matches others against. */
const MAX_PATTERN = 32;

/**
 * Splits UTF-8 bytes into lines (LF, CRLF or CR) for the Collector, however the chunks are
 * cut. A line of digits and the formatting normalizeNumber removes (space - . ( )) is read
 * from its bytes alone (Collector.simple): most lines of most lists, never made strings.
 * Any other line is decoded and read by Collector.line.
 */
class ListLines {
  readonly #out: Collector;
  readonly #decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  // The line being read: its digits so far, the first nine as `high` and the next three as
  // `low` (integers: a double's multiply-add chain cost ~2x here), and whether it is simple.
  #digits = 0;
  #high = 0;
  #low = 0;
  #simple = true;
  /** The bytes of a line begun in an earlier chunk (up to MAX_LINE_BYTES). */
  #carry: Uint8Array[] = [];
  #carried = 0;
  /** The line being read has more than MAX_LINE_BYTES: skipped, counted at its end. */
  #overlong = false;
  #firstByte = -1;
  #lastWasCr = false;
  /**
   * The last simple line read whole from one chunk, with its LF or CRLF (#learn): the lines
   * after it are most often laid out the same (one export, one format), and #alike reads those
   * by matching it, no byte classified. `#patternLength` 0: none yet.
   */
  readonly #pattern = new Uint8Array(MAX_PATTERN);
  #patternLength = 0;
  /** Where its digits are, and its other bytes (formatting, the line break). */
  readonly #digitAt = new Int32Array(12);
  #patternDigits = 0;
  readonly #otherAt = new Int32Array(MAX_PATTERN);
  #patternOthers = 0;

  constructor(out: Collector) {
    this.#out = out;
  }

  push(bytes: Uint8Array): void {
    let i = 0;
    if (this.#lastWasCr && bytes.length > 0) {
      this.#lastWasCr = false;
      if (bytes[0] === LF) i = 1; // the LF of a CRLF split across chunks
    }
    // At a line's start (nothing carried from the chunk before): the lines laid out alike.
    if (this.#patternLength > 0 && this.#carried === 0 && !this.#overlong) i = this.#alike(bytes, i);
    let start = i;
    let digits = this.#digits;
    let high = this.#high;
    let low = this.#low;
    let simple = this.#simple;
    for (; i < bytes.length; i++) {
      const c = bytes[i]!;
      const d = c - 48;
      if (d >= 0 && d <= 9) {
        if (digits < 9) high = high * 10 + d;
        else if (digits < 12) low = low * 10 + d;
        digits++;
        continue;
      }
      if (c !== LF && c !== CR) {
        // space - . ( ): formatting, as normalizeNumber reads it
        if (c !== 32 && c !== 45 && c !== 46 && c !== 40 && c !== 41) simple = false;
        continue;
      }
      this.#end(bytes, start, i, digits, high, low, simple);
      if (c === CR) {
        if (i + 1 < bytes.length) {
          if (bytes[i + 1] === LF) i++;
        } else this.#lastWasCr = true;
      }
      start = i + 1;
      digits = 0;
      high = 0;
      low = 0;
      simple = true;
      if (this.#patternLength > 0) {
        start = this.#alike(bytes, start);
        i = start - 1;
      }
    }
    this.#digits = digits;
    this.#high = high;
    this.#low = low;
    this.#simple = simple;
    if (start < bytes.length) this.#keep(bytes.subarray(start));
  }

  /**
   * Reads the lines from `i` on that are laid out as #pattern (the same bytes where it has
   * no digit, a digit where it has one), as the loop in push would read them: the same
   * digits, the same simple line. Returns where the first other line starts.
   */
  #alike(bytes: Uint8Array, i: number): number {
    const pattern = this.#pattern;
    const length = this.#patternLength;
    const digitAt = this.#digitAt;
    const otherAt = this.#otherAt;
    const others = this.#patternOthers;
    const digits = this.#patternDigits;
    const rest = digits - 9;
    const scale = POW10[rest]!;
    const out = this.#out;
    for (; i + length <= bytes.length; i += length) {
      // Its line break first: a line of another length fails here.
      if (bytes[i + length - 1] !== LF) break;
      let differ = 0;
      for (let j = 0; j < others; j++) differ |= bytes[i + otherAt[j]!]! ^ pattern[otherAt[j]!]!;
      // d | (9 - d) is negative when d is not a digit.
      let notDigit = 0;
      let high = 0;
      for (let j = 0; j < 9; j++) {
        const d = bytes[i + digitAt[j]!]! - 48;
        notDigit |= d | (9 - d);
        high = high * 10 + d;
      }
      let low = 0;
      for (let j = 9; j < digits; j++) {
        const d = bytes[i + digitAt[j]!]! - 48;
        notDigit |= d | (9 - d);
        low = low * 10 + d;
      }
      if (differ !== 0 || notDigit < 0) break;
      if (!out.simple(digits, high * scale + low, Math.floor(high / 1_000_000))) break;
    }
    return i;
  }

  /**
   * A simple line of `digits` digits read whole from this chunk, bytes[start, end), `end` its
   * line break: the pattern #alike matches, when the break is LF or CRLF and the line short.
   */
  #learn(bytes: Uint8Array, start: number, end: number, digits: number): void {
    let length = end - start + 1;
    if (bytes[end] === CR) {
      if (end + 1 >= bytes.length || bytes[end + 1] !== LF) return;
      length++;
    }
    if (length > MAX_PATTERN) return;
    let d = 0;
    let o = 0;
    for (let k = 0; k < length; k++) {
      const c = bytes[start + k]!;
      this.#pattern[k] = c;
      if (c >= 48 && c <= 57) this.#digitAt[d++] = k;
      else this.#otherAt[o++] = k;
    }
    this.#patternLength = length;
    this.#patternDigits = digits;
    this.#patternOthers = o;
  }

  /** The end of the input: its last line, if it has no line break. */
  end(): void {
    if (this.#carried > 0 || this.#overlong)
      this.#end(new Uint8Array(0), 0, 0, this.#digits, this.#high, this.#low, this.#simple);
  }

  /** A line begun in this chunk, to be ended in a later one. */
  #keep(part: Uint8Array): void {
    if (this.#overlong) return;
    if (this.#carried === 0) this.#firstByte = part[0]!;
    this.#carried += part.length;
    if (this.#carried > MAX_LINE_BYTES) {
      this.#overlong = true;
      this.#carry = [];
      return;
    }
    // A copy: the stream may reuse its buffer.
    this.#carry.push(new Uint8Array(part));
  }

  /** The line bytes[start, end), after whatever of it earlier chunks held. */
  #end(
    bytes: Uint8Array,
    start: number,
    end: number,
    digits: number,
    high: number,
    low: number,
    simple: boolean,
  ): void {
    const out = this.#out;
    // A simple line is ASCII: a byte a code unit.
    const length = this.#carried + (end - start);
    if (this.#overlong || length > MAX_LINE_BYTES || (simple && length > MAX_LINE)) {
      const firstByte = this.#carried > 0 || this.#overlong ? this.#firstByte : bytes[start];
      this.#reset();
      // Too long to be a number: invalid, unless it is a comment (it starts with #).
      if (firstByte !== HASH) out.invalid++;
      return;
    }
    if (simple && (digits === 10 || digits === 12)) {
      // high holds the first nine digits, low the rest.
      const rest = digits - 9;
      if (out.simple(digits, high * POW10[rest]! + low, Math.floor(high / 1_000_000))) {
        if (this.#carried === 0 && end < bytes.length) this.#learn(bytes, start, end, digits);
        this.#reset();
        return;
      }
    }
    let line: Uint8Array;
    if (this.#carried === 0) line = bytes.subarray(start, end);
    else {
      this.#carry.push(bytes.subarray(start, end));
      line = Buffer.concat(this.#carry);
    }
    this.#reset();
    const text = this.#decoder.decode(line);
    // Counted in UTF-16 code units, as the limit is.
    if (text.length > MAX_LINE) {
      if (text.charCodeAt(0) !== HASH) out.invalid++;
      return;
    }
    out.line(text);
  }

  #reset(): void {
    if (this.#carried > 0) this.#carry = [];
    this.#carried = 0;
    this.#overlong = false;
  }
}

/**
 * Parses a list from any byte stream (a local file, an S3 object, a file on a source): one number
 * per line, any format docs/format.md "Numbers" accepts; blank lines and `#` comments skipped; LF,
 * CRLF or CR; UTF-8 (BOM or not) or UTF-16 with BOM, whatever the chunk boundaries. Each number is
 * normalised with `rules` (allowedCountries ignored). Memory: the numbers (8 bytes each, the array
 * doubling as it grows) and one chunk; a line longer than 1 KiB is counted invalid without being
 * kept. A stream that fails throws DroplineError DROPLINE_ERR_SUPPRESSION_LIST, its message
 * starting with `what` (a name, never a secret).
 */
export async function readSuppressionList(
  bytes: AsyncIterable<Uint8Array>,
  rules: NumberRules = makeNumberRules(),
  what = 'suppression list',
  /** The list's size in bytes, when known (a hint: the numbers' array is made once). */
  size?: number,
): Promise<ReadList> {
  const out = new Collector(rules, size);
  const lines = new ListLines(out);
  // Chosen on the first bytes (a BOM). A UTF-16 list (rare: a spreadsheet's "Unicode
  // text") is decoded and encoded again as UTF-8, the lines' one form.
  let started = false;
  let utf16 = null as TextDecoder | null;
  const utf8 = new TextEncoder();
  let head: Uint8Array | null = null;
  const take = (chunk: Uint8Array): void => {
    if (utf16 === null) lines.push(chunk);
    else lines.push(utf8.encode(utf16.decode(chunk, { stream: true })));
  };
  const start = (bytes: Uint8Array): void => {
    started = true;
    const encoding = encodingOf(bytes);
    if (encoding !== 'utf-8') {
      utf16 = new TextDecoder(encoding); // it drops the BOM itself (ignoreBOM false)
      take(bytes);
    } else take(hasUtf8Bom(bytes) ? bytes.subarray(3) : bytes);
  };
  try {
    for await (const chunk of bytes) {
      if (started) {
        take(chunk);
        continue;
      }
      // A stream may hand over its first bytes one at a time: three tell the BOM.
      const got: Uint8Array = head ? Buffer.concat([head, chunk]) : chunk;
      if (got.length < 3)
        head = new Uint8Array(got); // a copy: the stream may reuse its buffer
      else {
        head = null;
        start(got);
      }
    }
    if (head) start(head);
    if (utf16 !== null) lines.push(utf8.encode(utf16.decode()));
    lines.end();
  } catch (err) {
    throw fail(what, err);
  }
  return out.finish();
}

/**
 * Streams the list in the local file at `path` (see readSuppressionList). An unreadable file
 * throws DroplineError DROPLINE_ERR_SUPPRESSION_LIST naming the path.
 *
 * The global list is the whole configuration's, not a source's: the daemon and `validate`
 * read it with the default rules (a national number is Colombian), whatever a source's
 * defaultCountry, so both give the same answer. A source's own list is read with that
 * source's defaultCountry (src/pipeline/suppression-lists.ts).
 */
export async function loadSuppressionList(
  path: string,
  rules: NumberRules = makeNumberRules(),
): Promise<SuppressionList> {
  let bytes: number;
  try {
    // Opening first turns a missing file, a directory or a permission problem into one
    // clear error before any streaming starts.
    const fh = await open(path, 'r');
    try {
      const st = await fh.stat();
      if (st.isDirectory()) throw new Error('EISDIR: a folder, not a file');
      bytes = st.size;
    } finally {
      await fh.close();
    }
  } catch (err) {
    throw fail(path, err);
  }
  return readSuppressionList(readFileChunks(path), rules, path, bytes);
}
