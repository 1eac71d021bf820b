// Chunks as they are sent: their states, what a request needs of their recipients, and the
// result a send records (docs/contract.md "Chunk states").

import type { ACCEPTED_DELIVERY } from './deliveries.ts';
import type { FileState } from './files.ts';

/** `cancelled`: a chunk its file's cancel left unsent (Store.cancelUnsent); it is never sent. */
export type ChunkState =
  | 'pending'
  | 'inflight'
  | 'accepted'
  | 'rejected'
  | 'failed'
  | 'in_doubt'
  | 'cancelled';

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

/** What a request needs of one recipient (chunkDestinations). */
export interface ChunkDestination {
  number: string;
  messageId: string;
  /** null in bulk files: the file's message. */
  text: string | null;
}

/** setChunkState's conditions on the file, checked in the same statement. */
export interface ChunkStateGuard {
  readonly owner?: string;
  readonly fileState?: FileState;
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
