// A file's counts from what a backend aggregates: the file's ingest counts, one row per chunk
// state, and the few rows with an outcome of their own. The same arithmetic on every backend.

import { type ChunkState, type FileCounts, type IngestCounts, NOTHING_SENT } from './store.ts';

/** The chunks of one state, and the delivery counters of their recipients (summed). */
export interface ChunkGroup {
  state: ChunkState;
  chunks: number;
  /** Recipients planned into these chunks. */
  size: number;
  /** Recipients with a final delivery status, of them DELIVERED, expired to UNKNOWN, and ACCEPTED. */
  reported: number;
  delivered: number;
  unknown: number;
  accepted: number;
  /** Reported recipients that follow their chunk, and reported ones that say `sent` themselves. */
  reportedFollow: number;
  reportedSent: number;
}

/** Valid recipients with an outcome of their own, by that outcome and their chunk's state. */
export interface OwnGroup {
  outcome: string;
  /** Their chunk's state (null: no chunk row). */
  chunkState: ChunkState | null;
  count: number;
}

export function assembleCounts(
  ingest: IngestCounts,
  chunks: readonly ChunkGroup[],
  own: readonly OwnGroup[],
): FileCounts {
  const c: FileCounts = { ...ingest, ...NOTHING_SENT };
  // Recipients that follow their chunk, by chunk state: the chunk sizes less the rows below.
  const following: Record<ChunkState, number> = {
    pending: 0,
    inflight: 0,
    accepted: 0,
    rejected: 0,
    failed: 0,
    in_doubt: 0,
    cancelled: 0,
  };
  let reportedSent = 0;
  for (const g of chunks) {
    following[g.state] += g.size;
    c.chunks += g.chunks;
    c.delivered += g.delivered;
    c.undelivered += g.reported - g.delivered - g.accepted;
    c.unknown += g.unknown;
    c.accepted += g.accepted;
    // Sent and reported: rows that say so themselves, and rows that follow an accepted chunk.
    reportedSent += g.reportedSent + (g.state === 'accepted' ? g.reportedFollow : 0);
    c[CHUNK_COUNTER[g.state]] += g.chunks;
  }
  const byOutcome: Record<string, number> = {};
  for (const g of own) {
    byOutcome[g.outcome] = (byOutcome[g.outcome] ?? 0) + g.count;
    if (g.chunkState !== null) following[g.chunkState] -= g.count;
  }
  c.submitted = (byOutcome.sent ?? 0) + following.accepted;
  c.rejected = (byOutcome.rejected ?? 0) + following.rejected;
  c.failed = (byOutcome.failed ?? 0) + following.failed;
  c.inDoubt = (byOutcome.in_doubt ?? 0) + following.in_doubt;
  c.cancelled = (byOutcome.cancelled ?? 0) + following.cancelled;
  // Held back when their chunk was sent (Store.holdBack): no longer valid, not sent.
  c.optedOut = byOutcome.suppressed ?? 0;
  c.contactLimited = byOutcome.contact_limit ?? 0;
  c.suppressed += c.optedOut;
  c.valid -= c.optedOut + c.contactLimited;
  // pending delivery = sent recipients without a report
  c.pendingDelivery = c.submitted - reportedSent;
  return c;
}

const CHUNK_COUNTER = {
  pending: 'chunksPending',
  inflight: 'chunksInflight',
  accepted: 'chunksAccepted',
  rejected: 'chunksRejected',
  failed: 'chunksFailed',
  in_doubt: 'chunksInDoubt',
  cancelled: 'chunksCancelled',
} as const satisfies Record<ChunkState, keyof FileCounts>;
