// A recipient's text as the reader prepares it (docs/format.md "Messages"): merged,
// control characters removed, transliterated under gsm7, its segments, its hash for the
// duplicate index and its warnings. Pure functions, run once a record.
import { REASONS } from '../errors.ts';
import { hashJoined, joinedScan, scanText, scanTextAt, textScan } from './dedupe.ts';
import type { NumberResult } from './numbers.ts';
import { countJoined, countSegments, isPlainGsm, type SegmentInfo } from './segments.ts';
import { joinTemplate, type Template } from './template.ts';
import { transliterate, transliteratedSegmentsOf, transliterationReadsText } from './transliterate.ts';

export interface PreparedMessage {
  /** The text sent: merged, control characters removed, transliterated under gsm7. */
  text: string;
  segments: SegmentInfo;
  /** The text's hash for the duplicate index (0: not hashed, the bulk message). */
  hash: number;
  /**
   * The message's warnings, as bits (CONTROL_REMOVED, LONG, UCS2): their texts are written
   * only when listed or yielded (warningMessage), so a million UCS-2 texts allocate nothing
   * for the warnings past the first 1000.
   */
  warnings: number;
  empty: boolean;
  /** Segments of the text as the sender wrote it (before transliteration). */
  asWritten: number;
  /** Segments of the text transliterated (sent under gsm7, the alternative under never). */
  transliterated: number;
  /** Transliteration changes (or, under never, would change) the text. */
  changed: boolean;
}

// C0 control characters other than LF (line breaks inside quoted messages are kept as LF).
const CONTROL = /[\x00-\x09\x0b-\x1f]/;
const CONTROL_ALL = /[\x00-\x09\x0b-\x1f]/g;
/** A line break (CRLF, CR or LF) in an email field: one space. */
const FIELD_BREAKS = /\r\n|[\r\n]/g;

/**
 * An email record's fields with every line break made a space and every other C0 control
 * character removed, or `fields` itself when none has one: the service merges them into the
 * subject, where a line feed would start another header (`Ana\nBcc: …`).
 */
export function oneLineFields(fields: readonly string[]): readonly string[] {
  if (!fields.some((f) => CONTROL_OR_LF.test(f))) return fields;
  return fields.map((f) => f.replace(FIELD_BREAKS, ' ').replace(CONTROL_ALL, ''));
}
const CONTROL_OR_LF = /[\x00-\x1f]/;
const LONG_MESSAGE_CHARS = 500;
export const NO_TEXT: PreparedMessage = {
  text: '',
  segments: { encoding: 'gsm7', segments: 0, gsm7Segments: 0, nonGsm: [] },
  hash: 0,
  warnings: 0,
  empty: true,
  asWritten: 0,
  transliterated: 0,
  changed: false,
};
export const MESSAGE_ID_MAX = 64;

/** PreparedMessage.warnings: one bit a warning, in the order they are listed. */
const CONTROL_REMOVED = 1;
const LONG = 2;
export const UCS2 = 4;
export const MESSAGE_WARNINGS = [
  [CONTROL_REMOVED, 'CONTROL_CHARS_REMOVED'],
  [LONG, 'LONG_MESSAGE'],
  [UCS2, 'UCS2_MESSAGE'],
] as const;

/** LONG_MESSAGE's hint in an RCS file (REASONS' speaks of segments, which RCS has not). */
export const RCS_LONG_HINT =
  'the service recommends RCS messages under 500 characters (no limit): shorten it if you can';

export function warningMessage(
  code: (typeof MESSAGE_WARNINGS)[number][1],
  msg: PreparedMessage,
  rcs: boolean,
): string {
  switch (code) {
    case 'LONG_MESSAGE':
      return rcs
        ? `the message has ${msg.text.length} characters (over 500, the most the service recommends for RCS)`
        : `the message has ${msg.text.length} characters (over 500)`;
    case 'UCS2_MESSAGE': {
      const s = msg.segments;
      const chars = s.nonGsm.map((c) => `'${c}'`).join(', ');
      return `${chars} force UCS-2 (70 characters a segment instead of 160): ${s.segments} segment(s), ${s.gsm7Segments} in GSM-7`;
    }
    default:
      return REASONS[code].message;
  }
}

/**
 * Runs once per personalized record: the text's hash (for duplicates) and whether it is
 * plain GSM come from one pass over it (scanText), and nothing is allocated for the
 * warnings of a message. A plain (ASCII GSM-7) text, most of them, skips the
 * control-character and transliteration work altogether.
 */
export function prepareMessage(
  raw: string,
  quoted: boolean,
  hashText: boolean,
  gsm7: boolean,
  /** The bytes raw was read from, and where it is in them (TextBytes): it is hashed from them. */
  bytes: Uint8Array | null = null,
  at = -1,
): PreparedMessage {
  let warnings = 0;
  let text = quoted ? raw : raw.trim();
  // A trimmed text is read from its string (the bytes hold raw, spaces and all).
  let hash = hashText ? scanTextAt(text, text.length === raw.length ? bytes : null, at) || 1 : 0;
  let plain = hashText ? textScan.plain : isPlainGsm(text);
  if (!plain && CONTROL.test(text)) {
    text = text.replace(CONTROL_ALL, '');
    if (!quoted) text = text.trim();
    hash = hashText ? scanText(text) || 1 : 0;
    plain = hashText ? textScan.plain : isPlainGsm(text);
    warnings = CONTROL_REMOVED;
  }
  // Under gsm7 the text sent (and so its duplicates, segments and warnings) is the
  // transliterated one; the text as written is only counted.
  let asWritten = -1;
  let changed = false;
  if (gsm7 && !plain) {
    const t = transliterate(text, true);
    if (t !== text) {
      asWritten = countSegments(text, false).segments;
      changed = true;
      text = quoted ? t : t.trim();
      hash = hashText ? scanText(text) || 1 : 0;
      plain = hashText ? textScan.plain : isPlainGsm(text);
    }
  }
  // An unquoted text is trimmed already.
  const empty = (quoted ? text.trim() : text).length === 0;
  return prepared(text, countSegments(text, plain), hash, warnings, empty, asWritten, changed, gsm7);
}

