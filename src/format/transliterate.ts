// The `transliterate: gsm7` setting: characters outside the GSM-7 alphabet that have a
// GSM-7 look-alike are replaced (á→a, “→", …→...), so that a Spanish text costs GSM-7
// segments (160 / 153 characters) instead of UCS-2 ones (70 / 67).
//
// The table is written by hand on purpose: transliteration libraries (any-ascii, unidecode,
// slugify's charmaps, `normalize('NFD')` and dropping the marks) map to ASCII, not to the
// GSM-7 set, so they would also strip the accents GSM-7 has (é, ñ, ü, à, Ç, Ä, Ö…) and
// turn ¿ ¡ £ ¥ € into something else, and they know nothing of the extension table.
// Here every character of GSM-7 (segments.ts) stays, and only characters outside it are
// looked up.
import {
  countSegments,
  GSM7_MULTI,
  GSM7_SINGLE,
  gsm7Septets,
  isPlainGsm,
  type SegmentInfo,
} from './segments.ts';

/**
 * Replacement → the characters it replaces. Every replacement is GSM-7; no character listed
 * is GSM-7 (test/unit/format-transliterate.test.ts checks both). Letters GSM-7 has are left
 * out on purpose: à ä å Ä Å Ç é è É ì ñ Ñ ò ö ø Ö Ø ù ü Ü ß æ Æ.
 */
const LOOK_ALIKES: Readonly<Record<string, string>> = {
  a: 'áâãāăąǎª',
  A: 'ÁÀÂÃĀĂĄǍ',
  c: 'çćĉċč',
  C: 'ĆĈĊČ',
  d: 'ďđð',
  D: 'ĎĐÐ',
  e: 'êëēĕėęě',
  E: 'ÈÊËĒĔĖĘĚ',
  g: 'ĝğġģ',
  G: 'ĜĞĠĢ',
  h: 'ĥħ',
  H: 'ĤĦ',
  i: 'íîïĩīĭįı',
  I: 'ÍÌÎÏĨĪĬĮİ',
  j: 'ĵ',
  J: 'Ĵ',
  k: 'ķ',
  K: 'Ķ',
  l: 'ĺļľŀł',
  L: 'ĹĻĽĿŁ',
  n: 'ńņňŉ',
  N: 'ŃŅŇ',
  o: 'óôõōŏőº°',
  O: 'ÓÒÔÕŌŎŐ',
  oe: 'œ',
  OE: 'Œ',
  r: 'ŕŗř',
  R: 'ŔŖŘ',
  s: 'śŝşš',
  S: 'ŚŜŞŠ',
  t: 'ţťŧ',
  T: 'ŢŤŦ',
  th: 'þ',
  TH: 'Þ',
  u: 'úûũūŭůűų',
  U: 'ÚÙÛŨŪŬŮŰŲ',
  w: 'ŵ',
  W: 'Ŵ',
  y: 'ýÿŷ',
  Y: 'ÝŶŸ',
  z: 'źżž',
  Z: 'ŹŻŽ',
  x: '×',
  '1': '¹',
  '2': '²',
  '3': '³',
  '1/2': '½',
  '1/4': '¼',
  '3/4': '¾',
  '+/-': '±',
  '(C)': '©',
  '(R)': '®',
  TM: '™',
  '"': '“”„‟«»″〝〞＂',
  "'": '‘’‚‛′‹›`´ʼ',
  '-': '‐‑‒–—―−•',
  '.': '·',
  '...': '…',
  '^': 'ˆ',
  '~': '˜',
  '|': '¦',
  ' ': '\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000',
  '\n': '\u2028\u2029',
  // Invisible: soft hyphen, zero-width space, non-joiner, joiner, word joiner, BOM.
  '': '\u00ad\u200b\u200c\u200d\u2060\ufeff',
};

const REPLACEMENT = new Map<number, string>();
/** The septets each replacement costs, by the replaced character (an extension one counts two). */
const SEPTETS = new Map<number, number>();
/** Replaced characters whose replacement holds an extension character (`¦` → `|`, `ˆ` → `^`…). */
const EXTENSION = new Set<number>();
/** Replaced by exactly one basic GSM-7 character (á → a): one septet for one, as counted in gsm7Segments. */
const ONE_FOR_ONE = new Set<number>();
for (const [to, from] of Object.entries(LOOK_ALIKES)) {
  let septets = 0;
  for (const ch of to) septets += gsm7Septets(ch.charCodeAt(0));
  for (const ch of from) {
    const c = ch.charCodeAt(0);
    REPLACEMENT.set(c, to);
    SEPTETS.set(c, septets);
    if (septets > to.length) EXTENSION.add(c);
    if (septets === 1) ONE_FOR_ONE.add(c);
  }
}

