// FORMAT.md 8.1: `#! <name>: <value>` lines before the first data record. Every known name is
// recognised, and a typo, a value that does not parse, a name given twice or a directive the
// source forbids rejects the file (BAD_DIRECTIVE): a directive is never ignored. Directives
// whose feature this version does not have yet (a send time, a template, another channel)
// are refused the same way rather than read and dropped: a file asking to start at 9:00
// must not go out at 2:00.

export const PRIORITIES = ['high', 'normal', 'low'] as const;
export type Priority = (typeof PRIORITIES)[number];

/** The names of FORMAT.md 8.1. */
export const DIRECTIVE_NAMES = [
  'message',
  'sendAt',
  'priority',
  'channel',
  'flash',
  'templateId',
  'subject',
  'source',
  'expect',
] as const;
export type DirectiveName = (typeof DIRECTIVE_NAMES)[number];
/** By their lower-case form (names are case-insensitive). */
const KNOWN = new Map<string, DirectiveName>(DIRECTIVE_NAMES.map((n) => [n.toLowerCase(), n]));

/** Not acted on yet: the value dropline's own behaviour already matches, if any. */
const NOT_YET: Record<Exclude<DirectiveName, 'priority' | 'expect'>, { same?: string; why: string }> = {
  message: { why: 'message templates are not supported yet' },
  sendAt: { why: 'scheduled sending is not supported yet' },
  channel: { same: 'sms', why: 'only the sms channel is supported so far' },
  flash: { same: 'false', why: 'flash messages are not supported yet' },
  templateId: { why: 'service templates are not supported yet' },
  subject: { why: 'email is not supported yet' },
  source: { why: 'WhatsApp is not supported yet' },
};

/** `allowDirectives` of a source: all (true), none (false), or these names. */
export type AllowDirectives = boolean | readonly DirectiveName[];

/** What the file's directives ask for, once read. */
export interface Directives {
  priority: Priority | null;
  /** `#! expect:`: the recipient records the file must hold, and the directive's line. */
  expect: { line: number; count: number } | null;
}

export class DirectiveError extends Error {}

/**
 * Reads one `#!` line into `into`. Throws a DirectiveError (its message names the line) for
 * anything FORMAT.md 8.1 rejects.
 */
export function readDirective(
  text: string,
  line: number,
  allow: AllowDirectives,
  into: Directives,
  seen: Set<string>,
): void {
  const fail: (why: string) => never = (why) => {
    throw new DirectiveError(`line ${line}: ${why}`);
  };
  const body = text.slice(2);
  const colon = body.indexOf(':');
  if (colon < 0) fail('a directive is written `#! name: value`');
  const written = body.slice(0, colon).trim();
  // A spreadsheet pads its rows with separators (`#! priority: high;;`): they are no value.
  const value = body
    .slice(colon + 1)
    .replace(/[;,|\t]+\s*$/, '')
    .trim();
  const name = KNOWN.get(written.toLowerCase());
  if (!name) fail(`unknown directive \`${written.slice(0, 40)}\` (known: ${DIRECTIVE_NAMES.join(', ')})`);
  if (allow === false || (Array.isArray(allow) && !allow.includes(name))) {
    fail(`this source does not allow the \`${name}\` directive`);
  }
  if (seen.has(name)) fail(`\`${name}\` is given twice`);
  seen.add(name);
  switch (name) {
    case 'priority': {
      const p = value.toLowerCase() as Priority;
      if (!PRIORITIES.includes(p))
        fail(`priority must be high, normal or low, not \`${value.slice(0, 40)}\``);
      into.priority = p;
      return;
    }
    case 'expect': {
      if (!/^\d{1,15}$/.test(value))
        fail(`expect must be a number of records, not \`${value.slice(0, 40)}\``);
      into.expect = { line, count: Number(value) };
      return;
    }
    default: {
      const rule = NOT_YET[name];
      if (rule.same === undefined || value.toLowerCase() !== rule.same) fail(`${rule.why} (\`#! ${name}:\`)`);
    }
  }
}
