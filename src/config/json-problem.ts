// What JSON.parse says of a bad file, without quoting it: V8's message for a value written
// without quotes shows the text around it ('..."password": s3cret"...'), and configuration
// and accounts files hold passwords.

/** V8 shows this many characters either side of the position it stopped at. */
const CONTEXT = 10;

/**
 * Why `JSON.parse(text)` failed, in words, with the line and column where it stopped: given by
 * V8, or found from the text around it that V8 quotes (which is then left out).
 */
export function jsonProblem(err: unknown, text: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const at = /^(.*?) (?:in|after) JSON at position \d+ \(line (\d+) column (\d+)\)/.exec(message);
  if (at) return `${at[1]} at line ${at[2]}, column ${at[3]}`;
  if (message.startsWith('Unexpected end of JSON input'))
    return 'it ends too early (a brace, bracket or quote is not closed)';
  const what =
    'an unexpected character (a text value without its double quotes, single quotes, a comment or a byte-order mark?)';
  const where = quotedPosition(message, text);
  if (where === null) return what;
  const before = text.slice(0, where);
  const line = before.split('\n').length;
  return `${what} at line ${line}, column ${where - before.lastIndexOf('\n')}`;
}

/**
 * Where V8 stopped, from `Unexpected token 'x', ..."<context>"... is not valid JSON` (the dots
 * where it cut the text); null when it cannot tell (a short text V8 quotes whole).
 */
function quotedPosition(message: string, text: string): number | null {
  const m = /^Unexpected token .*?, (\.\.\.)?"(.*)"(\.\.\.)? is not valid JSON$/s.exec(message);
  if (!m) return null;
  const [, cutBefore, context = '', cutAfter] = m;
  const start = text.indexOf(context);
  if (start < 0) return null;
  // The context starts CONTEXT characters before the position, or at the text's start.
  if (cutBefore) return start + CONTEXT;
  if (cutAfter) return context.length - CONTEXT;
  return null;
}

/** `text` without the byte-order mark some Windows editors write first (not JSON, nor meant as text). */
export function withoutBom(text: string): string {
  return text.startsWith('\uFEFF') ? text.slice(1) : text;
}
