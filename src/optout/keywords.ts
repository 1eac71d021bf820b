// Which replies opt their sender out (issue 14, config `optOut.keywords`): a reply whose whole
// text is one of the keywords, once both are normalised. docs/opt-outs.md, "Keywords".

// Anything that is not a letter or a digit at either end: punctuation (`.`, `!`, `¡`, `¿`,
// quotes), symbols (emoji), spaces of every kind, control and format characters (zero-width).
const EDGES = /^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu;
const SPACES = /[\s\p{Cf}]+/gu;
const MARKS = /\p{M}+/gu;

/**
 * The form replies and keywords are compared in: compatibility-decomposed (full-width and
 * other compatibility forms folded, `ＳＴＯＰ` → `STOP`), accents and other combining marks
 * removed (`cancelár` → `cancelar`, `ñ` → `n`), upper case, anything but letters and digits
 * cut from both ends, and every inner run of spaces one space.
 */
export function normaliseReply(text: string): string {
  return text.normalize('NFKD').replace(MARKS, '').toUpperCase().replace(EDGES, '').replace(SPACES, ' ');
}

/**
 * True when `text`, normalised (normaliseReply), equals one of `keywords`, normalised too:
 * `"Salir."`, `" stop "`, `"BAJA!"`, `"cancelár"` opt out with the default keywords. The
 * whole text must match: `"No gracias"` or `"quiero salir"` do not (a reply that merely
 * contains a keyword is not an unambiguous request). A keyword that normalises to nothing
 * (only punctuation) never matches.
 */
export function isOptOut(text: string, keywords: readonly string[]): boolean {
  const reply = normaliseReply(text);
  if (reply === '') return false;
  for (const k of keywords) if (normaliseReply(k) === reply) return true;
  return false;
}
