// docs/format.md "Numbers": recipient numbers to their sent form.
//
// This runs once per recipient on files of millions of lines, so the Colombian cases
// (rules 1 to 3) are decided by a single charCodeAt scan with no regex and no
// libphonenumber call; libphonenumber-js (~5-20 µs a number here) is reserved for the
// international rules 4 and 5, behind a small bounded cache.
//
// defaultCountry other than CO (our reading of "default country CO; configurable"):
// rules 1 and 2 are Colombian national forms and apply only when defaultCountry is CO.
// For another default country, a number written without `+`/`00` that has at most 10
// digits, or that starts with a single 0 (a trunk prefix, e.g. GB 07400 123456), and is
// not rule 3, is parsed by libphonenumber as a national number of that country and must
// pass the same mobile checks as rule 4. Rule 3 (12 digits starting 57), rule 4 (`+`,
// `00`) and rule 5 (11 to 15 digits) apply whatever the default country.

import { createRequire } from 'node:module';
import type { CountryCode, PhoneNumber } from 'libphonenumber-js/max';

// Loaded on first use: its metadata costs ~20 MB of memory and start-up time that a file of
// Colombian numbers never needs.
type PhoneLib = typeof import('libphonenumber-js/max');
let phoneLib: PhoneLib | null = null;
function lib(): PhoneLib {
  phoneLib ??= createRequire(import.meta.url)('libphonenumber-js/max') as PhoneLib;
  return phoneLib;
}

export interface NumberRules {
  /** ISO 3166 alpha-2, upper-case; default 'CO'. */
  defaultCountry: string;
  /** ISO alpha-2 upper-case; null = all allowed. */
  allowedCountries: ReadonlySet<string> | null;
}

export type NumberErrorCode = 'INVALID_NUMBER' | 'NOT_MOBILE' | 'COUNTRY_NOT_ALLOWED';

export type NumberResult =
  /**
   * number: the sent form, digits only, country code first. country: ISO alpha-2. value:
   * sentValue(number), what the duplicate index and the suppression lists key numbers by.
   */
  | { ok: true; number: string; country: string; value: number }
  /** number/country are set when known (NOT_MOBILE, COUNTRY_NOT_ALLOWED). */
  | { ok: false; code: NumberErrorCode; number?: string; country?: string };

/** libphonenumber's region code for non-geographic numbers (+800, +882…). */
export const NON_GEOGRAPHIC_COUNTRY = '001';

function checkCountry(code: string, what: string): string {
  const c = code.trim().toUpperCase();
  if (c !== 'CO' && (!/^[A-Z]{2}$/.test(c) || !lib().isSupportedCountry(c))) {
    throw new Error(`${what}: "${code}" is not an ISO 3166 alpha-2 country code (e.g. CO, MX, US)`);
  }
  return c;
}

/**
 * Validated rules. Codes are trimmed and upper-cased; an unknown code throws an Error naming
 * it. An empty allowed list throws too: it would reject every number, which is never meant.
 */
export function makeNumberRules(defaultCountry = 'CO', allowed?: readonly string[] | null): NumberRules {
  const def = checkCountry(defaultCountry, 'default country');
  if (allowed == null) return { defaultCountry: def, allowedCountries: null };
  if (allowed.length === 0) {
    throw new Error('allowed countries: the list is empty; name at least one country code or leave it unset');
  }
  const set = new Set<string>();
  for (const a of allowed) set.add(checkCountry(a, 'allowed countries'));
  return { defaultCountry: def, allowedCountries: set };
}

function invalid(): NumberResult {
  return { ok: false, code: 'INVALID_NUMBER' };
}

/** More digits than any E.164 number (15) plus an `00` prefix: stop scanning early. */
const MAX_DIGITS = 17;

// Scan results, kept in module scope so the hot path allocates nothing but the answer.
const codes = new Uint16Array(MAX_DIGITS);
let scanPlus = false;
let scanFirst = -1;
let scanLast = -1;
let scanDigits = 0;
let scanGap = false;

/**
 * One pass over raw: collects the digits' char codes, finds a leading `+`, notes whether
 * formatting sits between digits. Returns false for any character that is neither a
 * digit, formatting, a leading `+`, nor white space at either end.
 */
