// The store: the truth about every file, chunk, recipient and delivery report
// ("The store, not the folder, is the truth about a file":
// docs/contract.md "Folders inside every source").
//
// One interface, several implementations (SQLite now, PostgreSQL next, several workers
// sharing it). Rules every implementation keeps, and test/contract/store.contract.ts checks:
// - Every state change is one atomic statement or transaction with its precondition in it
//   (compare-and-set on the current state, and on the lease owner where one is given):
//   never read-then-write in application code.
// - Batched writes (recipients, chunk results, delivery reports) are one transaction per
//   call, so a 1M-recipient file costs hundreds of transactions, not 1M.
// - Timestamps are ISO-8601 UTC strings taken from the store's clock (`now` option).

import type { BudgetView, PermitAnswer, PermitRequest } from '../core/budget.ts';
import type { STATE_DETAILS } from '../errors.ts';
import type { Priority } from '../format/directives.ts';

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

/** A worker as it announces itself. */
export interface WorkerInfo {
  /** The lease owner it writes. */
  readonly workerId: string;
  readonly host: string;
  readonly pid: number;
  readonly version: string;
}

export interface WorkerRecord extends WorkerInfo {
  readonly startedAt: string;
  readonly heartbeatAt: string;
  /** Since its last heartbeat, on the store's clock. */
  readonly heartbeatAgeMs: number;
  readonly stoppedAt: string | null;
  /** Files it holds an unexpired lease on. */
  readonly files: readonly { fileId: string; name: string; state: FileState; takenOverFrom: string | null }[];
}

/** An account as its send budget is kept: `key` the account as the service knows it, `name` as configured. */
export interface StoreGauges {
  readonly files: Partial<Record<FileState, number>>;
  readonly chunksInDoubt: number;
}

export interface BudgetAccount {
  readonly key: string;
  readonly name: string;
}

/** States a file does not leave by itself (retry/resume/cancel may still act on partial). */
export const FINAL_FILE_STATES: readonly FileState[] = ['rejected', 'duplicate', 'completed', 'cancelled'];

/** `cancelled`: a chunk its file's cancel left unsent (Store.cancelUnsent); it is never sent. */
export type ChunkState =
  | 'pending'
  | 'inflight'
  | 'accepted'
  | 'rejected'
  | 'failed'
  | 'in_doubt'
  | 'cancelled';

/**
 * What became of one record of the file. `pending`: valid, not sent yet; `in_doubt`: its
 * request may have reached the service (no answer). The report shows these names.
 */
export type RecipientOutcome =
  | 'pending'
  | 'sent'
  | 'invalid'
  | 'duplicate'
  | 'suppressed'
  | 'rejected'
  | 'failed'
  | 'in_doubt'
  /** Not sent: the account already contacted the number that day (contactLimit). */
  | 'contact_limit'
  /** Never sent because its file was cancelled (docs/contract.md "Recipient outcomes"). */
  | 'cancelled';

/** Delivery status of a recipient: `pending`, `UNKNOWN`, or the status name received. */
export const PENDING_DELIVERY = 'pending';
export const UNKNOWN_DELIVERY = 'UNKNOWN';
export const DELIVERED = 'DELIVERED_TO_HANDSET';
/**
 * The final status of a recipient the service accepted on a channel without delivery reports
 * (email, WhatsApp): written with the chunk's result (ChunkResult.finalStatus).
 */
export const ACCEPTED_DELIVERY = 'ACCEPTED';

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
  /** What a sending file waits on, as a code and its parameters (issue 32); null: nothing. */
  detail: StateDetail | null;
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
  /** A file recorded `rejected`: why, written with it (never a rejected file without its code). */
  rejection?: { code: string; message: string } | undefined;
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

/**
 * What every recipient of an email file is sent (docs/format.md "Email files"): a stored template,
 * or a subject and HTML.
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
 * A file sent with POST /mtmessage (docs/channels.md "RCS and flash SMS") rather than the massive
 * endpoint: an RCS file, or an sms file with `#! flash: true`. Its texts are its recipients' own,
 * as for sms.
 */
export interface FileMtMessage {
  channel: 'rcs' | 'sms';
  flash?: boolean;
}

export type FileContent = FileEmail | FileWhatsApp | FileMtMessage;

