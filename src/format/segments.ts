// FORMAT.md section 6: how many SMS parts a message costs, GSM-7 or UCS-2.
//
// Runs once per recipient (DESIGN-NOTES 6), so the character sets are a hand-written
// lookup table indexed by charCode rather than a regex or a library call. The table is
// 3GPP TS 23.038 section 6.2.1 (GSM 7-bit default alphabet and its extension table).
// Position 0x09 is the capital Ç there (older GSM 03.38 copies draw it lower-case; the
// lower-case ç is not in the alphabet).

export interface SegmentInfo {
  encoding: 'gsm7' | 'ucs2';
  /** Parts this text costs as it will be sent; 0 for the empty text. */
  segments: number;
  /**
   * What it would cost in GSM-7 with each offending character replaced by one GSM-7
   * character (equals segments when gsm7).
   */
  gsm7Segments: number;
  /** Distinct characters that forced UCS-2, in order of first appearance (empty when gsm7). */
  nonGsm: string[];
}

/** Shared by every GSM-7 answer: one empty list, not one per message. */
const NO_CHARS: string[] = [];

export const GSM7_SINGLE = 160;
export const GSM7_MULTI = 153;
export const UCS2_SINGLE = 70;
export const UCS2_MULTI = 67;

/** The basic set, without the two control characters LF and CR which are added below. */
const GSM_BASIC =
  '@£$¥èéùìòÇØøÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?' +
  '¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
/** Reached through the escape 0x1B, so each costs two septets. FF is form feed. */
const GSM_EXTENSION = '\f^{}\\[]~|€';

// 1 = basic (one septet), 2 = extension (two septets), 0 = not GSM-7. Every GSM character
// but € lies below U+0400, so a 1 KiB table plus one comparison covers the alphabet.
const TABLE_SIZE = 0x400;
const EURO = 0x20ac;
const GSM_TABLE = new Uint8Array(TABLE_SIZE);
for (const ch of GSM_BASIC + '\n\r') GSM_TABLE[ch.charCodeAt(0)] = 1;
for (const ch of GSM_EXTENSION) if (ch.charCodeAt(0) < TABLE_SIZE) GSM_TABLE[ch.charCodeAt(0)] = 2;

/** Septets a UTF-16 code unit costs in GSM-7: 1, 2, or 0 when it is not in the alphabet. */
export function gsm7Septets(code: number): number {
  if (code < TABLE_SIZE) return GSM_TABLE[code]!;
  return code === EURO ? 2 : 0;
}

// ASCII characters of the GSM basic set (LF, space to Z, _, a to z): one septet each, no
// escapes. V8's regex engine checks these ranges several times faster than a JS loop,
// and most messages are plain ASCII.
const PLAIN_GSM = /^[\n -Z_a-z]*$/;

/** Every character is a one-septet GSM-7 character of ASCII (so no control characters either). */
export function isPlainGsm(text: string): boolean {
  return PLAIN_GSM.test(text);
}

function isHigh(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

function isLow(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/**
 * GSM-7 parts greedily, never splitting an escape from its character across two parts.
 * Non-GSM characters count as one septet per code point (the gsm7Segments comparison).
 */
function gsmPartsGreedy(text: string): number {
  let parts = 1;
  let used = 0;
  const len = text.length;
  for (let i = 0; i < len; i++) {
    const c = text.charCodeAt(i);
    let cost = gsm7Septets(c);
    if (cost === 0) {
      cost = 1;
      if (isHigh(c) && i + 1 < len && isLow(text.charCodeAt(i + 1))) i++;
    }
    if (used + cost > GSM7_MULTI) {
      parts++;
      used = 0;
    }
    used += cost;
  }
  return parts;
}

/** UCS-2 parts greedily, never splitting a surrogate pair across two parts. */
function ucs2PartsGreedy(text: string): number {
  let parts = 1;
  let used = 0;
  const len = text.length;
  for (let i = 0; i < len; i++) {
    const c = text.charCodeAt(i);
    const cost = isHigh(c) && i + 1 < len && isLow(text.charCodeAt(i + 1)) ? 2 : 1;
    if (cost === 2) i++;
    if (used + cost > UCS2_MULTI) {
      parts++;
      used = 0;
    }
    used += cost;
  }
  return parts;
}

/**
 * Segments of one message. `plain`: the caller already knows whether `isPlainGsm(text)`. The empty text costs 0 parts (nothing is sent; FORMAT.md
 * rejects it as EMPTY_MESSAGE before it gets here).
 */
export function countSegments(text: string, plain = isPlainGsm(text)): SegmentInfo {
  const len = text.length;
  if (plain) {
    const parts = len === 0 ? 0 : len <= GSM7_SINGLE ? 1 : Math.ceil(len / GSM7_MULTI);
    return { encoding: 'gsm7', segments: parts, gsm7Segments: parts, nonGsm: NO_CHARS };
  }
  let septets = 0;
  let extension = false;
  let pairs = false;
  let nonGsm: string[] | null = null;
  for (let i = 0; i < len; i++) {
    const c = text.charCodeAt(i);
    const s = c < TABLE_SIZE ? GSM_TABLE[c]! : c === EURO ? 2 : 0;
    if (s === 1) {
      septets++;
      continue;
    }
    if (s === 2) {
      septets += 2;
      extension = true;
      continue;
    }
    let ch: string;
    if (isHigh(c) && i + 1 < len && isLow(text.charCodeAt(i + 1))) {
      ch = text.slice(i, i + 2);
      pairs = true;
      i++;
    } else {
      ch = text[i]!;
    }
    septets++;
    if (nonGsm === null) nonGsm = [ch];
    else if (!nonGsm.includes(ch)) nonGsm.push(ch);
  }

  let gsm7Segments: number;
  if (septets === 0) gsm7Segments = 0;
  else if (septets <= GSM7_SINGLE) gsm7Segments = 1;
  else gsm7Segments = extension ? gsmPartsGreedy(text) : Math.ceil(septets / GSM7_MULTI);

  if (nonGsm === null) return { encoding: 'gsm7', segments: gsm7Segments, gsm7Segments, nonGsm: NO_CHARS };

  let segments: number;
  if (len <= UCS2_SINGLE) segments = 1;
  else segments = pairs ? ucs2PartsGreedy(text) : Math.ceil(len / UCS2_MULTI);
  return { encoding: 'ucs2', segments, gsm7Segments, nonGsm };
}
