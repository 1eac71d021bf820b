// docs/format.md "Messages": how many SMS parts a message costs, GSM-7 or UCS-2.
//
// Runs once per recipient (docs/architecture.md "The guarantees and where they live"), so
// the character sets are a hand-written lookup table indexed by charCode rather than a regex
// or a library call. The table is 3GPP TS 23.038 section 6.2.1 (GSM 7-bit default alphabet
// and its extension table).
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
 * Segments of one message. `plain`: the caller already knows whether `isPlainGsm(text)`. The empty
 * text costs 0 parts (nothing is sent; the reader rejects it as EMPTY_MESSAGE before it gets here).
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

// ---- A text counted piece by piece: a template's literal parts once, each record's values ----

/** What countSegments reads of a piece of text, from which a joined text's count is made. */
export interface PieceStats {
  /** UTF-16 code units. */
  length: number;
  /** Septets as countSegments counts them (a character outside GSM-7 counts one). */
  septets: number;
  /** Holds an extension character (two septets, never split from its escape). */
  extension: boolean;
  /** Holds a surrogate pair. */
  pairs: boolean;
  /** isPlainGsm(piece). */
  plain: boolean;
  /** Distinct characters outside GSM-7, in order of first appearance. */
  nonGsm: string[];
  /**
   * Holds a C0 control character other than LF (the reader removes those), or starts with a
   * low surrogate, or ends with a high one (a pair could straddle the join): such a piece is
   * not counted apart.
   */
  awkward: boolean;
}

function isControl(c: number): boolean {
  return c < 0x20 && c !== 0x0a;
}

/** The ASCII characters of PLAIN_GSM (LF, space to Z, _, a to z). */
const PLAIN_ASCII = new Uint8Array(128);
for (let c = 0; c < 128; c++) PLAIN_ASCII[c] = PLAIN_GSM.test(String.fromCharCode(c)) ? 1 : 0;

/** The stats of one piece. */
export function pieceStats(text: string): PieceStats {
  const len = text.length;
  let septets = 0;
  let extension = false;
  let pairs = false;
  let awkward = len > 0 && (isLow(text.charCodeAt(0)) || isHigh(text.charCodeAt(len - 1)));
  for (let i = 0; i < len; i++) {
    const c = text.charCodeAt(i);
    if (isControl(c)) awkward = true;
    const s = gsm7Septets(c);
    if (s === 2) extension = true;
    if (s === 0 && isHigh(c) && i + 1 < len && isLow(text.charCodeAt(i + 1))) {
      pairs = true;
      i++;
    }
    septets += s === 0 ? 1 : s;
  }
  const nonGsm = countSegments(text).nonGsm;
  return { length: len, septets, extension, pairs, plain: isPlainGsm(text), nonGsm, awkward };
}

/** A template's literal parts: each one's stats, and all of them together. */
export interface LiteralStats {
  readonly pieces: readonly PieceStats[];
  readonly length: number;
  readonly septets: number;
  readonly extension: boolean;
  readonly pairs: boolean;
  readonly plain: boolean;
  readonly awkward: boolean;
  /** Their distinct non-GSM characters, in order of first appearance (shared: never changed). */
  readonly nonGsm: string[];
}

/** Adds `chars` not in `list` yet to it (a new list when it is the shared NO_CHARS). */
function addDistinct(list: string[], chars: readonly string[]): string[] {
  for (const ch of chars) {
    if (list === NO_CHARS) list = [ch];
    else if (!list.includes(ch)) list.push(ch);
  }
  return list;
}

export function literalStats(literals: readonly string[]): LiteralStats {
  const pieces = literals.map(pieceStats);
  let nonGsm = NO_CHARS;
  for (const p of pieces) nonGsm = addDistinct(nonGsm, p.nonGsm);
  return {
    pieces,
    length: pieces.reduce((a, p) => a + p.length, 0),
    septets: pieces.reduce((a, p) => a + p.septets, 0),
    extension: pieces.some((p) => p.extension),
    pairs: pieces.some((p) => p.pairs),
    plain: pieces.every((p) => p.plain),
    awkward: pieces.some((p) => p.awkward),
    nonGsm,
  };
}

