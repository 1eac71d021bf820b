// The store: the truth about every file, chunk, recipient and delivery report
// (docs/store.md "The store": the folders only follow it).
//
// One interface, several implementations (SQLite, PostgreSQL, several workers sharing it),
// its methods grouped by area as each backend's files are (docs/architecture.md "Stores: the
// same areas on each backend"); the records they take and give are in records/<area>.ts,
// exported from here too. Rules every implementation keeps, and test/contract/store.contract.ts
// checks:
// - Every state change is one atomic statement or transaction with its precondition in it
//   (compare-and-set on the current state, and on the lease owner where one is given):
//   never read-then-write in application code.
// - Batched writes (recipients, chunk results, delivery reports) are one transaction per
//   call, so a 1M-recipient file costs hundreds of transactions, not 1M.
// - Timestamps are ISO-8601 UTC strings taken from the store's clock (`now` option).

import type { BudgetView, PermitAnswer, PermitRequest } from '../core/budget.ts';
import type { BudgetAccount, SharedToken } from './records/accounts.ts';
import type {
  BeginChunk,
  FileReply,
  HeldBack,
  HoldBackOptions,
  KeptReply,
  NewReply,
  ReplyCounts,
  ReplyRecord,
} from './records/campaign.ts';
import type { DeliveryEvent, DeliveryMinute, DeliveryResult } from './records/deliveries.ts';
import type {
  ClaimedFile,
  ClaimOptions,
  FilePatch,
  FileRecord,
  FileState,
  NewFile,
  ReadyFile,
} from './records/files.ts';
import type {
  ChunkInsert,
  FileAttachment,
  RecipientInsert,
  RecipientOutcome,
  RecipientRecord,
} from './records/ingest.ts';
import type { WorkerInfo, WorkerRecord } from './records/leases.ts';
import type { ContactRecord, ContactsQuery, FileChecks, PruneContactsOptions } from './records/ledger.ts';
import type {
  FileCounts,
  FileEvent,
  ListFilesOptions,
  ReportRow,
  StoreGauges,
  StoreSummary,
} from './records/reads.ts';
import type { PruneStep } from './records/retention.ts';
import type {
  ChunkDestination,
  ChunkRecord,
  ChunkResult,
  ChunkState,
  ChunkStateGuard,
} from './records/sending.ts';
import type {
  AnswerOutcome,
  ClaimedAnswer,
  OperatorChange,
  ReplyAnswer,
  Standing,
} from './records/standing.ts';

export * from './records/accounts.ts';
export * from './records/campaign.ts';
export * from './records/deliveries.ts';
export * from './records/files.ts';
export * from './records/ingest.ts';
export * from './records/leases.ts';
export * from './records/ledger.ts';
export * from './records/reads.ts';
export * from './records/retention.ts';
export * from './records/sending.ts';
export * from './records/standing.ts';

export interface Store {
  // ---- the store itself: its schema, health and connection ----
  /** Applies pending migrations. Idempotent. */
  migrate(): Promise<void>;
  /** Throws when the store cannot be used: read, written, or has too little free disk (readiness). */
  ping(): Promise<void>;
  /** Throws DROPLINE_ERR_STORE_READONLY when a committed write fails (`run` refuses to start). */
  probeWrite(): Promise<void>;
  close(): Promise<void>;

  // ---- files (files.ts): register and claim files, paths, transitions and patches ----
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
  /**
   * Sets the path of several files in one transaction (after moving them). An entry with
   * `from` (a claim's record of its moves) changes the path only where it is still `from`:
   * a worker that found the file moved and recorded its path meanwhile keeps its own.
   */
  setPaths(paths: readonly { fileId: string; path: string; from?: string }[]): Promise<void>;
  /** How many files from this source have this sha256 (to derive a forced resend's fileId). */
  countBySha(source: string, sha256: string): Promise<number>;
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

  // ---- leases (leases.ts): which worker drives a file, and the workers themselves ----
  /** This worker is alive (`dropline run`, every few seconds); old workers' rows are dropped. */
  heartbeat(worker: WorkerInfo): Promise<void>;
  /** This worker stopped cleanly. */
  workerStopped(workerId: string): Promise<void>;
  /** Workers heard from in the last day, newest first, each with the files it holds now. */
  listWorkers(): Promise<WorkerRecord[]>;
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

