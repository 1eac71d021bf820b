// docs/format.md "Separator and quotes" and the layouts: one record's text → fields. Pure.
//
// Not a general CSV parser on purpose: the unheaded personalized record ("the message is
// everything after the first SEP") is not CSV, the format resynchronises a broken quote at
// the next physical line and bounds a record by the line-length limit, and a CSV parser
// costs ~4 µs a row here, the whole time budget
// (docs/architecture.md "The guarantees and where they live").

/** The record continues on the next physical line (a quoted field is still open). */
export const OPEN = 'open' as const;
/** A quoted field is followed by text other than the separator. */
export const MALFORMED = 'malformed' as const;

export type Parsed<T> = T | typeof OPEN | typeof MALFORMED;

export const SEPARATORS = ';\t|,';

const QUOTE = 34;
const SPACE = 32;

interface Quoted {
  value: string;
  end: number;
}

/** `s[i]` is a quote: the field up to its closing quote, with `""` unescaped. */
function scanQuoted(s: string, i: number): Quoted | typeof OPEN {
  let j = i + 1;
  let escaped = false;
  for (;;) {
    const q = s.indexOf('"', j);
    if (q === -1) return OPEN;
    if (s.charCodeAt(q + 1) === QUOTE) {
      escaped = true;
      j = q + 2;
      continue;
    }
    const raw = s.slice(i + 1, q);
    return { value: escaped ? raw.replaceAll('""', '"') : raw, end: q + 1 };
  }
}

function skipSpaces(s: string, i: number): number {
  while (i < s.length && (s.charCodeAt(i) === SPACE || s.charCodeAt(i) === 9)) i++;
  return i;
}

export interface PersonalizedFields {
  number: string;
  message: string;
  /** The message was quoted: its line breaks are kept. */
  quoted: boolean;
  /** Where the message starts in the record's text, or -1 when it is not a part of it (quoted). */
  at: number;
}

/**
 * The personalized layout without a header: field 1 is the number, the message is everything after
 * the first SEP (one trailing SEP dropped), unquoted when it starts with a quote.
 */
export function parsePersonalized(s: string, sep: string | null): Parsed<PersonalizedFields> {
  let number: string;
  let i: number;
  if (s.charCodeAt(0) === QUOTE) {
    const q = scanQuoted(s, 0);
    if (q === OPEN) return OPEN;
    number = q.value;
    i = skipSpaces(s, q.end);
    if (i < s.length && s[i] !== sep) return MALFORMED;
  } else {
    const j = sep === null ? -1 : s.indexOf(sep);
    number = j === -1 ? s : s.slice(0, j);
    i = j === -1 ? s.length : j;
  }
  const m = i + 1;
  if (m >= s.length) return { number, message: '', quoted: false, at: -1 };
  if (s.charCodeAt(m) === QUOTE) {
    const q = scanQuoted(s, m);
    if (q === OPEN) return OPEN;
    const after = skipSpaces(s, q.end);
    if (after < s.length && !(s[after] === sep && skipSpaces(s, after + 1) === s.length)) return MALFORMED;
    return { number, message: q.value, quoted: true, at: -1 };
  }
  let end = s.length;
  if (sep !== null && s.endsWith(sep) && end - 1 >= m) end--;
  return { number, message: s.slice(m, end), quoted: false, at: m };
}

/**
 * docs/format.md "With a header line": strict CSV with SEP. `quoted`, when given, is filled with
 * whether each field was quoted (a quoted message is kept exactly, docs/format.md). `out`,
 * when given, is the array the fields are written to and returned (reused by the reader
 * from record to record: one array fewer per record).
 */
