// What the server says to a person, as a code and its parameters (docs/dashboard.md "Codes
// and languages"): the dashboard words each code in its reader's language. The English texts
// stay where they are (manifests, the CLI, the API's `message` and `error` fields). A file's
// reason is stored with its code and parameters (FileRecord.reasonCode, set where the reason
// is made); the parsers below read a reason back from its English only as a fallback, for
// reasons written before the store kept codes (and a refusal's English, errorParams).

import { type CodedText, ERRORS, REASONS, STATE_DETAILS, STATE_REASONS, type TextParams } from '../errors.ts';
import { STATE_ACTIONS } from '../pipeline/actions.ts';
import type { Manifest } from '../pipeline/reports.ts';
import type { FileEvent } from '../store/store.ts';

export type Params = TextParams;

/** A text as its code and parameters; `TEXT` carries a text of no code of dropline's (the service's own). */
export type Worded = CodedText;

/** Who acted, as the file's reason says it (api.ts "from the dashboard", the CLI's "by a user"). */
const BY = { 'from the dashboard': 'DASHBOARD', 'by a user': 'USER' } as const;

/**
 * The codes of a state's reason beyond REASONS' (a rejection's reason is its rejection): the
 * ones the pipeline stores (STATE_REASONS), and TEXT for a reason of no code read back from
 * an older store. The dashboard's i18n has a `reason.<code>` text for each, in both languages
 * (a unit test checks).
 */
export const REASON_CODES = [
  ...Object.values(STATE_ACTIONS).flatMap((a) =>
    Object.values(BY).map((by) => `${a.past.toUpperCase()}_BY_${by}`),
  ),
  ...Object.keys(STATE_REASONS).filter((c) => !c.includes('_BY_')),
  'TEXT',
];

/** Every code the page may have to word: REASONS, ERRORS, STATE_DETAILS and REASON_CODES. */
export function englishTexts(): Record<string, { message: string; hint: string }> {
  const texts: Record<string, { message: string; hint: string }> = {};
  for (const [code, info] of Object.entries({ ...REASONS, ...ERRORS }))
    texts[code] = { message: info.message, hint: info.hint };
  for (const [code, info] of Object.entries(STATE_DETAILS)) texts[code] = { message: '', hint: info.hint };
  return texts;
}

const number = (s: string): number => Number(s);

/** A reason code (REASON_CODES, documented in docs/dashboard.md rather than errors.md: no error). */
const coded = (code: string, params: Params = {}): Worded => ({ code, params });

/** The parameters a rejection's message carries beyond its code (its line, its figures). */
export function rejectionParams(code: string, message: string): Params {
  const params: Params = {};
  const line = /^line (\d+): /.exec(message);
  if (line) params.line = number(line[1]!);
  let m: RegExpExecArray | null;
  if (
    code === 'TOO_MANY_INVALID' &&
    (m = /^(\d+) of (\d+) recipients are invalid \(([\d.]+)%, the limit is ([\d.]+)%\)/.exec(message))
  )
    Object.assign(params, {
      invalid: number(m[1]!),
      judged: number(m[2]!),
      percent: number(m[3]!),
      limit: number(m[4]!),
    });
  else if (code === 'DUPLICATE_FILE' && (m = /as (\S+) \((.*), (\w+)\)$/.exec(message)))
    Object.assign(params, { fileId: m[1]!, name: m[2]!, state: m[3]! });
  else if (code === 'FILE_TOO_LARGE' && (m = /larger than (\d+) bytes .*: (\d+) bytes/.exec(message)))
    Object.assign(params, { max: number(m[1]!), bytes: number(m[2]!) });
  return params;
}

/**
 * A state's reason read back from its English into its code: a user's action, a schedule, a
 * partial send, the service's refusal. The fallback for reasons stored without their code
 * (written before the store kept codes); codedReason prefers the stored one.
 */
export function reasonOf(
  state: string,
  reason: string | null,
  rejection: Manifest['rejection'],
): Worded | null {
  if (rejection && (state === 'rejected' || state === 'duplicate'))
    return { code: rejection.code, params: rejectionParams(rejection.code, rejection.message) };
  if (!reason) return null;
  const action = /^(\w+) (from the dashboard|by a user)$/.exec(reason);
  if (action)
    return { code: `${action[1]!.toUpperCase()}_BY_${BY[action[2] as keyof typeof BY]}`, params: {} };
  const scheduled = /^(#! sendAt:|outside the send window:) starts (.+) \((.+)\)$/.exec(reason);
  if (scheduled)
    return {
      code: scheduled[1] === '#! sendAt:' ? 'SCHEDULED_SEND_AT' : 'SCHEDULED_WINDOW',
      params: { at: scheduled[2]!, zone: scheduled[3]! },
    };
  if (reason.startsWith('the send window never opens')) return coded('WINDOW_NEVER_OPENS', {});
  const partial = /^(\d+) chunk\(s\) failed, (\d+) in doubt\b/.exec(reason);
  if (partial) return coded('PARTIAL', { failed: number(partial[1]!), inDoubt: number(partial[2]!) });
  // A pause of the file's own: the service refused the account (401/403), in the service's words.
  if (state === 'paused') return coded('ACCOUNT_REFUSED', { text: reason });
  return coded('TEXT', { text: reason });
}

/** An API refusal's parameters (DROPLINE_ERR_FILE_STATE: the file's state and what the action needs). */
export function errorParams(code: string, message: string): Params {
  const m = /: (\S+) is (\w+); (\w+) applies to a file that is (.+)$/.exec(message);
  if (code === 'DROPLINE_ERR_FILE_STATE' && m)
    return { fileId: m[1]!, state: m[2]!, action: m[3]!, from: m[4]! };
  const id = /: (\S+?):? (no failed or in-doubt chunk|is being driven)/.exec(message);
  if (code === 'DROPLINE_ERR_FILE_STATE' && id)
    return { fileId: id[1]!, why: id[2]!.startsWith('no') ? 'NOTHING_TO_RETRY' : 'BUSY' };
  return {};
}

/**
 * A rejection's parameters: those kept with the file's reason when its code is the
 * rejection's, else read back from its message (a file rejected before the store kept them).
 */
function paramsOfRejection(rejection: NonNullable<Manifest['rejection']>, stored: Worded | null): Params {
  if (stored && stored.code === rejection.code) return stored.params;
  return rejectionParams(rejection.code, rejection.message);
}

/** A state's reason as its code: a rejected file's is its rejection; else the stored code, or the English read back. */
function codedReason(
  state: string,
  reason: string | null,
  rejection: Manifest['rejection'],
  stored: Worded | null,
): Worded | null {
  if (rejection && (state === 'rejected' || state === 'duplicate'))
    return { code: rejection.code, params: paramsOfRejection(rejection, stored) };
  return stored ?? reasonOf(state, reason, rejection);
}

/** A manifest as the API answers it: its reason and rejection with their codes (fields added). */
export function wordedManifest(m: Manifest): Manifest {
  return {
    ...m,
    rejection: m.rejection && { ...m.rejection, params: paramsOfRejection(m.rejection, m.reasonCode) },
    reasonCode: codedReason(m.state, m.reason, m.rejection, m.reasonCode),
  } as Manifest;
}

/** A timeline entry with its reason's code. */
export function wordedEvent(
  e: FileEvent,
  rejection: Manifest['rejection'],
): Omit<FileEvent, 'reasonCode'> & { reasonCode: Worded | null } {
  return { ...e, reasonCode: codedReason(e.state, e.reason, rejection, e.reasonCode ?? null) };
}