function scan(raw: string): boolean {
  const len = raw.length;
  let plus = false;
  let first = -1;
  let last = -1;
  let digits = 0;
  let gap = false;
  // A tab, line break or BOM is tolerated only around the number (what trim() removes),
  // never between its digits: in bulk records a TAB separates numbers.
  let edgeSpace = false;
  for (let i = 0; i < len; i++) {
    const c = raw.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (edgeSpace || digits === MAX_DIGITS) return false;
      if (first < 0) first = i;
      else if (last !== i - 1) gap = true;
      last = i;
      codes[digits++] = c;
    } else if (c === 32 || c === 45 || c === 46 || c === 40 || c === 41) {
      // space - . ( )
      if (edgeSpace) return false;
    } else if (c === 43) {
      if (plus || first >= 0 || edgeSpace) return false;
      plus = true;
    } else if (c === 0xa0 || c === 0x202f || (c >= 0x2000 && c <= 0x200a) || c === 0x3000) {
      // NBSP and the other Unicode spaces spreadsheets and word processors put in numbers
      if (edgeSpace) return false;
    } else if ((c >= 9 && c <= 13) || c === 0xfeff || c === 0x2028 || c === 0x2029 || c === 0x1680) {
      if (first >= 0) edgeSpace = true;
    } else {
      return false;
    }
  }
  scanPlus = plus;
  scanFirst = first;
  scanLast = last;
  scanDigits = digits;
  scanGap = gap;
  return digits > 0;
}

/** The scanned digits as a string, skipping `skip` leading ones. */
function digitsOf(raw: string, skip: number): string {
  if (!scanGap) {
    const from = scanFirst + skip;
    return from === 0 && scanLast === raw.length - 1 ? raw : raw.slice(from, scanLast + 1);
  }
  return String.fromCharCode.apply(null, codes.subarray(skip, scanDigits) as unknown as number[]);
}

/** Rule 1's sent form: 57 and the ten scanned digits, built in one call when formatted. */
function co57(raw: string): string {
  if (!scanGap) return '57' + digitsOf(raw, 0);
  const k = codes;
  return String.fromCharCode(53, 55, k[0]!, k[1]!, k[2]!, k[3]!, k[4]!, k[5]!, k[6]!, k[7]!, k[8]!, k[9]!);
}

/** Rule 3's digits: the twelve scanned digits. */
function co12(raw: string): string {
  if (!scanGap) return digitsOf(raw, 0);
  const k = codes;
  return String.fromCharCode(
    k[0]!,
    k[1]!,
    k[2]!,
    k[3]!,
    k[4]!,
    k[5]!,
    k[6]!,
    k[7]!,
    k[8]!,
    k[9]!,
    k[10]!,
    k[11]!,
  );
}

function allow(country: string, number: string, rules: NumberRules, value = sentValue(number)): NumberResult {
  const allowed = rules.allowedCountries;
  if (allowed !== null && !allowed.has(country))
    return { ok: false, code: 'COUNTRY_NOT_ALLOWED', number, country };
  return { ok: true, number, country, value };
}

/**
 * The value of a Colombian mobile written as bare digits, the form of most numbers of most
 * files: twelve starting 573 (rule 3), or, when the default country is CO, ten starting 3
 * (rule 1). -1 for anything else, which scan() reads. One pass, no `codes` kept, no string
 * made for rule 3: ~2.5x faster than scan() and sentValue() on a million numbers.
 */
function bareMobile(raw: string, co: boolean): number {
  const n = raw.length;
  if (n !== 12 && (n !== 10 || !co)) return -1;
  const from = n - 10;
  // The ten national digits, in two halves (integers: exact, and cheaper than a double chain).
  let hi = 0;
  for (let i = from; i < from + 5; i++) {
    const d = raw.charCodeAt(i) - 48;
    if (d >>> 0 > 9) return -1;
    hi = hi * 10 + d;
  }
  let lo = 0;
  for (let i = from + 5; i < n; i++) {
    const d = raw.charCodeAt(i) - 48;
    if (d >>> 0 > 9) return -1;
    lo = lo * 10 + d;
  }
  // The national number starts with 3 (a mobile); twelve digits start 57.
  if (hi < 30_000 || hi > 39_999) return -1;
  if (n === 12 && (raw.charCodeAt(0) !== 53 || raw.charCodeAt(1) !== 55)) return -1;
  return 570_000_000_000 + hi * 100_000 + lo;
}

/** Rule 3, and rules 1 to 3 for `+57`: twelve digits starting 57. */
function colombian12(d: string, rules: NumberRules): NumberResult {
  if (d.charCodeAt(2) === 51) return allow('CO', d, rules);
  return { ok: false, code: 'NOT_MOBILE', number: d, country: 'CO' };
}

// ---- libphonenumber (rules 4 and 5, and national numbers of other default countries) ----

/** Cached verdict before allowedCountries, which is per source and checked afterwards. */
interface Verdict {
  /** null: a mobile number. */
  readonly code: null | 'INVALID_NUMBER' | 'NOT_MOBILE';
  readonly number: string;
  readonly country: string;
}

const CACHE_MAX = 10_000;
const intlCache = new Map<string, Verdict>();
const nationalCaches = new Map<string, Map<string, Verdict>>();

function remember(cache: Map<string, Verdict>, key: string, v: Verdict): Verdict {
  // FIFO eviction: Map iterates in insertion order, so the first key is the oldest.
  if (cache.size >= CACHE_MAX) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  cache.set(key, v);
  return v;
}

const BAD: Verdict = Object.freeze({ code: 'INVALID_NUMBER', number: '', country: '' });

