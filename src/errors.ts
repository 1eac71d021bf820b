// One table of every code dropline emits. Codes are stable API: never rename one.
// docs/errors.md lists them all; test/unit/errors-doc.test.ts fails when one is missing.

/** Where a reason applies: a record (line), a warning on a sent record, or the whole file. */
export type ReasonScope = 'record' | 'warning' | 'file' | 'skip';

export interface ReasonInfo {
  readonly scope: ReasonScope;
  readonly message: string;
  readonly hint: string;
}

/** The format's reason codes (docs/errors.md): the answers a user gets for a bad line or file. */
export const REASONS = {
  // records (the line is not sent)
  LINE_TOO_LONG: {
    scope: 'record',
    message: 'the line is longer than the maximum line length',
    hint: 'split the line, or check that the file really uses line breaks',
  },
  MALFORMED_QUOTE: {
    scope: 'record',
    message: 'a quoted field is never closed, or text follows its closing quote',
    hint: 'close the quote; write a quote inside a quoted field as ""',
  },
  TOO_MANY_FIELDS: {
    scope: 'record',
    message: 'the record has more fields than the header',
    hint: 'quote the message when it contains the separator',
  },
  MISSING_FIELD: {
    scope: 'record',
    message: 'a `{{placeholder}}` of the message has no value on this line (its column is empty or missing)',
    hint: 'fill in the column the message names on that line, or leave the line out; a literal {{ is written {{{{',
  },
  INVALID_MESSAGE_ID: {
    scope: 'record',
    message: 'the messageId is longer than 64 characters',
    hint: 'use identifiers of at most 64 characters',
  },
  DUPLICATE_MESSAGE_ID: {
    scope: 'record',
    message: 'the messageId is already used on an earlier line of the file',
    hint: 'give every line its own messageId',
  },
  INVALID_NUMBER: {
    scope: 'record',
    message: 'not a valid mobile number',
    hint: 'write a Colombian mobile as 3001234567 or 573001234567, others in E.164 (+5215512345678)',
  },
  INVALID_EMAIL: {
    scope: 'record',
    message: 'not a valid email address',
    hint: 'write one address a field, as name@example.com (no display name, no mailto:); an accented domain is fine',
  },
  NOT_MOBILE: {
    scope: 'record',
    message: 'the number is a landline, not a mobile',
    hint: 'SMS reach mobiles only: remove the line or correct the number',
  },
  COUNTRY_NOT_ALLOWED: {
    scope: 'record',
    message: "the number's country is not allowed for this source",
    hint: "remove the line, or add the country to the source's allowedCountries",
  },
  EMPTY_MESSAGE: {
    scope: 'record',
    message: 'the message is empty',
    hint: 'write the message after the separator',
  },
  // not sent, not invalid
  DUPLICATE: {
    scope: 'skip',
    message: 'the same number with the same message is already on an earlier line',
    hint: 'nothing to do: the recipient gets the message once',
  },
  SUPPRESSED: {
    scope: 'skip',
    message: 'the number is on the suppression (opt-out) list',
    hint: 'nothing to do: opted-out numbers are never sent',
  },
  CONTACT_LIMIT: {
    scope: 'skip',
    message:
      'the number was already contacted this day, or by another channel this week, by the same entity (contactLimit, Ley 2300 de 2023)',
    hint: 'nothing to do: the detail says which rule and when; send it again another day (or week), or lift contactLimit',
  },
  NO_CONSENT: {
    scope: 'skip',
    message: "the number (or address) has no consent for the file's channel on the consent list",
    hint: 'nothing to do: add the number and channel to the consent list (consent.list) once the person agrees',
  },
  // warnings (sent all the same)
  CONTROL_CHARS_REMOVED: {
    scope: 'warning',
    message: 'control characters were removed from the message',
    hint: 'remove tabs and other control characters from the message',
  },
  LONG_MESSAGE: {
    scope: 'warning',
    message: 'the message is longer than 500 characters',
    hint: 'long messages cost several segments; shorten it if you can',
  },
  UCS2_MESSAGE: {
    scope: 'warning',
    message: 'the message needs UCS-2 encoding, which costs more segments',
    hint: 'replace the named characters (for example á with a) to send in GSM-7',
  },
  // whole file (nothing is sent)
  EMPTY_FILE: {
    scope: 'file',
    message: 'the file has no data record',
    hint: 'check that the right file was dropped',
  },
  BINARY_FILE: {
    scope: 'file',
    message: 'the file contains NUL bytes: it is not a text file',
    hint: 'export the file as text (UTF-8) and drop it again',
  },
  NO_MESSAGE: {
    scope: 'file',
    message: 'a bulk file must start with the message, but its first record is a list of numbers',
    hint: 'put the message on the first line, or add the message to every line (personalized layout)',
  },
  TOO_MANY_INVALID: {
    scope: 'file',
    message: 'too many invalid recipients',
    hint: 'fix the lines listed in errors.csv and drop the file again',
  },
  FILE_TOO_LARGE: {
    scope: 'file',
    message: 'the file is larger than the configured maximum',
    hint: 'split the file, or raise maxFileBytes',
  },
  TRAILER_MISMATCH: {
    scope: 'file',
    message: "the trailer's record count differs from the records read",
    hint: 'the file may be incomplete or truncated: drop it again whole',
  },
  BAD_DIRECTIVE: {
    scope: 'file',
    message: 'a `#!` directive is unknown, does not parse, is given twice, or is not allowed for this source',
    hint: 'correct or remove the `#!` line named (directives: docs/format.md); a `#!` line meant as a comment goes after the first data line',
  },
  UNKNOWN_PLACEHOLDER: {
    scope: 'file',
    message: 'a `{{placeholder}}` of the message names no column of the header',
    hint: 'correct the placeholder or add the column to the header; write a literal {{ as {{{{',
  },
  UNKNOWN_TEMPLATE: {
    scope: 'file',
    message: "the email file's templateId is not a template of its email account",
    hint: 'use an id the account has (`dropline validate --source <name>` lists them), or create the template on the service first',
  },
  TOO_MANY_ATTACHMENTS: {
    scope: 'file',
    message: "the email file's attachments folder holds more than 10 files (the service's limit)",
    hint: 'keep at most 10 files in attachments/<file name>/ beside the inbox (zip them into one if need be), then drop the file again',
  },
  ATTACHMENTS_TOO_LARGE: {
    scope: 'file',
    message: "the email file's attachments total more than 8 MB (the service's limit, 8,000,000 bytes)",
    hint: 'make the files in attachments/<file name>/ smaller (compress the PDFs), or send a link in the message instead, then drop the file again',
  },
  MISSING_TRAILER: {
    scope: 'file',
    message: 'the source requires a trailer line (EOF;<n>) and none came before the time-out',
    hint: 'end the file with EOF;<number of recipient records>',
  },
  MARKER_MISMATCH: {
    scope: 'file',
    message: "the file's `.done` marker holds a sha256 that is not the file's (or not 64 hexadecimal digits)",
    hint: 'nothing of it was sent: upload the whole file again, then its marker with sha256=<the sha256 of that file> (sha256sum prints it)',
  },
  DUPLICATE_FILE: {
    scope: 'file',
    message: 'the same content was already completed from this source',
    hint: 'use send --force to send it again on purpose',
  },
  FILE_CHANGED: {
    scope: 'file',
    message: 'the file changed after it was claimed (its size or sha256 is no longer the claimed one)',
    hint: 'nothing of it was sent; never write to a file once it is in the inbox or processing/: drop the final version again under a new name',
  },
  NOT_A_REGULAR_FILE: {
    scope: 'file',
    message:
      'the name no longer points to a regular file (a symbolic link, FIFO, device or folder was put in its place)',
    hint: 'drop a regular file; dropline never follows links or reads FIFOs in a source',
  },
  FILE_UNREADABLE: {
    scope: 'file',
    message: 'dropline may not read the file (permission denied)',
    hint: "give the dropline user read permission (chmod o+r or the source's group) and drop the file again",
  },
} as const satisfies Record<string, ReasonInfo>;