/**
 * A worker silent this long (three missed heartbeats of a `dropline run`) is dead: its files
 * are taken over once their leases expire, and its send permits stop holding their account's
 * concurrency at once (a killed worker's would otherwise hold it until their leases end). A
 * process that never beats (`dropline send`) keeps its permits to their lease's end.
 */
export const WORKER_SILENT_MS = 15_000;

/** One shared attachment of an email file, as the service takes it (docs/service.md "Email"). */
export interface FileAttachment {
  name: string;
  contentType: string;
  /** base64 */
  content: string;
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
  reason?: string | null;
  errors?: ListedIssue[];
  errorCounts?: Record<string, number>;
  deliveryDeadline?: string | null;
  sendAt?: string | null;
  scheduledUntil?: string | null;
  cost?: FileCost | null;
  content?: FileContent | null;
  detail?: StateDetail | null;
}

export interface RecipientInsert {
  /** 1-based order of the row in the file (the report's order). */
  idx: number;
  line: number;
  /** Position on a bulk line (1-based), 0 in personalized files. */
  k: number;
  /** The sent form when the number was valid, else null. */
  number: string | null;
  /** The raw value from the file (for invalid rows and errors.csv). */
  value: string | null;
  messageId: string | null;
  /**
   * The messageId is the generated `<fileId>-<line>[-<k>]` (docs/format.md "Identifiers"), which
   * the store derives on read: `messageId` may then be left null on insert.
   */
  generatedMessageId?: boolean;
  /** Personalized text of a valid recipient; null for bulk files (the text is the file's message). */
  text: string | null;
  /** The chunk a valid recipient is planned into. */
  chunkSeq: number | null;
  outcome: RecipientOutcome;
  /** The format's reason code (invalid, duplicate, suppressed) or API error code. */
  code: string | null;
  /** Human-readable detail of the code. */
  detail: string | null;
  smsCount: number | null;
}

export interface RecipientRecord extends RecipientInsert {
  fileId: string;
  /** Delivery status (PENDING_DELIVERY, a status name, or UNKNOWN_DELIVERY). */
  status: string;
  transactionNumber: string | null;
  updatedAt: string;
}

/** What a request needs of one recipient (chunkDestinations). */
export interface ChunkDestination {
  number: string;
  messageId: string;
  /** null in bulk files: the file's message. */
  text: string | null;
}

/** What one row of the report needs (reportPages). */
export type ReportRow = Pick<
  RecipientRecord,
  | 'line'
  | 'number'
  | 'value'
  | 'messageId'
  | 'outcome'
  | 'code'
  | 'status'
  | 'transactionNumber'
  | 'smsCount'
  | 'updatedAt'
  | 'detail'
>;

export interface ChunkInsert {
  seq: number;
  /** Destinations in the chunk. */
  size: number;
}

export interface ChunkRecord {
  fileId: string;
  seq: number;
  size: number;
  state: ChunkState;
  attempts: number;
  transactionNumber: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  updatedAt: string;
}

/** The outcome of one part of a chunk (the client may split or bisect a chunk). */
export interface PartOutcome {
  /** The messageIds of the part's destinations. */
  messageIds: string[];
  /**
   * The part is the whole request: `messageIds` are every recipient of the chunk that was
   * pending when it was planned (chunkDestinations). The store may then find them by the
   * chunk instead of by the list: the chunk's recipients still `pending`, or `in_doubt`
   * (markInflightInDoubt by a worker that took the lease meanwhile).
   */
  wholeChunk?: boolean;
  outcome: 'sent' | 'rejected' | 'failed' | 'in_doubt' | 'pending';
  transactionNumber?: string | null;
  code?: string | null;
  detail?: string | null;
}

export interface ChunkResult {
  /**
   * The chunk's state after the request(s): `accepted` when every part was accepted or
   * rejected with at least one accepted; `pending` puts it back (403: the file pauses).
   */
  state: ChunkState;
  attempts: number;
  transactionNumber?: string | null;
  errorCode?: string | null;
  errorMessage?: string | null;
  parts: PartOutcome[];
  /**
   * The delivery status the recipients it sends have at once, in the same transaction: ACCEPTED
   * on a channel without delivery reports (email, WhatsApp). Absent: they wait for their reports.
   */
  finalStatus?: typeof ACCEPTED_DELIVERY;
}

/**
 * A status notification's one element of `results`, as received (docs/service.md "Status
 * notifications").
 */