/** Every pair of the table, for tests and docs: [character, replacement]. */
export function lookAlikes(): [string, string][] {
  return [...REPLACEMENT].map(([c, to]) => [String.fromCharCode(c), to]);
}

function isCombiningMark(c: number): boolean {
  return c >= 0x0300 && c <= 0x036f;
}

/**
 * `text` with its non-GSM-7 characters replaced by their look-alikes, when every one of them
 * has one; otherwise `text` itself, unchanged: a text that must go as UCS-2 anyway (an emoji,
 * CJK) keeps its accents. A text already in GSM-7 is returned as is (the same string).
 * Decomposed accents (a + U+0301, as macOS writes them) are composed first, so é stays é.
 */
export function transliterate(text: string, knownNotPlain = false): string {
  if (!knownNotPlain && isPlainGsm(text)) return text;
  return replace(text, false);
}

/**
 * transliteratedSegments(text) from what countSegments found: when each character that forced
 * UCS-2 is replaced one for one (á → a, the usual case) the answer is its gsm7Segments (which
 * counts every such character as one septet), and only the other texts are read again.
 */
export function transliteratedSegmentsOf(text: string, info: SegmentInfo): number {
  if (info.encoding === 'gsm7') return -1;
  for (const ch of info.nonGsm) {
    const c = ch.charCodeAt(0);
    if (ch.length > 1 || !ONE_FOR_ONE.has(c)) {
      return REPLACEMENT.has(c) || isCombiningMark(c) ? transliteratedSegments(text) : -1;
    }
  }
  return info.gsm7Segments;
}

/**
 * Whether transliteratedSegmentsOf reads the text itself for a UCS-2 text with these
 * non-GSM characters (else it answers from the SegmentInfo alone): when one of them is
 * replaced by something other than one basic GSM-7 character, or is a combining mark.
 */
export function transliterationReadsText(nonGsm: readonly string[]): boolean {
  for (const ch of nonGsm) {
    const c = ch.charCodeAt(0);
    if (ch.length > 1 || !ONE_FOR_ONE.has(c)) return REPLACEMENT.has(c) || isCombiningMark(c);
  }
  return false;
}

/**
 * The segments `transliterate(text)` would cost, or -1 when it would not change the text:
 * one pass over the text, nothing built (the reader asks this of every UCS-2 text under
 * `never`, to show what gsm7 would save).
 */
export function transliteratedSegments(text: string): number {
  let septets = 0;
  let extension = false;
  let changed = false;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    const s = gsm7Septets(c);
    if (s !== 0) {
      septets += s;
      if (s === 2) extension = true;
      continue;
    }
    const cost = SEPTETS.get(c);
    if (cost === undefined) {
      if (!isCombiningMark(c)) return -1;
      const t = transliterate(text, true);
      return t === text ? -1 : countSegments(t).segments;
    }
    septets += cost;
    if (EXTENSION.has(c)) extension = true;
    changed = true;
  }
  if (!changed) return -1;
  if (septets === 0) return 0;
  if (septets <= GSM7_SINGLE) return 1;
  // An escape is never split from its character: the exact count needs the text.
  if (extension) return countSegments(transliterate(text, true)).segments;
  return Math.ceil(septets / GSM7_MULTI);
}

function replace(text: string, composed: boolean): string {
  let out: string | null = null;
  let from = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (gsm7Septets(c) !== 0) continue;
    let to = REPLACEMENT.get(c);
    if (to === undefined) {
      if (!isCombiningMark(c)) return text;
      // A mark the composed form still has (no precomposed letter): the base letter alone.
      if (!composed) return composeThenReplace(text);
      to = '';
    }
    out = (out ?? '') + text.slice(from, i) + to;
    from = i + 1;
  }
  return out === null ? text : out + text.slice(from);
}

function composeThenReplace(text: string): string {
  const result = replace(text.normalize('NFC'), true);
  return hasOnlyGsm(result) ? result : text;
}

function hasOnlyGsm(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (gsm7Septets(text.charCodeAt(i)) === 0) return false;
  return true;
}
