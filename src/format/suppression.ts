// FORMAT.md section 5, SUPPRESSED: an opt-out list, a text file of numbers (a local file, an
// S3 object or a file on a source: readSuppressionList takes any byte stream).
//
// Lists can hold millions of numbers, so the file is streamed and each number is kept
// as its sent form's numeric value (at most 15 digits, exact in a double) in a sorted
// Float64Array: 8 bytes a number, where a Set of strings costs ~100.

import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { DroplineError } from '../errors.ts';
import { makeNumberRules, type NumberRules, normalizeNumber } from './numbers.ts';

export interface SuppressionList {
  /** Whether a sent-form number (digits only, country code first) is suppressed. */
  has(sentNumber: string): boolean;
  /** Distinct numbers on the list. */
  readonly size: number;
  /** Non-comment lines that did not normalise to a mobile number (not fatal). */
  readonly invalid: number;
}

/** No number line is anywhere near this long; longer lines are counted invalid unread. */
const MAX_LINE = 1024;
const MAX_SENT_DIGITS = 15;

/** The numeric value of a sent-form number, or -1 when it is not one. */
function sentValue(s: string): number {
  const len = s.length;
  if (len === 0 || len > MAX_SENT_DIGITS) return -1;
  let v = 0;
  for (let i = 0; i < len; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

class SortedNumbers implements SuppressionList {
  readonly #values: Float64Array;
  readonly invalid: number;
  constructor(values: Float64Array, invalid: number) {
    this.#values = values;
    this.invalid = invalid;
  }
  get size(): number {
    return this.#values.length;
  }
  has(sentNumber: string): boolean {
    const v = sentValue(sentNumber);
    if (v < 0) return false;
    const a = this.#values;
    let lo = 0;
    let hi = a.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const m = a[mid]!;
      if (m < v) lo = mid + 1;
      else if (m > v) hi = mid - 1;
      else return true;
    }
    return false;
  }
}

class Collector {
  values = new Float64Array(1024);
  count = 0;
  invalid = 0;
  readonly rules: NumberRules;
  constructor(rules: NumberRules) {
    // A suppressed number is suppressed whatever its country.
    this.rules = { ...rules, allowedCountries: null };
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
    if (this.count === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.count++] = sentValue(r.number);
  }
  finish(): SuppressionList {
    const sorted = this.values.subarray(0, this.count).sort();
    let n = 0;
    for (let i = 0; i < sorted.length; i++) {
      if (n === 0 || sorted[i] !== sorted[n - 1]) sorted[n++] = sorted[i]!;
    }
    // A copy only when it frees more than an eighth of the array: the copy costs as much again
    // at the peak, and the array doubles as it grows (a million numbers: 8 MB kept, not 16).
    const spare = this.values.length - n;
    const kept = spare * 8 > this.values.length ? sorted.slice(0, n) : sorted.subarray(0, n);
    this.values = new Float64Array(0);
    return new SortedNumbers(kept, this.invalid);
  }
}

/** UTF-16 when a BOM says so; else UTF-8 (with or without its BOM). */
function encodingOf(head: Uint8Array): string {
  if (head.length >= 2 && head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  if (head.length >= 2 && head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  return 'utf-8';
}

function fail(what: string, err: unknown): DroplineError {
  const reason = err instanceof Error ? err.message : String(err);
  return new DroplineError('DROPLINE_ERR_SUPPRESSION_LIST', `${what}: ${reason}`, { cause: err });
}

/**
 * Parses a list from any byte stream (a local file, an S3 object, a file on a source): one
 * number per line, any format FORMAT.md 5 accepts; blank lines and `#` comments skipped; LF,
 * CRLF or CR; UTF-8 (BOM or not) or UTF-16 with BOM, whatever the chunk boundaries. Each
 * number is normalised with `rules` (allowedCountries ignored). Memory: the numbers (8 bytes
 * each, the array doubling as it grows) and one chunk; a line longer than 1 KiB is counted
 * invalid without being kept. A stream that fails throws DroplineError
 * DROPLINE_ERR_SUPPRESSION_LIST, its message starting with `what` (a name, never a secret).
 */
export async function readSuppressionList(
  bytes: AsyncIterable<Uint8Array>,
  rules: NumberRules = makeNumberRules(),
  what = 'suppression list',
): Promise<SuppressionList> {
  const out = new Collector(rules);
  // Chosen on the first two bytes (a BOM); the decoder drops the BOM itself (ignoreBOM false).
  let decoder: TextDecoder | null = null;
  let head: Uint8Array | null = null;
  let carry = '';
  let overlong = false;
  let lastWasCr = false;
  const take = (text: string): void => {
    let start = 0;
    let i = 0;
    if (lastWasCr && text.charCodeAt(0) === 10) start = i = 1; // the LF of a CRLF split across chunks
    if (text.length > 0) lastWasCr = false;
    for (; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      if (overlong) {
        out.invalid++;
        overlong = false;
        carry = '';
      } else {
        out.line(carry + text.slice(start, i));
        carry = '';
      }
      if (c === 13) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          lastWasCr = true;
        }
      }
      start = i + 1;
    }
    if (!overlong) {
      carry += text.slice(start);
      if (carry.length > MAX_LINE) {
        overlong = true;
        carry = '';
      }
    }
  };
  try {
    for await (const chunk of bytes) {
      if (decoder === null) {
        // A stream may hand over its first bytes one at a time: two are needed for the BOM.
        const got: Uint8Array = head ? Buffer.concat([head, chunk]) : chunk;
        if (got.length < 2) {
          head = got;
          continue;
        }
        head = null;
        decoder = new TextDecoder(encodingOf(got));
        take(decoder.decode(got, { stream: true }));
        continue;
      }
      take(decoder.decode(chunk, { stream: true }));
    }
    if (decoder === null) decoder = new TextDecoder('utf-8');
    const rest = (head ? decoder.decode(head, { stream: true }) : '') + decoder.decode();
    take(rest);
    if (overlong) out.invalid++;
    else out.line(carry);
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
  try {
    // Opening first turns a missing file, a directory or a permission problem into one
    // clear error before any streaming starts.
    const fh = await open(path, 'r');
    try {
      const st = await fh.stat();
      if (st.isDirectory()) throw new Error('EISDIR: a folder, not a file');
    } finally {
      await fh.close();
    }
  } catch (err) {
    throw fail(path, err);
  }
  return readSuppressionList(createReadStream(path, { highWaterMark: 256 * 1024 }), rules, path);
}
