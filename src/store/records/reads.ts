// What the store answers about files for status, the dashboard, /metrics and the reports:
// lists, events, counts and report rows.

import type { CodedText } from '../../errors.ts';
import type { FileState, IngestCounts } from './files.ts';
import type { RecipientRecord } from './ingest.ts';

/** For /metrics (Store.gauges): files by state, and the chunks in doubt of files not finished. */
export interface StoreGauges {
  readonly files: Partial<Record<FileState, number>>;
  readonly chunksInDoubt: number;
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

/** A state a file entered (Store.fileEvents): recorded by the store with the change itself. */
export interface FileEvent {
  /** When, on the store's clock (ISO-8601 UTC, ms). */
  at: string;
  state: FileState;
  /** The file's `reason` as the change left it. */
  reason: string | null;
  /** Its code and parameters (FileRecord.reasonCode); absent when the reason has none. */
  reasonCode?: CodedText;
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

/** Store.summary: what a campaign team watches first. */
export interface StoreSummary {
  sending: number;
  sent: number;
  delivered: number;
  undelivered: number;
  waiting: number;
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
