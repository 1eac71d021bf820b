// docs/format.md "Templates": `{{column}}` placeholders in a message, and `{{{{` for a literal `{{`.
//
// A template is parsed once into literal parts and column indexes (compileTemplate) and then
// merged for each record by joining strings (mergeTemplate): no regex and no parsing per
// record. Nothing else is evaluated: a value is inserted as it is, never read as a template.
import { type HashPiece, hashPiece } from './dedupe.ts';
import { normaliseHeaderName } from './layout.ts';
import { type LiteralStats, literalStats } from './segments.ts';

/** How a placeholder names a column: as header names are compared, and without any space. */
export function placeholderKey(name: string): string {
  return normaliseHeaderName(name).replace(/\s+/g, '');
}

/** The header a template's placeholders are looked up in. */
export interface TemplateColumns {
  /** placeholderKey(column name) → the column's index; the leftmost column wins a name. */
  readonly index: ReadonlyMap<string, number>;
  /** The names two or more columns have (placeholderKey) → those columns: a placeholder naming one is ambiguous. */
  readonly twins: ReadonlyMap<string, readonly number[]>;
  /** The header's names as written (trimmed), for messages. */
  readonly names: readonly string[];
  /** The message column: a placeholder may not name it (-1 when there is none). */
  readonly messageCol: number;
  /** The header's line, for messages (0: not known). */
  readonly line: number;
}

export function templateColumns(names: readonly string[], messageCol: number, line = 0): TemplateColumns {
  const index = new Map<string, number>();
  const twins = new Map<string, number[]>();
  names.forEach((name, i) => {
    const key = placeholderKey(name);
    if (key.length === 0) return;
    const first = index.get(key);
    if (first === undefined) index.set(key, i);
    else twins.set(key, [...(twins.get(key) ?? [first]), i]);
  });
  return { index, twins, names, messageCol, line };
}

/** Hint for a name that two columns share (UNKNOWN_PLACEHOLDER). */
export const TWINS_HINT =
  'rename one of the columns that share the name (names are compared ignoring case, accents and spaces)';

/** `the header on line 1 has 2 columns of that name: `nombre` (column 2), `Nombre` (column 3)`; null: one. */
export function twinsProblem(columns: TemplateColumns, key: string): string | null {
  const cols = columns.twins.get(key);
  if (cols === undefined) return null;
  const where = columns.line > 0 ? `the header on line ${columns.line}` : 'the header';
  const list = cols.map((c) => `\`${columns.names[c]}\` (column ${c + 1})`).join(', ');
  return `${where} has ${cols.length} columns of that name: ${list}`;
}

export interface Template {
  /** The text as written. */
  readonly source: string;
  /** The literal parts around the placeholders: one more than `cols`. */
  readonly literals: readonly string[];
  /** The column of each placeholder, in order. */
  readonly cols: readonly number[];
  /** Each placeholder as written (`{{ Nombre }}`), for MISSING_FIELD. */
  readonly written: readonly string[];
  /** Placeholders in the text, known or not (0: a plain text, maybe with `{{{{`). */
  readonly placeholders: number;
  /** The first placeholder that names no column (or two), or a `{{` never closed, described; else null. */
  readonly problem: string | null;
  /** The problem's hint when UNKNOWN_PLACEHOLDER's own does not fit (a name two columns share); else null. */
  readonly hint: string | null;
  /**
   * What segment counting reads of each literal part, and their non-GSM characters together
   * (segments.ts countJoined): a merged text is counted from these and its values alone.
   */
  readonly literalStats: LiteralStats;
  /** The literal parts as the text hash reads them (dedupe.ts hashJoined). */
  readonly literalHash: readonly HashPiece[];
}

const OPEN = '{{';
const CLOSE = '}}';

function columnList(columns: TemplateColumns | null): string {
  return columns ? columns.names.join(', ') : '';
}

/**
 * Parses `source` once. `columns` null: the file has no header (a headless personalized file,
 * a bulk message), so every placeholder is unknown. A problem does not stop the parse: the
 * unknown placeholder stays in the text as written (the file is rejected anyway), and the
 * known ones are still merged, so the rest of the file reads as usual.
 */