export type ReasonCode = keyof typeof REASONS;

/**
 * The detail of a recipient held back just before its chunk was sent (Store.holdBack), by
 * its reason code: the report's detail column reads it.
 */
export const HELD_BACK_DETAILS = {
  SUPPRESSED: 'opted out by a reply after the file was read',
  CONTACT_LIMIT: {
    day: (perDay: number, channel: string | null, at: string | null) =>
      `already contacted this day${contact(channel, at)} (contactLimit ${perDay} a day)`,
    week: (channels: number, channel: string | null, at: string | null) =>
      `already contacted by another channel this week${contact(channel, at)} (contactLimit ${channels} channel${channels === 1 ? '' : 's'} a week)`,
  },
} as const satisfies Partial<Record<ReasonCode, unknown>>;

/** `: by sms at 2026-11-28 09:15:02 -05:00`, the contact in the way of a held-back one. */
function contact(channel: string | null, at: string | null): string {
  if (channel === null && at === null) return '';
  return `: by ${channel ?? 'a channel'}${at === null ? '' : ` at ${at}`}`;
}

export type FileReasonCode = {
  [K in ReasonCode]: (typeof REASONS)[K]['scope'] extends 'file' ? K : never;
}[ReasonCode];

/**
 * Operational errors (configuration, I/O, the messaging service). `retryable` says
 * whether the same operation may succeed later unchanged.
 */