/** What prepareMessage and prepareMerged end with, once the text sent and its segments are known. */
function prepared(
  text: string,
  segments: SegmentInfo,
  hash: number,
  warnings: number,
  empty: boolean,
  asWritten: number,
  changed: boolean,
  gsm7: boolean,
): PreparedMessage {
  let transliterated = segments.segments;
  if (asWritten < 0) asWritten = segments.segments;
  if (!gsm7 && segments.encoding === 'ucs2') {
    // What gsm7 would send instead: computed for UCS-2 texts only (the others stay the same).
    const n = transliteratedSegmentsOf(text, segments);
    if (n >= 0) {
      transliterated = n;
      changed = true;
    }
  }
  if (!empty) {
    if (text.length > LONG_MESSAGE_CHARS) warnings |= LONG;
    if (segments.encoding === 'ucs2') warnings |= UCS2;
  }
  return { text, segments, hash, warnings, empty, asWritten, transliterated, changed };
}

/** Set by countJoined: whether the merged text is plain GSM, and its length. */
const joined = { plain: false, length: 0 };

/** String.prototype.trim would remove the code unit `c` (white space or a line terminator). */
function isTrimmed(c: number): boolean {
  if (c > 0x20 && c < 0x7f) return false;
  return /\s/.test(String.fromCharCode(c));
}

/**
 * prepareMessage(joinTemplate(template, values), quoted, true, gsm7), with the same answer,
 * from the values alone: the hash (hashJoined) and the segments (countJoined) are made from
 * the literal parts' precomputed stats, and the text is not even made when it is not wanted.
 * `hash` gets the text's hash: a message without its text (`withText` false, and no
 * warning or count that needs it) is `shared` itself when that says the same, so a million
 * records of one template allocate one message; its text is then the first record's, and
 * only its counts may be read. null when the text needs prepareMessage after all: white
 * space at either end of an unquoted text (trimmed), control characters (removed),
 * characters gsm7 would transliterate, or a count that needs the whole text (countJoined).
 */
export function prepareMerged(
  template: Template,
  values: readonly string[],
  quoted: boolean,
  gsm7: boolean,
  withText: boolean,
  shared: PreparedMessage | null,
  hash: { value: number },
  /** The bytes the values were read from, and where each is (hashJoined). */
  bytes: Uint8Array | null = null,
  at: Int32Array | null = null,
): PreparedMessage | null {
  const { literals } = template;
  const n = template.cols.length;
  if (!quoted) {
    // The first and last characters: of the outer literal parts, or of the values beside
    // them when those are empty (a value is never empty).
    const first = literals[0]!.length > 0 ? literals[0]! : values[0]!;
    const lastLiteral = literals[n]!;
    const last = lastLiteral.length > 0 ? lastLiteral : values[n - 1]!;
    if (isTrimmed(first.charCodeAt(0)) || isTrimmed(last.charCodeAt(last.length - 1))) return null;
  }
  const h = hashJoined(template.literalHash, values, n, bytes, at) || 1;
  const segments = countJoined(
    template.literalStats,
    values,
    n,
    joinedScan.valuesPlain,
    joined,
    shared?.segments ?? null,
  );
  // Under gsm7 a text outside GSM-7 may change: transliterate decides, with the whole text.
  if (segments === null || (gsm7 && segments.nonGsm.length > 0)) return null;
  hash.value = h;
  const needsText =
    withText ||
    joined.length > LONG_MESSAGE_CHARS ||
    (segments.encoding === 'ucs2' && transliterationReadsText(segments.nonGsm));
  if (!needsText && shared !== null && shared.segments === segments && (shared.warnings & LONG) === 0)
    return shared;
  // Never empty: every value holds a character other than white space (templateValues).
  return prepared(joinTemplate(template, values), segments, h, 0, false, -1, false, gsm7);
}

/** A number, even one that cannot be sent (a landline, a country not allowed). */
export function isNumber(result: NumberResult): boolean {
  return result.ok || result.code !== 'INVALID_NUMBER';
}

/** What the reader says about a number that does not normalise. */
export function numberProblem(result: Exclude<NumberResult, { ok: true }>, value: string): string {
  switch (result.code) {
    case 'NOT_MOBILE':
      return `${value} is a landline, not a mobile number`;
    case 'COUNTRY_NOT_ALLOWED':
      return `${value} is a number of ${result.country ?? 'a country'} that this source does not allow`;
    default:
      return value.length === 0 ? 'the number is missing' : `${value} is not a valid mobile number`;
  }
}