  // ---- ingest (ingest.ts): a file's recipients, chunks and attachments as read ----
  /** Deletes the recipients and chunks of a file (before ingesting it again after a crash). */
  clearRecipients(fileId: string): Promise<void>;
  /** An email file's shared attachments, replacing any it had (one transaction). */
  setAttachments(fileId: string, attachments: readonly FileAttachment[]): Promise<void>;
  /** The file's attachments in the order they were set ([] when none). */
  attachments(fileId: string): Promise<FileAttachment[]>;
  /** One transaction per call. */
  insertRecipients(fileId: string, rows: readonly RecipientInsert[]): Promise<void>;
  insertChunks(fileId: string, chunks: readonly ChunkInsert[]): Promise<void>;

  // ---- sending (sending.ts): chunks, their recipients, results, requeue and cancel ----
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
   * messageId column, else <fileId>-<line>[-<k>]): for reports of a request that named a chunk, not its
   * recipients (POST /mtmessage). Numbers not in the chunk are left out.
   * `numbers` are in the form numbers are stored and sent (digits, country code first:
   * sentForm); every valid recipient of the chunk counts, whatever its outcome, except one
   * recorded without a messageId (it is left out: no report can name it). A chunk never holds
   * a number twice (the planner starts a new chunk); should one, the first in idx order wins.
   * Unknown file or chunk, or a seq no chunk can have (not a 32-bit non-negative integer):
   * an empty map. One read, never a write.
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
   * one of its messageIds is recorded as accepted (the report proves it). The contacts of its
   * recipients the service never took are given back (docs/campaign-rules.md "Contacts given
   * back"), only while `owner`, when given, holds the file's lease: a result recorded after
   * another worker took the file over gives nothing back.
   */
  recordChunkResult(
    fileId: string,
    seq: number,
    result: ChunkResult,
    options?: { owner?: string },
  ): Promise<ChunkState>;
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

  // ---- deliveries (deliveries.ts): delivery reports onto recipients, expiry, the timeline ----
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

  // ---- campaign (campaign.ts): opt-outs and the contact limit, replies ----
  /**
   * Just before chunk `seq` is sent, one transaction: its pending recipients whose number is on
   * the opt-out list become `suppressed` (SUPPRESSED), and with `contactLimit` every other
   * takes a slot of the entity's ledger (docs/campaign-rules.md "Contact limit"): one of the
   * channelsPerWeek slots of its key's local week for the chunk's channel (unless that
   * channel holds one), then one of the perDay slots of its key's local day; those left
   * without become `contact_limit` (CONTACT_LIMIT) with the rule and the contact in their way,
   * and give back a week slot they took. Slots are unique (entity, day or week, key, slot):
   * two workers never both take the last one. A recipient keeps the slots it took (a chunk
   * stopped and sent again takes no second one). chunkDestinations then leaves them out.
   */
  holdBack(fileId: string, seq: number, options: HoldBackOptions): Promise<HeldBack>;
  /**
   * The write-ahead of a chunk under campaign rules, one transaction: the chunk pending →
   * inflight as setChunkState (fenced by `guard`), and holdBack on its recipients, so contacts
   * are taken only by a chunk that goes out. When holdBack held anyone back, only their
   * outcomes stay: the chunk is pending again and no contact is taken (`{ held }`: read its
   * destinations again and begin anew). See BeginChunk.
   */
  beginChunk(
    fileId: string,
    seq: number,
    guard: ChunkStateGuard,
    options: HoldBackOptions,
  ): Promise<BeginChunk>;
  /**
   * Ledger slots of local days (in `timezone`, the store's clock) more than keepDays before
   * today go, and week slots of weeks ended by then. Returns how many.
   */
  pruneContacts(options: PruneContactsOptions): Promise<number>;
  /** Keeps what compliance prints beside the file's contacts (fields given replace those kept). */
  recordFileChecks(fileId: string, checks: FileChecks): Promise<void>;
  /** A page of the ledger's contacts, in (entity, day, key, slot) order (dropline compliance). */
  contacts(query: ContactsQuery): Promise<ContactRecord[]>;
  /**
   * A user's reply, kept (once per `messageId` when it has one); in the same transaction an
   * opt-out puts its sender on the opt-out list, an opt-in takes it off, each change kept in
   * the number's history (./standing-rules.ts), and the reply is joined to the latest recipient
   * sent to its number from its short code since `joinSince` (docs/replies.md). null: a reply
   * already kept.
   */
  recordReply(reply: NewReply): Promise<KeptReply | null>;
  /** Replies in the order received, after `afterId`, received at or after `since`. */
  replies(options: { since?: string | undefined; afterId?: number; limit: number }): Promise<ReplyRecord[]>;
  /** The replies joined to the file, in the order received: every one, or its `latest` (docs/replies.md). */
  fileReplies(fileId: string, options?: { latest?: number }): Promise<FileReply[]>;
  /** How many replies the file has, and how many of its recipients replied. */
  replyCounts(fileId: string): Promise<ReplyCounts>;

  // ---- standing (standing.ts): a number's history, confirmations, replies to review ----
  /** The number's standing now and every change to it, oldest first (docs/opt-outs.md). */
  standing(number: string): Promise<Standing>;
  /**
   * An operator puts the number on the opt-out list or takes it off, at the store's clock,
   * kept in its history (source `operator`). false: it was so already, nothing kept.
   */
  changeStanding(change: OperatorChange): Promise<boolean>;
  /**
   * The right to send `number` a confirmation text on the local day (in `timezone`) of the
   * store's clock: true once a number a day, whatever the number of workers (a primary key).
   */
  takeConfirmation(number: string, timezone: string): Promise<boolean>;
  /**
   * Claims reply `reply`'s owed answer to send it now (docs/opt-outs.md "Answers"): `sending`,
   * for one process whatever the number of workers (the UPDATE decides). A confirmation takes
   * the number's day (in `timezone`) as takeConfirmation does, and is skipped when the day has
   * one; an answer owed for over a day is skipped. null: nothing to send.
   */
  claimAnswer(reply: number, timezone: string): Promise<ClaimedAnswer | null>;
  /**
   * A claimed answer sent, failed (never claimed again), or owed again (refused without being
   * taken: claimed again later, failed after MAX_ANSWER_ATTEMPTS claims).
   */
  settleAnswer(reply: number, outcome: AnswerOutcome, detail: string | null): Promise<void>;
  /**
   * The replies whose answer is owed, oldest first, after reply `after` (a sweep's cursor: an
   * answer put back owed is not asked again in the same sweep).
   */
  answersOwed(limit: number, after?: number): Promise<number[]>;
  /**
   * Answers left `sending` for over ANSWER_SENDING_LIMIT_MS on the store's clock (the process
   * sending them died) are failed, never sent again (they may have been taken): how many.
   */
  abandonAnswers(): Promise<number>;
  /** Reply `reply`'s answer, as kept; null: it owed none. */
  replyAnswer(reply: number): Promise<ReplyAnswer | null>;
  /** Replies flagged for review (intent `review`), in the order received, after `afterId`. */
  repliesToReview(options: { afterId?: number; limit: number }): Promise<ReplyRecord[]>;
  /** How many replies are flagged for review. */
  countRepliesToReview(): Promise<number>;

  // ---- accounts (accounts.ts): settings, the shared service token, send budgets ----
  /**
   * The setting `key` shared by every process on the store: `value` when none was kept yet,
   * else the one kept (the first writer wins; processes that start at once all read the same).
   */
  keepSetting(key: string, value: string): Promise<string>;
  /** The settings whose key starts with `prefix`, by key. */
  settingsUnder(prefix: string): Promise<{ key: string; value: string }[]>;
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

  // ---- retention (retention.ts) ----
  /**
   * One small step of retention, one transaction: a finished file (FINAL_FILE_STATES) last
   * updated before `finishedBefore` is marked pruned (prunedAt, its counts kept), then loses
   * at most `maxRows` recipients per step with their delivery reports; once none are left its
   * chunks go too. Files already being pruned come first; when no file is left, orphan reports
   * recorded before the cutoff go, `maxRows` at a time. The files row always stays. Call until
   * `idle`.
   */
  prune(options: { finishedBefore: string; maxRows: number }): Promise<PruneStep>;

  // ---- reads (reads.ts): files and their events, gauges, counts, pages of recipients and report rows ----
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
  /** For /metrics: files by state, and the chunks in doubt of files not finished. */
  gauges(): Promise<StoreGauges>;
  /**
   * The dashboard's header (docs/dashboard.md "The header"), on one snapshot: files sending,
   * recipients of the chunks the service accepted since `since` (ISO-8601, the start of the
   * operator's day), delivered and undelivered reports recorded since then (delivery
   * minutes), and the recipients sent whose final status has not come (pendingDelivery of
   * the files sending, submitted, paused or partial).
   */
  summary(since: string): Promise<StoreSummary>;
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

  // ---- reads (reads.ts), reports owed: the report files a file's source could not take yet ----
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
}
