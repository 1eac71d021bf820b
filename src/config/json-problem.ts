// What JSON.parse says of a bad file, without quoting it: V8's message for a value written
// without quotes shows the text around it ('..."password": s3cret"...'), and configuration
// and accounts files hold passwords.

/** Why `JSON.parse` failed, in words and with the line and column when V8 gives them. */
export function jsonProblem(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const at = /^(.*?) in JSON at position \d+ \(line (\d+) column (\d+)\)/.exec(message);
  if (at) return `${at[1]} at line ${at[2]}, column ${at[3]}`;
  if (message.startsWith('Unexpected end of JSON input'))
    return 'it ends too early (a brace, bracket or quote is not closed)';
  return 'an unexpected character (a text value without its double quotes, single quotes, a comment or a byte-order mark?)';
}
