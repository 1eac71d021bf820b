// PostgreSQL array literals for the batch parameters (`unnest($1::text[], …)`), built in one
// pass: pg's generic encoder looks at every element's type and escapes it on its own, which
// cost more than the database's insert of a million recipients' rows. The literal is passed
// as text and cast by the statement (`::text[]`, `::bigint[]`, `::int[]`).

/** `{"a","b\"c",NULL}`: every element quoted, `"` and `\` escaped. */
export function textArray(values: readonly (string | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    if (v === null || v === undefined) out += 'NULL';
    else out += `"${NEEDS_ESCAPE.test(v) ? v.replace(ESCAPE, '\\$&') : v}"`;
  }
  return `${out}}`;
}

/** `{1,2,NULL}`: integers (safe integers only: ids, lines, counts). */
export function intArray(values: readonly (number | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    if (v === null || v === undefined) out += 'NULL';
    else if (Number.isSafeInteger(v)) out += v;
    else throw new RangeError(`${v} is not an integer`);
  }
  return `${out}}`;
}

const NEEDS_ESCAPE = /["\\]/;
const ESCAPE = /["\\]/g;