/**
 * A service account's token as the store keeps it for every worker (the service keeps one
 * active token per account: a worker that logged in on its own would expire the others').
 */
export interface SharedToken {
  readonly accessToken: string;
  readonly refreshToken: string | null;
  /** ISO-8601: when the token is to be renewed, ahead of its lapse (the renewing worker's clock). */
  readonly renewAt: string;
  /** 1 for the first token stored, then one more for each renewal. */
  readonly generation: number;
}

export interface DeliveryEvent {
  transactionNumber: string;
  to: string;
  messageId: string;
  bulkId: string;
  callbackData: string | null;
  smsCount: number | null;
  status: string;
  receivedAt: string;
}

export interface DeliveryResult {
  /** Events new to the store (not seen before with the same transactionNumber + to). */
  recorded: number;
  /** Events already recorded: changed nothing. */
  duplicates: number;
  /** New events whose bulkId + messageId match no recipient: kept, not applied. */
  orphans: number;
  /** Files whose recipients changed status (to check for completion). */
  fileIds: string[];
}

export interface FileCounts extends IngestCounts {
  chunks: number;
  chunksPending: number;
  chunksInflight: number;
  chunksAccepted: number;
  chunksRejected: number;
  chunksFailed: number;
  chunksInDoubt: number;
  /** Chunks never sent because their file was cancelled. */
  chunksCancelled: number;
  /** Recipients accepted by the service. */
  submitted: number;
  /** Recipients rejected (400) or failed for good. */
  rejected: number;
  failed: number;
  inDoubt: number;
  delivered: number;
  /** A final status other than DELIVERED_TO_HANDSET and ACCEPTED (NO_SUCCESS and others) or UNKNOWN. */
  undelivered: number;
  unknown: number;
  /**
   * ACCEPTED: taken by the service on a channel without delivery reports (email, WhatsApp):
   * final, neither delivered nor undelivered.
   */
  accepted: number;
  /** Submitted recipients without a final status yet. */
  pendingDelivery: number;
  /**
   * Valid at read, held back when their chunk was sent by the contact limit (CONTACT_LIMIT).
   * Like those suppressed then (an opt-out since the read, counted in `suppressed`), they are
   * no longer counted `valid`: records = valid + invalid + duplicates + suppressed + contactLimited.
   */
  contactLimited: number;
  /** Valid at read, opted out by a reply before their chunk was sent: counted in `suppressed` too. */
  optedOut: number;
  /** Valid recipients never sent because their file was cancelled (still counted `valid`). */
  cancelled: number;
}

/** The counts of a file none of whose chunks was sent yet (beside its ingest counts). */
export const NOTHING_SENT: Readonly<Omit<FileCounts, keyof IngestCounts>> = {
  chunks: 0,
  chunksPending: 0,
  chunksInflight: 0,
  chunksAccepted: 0,
  chunksRejected: 0,
  chunksFailed: 0,
  chunksInDoubt: 0,
  chunksCancelled: 0,
  submitted: 0,
  rejected: 0,
  failed: 0,
  inDoubt: 0,
  delivered: 0,
  undelivered: 0,
  unknown: 0,
  accepted: 0,
  pendingDelivery: 0,
  contactLimited: 0,
  optedOut: 0,
  cancelled: 0,
};

export interface HoldBackOptions {
  /** Check the opt-out list (users' replies). */
  optOuts: boolean;
  /**
   * contactLimit: the account's slots of the local day in `timezone`, the day taken from the
   * store's clock (PostgreSQL's now(), as leases; SQLite's one process), never the caller's.
   * null: no limit.
   */
  contactLimit: { account: string; timezone: string; perDay: number } | null;
}

/** Recipients of the chunk held back by holdBack. */
export interface HeldBack {
  suppressed: number;
  contactLimited: number;
}

export interface NewReply {
  /** ISO-8601. */
  receivedAt: string;
  /** The sender's number as sent (digits, country code first). */
  from: string;
  to: string;
  text: string;
  optOut: boolean;
  /** The service's id of the reply, when it gives one. */
  messageId: string | null;
}

export interface ReplyRecord extends NewReply {
  id: number;
}