/**
 * countSegments(literals[0] + values[0] + literals[1] + … + values[n - 1] + literals[n])
 * without that text: the literals' stats were taken once (literalStats), only the values
 * are read, and not even those when `valuesPlain` says they are all isPlainGsm. null when
 * the joined text must be read after all: an awkward piece (see PieceStats), or a count
 * that splits greedily (an extension character in a GSM-7 text over 160 septets, a
 * surrogate pair in a UCS-2 text over 70). `joined` gets isPlainGsm of the joined text and
 * its length. `reuse`, an earlier answer, is returned instead of a new one when it says
 * the same. test/unit/format-segments.test.ts compares it with countSegments.
 */
export function countJoined(
  literals: LiteralStats,
  values: readonly string[],
  n: number,
  valuesPlain: boolean,
  joined: { plain: boolean; length: number },
  reuse: SegmentInfo | null = null,
): SegmentInfo | null {
  if (literals.awkward) return null;
  let len = literals.length;
  let septets = literals.septets;
  let extension = literals.extension;
  let pairs = literals.pairs;
  let isPlain = literals.plain;
  let valueNonGsm = false;
  for (let k = 0; k < n; k++) {
    const v = values[k]!;
    const vlen = v.length;
    len += vlen;
    if (valuesPlain) {
      // Known plain GSM (the caller read them already): a septet a character, nothing else.
      septets += vlen;
      continue;
    }
    if (vlen > 0 && (isLow(v.charCodeAt(0)) || isHigh(v.charCodeAt(vlen - 1)))) return null;
    for (let i = 0; i < vlen; i++) {
      const c = v.charCodeAt(i);
      if (c < 128) {
        // Most values are plain ASCII: one septet each. CR and FF are GSM-7 but also
        // control characters, which the reader removes: not counted here.
        if (PLAIN_ASCII[c] === 1) {
          septets++;
          continue;
        }
        if (isControl(c)) return null;
      }
      isPlain = false;
      const s = c < TABLE_SIZE ? GSM_TABLE[c]! : c === EURO ? 2 : 0;
      if (s !== 0) {
        septets += s;
        if (s === 2) extension = true;
        continue;
      }
      septets++;
      valueNonGsm = true;
      if (isHigh(c) && i + 1 < vlen && isLow(v.charCodeAt(i + 1))) {
        pairs = true;
        i++;
      }
    }
  }
  joined.plain = isPlain;
  joined.length = len;
  if (isPlain) {
    const parts = len === 0 ? 0 : len <= GSM7_SINGLE ? 1 : Math.ceil(len / GSM7_MULTI);
    return answer('gsm7', parts, parts, NO_CHARS, reuse);
  }
  let gsm7Segments: number;
  if (septets === 0) gsm7Segments = 0;
  else if (septets <= GSM7_SINGLE) gsm7Segments = 1;
  else if (extension) return null;
  else gsm7Segments = Math.ceil(septets / GSM7_MULTI);

  let nonGsm = literals.nonGsm;
  if (valueNonGsm) {
    // Rare (an accent in a name): the list again, piece by piece in the text's order.
    nonGsm = NO_CHARS;
    for (let k = 0; k <= n; k++) {
      nonGsm = addDistinct(nonGsm, literals.pieces[k]!.nonGsm);
      if (k < n) nonGsm = addDistinct(nonGsm, countSegments(values[k]!, false).nonGsm);
    }
  }
  if (nonGsm.length === 0) return answer('gsm7', gsm7Segments, gsm7Segments, NO_CHARS, reuse);
  let segments: number;
  if (len <= UCS2_SINGLE) segments = 1;
  else if (pairs) return null;
  else segments = Math.ceil(len / UCS2_MULTI);
  return answer('ucs2', segments, gsm7Segments, nonGsm, reuse);
}

/** `reuse` when it says the same (a SegmentInfo is never changed once made), else a new answer. */
function answer(
  encoding: SegmentInfo['encoding'],
  segments: number,
  gsm7Segments: number,
  nonGsm: string[],
  reuse: SegmentInfo | null,
): SegmentInfo {
  if (
    reuse !== null &&
    reuse.encoding === encoding &&
    reuse.segments === segments &&
    reuse.gsm7Segments === gsm7Segments &&
    reuse.nonGsm === nonGsm
  )
    return reuse;
  return { encoding, segments, gsm7Segments, nonGsm };
}
