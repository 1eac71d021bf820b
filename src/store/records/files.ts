// A file as the store records it: its state, what its read found, what it sends, and what
// registering, claiming and patching it take (docs/contract.md "File states (the manifest's
// `state`)").

import type { ChannelName } from '../../channels/names.ts';
import type { CodedText, STATE_DETAILS, TextParams } from '../../errors.ts';
import type { Priority } from '../../format/directives.ts';

export type FileState =
  | 'waiting'
  | 'validating'
  | 'rejected'
  | 'duplicate'
  | 'scheduled'
  | 'sending'
  | 'paused'
  | 'submitted'
  | 'completed'
  | 'partial'
  | 'cancelled';

/** Every file state, in the order a file goes through them. */
export const FILE_STATES: readonly FileState[] = [
  'waiting',
  'validating',
  'rejected',
  'duplicate',
  'scheduled',
  'sending',
  'paused',
  'submitted',
  'completed',
  'partial',
  'cancelled',
];

/** States a file does not leave by itself (retry/resume/cancel may still act on partial). */
export const FINAL_FILE_STATES: readonly FileState[] = ['rejected', 'duplicate', 'completed', 'cancelled'];

export interface IngestCounts {
  records: number;
  valid: number;
  invalid: number;
  duplicates: number;
  suppressed: number;
  segments: number;
}

export interface ListedIssue {
  line: number;
  code: string;
  message: string;
  value?: string | undefined;
}

export interface FileRecord {
  fileId: string;
  /** Source name from the configuration. */
  source: string;
  /** File name as dropped (`x.txt`). */
  name: string;
  /** Where the original is now, relative to the source root (`inbox/x.txt`, `processing/x.txt`, `done/x.txt`). */
  path: string;
  sha256: string;
  bytes: number;
  state: FileState;
  layout: 'personalized' | 'bulk' | null;
  encoding: string | null;
  separator: string | null;
  header: boolean;
  /** The file's `#! priority:` directive (docs/format.md "Directives"); null: its source's priority. */
  priority: Priority | null;
  counts: IngestCounts;
  rejection: { code: string; message: string } | null;
  /** Why the file is paused, partial or cancelled (shown by `status`). */
  reason: string | null;
  /**
   * The same reason as its code and parameters, for a page to word it in its language
   * (docs/dashboard.md "Codes and languages"); null when there is none, or when the reason
   * was written without one (before the store kept codes).
   */
  reasonCode: CodedText | null;
  /** Sent with `send --force` despite DUPLICATE_FILE. */
  forced: boolean;
  /** Recipients resent after an in-doubt grace period: possible duplicates (api.inDoubt "resend"). */
  possibleDuplicates: number;
  /** First errors of the file, for the manifest (the report has all of them). */
  errors: ListedIssue[];
  /** How many rows of the file had each error code (all of them, not only the first); {} until read. */
  errorCounts: Record<string, number>;
  createdAt: string;
  updatedAt: string;
  /** The first time the file entered each state. */
  timestamps: Partial<Record<FileState, string>>;
  /** After this instant recipients still without a final delivery status become UNKNOWN. */
  deliveryDeadline: string | null;
  /** The file's `#! sendAt:`: not sent before this instant. */
  sendAt: string | null;
  /** `scheduled`: when it starts (the later of sendAt and the send window's next opening). */
  scheduledUntil: string | null;
  /** What the file costs, from its read (null until read). */
  cost: FileCost | null;
  /**
   * What the file sends on a channel without per-recipient texts (email, WhatsApp), from its
   * read; null for sms, and until read.
   */
  content: FileContent | null;
  /**
   * What every recipient of a bulk file is sent (docs/format.md "Bulk layout: one message, many
   * numbers"; a WhatsApp file's: its template parameters as a JSON array), from its read; null
   * for a personalized file, and until read. Its recipient rows carry no text.
   */
  bulkText: string | null;
  /** What a sending file waits on, as a code and its parameters (issue 32); null: nothing. */
  detail: StateDetail | null;
  /** The short code it is sent from, set when it is read (docs/replies.md); null: none, no reply is joined to it. */
  shortCode: string | null;
  leaseOwner: string | null;
  leaseUntil: string | null;
  /** The worker whose expired lease the file's last acquisition took (dead or stalled); null: it was free. */
  takenOverFrom: string | null;
  /**
   * When retention removed (or began removing) the file's recipients, chunks and delivery
   * reports; its counts are then those it had at that moment. null: never pruned.
   */
  prunedAt: string | null;
  /**
   * Reports the file's source could not take (report.csv, manifest, errors.csv): owed since
   * `since`, `failures` writes failed since, the next try at `retryAt` (the store's clock).
   * null: nothing owed (docs/runbook.md "Report pending").
   */
  reportPending: { since: string; failures: number; retryAt: string } | null;
}

