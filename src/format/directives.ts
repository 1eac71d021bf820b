import { CHANNELS, type ChannelName } from '../channels/names.ts';
import { redactText } from '../core/redact.ts';
import { localInstant } from '../plan/send-window.ts';

// docs/format.md "Directives": `#! <name>: <value>` lines before the first data record. Every known
// name is recognised, and a typo, a value that does not parse, a name given twice or a directive
// the source forbids rejects the file (BAD_DIRECTIVE): a directive is never ignored. Whether a
// directive applies to the file's channel (`#! flash:` is for sms, `#! subject:` for email, …) is
// the reader's to say once the channel is known (reader.ts, notForChannel).

export const PRIORITIES = ['high', 'normal', 'low'] as const;
export type Priority = (typeof PRIORITIES)[number];

/** `#! channel:` names one of the service's channels (src/channels/names.ts). */
export type Channel = ChannelName;

/** The directives' names (docs/format.md "Directives"). */
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

/**
 * The `source` directive (a WhatsApp sending number): 8 to 15 digits, an optional leading `+`
 * dropped (`+573001112233` → `573001112233`); nothing else (no spaces, no formatting). Null
 * when the value is not that.
 */
export function parseSourceNumber(value: string): string | null {
  const m = /^\+?(\d{8,15})$/.exec(value);
  return m ? m[1]! : null;
}

/** `allowDirectives` of a source: all (true), none (false), or these names. */
export type AllowDirectives = boolean | readonly DirectiveName[];

/** What the file's directives ask for, once read. */
export interface Directives {
  priority: Priority | null;
  /** `#! expect:`: the recipient records the file must hold, and the directive's line. */
  expect: { line: number; count: number } | null;
  /** `#! sendAt:`: not before this instant (ISO-8601 UTC), and the directive's line. */
  sendAt: { line: number; at: string } | null;
  /**
   * `#! message:` (docs/format.md "Templates"): the template of every record whose message column
   * is empty or absent, as written (unquoted when the value was quoted), and the directive's line.
   */
  message: { line: number; template: string } | null;
  /** `#! channel:`: the channel the file is for (else its source's), and the directive's line. */
  channel: { line: number; channel: Channel } | null;
  /**
   * `#! flash:` (sms files only; the reader rejects it in any other): whether the file's
   * messages go as flash SMS (POST /mtmessage `FlashSMS: 1`), and the directive's line. Null
   * when the file has none (not flash).
   */
  flash: { line: number; flash: boolean } | null;
  /** `#! subject:` (email): the subject, `{{column}}` placeholders allowed, and the line. */
  subject: { line: number; template: string } | null;
  /** `#! templateId:` (email, whatsapp): a template stored on the service, and the line. */
  templateId: { line: number; id: string } | null;
  /**
   * `#! source:` (whatsapp): the sending number, digits only, and the line. Absent (not null)
   * when the file has none, so that the directives of a file without it read as before.
   */
  source?: { line: number; number: string };
}

/** Directives with nothing asked for. */
export function noDirectives(): Directives {
  return {
    priority: null,
    expect: null,
    sendAt: null,
    message: null,
    channel: null,
    flash: null,
    subject: null,
    templateId: null,
  };
}

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * The `sendAt` directive: ISO-8601 with an offset (`2026-11-27T09:00:00-05:00`, `…Z`), or
 * `YYYY-MM-DD HH:mm` in `timezone` (the send window's). The instant, or null when the value
 * is neither or names no such date.
 */
export function parseSendAt(value: string, timezone: string): Date | null {
  const m =
    /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})?$/i.exec(value);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((v) => Number(v ?? 0)) as number[];
  const leap = year! % 4 === 0 && (year! % 100 !== 0 || year! % 400 === 0);
  if (
    month! < 1 ||
    month! > 12 ||
    day! < 1 ||
    day! > (month === 2 && !leap ? 28 : DAYS_IN_MONTH[month! - 1]!)
  )
    return null;
  if (hour! > 23 || minute! > 59 || second! > 59) return null;
  const zone = m[8];
  if (zone === undefined) {
    // The local form is minutes only: seconds without an offset are neither form.
    if (m[6] !== undefined) return null;
    return localInstant(timezone, `${m[1]}-${m[2]}-${m[3]}`, hour! * 60 + minute!);
  }
  let offsetMinutes = 0;
  if (zone.toUpperCase() !== 'Z') {
    const digits = zone.replace(':', '');
    const h = Number(digits.slice(1, 3));
    const mm = Number(digits.slice(3, 5));
    if (h > 14 || mm > 59) return null;
    offsetMinutes = (digits[0] === '-' ? -1 : 1) * (h * 60 + mm);
  }
  const ms = Number((m[7] ?? '.0').slice(1).padEnd(3, '0'));
  return new Date(Date.UTC(year!, month! - 1, day!, hour!, minute!, second!, ms) - offsetMinutes * 60_000);
}