function judge(p: PhoneNumber | undefined, sent?: string): Verdict {
  if (p === undefined) return BAD;
  // With the max metadata, isValid() is exactly getType() !== undefined and costs the same
  // again (several µs): one getType() call answers both.
  const type = p.getType();
  if (type === undefined) return BAD;
  const number = sent ?? p.number.slice(1);
  const country = p.country ?? NON_GEOGRAPHIC_COUNTRY;
  if (type === 'MOBILE' || type === 'FIXED_LINE_OR_MOBILE') return { code: null, number, country };
  if (type === 'FIXED_LINE') return { code: 'NOT_MOBILE', number, country };
  return BAD;
}

function judgeInternational(d: string): Verdict {
  const v = judge(lib().parsePhoneNumberFromString('+' + d));
  if (v !== BAD) return v;
  // Mexico dropped the mobile `1` after the country code in 2019 and libphonenumber no
  // longer accepts it, but docs/format.md "Numbers" names 5215512345678 as a valid sent number and
  // senders still write it: validate without the 1, send the digits as written.
  if (d.length === 13 && d.startsWith('521')) {
    const v = judge(lib().parsePhoneNumberFromString('+52' + d.slice(3)), d);
    if (v.code === null) return v;
  }
  return BAD;
}

function fromVerdict(v: Verdict, rules: NumberRules): NumberResult {
  if (v.code === null) return allow(v.country, v.number, rules);
  if (v.code === 'NOT_MOBILE') return { ok: false, code: 'NOT_MOBILE', number: v.number, country: v.country };
  return invalid();
}

/** Rule 4 (and 5): `d` is the E.164 digits, country code first. */
function international(d: string, rules: NumberRules): NumberResult {
  // A `+57` number follows rules 1 to 3: only the twelve-digit form can be right.
  if (d.charCodeAt(0) === 53 && d.charCodeAt(1) === 55) {
    return d.length === 12 ? colombian12(d, rules) : invalid();
  }
  // The shortest E.164 numbers in use have 7 digits (+683 Niue): anything shorter is junk
  // not worth a libphonenumber call.
  if (d.length < 7 || d.length > 15 || d.charCodeAt(0) === 48) return invalid();
  let v = intlCache.get(d);
  if (v === undefined) v = remember(intlCache, d, judgeInternational(d));
  return fromVerdict(v, rules);
}

function national(d: string, rules: NumberRules): NumberResult {
  const country = rules.defaultCountry;
  let cache = nationalCaches.get(country);
  if (cache === undefined) nationalCaches.set(country, (cache = new Map()));
  let v = cache.get(d);
  if (v === undefined) {
    const p = lib().parsePhoneNumberFromString(d, { defaultCountry: country as CountryCode, extract: false });
    v = remember(cache, d, judge(p));
  }
  return fromVerdict(v, rules);
}

/**
 * The sent form of `raw`, or the reason it cannot be sent. Never throws. Formatting (spaces
 * including NBSP, `-`, `.`, `(`, `)`) is removed first, then the six rows of docs/format.md
 * "Numbers" apply in order. `allowedCountries` is checked only on otherwise valid mobiles.
 */
export function normalizeNumber(raw: string, rules: NumberRules): NumberResult {
  const co = rules.defaultCountry === 'CO';
  const bare = bareMobile(raw, co);
  if (bare >= 0) return allow('CO', raw.length === 12 ? raw : '57' + raw, rules, bare); // rules 3, 1
  if (!scan(raw)) return invalid();
  const n = scanDigits;
  const c0 = codes[0]!;
  const c1 = n > 1 ? codes[1]! : 0;
  if (scanPlus) return international(digitsOf(raw, 0), rules);
  if (c0 === 48 && c1 === 48) return international(digitsOf(raw, 2), rules); // rule 4: 00
  if (co && n === 10) {
    if (c0 === 51) return allow('CO', co57(raw), rules); // rule 1
    if (c0 === 54 && c1 === 48) return { ok: false, code: 'NOT_MOBILE', number: co57(raw), country: 'CO' }; // rule 2
    return invalid();
  }
  if (n === 12 && c0 === 53 && c1 === 55) return colombian12(co12(raw), rules); // rule 3
  if (!co && (n <= 10 || c0 === 48)) return national(digitsOf(raw, 0), rules);
  // rule 5: 11 to 15 digits not starting with 57
  if (n >= 11 && n <= 15 && !(c0 === 53 && c1 === 55)) return international(digitsOf(raw, 0), rules);
  return invalid(); // rule 6
}

/**
 * The numeric value of a sent form (digits only, at most 15: exact in a double), or -1 when
 * `sent` is not one. What the duplicate index and the suppression list key numbers by: as
 * Number(sent), without its parser.
 */
export function sentValue(sent: string): number {
  const len = sent.length;
  if (len === 0 || len > 15) return -1;
  let v = 0;
  for (let i = 0; i < len; i++) {
    const c = sent.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}