/** What one prune step (Store.prune) did. */
export interface PruneStep {
  /** The file whose rows were removed in this step, or null when only orphans were (or nothing). */
  fileId: string | null;
  /** The file was marked pruned in this step (its counts kept). */
  marked: boolean;
  /** The file has no rows left after this step. */
  fileDone: boolean;
  recipients: number;
  /** Delivery reports of the file (and orphan reports) removed. */
  events: number;
  /** Nothing is left to prune before this cutoff. */
  idle: boolean;
}

export interface ListFilesOptions {
  source?: string;
  states?: readonly FileState[];
  limit?: number;
  /** Only files older than this one in the list's order (newest first): the next page. */
  before?: string;
  /**
   * Only files whose name contains this text (case-insensitively; `%`, `_` and `\` are
   * plain characters) or whose fileId starts with it.
   */
  search?: string;
}

/** Store.summary: what a campaign team watches first. */
export interface StoreSummary {
  sending: number;
  sent: number;
  delivered: number;
  undelivered: number;
  waiting: number;
}

/** A state a file entered (Store.fileEvents): recorded by the store with the change itself. */
export interface FileEvent {
  /** When, on the store's clock (ISO-8601 UTC, ms). */
  at: string;
  state: FileState;
  /** The file's `reason` as the change left it. */
  reason: string | null;
}

/**
 * Recipients of a file whose final delivery status was recorded in one minute of the store's
 * clock (Store.deliveryTimeline): the net change of that minute, so a status replaced later
 * (a late report after UNKNOWN, a second report) moves one count out of the category it left,
 * in the minute it changed, and a minute's count may be negative. The three categories are
 * disjoint; summed over every minute of a file, delivered = counts().delivered, unknown =
 * counts().unknown and undelivered + unknown = counts().undelivered (which holds UNKNOWN too).
 */
export interface DeliveryMinute {
  /** The minute's start (ISO-8601 UTC: 2026-03-01T12:34:00.000Z). */
  minute: string;
  /** DELIVERED_TO_HANDSET. */
  delivered: number;
  /** Any other final status, UNKNOWN and ACCEPTED excepted. */
  undelivered: number;
  /** UNKNOWN: no report before the delivery deadline (expireDeliveries). */
  unknown: number;
  /** ACCEPTED: taken by the service on a channel without delivery reports. */
  accepted: number;
}

/** setChunkState's conditions on the file, checked in the same statement. */
export interface ChunkStateGuard {
  readonly owner?: string;
  readonly fileState?: FileState;
}

export interface Store {
  /** Applies pending migrations. Idempotent. */
  migrate(): Promise<void>;
  /** Throws when the store cannot be used: read, written, or has too little free disk (readiness). */
  ping(): Promise<void>;
  /**
   * The setting `key` shared by every process on the store: `value` when none was kept yet,
   * else the one kept (the first writer wins; processes that start at once all read the same).
   */
  keepSetting(key: string, value: string): Promise<string>;
  /** The token stored for the account `key` (see SharedToken), or null. */
  sharedToken(key: string): Promise<SharedToken | null>;
  /**
   * The right to renew the account's token, for `ms` from now (the store's clock): granted
   * only while the stored generation is still `seen` (0: none stored yet) and no other owner
   * holds an unexpired right. The others wait for the generation to change and adopt it.
   */
  claimTokenRenewal(key: string, owner: string, seen: number, ms: number): Promise<boolean>;
  /** Stores the renewed token (generation + 1) and ends the right; null when `owner` no longer held it. */
  storeToken(
    key: string,
    owner: string,
    token: { accessToken: string; refreshToken: string | null; renewAt: string },
  ): Promise<SharedToken | null>;
  /** Ends the right without a token (the renewal failed). */
  releaseTokenRenewal(key: string, owner: string): Promise<void>;
  /**
   * The account's send budget (src/service/budget.ts), shared by every worker: a permit for
   * one request when the account has room for it (its concurrency at its pace), with how long
   * the request must wait for the account's rate; the store's clock decides.
   */
  takeSendPermit(account: BudgetAccount, req: PermitRequest): Promise<PermitAnswer>;
  /** The request's answer is in (or it never went): its permit no longer counts. */
  releaseSendPermit(accountKey: string, permitId: string): Promise<void>;
  /** A 429 or 5xx: the account's pace is lowered, and held for a Retry-After. */
  slowSends(
    account: BudgetAccount,
    trouble: { reason: string; retryAfterMs?: number | undefined },
  ): Promise<void>;
  /** Every account's budget as status shows it. */
  sendBudgets(): Promise<BudgetView[]>;
  /** This worker is alive (`dropline run`, every few seconds); old workers' rows are dropped. */
  heartbeat(worker: WorkerInfo): Promise<void>;
  /** This worker stopped cleanly. */
  workerStopped(workerId: string): Promise<void>;
  /** Workers heard from in the last day, newest first, each with the files it holds now. */
  listWorkers(): Promise<WorkerRecord[]>;
  /** Throws DROPLINE_ERR_STORE_READONLY when a committed write fails (`run` refuses to start). */
  probeWrite(): Promise<void>;
  close(): Promise<void>;