export interface ErrorInfo {
  readonly message: string;
  readonly hint: string;
  readonly retryable: boolean;
}

export const ERRORS = {
  DROPLINE_ERR_USAGE: {
    message: 'invalid command line',
    hint: 'run dropline --help for the commands and their flags',
    retryable: false,
  },
  DROPLINE_ERR_CONFIG: {
    message: 'invalid configuration',
    hint: 'the message names the bad key and what is allowed',
    retryable: false,
  },
  DROPLINE_ERR_FILE_UNREADABLE: {
    message: 'the file cannot be read',
    hint: 'check the path and its permissions',
    retryable: false,
  },
  DROPLINE_ERR_SUPPRESSION_LIST: {
    message: 'the suppression list cannot be read',
    hint: 'check the suppressionList location (a local path, s3://bucket/key or <sourceName>:<path>): a text file, one number per line',
    retryable: false,
  },
  DROPLINE_ERR_SUPPRESSION_LIST_REFUSED: {
    message:
      "the suppression list's new content was refused: it is no list of numbers, or most of its numbers are gone",
    hint: 'put the list right (plain text, UTF-8 or UTF-16 with BOM, one number per line, not compressed, uploaded whole); the files it applies to wait until then. A list emptied or cut on purpose is taken by a restart',
    retryable: true,
  },
  DROPLINE_ERR_CONSENT_LIST: {
    message: 'the consent list cannot be read',
    hint: 'check the consent.list location (a local path, s3://bucket/key or <sourceName>:<path>): a text file, one "<number or address>;<channels>" entry a line',
    retryable: false,
  },
  DROPLINE_ERR_CONSENT_LIST_REFUSED: {
    message:
      "the consent list's new content was refused: it is no consent list, or most of its entries are gone",
    hint: 'put the list right (plain UTF-8 text, one "<number or address>;<channels>" entry a line, uploaded whole); every file waits until then. A list emptied or cut on purpose is taken by a restart',
    retryable: true,
  },
  DROPLINE_ERR_SERVICE_AUTH: {
    message: 'the messaging service refused the credentials or the token',
    hint: 'check api.username and api.password; another process logging in with the same account expires this one token',
    retryable: false,
  },
  DROPLINE_ERR_SERVICE_FORBIDDEN: {
    message: 'the messaging service forbids this account or IP address (403)',
    hint: "the account is paused: ask the service's support to allow the account or this IP address, then resume",
    retryable: false,
  },
  DROPLINE_ERR_SERVICE_REJECTED: {
    message: 'the messaging service rejected the request as invalid (400)',
    hint: 'the reason names the field; the other recipients of the chunk were sent',
    retryable: false,
  },
  DROPLINE_ERR_SERVICE_TOO_LARGE: {
    message: 'the messaging service refused a request of a single recipient as too large (413)',
    hint: "shorten the message text or the callbackData (SMS), or that recipient's fields or the attachments (email)",
    retryable: false,
  },
  DROPLINE_ERR_SERVICE_RATE_LIMITED: {
    message: 'the messaging service kept answering 429 (too many requests)',
    hint: 'lower api.ratePerSecond or api.concurrency, then use retry',
    retryable: true,
  },
  DROPLINE_ERR_SERVICE_UNAVAILABLE: {
    message: 'the messaging service stayed unreachable or kept failing (5xx) through every retry',
    hint: 'nothing was sent for these recipients; use retry once the service is back',
    retryable: true,
  },
  DROPLINE_ERR_SERVICE_IN_DOUBT: {
    message: 'the request may have reached the messaging service but no answer came back',
    hint: 'delivery reports settle it; otherwise retry resends the chunk (recipients may get the SMS twice)',
    retryable: false,
  },
  DROPLINE_ERR_SERVICE_FAILED: {
    message: 'the messaging service gave an unexpected answer',
    hint: 'the message shows the HTTP status; check api.baseUrl',
    retryable: false,
  },
  DROPLINE_ERR_SERVICE_BAD_CHUNK: {
    message: 'a planned chunk cannot be sent as POST /mtmessage/massive',
    hint: 'a chunk needs at least one destination and callbackData of at most 200 characters',
    retryable: false,
  },
  DROPLINE_ERR_SANDBOX: {
    message: 'the sandbox cannot start',
    hint: 'pick another --port, or check the --accounts file',
    retryable: false,
  },
  DROPLINE_ERR_NOTIFY_LISTEN: {
    message: 'the delivery-report receiver cannot listen on notify.listen',
    hint: 'another process holds the port, or the address is not on this machine: change notify.listen',
    retryable: false,
  },
  DROPLINE_ERR_OPS_LISTEN: {
    message: 'the ops server cannot listen on ops.listen',
    hint: 'another process holds the port, or the address is not on this machine: change ops.listen',
    retryable: false,
  },
  DROPLINE_ERR_UNKNOWN_FILE: {
    message: 'no file with this fileId in the store',
    hint: 'dropline status lists the files and their fileIds',
    retryable: false,
  },
  DROPLINE_ERR_PRUNED: {
    message: "the file's recipients and delivery reports were removed by retention (retentionDays)",
    hint: 'its manifest (dropline status) keeps the counts; keep report.csv files, or raise retentionDays, to keep more',
    retryable: false,
  },
  DROPLINE_ERR_FILE_STATE: {
    message: 'the file is not in a state this command applies to',
    hint: 'dropline status <fileId> shows its state',
    retryable: false,
  },
  DROPLINE_ERR_STORE: {
    message: 'the store cannot be used',
    hint: "check the store setting, the database file's directory (permissions, free disk space) and that its schema is not newer than this dropline",
    retryable: true,
  },
  DROPLINE_ERR_STORE_CONFLICT: {
    message: 'the store refused a write that conflicts with what another writer did first',
    hint: 'another worker or command changed the same file at the same moment; dropline re-reads and goes on, and a command can simply be run again',
    retryable: false,
  },
  DROPLINE_ERR_STORE_UNAVAILABLE: {
    message: 'the store cannot be reached (connection lost, the database restarting or refusing connections)',
    hint: 'check that the database is up and reachable at the store URL; dropline waits and goes on where it was once it answers again',
    retryable: true,
  },
  DROPLINE_ERR_STORE_SCHEMA: {
    message: "the database's schema is newer than this dropline",
    hint: 'a newer dropline migrated this database: run that version (or newer); never point an older one at it',
    retryable: false,
  },
  DROPLINE_ERR_STORE_READONLY: {
    message: 'the store cannot be written',
    hint: "make the database file, its directory and their file system writable for dropline's user (not mounted read-only, no chattr +i) and free disk space; `dropline run` refuses to start until then",
    retryable: true,
  },
  DROPLINE_ERR_S3: {
    message: 'an S3 source cannot be reached or refused an operation',
    hint: 'check bucket, region, endpoint and forcePathStyle, the credentials (env, profile, web identity) and what the bucket policy allows',
    retryable: true,
  },
  DROPLINE_ERR_SFTP: {
    message: 'an SFTP source cannot be reached or refused an operation',
    hint: 'check host, port, username and the key or password of the source; dropline reconnects with backoff and retries on the next poll',
    retryable: true,
  },
  DROPLINE_ERR_SFTP_HOST_KEY: {
    message: "the SFTP server's host key is not the pinned one",
    hint: "compare hostKeySha256 with ssh-keygen -lf of the server's public host key (ask the partner); a changed key may also mean someone is in between",
    retryable: false,
  },
} as const satisfies Record<string, ErrorInfo>;

