/**
 * Where a WhatsApp file's template parameters come from, in
 * dropline's reading (docs/format.md "WhatsApp files"). Pure helpers for the reader:
 * - `splitParameters`: a `#! message:` value → one template text a parameter (`|` separates
 *   them, `||` is a literal `|`);
 * - `numberedColumns`: a header's columns named `1`, `2`, … `n` → the column of each parameter.
 */
import { normaliseHeaderName } from './layout.ts';

/**
 * `#! message: {{nombre}} | {{saldo}}` → `['{{nombre}}', '{{saldo}}']`. Read left to right: `||`
 * is a literal `|` (`a || b` is one parameter `a | b`), a single `|` ends a parameter; each
 * part is trimmed. An empty part (`a | | b`, or only white space) is returned as '' for the
 * caller to refuse.
 */
export function splitParameters(value: string): string[] {
  const parts: string[] = [];
  let part = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c !== '|') part += c;
    else if (value[i + 1] === '|') {
      part += '|';
      i++;
    } else {
      parts.push(part.trim());
      part = '';
    }
  }
  parts.push(part.trim());
  return parts;
}

/** A header name of digits only (after the usual trimming): a parameter's number, else null. */
function parameterNumber(name: string): number | null {
  const n = normaliseHeaderName(name);
  return /^\d{1,4}$/.test(n) ? Number(n) : null;
}

/**
 * The header's numbered columns (`names[0]`, the number column, is never one): `cols[k]` is
 * the column of parameter k + 1. They must be `1` … `n`, each once, in any column order;
 * otherwise `problem` says what is wrong (a gap, `0`, a number given twice) and `cols` is empty.
 */
export function numberedColumns(names: readonly string[]): { cols: number[]; problem: string | null } {
  const byNumber = new Map<number, number>();
  for (let i = 1; i < names.length; i++) {
    const n = parameterNumber(names[i]!);
    if (n === null) continue;
    const written = names[i]!.trim();
    if (n === 0)
      return { cols: [], problem: `column ${i + 1} \`${written}\`: parameters are numbered from 1` };
    const other = byNumber.get(n);
    if (other !== undefined)
      return {
        cols: [],
        problem: `columns ${other + 1} and ${i + 1} both name parameter ${n} (\`${names[other]!.trim()}\`, \`${written}\`)`,
      };
    byNumber.set(n, i);
  }
  const cols: number[] = [];
  for (let n = 1; n <= byNumber.size; n++) {
    const col = byNumber.get(n);
    if (col === undefined) {
      const highest = Math.max(...byNumber.keys());
      return {
        cols: [],
        problem: `the template's parameter {{${n}}} has no column \`${n}\` (the numbered columns go up to ${highest}: they must be 1 to n without a gap)`,
      };
    }
    cols.push(col);
  }
  return { cols, problem: null };
}
