// Which keyword a reply is (docs/opt-outs.md "Keywords"): its whole text, normalised as
// normaliseReply does (accents, case, edge punctuation ignored), equal to one of the opt-out,
// opt-in or help keywords of the short code it was sent to (./settings.ts).

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
  return matchKeyword(text, { optOut: keywords, optIn: [], help: [] }) !== null;
}

export type KeywordKind = 'opt_out' | 'opt_in' | 'help';

export interface KeywordSets {
  readonly optOut: readonly string[];
  readonly optIn: readonly string[];
  readonly help: readonly string[];
}

export const DEFAULT_KEYWORDS: KeywordSets = {
  optOut: ['SALIR', 'STOP', 'BAJA', 'CANCELAR', 'NO'],
  optIn: ['ALTA', 'START', 'UNSTOP', 'INICIAR'],
  help: ['AYUDA', 'HELP'],
};

export interface KeywordMatch {
  readonly kind: KeywordKind;
  /** The keyword matched, in its normal form (kept in the number's history). */
  readonly keyword: string;
}

/**
 * The keyword `text` is, or null. Opt-out is looked for first, then opt-in, then help: a word
 * configured in two lists (the configuration refuses it, docs/configuration.md "replies")
 * would stop rather than resume. A keyword that normalises to nothing never matches.
 */
export function matchKeyword(text: string, sets: KeywordSets): KeywordMatch | null {
  const reply = normaliseReply(text);
  if (reply === '') return null;
  const order: [KeywordKind, readonly string[]][] = [
    ['opt_out', sets.optOut],
    ['opt_in', sets.optIn],
    ['help', sets.help],
  ];
  for (const [kind, keywords] of order)
    for (const k of keywords) if (normaliseReply(k) === reply) return { kind, keyword: reply };
  return null;
}

/** Keywords (normal forms) found in more than one of the sets: a configuration error. */
export function overlappingKeywords(sets: KeywordSets): string[] {
  const seen = new Map<string, string>();
  const twice = new Set<string>();
  for (const [name, keywords] of Object.entries(sets) as [string, readonly string[]][])
    for (const k of keywords) {
      const n = normaliseReply(k);
      if (n === '') continue;
      const first = seen.get(n);
      if (first !== undefined && first !== name) twice.add(n);
      else seen.set(n, name);
    }
  return [...twice];
}