export type ErrorCode = keyof typeof ERRORS;

/**
 * What a sending file waits on (FileRecord.detail, docs/errors.md "State details"): not an
 * error, nothing is lost; the file goes on by itself.
 */
export const STATE_DETAILS = {
  SERVICE_UNREACHABLE: {
    hint: 'the messaging service takes no connection; its sends are retried and go on once it answers (check api.baseUrl, the network, the service)',
  },
} as const satisfies Record<string, { hint: string }>;

/** What a coded text's page words into it: a line, figures, a time, a file's id. */
export type TextParams = Record<string, string | number>;

/**
 * A text shown to people as its code and parameters (docs/dashboard.md "Codes and languages"):
 * the store keeps a file's reason so, beside its English, for a page to word it in its language.
 */
export interface CodedText {
  code: string;
  params: TextParams;
}

/** Where a user's state change came from (pause, resume, cancel), as its reason says it. */
export const ACTION_SOURCES = { DASHBOARD: 'from the dashboard', USER: 'by a user' } as const;
export type ActionSource = keyof typeof ACTION_SOURCES;

const acted = (past: string, by: ActionSource) => () => `${past} ${ACTION_SOURCES[by]}`;

/**
 * Why a file is in its state, for the reasons of dropline's own (a rejected or duplicate
 * file's reason is its rejection, a REASONS code): the English of each code from its
 * parameters, for the manifest's `reason`, status and the CLI; the dashboard words the same
 * code and parameters in its language (docs/dashboard.md "Codes and languages").
 */