  // ---- files ----
  /**
   * Records a file, unique on (source, path, sha256); when it exists already the existing
   * record is returned with `created: false`. Also unique on fileId.
   */
  registerFile(file: NewFile): Promise<{ file: FileRecord; created: boolean }>;
  /**
   * Records a batch of ready files of one source in ONE transaction (an inbox of thousands
   * of files costs a few statements per file inside it, not a round trip each): per file in
   * order, the record of this very (path, content) when there is one; else a new record
   * whose fileId is `idFor(sha256, n)` (n: files with this content from this source so far,
   * plus one), in state `duplicate` with rejection DUPLICATE_FILE when the same content is
   * being sent now or was completed since `duplicateSince` (unless `force`), else `validating`.
   * No lease is taken.
   */
  claimFiles(source: string, files: readonly ReadyFile[], options: ClaimOptions): Promise<ClaimedFile[]>;
  /** Sets the path of several files in one transaction (after moving them). */
  setPaths(paths: readonly { fileId: string; path: string }[]): Promise<void>;
  getFile(fileId: string): Promise<FileRecord | null>;
  /** Newest first. */
  listFiles(options?: ListFilesOptions): Promise<FileRecord[]>;
  /**
   * The states the file entered, oldest first: when it was recorded and each change of its
   * state since (recorded by the database in the same statement as the change, whatever made
   * it). When there are more than `limit` (200 by default), the newest `limit` of them.
   * Retention keeps them. [] for a file the store does not know.
   */
  fileEvents(fileId: string, limit?: number): Promise<FileEvent[]>;
  /** How many files from this source have this sha256 (to derive a forced resend's fileId). */
  countBySha(source: string, sha256: string): Promise<number>;
  /** For /metrics: files by state, and the chunks in doubt of files not finished. */
  gauges(): Promise<StoreGauges>;
  /**
   * Compare-and-set: moves the file to `to` when its state is one of `from` (any state when
   * omitted) and, when `owner` is given, its lease is held by `owner`. Sets timestamps[to]
   * when first entered, applies the patch, and returns the new record, or null when the
   * precondition did not hold.
   */
  transition(
    fileId: string,
    to: FileState,
    options?: { from?: readonly FileState[]; owner?: string; patch?: FilePatch },
  ): Promise<FileRecord | null>;
  updateFile(fileId: string, patch: FilePatch): Promise<void>;

  // ---- leases: which worker drives a file ----
  /**
   * Takes the lease of a file whose state is in `states` and whose lease is free or expired
   * (oldest updated first), for `leaseMs`. Atomic: two workers never get the same file.
   * A `scheduled` file is taken only once its scheduledUntil has come (the store's clock).
   */
  acquireFile(owner: string, states: readonly FileState[], leaseMs: number): Promise<FileRecord | null>;
  /** Takes the lease of this file when free, expired or already ours. */
  takeLease(fileId: string, owner: string, leaseMs: number): Promise<boolean>;
  renewLease(fileId: string, owner: string, leaseMs: number): Promise<boolean>;
  releaseLease(fileId: string, owner: string): Promise<void>;

  // ---- ingest ----
  /** Deletes the recipients and chunks of a file (before ingesting it again after a crash). */
  clearRecipients(fileId: string): Promise<void>;
  /** An email file's shared attachments, replacing any it had (one transaction). */
  setAttachments(fileId: string, attachments: readonly FileAttachment[]): Promise<void>;
  /** The file's attachments in the order they were set ([] when none). */
  attachments(fileId: string): Promise<FileAttachment[]>;
  /** One transaction per call. */
  insertRecipients(fileId: string, rows: readonly RecipientInsert[]): Promise<void>;
  insertChunks(fileId: string, chunks: readonly ChunkInsert[]): Promise<void>;