export function compileTemplate(source: string, columns: TemplateColumns | null): Template {
  const literals: string[] = [];
  const cols: number[] = [];
  const written: string[] = [];
  let placeholders = 0;
  let problem: string | null = null;
  let hint: string | null = null;
  let literal = '';
  let i = 0;
  for (;;) {
    const open = source.indexOf(OPEN, i);
    if (open === -1) {
      literal += source.slice(i);
      break;
    }
    literal += source.slice(i, open);
    if (source.startsWith('{{{{', open)) {
      literal += OPEN;
      i = open + 4;
      continue;
    }
    const close = source.indexOf(CLOSE, open + 2);
    if (close === -1) {
      problem ??= `a \`{{\` is never closed by \`}}\` (write a literal {{ as {{{{)`;
      literal += source.slice(open);
      break;
    }
    const name = source.slice(open + 2, close);
    const placeholder = source.slice(open, close + 2);
    placeholders++;
    i = close + 2;
    const key = placeholderKey(name);
    const col = columns?.index.get(key);
    if (columns === null) {
      problem ??= `${placeholder} names no column: the file has no header line (placeholders need a headed personalized file)`;
    } else if (col === undefined) {
      problem ??= `${placeholder} names no column of the header (columns: ${columnList(columns)})`;
    } else if (col === columns.messageCol) {
      problem ??= `${placeholder} names the message column itself (columns: ${columnList(columns)})`;
    } else {
      // A name two columns share: ambiguous. Merged with the leftmost so the rest of the file
      // reads as usual; the file is rejected.
      const shared: string | null = problem === null ? twinsProblem(columns, key) : null;
      if (shared !== null) {
        problem = `${placeholder} is ambiguous: ${shared}`;
        hint = TWINS_HINT;
      }
      literals.push(literal);
      literal = '';
      cols.push(col);
      written.push(placeholder);
      continue;
    }
    literal += placeholder;
  }
  literals.push(literal);
  return {
    source,
    literals,
    cols,
    written,
    placeholders,
    problem,
    hint,
    literalStats: literalStats(literals),
    literalHash: literals.map(hashPiece),
  };
}

/**
 * The merged text of one record, or the index (in `template.cols`) of the first placeholder
 * whose value is missing, empty or only white space (MISSING_FIELD). Unquoted values are
 * trimmed like every unquoted field of a headed file; a quoted value is inserted exactly.
 */
export function mergeTemplate(
  template: Template,
  fields: readonly string[],
  quoted: readonly boolean[],
): string | number {
  const values: string[] = [];
  const missing = templateValues(template, fields, quoted, values);
  return missing >= 0 ? missing : joinTemplate(template, values);
}

/**
 * s.trim(), without the call when both ends are visible ASCII (most values of most files: a
 * million calls were ~1% of validate).
 */
export function trimText(s: string): string {
  const n = s.length;
  if (n === 0) return s;
  const a = s.charCodeAt(0);
  const b = s.charCodeAt(n - 1);
  return a > 0x20 && a < 0x7f && b > 0x20 && b < 0x7f ? s : s.trim();
}

/**
 * mergeTemplate in two steps, for the reader: the values as inserted, into `values` (a
 * reused array), and -1; or the index of the first placeholder without a value. The text
 * itself (joinTemplate) is only made when it is needed: counting its segments and hashing
 * it take the values alone (segments.ts countJoined, dedupe.ts hashJoined).
 */
export function templateValues(
  template: Template,
  fields: readonly string[],
  quoted: readonly boolean[],
  values: string[],
  /**
   * With `starts` (parseCsv's: where each field starts in the record's text) and `base`
   * (where that text starts in the bytes it was read from): `at[k]` gets where values[k] is
   * in those bytes, -1 when it is not there as it is (quoted, or trimmed).
   */
  starts: readonly number[] | null = null,
  base = -1,
  at: Int32Array | null = null,
): number {
  const cols = template.cols;
  for (let k = 0; k < cols.length; k++) {
    const c = cols[k]!;
    const value = fields[c];
    if (value === undefined) return k;
    const trimmed = trimText(value);
    if (trimmed.length === 0) return k;
    const asIs = quoted[c] !== true;
    values[k] = asIs ? trimmed : value;
    if (at !== null) at[k] = asIs && trimmed === value && base >= 0 ? base + starts![c]! : -1;
  }
  return -1;
}

/** The merged text from the values templateValues gave. */
export function joinTemplate(template: Template, values: readonly string[]): string {
  const literals = template.literals;
  let out = literals[0]!;
  for (let k = 0; k < template.cols.length; k++) out += values[k]! + literals[k + 1]!;
  return out;
}