/** A directive docs/format.md rejects; its message names the line (`line N: …`). */
export class DirectiveError extends Error {
  readonly line: number;
  constructor(line: number, why: string) {
    super(`line ${line}: ${why}`);
    this.line = line;
  }
}

/**
 * A `#! message:` value written in quotes (`"Hola {{nombre}};"`, to keep a trailing separator
 * that would otherwise be taken for a spreadsheet's padding) is unquoted, `""` being one
 * quote; any other value is taken as is.
 */
function unquote(value: string): string {
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
    return value.slice(1, -1).replaceAll('""', '"');
  }
  return value;
}

/**
 * Reads one `#!` line into `into`. Throws a DirectiveError (its message names the line) for
 * anything docs/format.md "Directives" rejects.
 */
export function readDirective(
  text: string,
  line: number,
  allow: AllowDirectives,
  into: Directives,
  seen: Set<string>,
  /** The time zone of `sendAt`'s local form: the send window's. */
  timezone = 'America/Bogota',
): void {
  // The message quotes what was written, and is shown on pages and in the manifest: a phone
  // number in it (`#! priority: 573001234567`) is masked as pages mask numbers.
  const fail: (why: string) => never = (why) => {
    throw new DirectiveError(line, redactText(why));
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
    case 'sendAt': {
      const at = parseSendAt(value, timezone);
      if (!at)
        fail(
          `sendAt is ISO-8601 with an offset (2026-11-27T09:00-05:00) or YYYY-MM-DD HH:mm in ${timezone}, not \`${value.slice(0, 40)}\``,
        );
      // Date.UTC reads the years 0-99 as 1900-1999 (`0000-…` would be 1900): no campaign is
      // scheduled before 2000, so such a year is a mistake, said as one.
      if (Number(value.slice(0, 4)) < 2000)
        fail(`sendAt must be in the year 2000 or later, not \`${value.slice(0, 40)}\``);
      into.sendAt = { line, at: at.toISOString() };
      return;
    }
    case 'message': {
      const template = unquote(value);
      if (template.trim().length === 0) fail('the `#! message:` template is empty');
      into.message = { line, template };
      return;
    }
    case 'channel': {
      const c = value.toLowerCase() as Channel;
      if (!CHANNELS.includes(c))
        fail(`channel must be one of ${CHANNELS.join(', ')}, not \`${value.slice(0, 40)}\``);
      into.channel = { line, channel: c };
      return;
    }
    case 'subject': {
      const template = unquote(value);
      if (template.trim().length === 0) fail('the `#! subject:` is empty');
      into.subject = { line, template };
      return;
    }
    case 'source': {
      const number = parseSourceNumber(value);
      if (number === null)
        fail(
          `source is the WhatsApp sending number, 8 to 15 digits (an optional leading +), not \`${value.slice(0, 40)}\``,
        );
      into.source = { line, number };
      return;
    }
    case 'templateId': {
      if (!/^[\w.:-]{1,128}$/.test(value))
        fail(`templateId is 1 to 128 letters, digits, _ . : or -, not \`${value.slice(0, 40)}\``);
      into.templateId = { line, id: value };
      return;
    }
    case 'flash': {
      const v = value.toLowerCase();
      if (v !== 'true' && v !== 'false') fail(`flash must be true or false, not \`${value.slice(0, 40)}\``);
      into.flash = { line, flash: v === 'true' };
      return;
    }
    default: {
      const unhandled: never = name;
      fail(`unknown directive \`${String(unhandled)}\``);
    }
  }
}