  // ---- sending ----
  listChunks(fileId: string, states?: readonly ChunkState[]): Promise<ChunkRecord[]>;
  /** The chunk's recipients in idx order; `outcomes` filters (e.g. failed ones for retry). */
  chunkRecipients(
    fileId: string,
    seq: number,
    outcomes?: readonly RecipientOutcome[],
  ): Promise<RecipientRecord[]>;
  /**
   * The chunk's `pending` recipients in idx order, with only what a request needs: the
   * send path's lean form of chunkRecipients(fileId, seq, ['pending']).
   */
  chunkDestinations(fileId: string, seq: number): Promise<ChunkDestination[]>;
  /**
   * The messageIds of a chunk's recipients by number (docs/format.md "Identifiers": the file's
   * messageId column, else <fileId>-<line>[-<k>]): for reports of a request that named a chunk, not
   * its recipients (POST /mtmessage). Numbers not in the chunk are left out. `numbers` are in the
   * form numbers are stored and sent (digits, country code first: sentForm); every valid recipient
   * of the chunk counts, whatever its outcome, except one recorded without a messageId (it is left
   * out: no report can name it). A chunk never holds a number twice (the planner starts a new
   * chunk); should one, the first in idx order wins. Unknown file or chunk, or a seq no chunk can
   * have (not a 32-bit non-negative integer): an empty map. One read, never a write.
   */
  chunkMessageIds(fileId: string, seq: number, numbers: readonly string[]): Promise<Map<string, string>>;
  /**
   * Compare-and-set on the chunk state; `inflight` also increments attempts. With `owner`,
   * also only while `owner` holds the file's lease, unexpired (fencing: a worker whose lease
   * was taken over, or lapsed, starts no chunk); with `fileState`, only while the file is in
   * that state (a file paused or cancelled meanwhile starts no chunk). One statement.
   */
  setChunkState(
    fileId: string,
    seq: number,
    to: ChunkState,
    from: readonly ChunkState[],
    options?: ChunkStateGuard,
  ): Promise<boolean>;
  /**
   * One transaction: the chunk's state, and every part's recipients' outcome, code and
   * transactionNumber. An `in_doubt` result whose chunk already has a delivery report for
   * one of its messageIds is recorded as accepted (the report proves it).
   */
  recordChunkResult(fileId: string, seq: number, result: ChunkResult): Promise<ChunkState>;
  /**
   * Called by a worker right after it takes a file's lease: chunks of that file still
   * `inflight` were left by a worker that died mid-request, so they become `in_doubt`
   * (their pending recipients too). Returns how many chunks changed.
   */
  markInflightInDoubt(fileId: string): Promise<number>;
  /**
   * Puts the chunks of a file in `states` back to pending, their recipients the service did
   * not take too; returns how many chunks moved. With `addPossibleDuplicates`, the file's
   * possible duplicates grow by it in the same transaction when at least one chunk moved: a
   * call repeated after its commit was lost (the pipeline's patient store) moves nothing and
   * adds nothing.
   */
  requeueChunks(
    fileId: string,
    states: readonly ChunkState[],
    options?: { addPossibleDuplicates?: number },
  ): Promise<number>;

  /**
   * A cancelled file's chunks still `pending` become `cancelled`, with their recipients not
   * sent (those that follow the chunk, and those a 403 held back on their own): their outcome
   * reads `cancelled`. One transaction, only while the file is `cancelled`; idempotent (a
   * chunk recorded pending again later, by a result still in flight at the cancel, is caught
   * by the next call). Returns how many chunks changed.
   */
  cancelUnsent(fileId: string): Promise<number>;

  // ---- reports owed ----
  /**
   * A write of the file's reports failed: they are owed (since now, when not owed already),
   * one failure more, the next try `min(baseMs · 2^(failures before), maxMs)` from now on
   * the store's clock. One statement.
   */
  reportFailed(fileId: string, backoff: { baseMs: number; maxMs: number }): Promise<void>;
  /**
   * The file's reports are owed now, without a failure (a user's cancel, which only the lease
   * holder can close): due at once, whoever holds the file next writes them.
   */
  oweReports(fileId: string): Promise<void>;
  /** Every report the file's state calls for was written: nothing owed any more. */
  reportsWritten(fileId: string): Promise<void>;
  /** Files whose owed reports are due (retryAt come, the store's clock), the longest due first. */
  reportsDue(limit: number): Promise<string[]>;

