// FORMAT.md section 5, SUPPRESSED: the opt-out list, a local text file of numbers.
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
    return new SortedNumbers(sorted.slice(0, n), this.invalid);
  }
}

function encodingOf(head: Buffer): { label: string; bom: number } {
  if (head.length >= 2 && head[0] === 0xff && head[1] === 0xfe) return { label: 'utf-16le', bom: 2 };
  if (head.length >= 2 && head[0] === 0xfe && head[1] === 0xff) return { label: 'utf-16be', bom: 2 };
  return { label: 'utf-8', bom: 0 };
}

function fail(path: string, err: unknown): DroplineError {
  const reason = err instanceof Error ? err.message : String(err);
  return new DroplineError('DROPLINE_ERR_SUPPRESSION_LIST', `${path}: ${reason}`, { cause: err });
}

/**
 * Streams the list at `path`: one number per line, any format FORMAT.md 5 accepts;
 * blank lines and `#` comments skipped; LF, CRLF or CR; UTF-8 (BOM or not) or UTF-16 with
 * BOM. Each number is normalised with `rules` (allowedCountries ignored). An unreadable
 * file throws DroplineError DROPLINE_ERR_SUPPRESSION_LIST.
 *
 * The list is the whole configuration's, not a source's: the daemon and `validate` read it
 * with the default rules (a national number is Colombian), whatever a source's
 * defaultCountry, so both give the same answer.
 */
export async function loadSuppressionList(
  path: string,
  rules: NumberRules = makeNumberRules(),
): Promise<SuppressionList> {
  let encoding: { label: string; bom: number };
  try {
    // Opening first turns a missing file, a directory or a permission problem into one
    // clear error before any streaming starts.
    const fh = await open(path, 'r');
    try {
      const head = Buffer.alloc(2);
      const { bytesRead } = await fh.read(head, 0, 2, 0);
      encoding = encodingOf(head.subarray(0, bytesRead));
    } finally {
      await fh.close();
    }
  } catch (err) {
    throw fail(path, err);
  }

  const out = new Collector(rules);
  // The UTF-8 decoder drops a BOM itself (ignoreBOM false); UTF-16 BOMs are skipped by start.
  const decoder = new TextDecoder(encoding.label);
  let carry = '';
  let overlong = false;
  let lastWasCr = false;
  try {
    for await (const chunk of createReadStream(path, { start: encoding.bom, highWaterMark: 256 * 1024 })) {
      const text = decoder.decode(chunk as Buffer, { stream: true });
      let start = 0;
      let i = 0;
      if (lastWasCr && text.charCodeAt(0) === 10) start = i = 1; // the LF of a CRLF split across chunks
      lastWasCr = false;
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
    }
    const rest = carry + decoder.decode();
    if (overlong) out.invalid++;
    else out.line(rest);
  } catch (err) {
    throw fail(path, err);
  }
  return out.finish();
}