export function parseCsv(
  s: string,
  sep: string,
  quoted?: boolean[],
  out?: string[],
  /** Filled with where each field starts in `s` (-1: a quoted field, not a part of s). */
  starts?: number[],
): Parsed<string[]> {
  const fields = out ?? [];
  let k = 0;
  let i = 0;
  const n = s.length;
  // Written by index and cut to length at the end: emptying the arrays first (length = 0)
  // gave up their storage, to be allocated again by the next push, for every record.
  for (;;) {
    if (s.charCodeAt(i) === QUOTE) {
      const q = scanQuoted(s, i);
      if (q === OPEN) return OPEN;
      fields[k] = q.value;
      if (quoted) quoted[k] = true;
      if (starts) starts[k] = -1;
      k++;
      i = skipSpaces(s, q.end);
      if (i < n && s[i] !== sep) return MALFORMED;
    } else {
      const j = s.indexOf(sep, i);
      fields[k] = j === -1 ? s.slice(i) : s.slice(i, j);
      if (quoted) quoted[k] = false;
      if (starts) starts[k] = i;
      k++;
      i = j === -1 ? n : j;
    }
    if (i < n) {
      i++; // the separator
      if (i < n) continue;
      fields[k] = '';
      if (quoted) quoted[k] = false;
      if (starts) starts[k] = -1;
      k++;
    }
    if (fields.length !== k) fields.length = k;
    if (quoted && quoted.length !== k) quoted.length = k;
    return fields;
  }
}

/** The bulk layout's message record: the whole line, or one quoted field. */
export function parseMessageRecord(s: string): Parsed<{ message: string; quoted: boolean }> {
  if (s.charCodeAt(0) !== QUOTE) return { message: s, quoted: false };
  const q = scanQuoted(s, 0);
  if (q === OPEN) return OPEN;
  const after = skipSpaces(s, q.end);
  if (after < s.length && !(SEPARATORS.includes(s[after]!) && skipSpaces(s, after + 1) === s.length)) {
    return MALFORMED;
  }
  return { message: q.value, quoted: true };
}

function isSeparatorCode(c: number): boolean {
  return c === 59 || c === 44 || c === 124 || c === 9;
}

const SEPARATOR_OR_QUOTE = /[;,|\t"]/;

/** Whether a numbers record holds more than one field (or a quote): most hold one number. */
export function hasSeparatorOrQuote(s: string): boolean {
  return SEPARATOR_OR_QUOTE.test(s);
}

/** The bulk layout's numbers record: numbers separated by any of `; , | TAB`. Empty ones skipped. */
export function splitNumbers(s: string): string[] {
  const out: string[] = [];
  let start = 0;
  const n = s.length;
  for (let i = 0; i <= n; i++) {
    if (i === n || isSeparatorCode(s.charCodeAt(i))) {
      let token = s.slice(start, i).trim();
      if (
        token.length >= 2 &&
        token.charCodeAt(0) === QUOTE &&
        token.charCodeAt(token.length - 1) === QUOTE
      ) {
        token = token.slice(1, -1).trim();
      }
      if (token.length > 0) out.push(token);
      start = i + 1;
    }
  }
  return out;
}

/**
 * The first SEP met from the left outside quoted text (docs/format.md "Separator and quotes"), or
 * null.
 */
export function detectSeparator(s: string): string | null {
  let inQuotes = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === QUOTE) inQuotes = !inQuotes;
    else if (!inQuotes && isSeparatorCode(c)) return s[i]!;
  }
  return null;
}

const TRAILER = /^\s*EOF\s*(?:[;\t|,]\s*(\d+)\s*)?$/i;

/**
 * docs/format.md "Proving a file is complete: trailer": `EOF` or `EOF;<n>` (any SEP, any case).
 * `undefined` when not a trailer.
 */
export function parseTrailer(s: string): { count: number | null } | undefined {
  // Checked for every record: most lines are ruled out by their first character.
  const c = s.charCodeAt(0);
  if (s.length > 40 || (c !== 69 && c !== 101 && c !== 32 && c !== 9)) return undefined;
  const m = TRAILER.exec(s);
  if (!m) return undefined;
  return { count: m[1] === undefined ? null : Number(m[1]) };
}