export const STATE_REASONS = {
  PAUSED_BY_DASHBOARD: acted('paused', 'DASHBOARD'),
  PAUSED_BY_USER: acted('paused', 'USER'),
  RESUMED_BY_DASHBOARD: acted('resumed', 'DASHBOARD'),
  RESUMED_BY_USER: acted('resumed', 'USER'),
  CANCELLED_BY_DASHBOARD: acted('cancelled', 'DASHBOARD'),
  CANCELLED_BY_USER: acted('cancelled', 'USER'),
  SCHEDULED_WINDOW: (p: { at: string; zone: string }) =>
    `outside the send window: starts ${p.at} (${p.zone})`,
  SCHEDULED_SEND_AT: (p: { at: string; zone: string }) => `#! sendAt: starts ${p.at} (${p.zone})`,
  WINDOW_NEVER_OPENS: () => 'the send window never opens in the next 400 days: check sendWindow',
  // The command names the file; the page has its Retry button instead (not a parameter).
  PARTIAL: (p: { failed: number; inDoubt: number }, fileId: string) =>
    `${p.failed} chunk(s) failed, ${p.inDoubt} in doubt: dropline retry ${fileId} resends them`,
  // The service's own words (401/403): no English of dropline's around them.
  ACCOUNT_REFUSED: (p: { text: string }) => p.text,
} as const;

export type StateReasonCode = keyof typeof STATE_REASONS;
/** A user's state change's reason (`${past}_BY_${by}`). */
export type ActionReasonCode = Extract<StateReasonCode, `${string}_BY_${ActionSource}`>;

/** A state's reason as a file keeps it (FilePatch): its English and its code with parameters. */
export function stateReason<C extends StateReasonCode>(
  code: C,
  ...args: Parameters<(typeof STATE_REASONS)[C]>
): { reason: string; reasonCode: CodedText } {
  const english = STATE_REASONS[code] as (...a: unknown[]) => string;
  const params = (args[0] ?? {}) as TextParams;
  return { reason: english(...args), reasonCode: { code, params: { ...params } } };
}

/** A rejected or duplicate file's reason: its rejection's message, and its code with parameters. */
export function rejectionReason(rejection: { code: string; message: string; params?: TextParams }): {
  reason: string;
  reasonCode: CodedText;
} {
  return { reason: rejection.message, reasonCode: { code: rejection.code, params: rejection.params ?? {} } };
}

/** What to do about a code, from either table ('' for a code of the service's own). */
export function hintOf(code: string | null): string {
  if (code === null) return '';
  if (Object.hasOwn(REASONS, code)) return REASONS[code as keyof typeof REASONS].hint;
  if (Object.hasOwn(ERRORS, code)) return ERRORS[code as ErrorCode].hint;
  return '';
}

export class DroplineError extends Error {
  readonly code: ErrorCode;
  readonly hint: string;
  readonly retryable: boolean;
  constructor(code: ErrorCode, detail?: string, options?: { cause?: unknown }) {
    const info: ErrorInfo = ERRORS[code];
    super(detail ? `${info.message}: ${detail}` : info.message, options);
    this.name = 'DroplineError';
    this.code = code;
    this.hint = info.hint;
    this.retryable = info.retryable;
  }
}