/**
 * What a file waits on, for the dashboard to word in its language, and status to print
 * (docs/dashboard.md "State details"). SERVICE_UNREACHABLE: its sends find no messaging
 * service (no connection, no answer) since `since`; they are being retried.
 */
export interface StateDetail {
  code: keyof typeof STATE_DETAILS;
  /** ISO-8601: when the service was first found unreachable. */
  since: string;
  /** The last failure, as the client words it (`ECONNREFUSED: connect ECONNREFUSED 10.0.0.5:443`). */
  error: string;
}

/** A file's cost in segments, from its read (ReadSummary's fields of the same names). */
export interface FileCost {
  /** Segments of the valid recipients by ISO country. */
  segmentsByCountry: Record<string, number>;
  /** The file's segments as the sender wrote the texts, and transliterated to GSM-7. */
  transliteration: {
    mode: 'never' | 'gsm7';
    segmentsAsWritten: number;
    segmentsTransliterated: number;
    recipientsChanged: number;
  } | null;
}

/**
 * What every recipient of an email file is sent (docs/format.md "Email files"): a stored
 * template, or a subject and HTML.
 */
export interface FileEmail {
  channel: 'email';
  templateId?: string;
  subject?: string;
  html?: string;
  /** Its shared attachments' names and sizes in bytes (their content: Store.attachments). */
  attachments?: { name: string; bytes: number }[];
}

/** What every recipient of a WhatsApp file is sent: an approved template, from a sending number. */
export interface FileWhatsApp {
  channel: 'whatsapp';
  templateId: string;
  /** The sending number; absent: the account's. */
  source?: string;
}

/**
 * A file sent with POST /mtmessage rather than the massive endpoint (docs/channels.md "RCS and
 * flash SMS"): an RCS file, or an sms file with `#! flash: true`. Its texts are its recipients'
 * own, as for sms.
 */
export interface FileMtMessage {
  channel: 'rcs' | 'sms';
  flash?: boolean;
}

/**
 * A file of a channel whose files keep nothing but their channel (two-way SMS, and any channel
 * added later that sends its recipients' own texts): adding one needs no change here.
 */
export interface FileOfChannel {
  channel: Exclude<ChannelName, FileEmail['channel'] | FileWhatsApp['channel'] | FileMtMessage['channel']>;
}

export type FileContent = FileEmail | FileWhatsApp | FileMtMessage | FileOfChannel;

export interface NewFile {
  fileId: string;
  source: string;
  name: string;
  path: string;
  sha256: string;
  bytes: number;
  forced?: boolean;
  /** Initial state; `validating` when the pipeline claims a ready file. */
  state: FileState;
  /**
   * A file recorded `rejected`: why, written with it (never a rejected file without its code);
   * `params` what its message says beyond its code: given, the code and them are its reason's
   * (FileRecord.reasonCode); absent, its reason has none.
   */
  rejection?: { code: string; message: string; params?: TextParams } | undefined;
}

/** A file newly ready in a source's inbox (claimFiles). */
export interface ReadyFile {
  name: string;
  path: string;
  sha256: string;
  bytes: number;
}

export interface ClaimOptions {
  /** The fileId of the `generation`-th file with this content from this source (1 for the first). */
  idFor(sha256: string, generation: number): string;
  /** Content completed (or submitted) at or after this instant is DUPLICATE_FILE. */
  duplicateSince: string;
  /** `send --force`: never DUPLICATE_FILE. */
  force?: boolean;
}

export interface ClaimedFile {
  file: FileRecord;
  /** false: this very file (source, path, content) was recorded before. */
  created: boolean;
  /** The file this one duplicates when it was recorded as `duplicate`. */
  duplicateOf: FileRecord | null;
}

/** Fields a transition or update may set (undefined = unchanged). */
export interface FilePatch {
  path?: string;
  layout?: 'personalized' | 'bulk' | null;
  encoding?: string | null;
  separator?: string | null;
  header?: boolean;
  priority?: Priority | null;
  counts?: IngestCounts;
  rejection?: { code: string; message: string } | null;
  /** A reason set without its code (reasonCode absent) is kept with none. */
  reason?: string | null;
  /** Written with `reason`, never alone. */
  reasonCode?: CodedText | null;
  errors?: ListedIssue[];
  errorCounts?: Record<string, number>;
  deliveryDeadline?: string | null;
  sendAt?: string | null;
  scheduledUntil?: string | null;
  cost?: FileCost | null;
  content?: FileContent | null;
  bulkText?: string | null;
  detail?: StateDetail | null;
  shortCode?: string | null;
}