  // ---- delivery reports ----
  /**
   * One transaction, idempotent on (transactionNumber, to): new events are kept; the
   * recipient with bulkId = fileId and the event's messageId gets its status, smsCount and
   * transactionNumber; an in-doubt chunk with such a report becomes accepted (its in-doubt
   * recipients sent), or pending when it holds recipients a 403 held back (they were never
   * sent and still have to go out). Events matching no recipient are kept as orphans.
   */
  recordDeliveries(events: readonly DeliveryEvent[]): Promise<DeliveryResult>;
  /** Recipients of the file still pending delivery become UNKNOWN. Returns how many. */
  expireDeliveries(fileId: string): Promise<number>;
  /**
   * The file's final delivery statuses by the minute they were recorded in (see
   * DeliveryMinute), ascending; minutes without a change are absent. Kept in the transaction
   * that changes the statuses; one row per minute is read, whatever the number of reports.
   * Retention keeps them (the chart outlives the recipients).
   */
  deliveryTimeline(fileId: string): Promise<DeliveryMinute[]>;
  /**
   * The dashboard's header (docs/dashboard.md "The header"), on one snapshot: files sending,
   * recipients of the chunks the service accepted since `since` (ISO-8601, the start of the
   * operator's day), delivered and undelivered reports recorded since then (delivery
   * minutes), and the recipients sent whose final status has not come (pendingDelivery of
   * the files sending, submitted, paused or partial).
   */
  summary(since: string): Promise<StoreSummary>;

  // ---- campaign rules: opt-outs and the contact limit ----
  /**
   * Just before chunk `seq` is sent, one transaction: its pending recipients whose number is on
   * the opt-out list become `suppressed` (SUPPRESSED), and with `contactLimit` every other
   * takes one of the perDay slots of its number for that account and local day; those finding
   * every slot taken become `contact_limit` (CONTACT_LIMIT). A slot is unique (account, day,
   * number, slot): two workers never both take the last one. A recipient keeps the slot it took
   * (a chunk stopped and sent again takes no second one). chunkDestinations then leaves them out.
   */
  holdBack(fileId: string, seq: number, options: HoldBackOptions): Promise<HeldBack>;
  /**
   * Contact-limit slots of local days (in `timezone`) before yesterday on the store's clock go:
   * they limit nothing any more.
   */
  pruneContacts(timezone: string): Promise<number>;
  /**
   * A user's reply, kept (once per `messageId` when it has one); an opt-out also puts its
   * sender on the opt-out list, in the same transaction. false: a reply already kept.
   */
  recordReply(reply: NewReply): Promise<boolean>;
  /** Replies in the order received, after `afterId`, received at or after `since`. */
  replies(options: { since?: string | undefined; afterId?: number; limit: number }): Promise<ReplyRecord[]>;

  // ---- retention ----
  /**
   * One small step of retention, one transaction: a finished file (FINAL_FILE_STATES) last
   * updated before `finishedBefore` is marked pruned (prunedAt, its counts kept), then loses
   * at most `maxRows` recipients per step with their delivery reports; once none are left its
   * chunks go too. Files already being pruned come first; when no file is left, orphan reports
   * recorded before the cutoff go, `maxRows` at a time. The files row always stays. Call until
   * `idle`.
   */
  prune(options: { finishedBefore: string; maxRows: number }): Promise<PruneStep>;

  // ---- progress and reports ----
  /** A pruned file's counts are those it had when it was pruned. */
  counts(fileId: string): Promise<FileCounts>;
  /**
   * The counts of several files (a page of the file list) in one call, as counts() gives
   * each: never a round trip per file. Files the store does not know are absent.
   */
  countsOf(fileIds: readonly string[]): Promise<Map<string, FileCounts>>;
  /** Every record of the file in idx order, read in pages (flat memory on millions of rows). */
  recipients(fileId: string, outcomes?: readonly RecipientOutcome[]): AsyncIterable<RecipientRecord>;
  /** The same in pages (a few thousand rows each): cheaper for reports of millions of rows. */
  recipientPages(fileId: string, outcomes?: readonly RecipientOutcome[]): AsyncIterable<RecipientRecord[]>;
  /** Every record of the file in idx order and in pages, with only the report's columns. */
  reportPages(fileId: string): AsyncIterable<ReportRow[]>;
}
