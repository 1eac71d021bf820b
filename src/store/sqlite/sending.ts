// The SQLite store's sending area: chunks, their recipients and destinations, and the results
// of their requests (the rules: ../outcomes.ts).

import type { SQLOutputValue } from 'node:sqlite';
import { num, str, toChunk, toDestination, toRecipient } from '../mapping.ts';
import { isChunkSeq, SPAN } from '../message-ids.ts';
import {
  abandonedChunkState,
  CANCELLED_DETAIL,
  CHUNK_OUTCOME,
  givesBack,
  needsReportCheck,
  type PartWrite,
  planChunkResult,
  reportCheck,
  resultParts,
} from '../outcomes.ts';
import type {
  ChunkDestination,
  ChunkRecord,
  ChunkResult,
  ChunkState,
  ChunkStateGuard,
  PartOutcome,
  RecipientOutcome,
  RecipientRecord,
} from '../store.ts';
import { changes, list, type SqliteDb } from './connection.ts';
import { addDeliveryMinute } from './deliveries.ts';
import { giveBackContacts } from './ledger.ts';
import { writeReplyTargets } from './reply-targets.ts';
import * as S from './sql.ts';

export async function listChunks(
  db: SqliteDb,
  fileId: string,
  states?: readonly ChunkState[],
): Promise<ChunkRecord[]> {
  return db
    .stmt(S.LIST_CHUNKS)
    .all({ file_id: fileId, states: list(states) })
    .map(toChunk);
}

export async function chunkRecipients(
  db: SqliteDb,
  fileId: string,
  seq: number,
  outcomes?: readonly RecipientOutcome[],
): Promise<RecipientRecord[]> {
  const range = db.range(fileId);
  if (!range) return [];
  const { lo, hi } = db.span(fileId, seq);
  return db
    .stmt(S.CHUNK_RECIPIENTS)
    .all({ fid: fileId, seq, lo, hi, outcomes: list(outcomes) })
    .map((r) => toRecipient(r, fileId, range.lo));
}

export async function chunkDestinations(
  db: SqliteDb,
  fileId: string,
  seq: number,
): Promise<ChunkDestination[]> {
  // Rows saying `pending` follow their chunk: pending only while the chunk is (or inflight).
  const chunk = db.stmt(S.CHUNK_STATE).get(fileId, seq);
  if (chunk && CHUNK_OUTCOME[str(chunk.state) as ChunkState] !== 'pending') return [];
  const { lo, hi } = db.span(fileId, seq);
  const rows = db.arrays(S.CHUNK_DESTINATIONS).all(lo, hi, seq) as unknown as SQLOutputValue[][];
  return rows.map((r) => toDestination(r, fileId));
}

export async function chunkMessageIds(
  db: SqliteDb,
  fileId: string,
  seq: number,
  numbers: readonly string[],
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  // A seq the chunks table cannot hold names no chunk (and, on PostgreSQL, would fail the read).
  if (numbers.length === 0 || !isChunkSeq(seq)) return out;
  const { lo, hi } = db.span(fileId, seq);
  if (lo > hi) return out;
  // The chunk's span (a range scan of its rows), then its numbers; '' (no messageId) reads NULL.
  const rows = db
    .arrays(S.CHUNK_MESSAGE_IDS)
    .all({ fid: fileId, lo, hi, seq, numbers: JSON.stringify(numbers) }) as unknown as SQLOutputValue[][];
  for (const [number, messageId] of rows) {
    if (messageId === null || messageId === undefined) continue;
    const n = str(number);
    if (!out.has(n)) out.set(n, str(messageId));
  }
  return out;
}

/** One statement, in the caller's transaction if any (beginChunk's). */
export function setChunkState(
  db: SqliteDb,
  fileId: string,
  seq: number,
  to: ChunkState,
  from: readonly ChunkState[],
  options: ChunkStateGuard = {},
  now = db.now(),
): boolean {
  const r = db.stmt(S.SET_CHUNK_STATE).run({
    to,
    now,
    file_id: fileId,
    seq,
    from: JSON.stringify(from),
    owner: options.owner ?? null,
    file_state: options.fileState ?? null,
  });
  return changes(r) === 1;
}

export async function recordChunkResult(
  db: SqliteDb,
  fileId: string,
  seq: number,
  result: ChunkResult,
  options: { owner?: string } = {},
): Promise<ChunkState> {
  const now = db.now();
  const reportedPart = db.stmt(S.REPORTED_PART);
  // :ids maps each row's messageId to its transaction number (null: the row keeps its own);
  // the chunk's message ids are made once, then joined.
  const setPart = db.stmt(S.SET_PART);
  // A part that is the whole request (PartOutcome.wholeChunk): its recipients are the
  // chunk's unsettled ones, found by the chunk index without a list to match.
  const reportedWhole = db.stmt(S.REPORTED_WHOLE);
  const setWhole = db.stmt(S.SET_WHOLE);
  // The usual case: the whole request has the chunk's result, so its recipients follow the
  // chunk (migration 0003). Only rows an earlier result marked (in doubt, held) are touched.
  const followWhole = db.stmt(S.FOLLOW_WHOLE);
  const { lo, hi } = db.span(fileId, seq);
  const parts = resultParts(result);
  const row = (w: PartWrite) => ({
    outcome: w.outcome,
    code: w.code,
    detail: w.detail,
    tn: w.transactionNumber,
    now,
    seq,
    lo,
    hi,
  });
  return db.tx(() => {
    // Inflight and the file still the recording worker's: the result is its latest start's,
    // made at `updated_at` (a worker that took the file over since has it in doubt, or started
    // it again).
    const before = db.stmt(S.CHUNK_STARTED).get(fileId, seq);
    const reported = (part: PartOutcome): boolean => {
      const check = reportCheck(part);
      if (check.kind === 'whole') return reportedWhole.get({ seq, lo, hi }) !== undefined;
      const ids = check.kind === 'ids' ? JSON.stringify(check.ids) : null;
      return reportedPart.get({ seq, lo, hi, ids, fid: fileId }) !== undefined;
    };
    const plan = planChunkResult(result, parts, (p) => needsReportCheck(p) && reported(p));
    for (const { messageIds, transactionNumbers, write } of plan.byIds) {
      const ids: Record<string, string | null> = Object.create(null);
      messageIds.forEach((id, i) => {
        ids[id] = transactionNumbers[i]!;
      });
      setPart.run({ ...write, now, seq, lo, hi, ids: JSON.stringify(ids), fid: fileId });
    }
    if (plan.whole) {
      if (plan.whole.follows) followWhole.run({ now, seq, lo, hi });
      else setWhole.run(row(plan.whole.write));
    }
    if (result.finalStatus) {
      // Its sent rows' final status (a channel without delivery reports): sent themselves,
      // or following a chunk that is accepted.
      const given = changes(
        db
          .stmt(S.SET_FINAL_STATUS)
          .run({ status: result.finalStatus, now, lo, hi, seq, follows: plan.state === 'accepted' ? 1 : 0 }),
      );
      const file = { lo: Math.floor(lo / SPAN) * SPAN };
      addDeliveryMinute(db, file, now, { delivered: 0, undelivered: 0, unknown: 0, accepted: given });
    }
    db.stmt(S.FINISH_CHUNK).run({
      state: plan.state,
      attempts: result.attempts,
      tn: result.transactionNumber ?? null,
      code: plan.code,
      message: plan.message,
      now,
      file_id: fileId,
      seq,
    });
    if (
      before?.state === 'inflight' &&
      givesBack(result, plan.state) &&
      (options.owner === undefined || before.lease_owner === options.owner)
    )
      giveBackContacts(db, { hi, state: plan.state, startedAt: String(before.updated_at) });
    // Replies to the file's short code find these recipients (docs/replies.md).
    writeReplyTargets(db, fileId, seq, now, { lo, hi });
    return plan.state;
  });
}

export async function markInflightInDoubt(db: SqliteDb, fileId: string): Promise<number> {
  const now = db.now();
  return db.tx(() => {
    const inflight = db.stmt(S.INFLIGHT_CHUNKS).all(fileId);
    for (const row of inflight) {
      const seq = num(row.seq);
      const { lo, hi } = db.span(fileId, seq);
      const chunkState = abandonedChunkState(db.stmt(S.CHUNK_REPORTED).get(lo, hi, seq) !== undefined);
      // Its pending recipients follow the chunk (migration 0003), held ones too: they were
      // in the request.
      db.stmt(S.SET_ABANDONED_STATE).run(chunkState, now, fileId, seq);
      db.stmt(S.UNHOLD_ROWS).run(now, lo, hi, seq);
      // Accepted by its report: its recipients are sent, and can be replied to.
      if (chunkState === 'accepted') writeReplyTargets(db, fileId, seq, now, { lo, hi });
    }
    return inflight.length;
  });
}

export async function requeueChunks(
  db: SqliteDb,
  fileId: string,
  states: readonly ChunkState[],
  options: { addPossibleDuplicates?: number } = {},
): Promise<number> {
  const now = db.now();
  // Only recipients the service did not take go back: a failed chunk may hold sent ones.
  const outcomes = states.filter((s) => s === 'failed' || s === 'in_doubt' || s === 'rejected');
  return db.tx(() => {
    const requeue = db.stmt(S.REQUEUE_ROWS);
    const seqs = db.stmt(S.CHUNKS_IN_STATES).all(fileId, JSON.stringify(states));
    for (const row of seqs) {
      const seq = num(row.seq);
      const { lo, hi } = db.span(fileId, seq);
      requeue.run(now, lo, hi, seq, JSON.stringify(outcomes));
    }
    const r = db.stmt(S.REQUEUE_CHUNKS).run({ now, file_id: fileId, states: JSON.stringify(states) });
    const moved = changes(r);
    const add = options.addPossibleDuplicates ?? 0;
    if (moved > 0 && add > 0) db.stmt(S.ADD_POSSIBLE_DUPLICATES).run(add, now, fileId);
    return moved;
  });
}

export async function cancelUnsent(db: SqliteDb, fileId: string): Promise<number> {
  const now = db.now();
  return db.tx(() => {
    const cancelled = db.stmt(S.FILE_CANCELLED).get(fileId);
    if (!cancelled) return 0;
    const seqs = db.stmt(S.PENDING_CHUNKS).all(fileId);
    // Rows a 403 held back on their own (pending with a code); the others follow their chunk.
    const held = db.stmt(S.CANCEL_HELD_ROWS);
    for (const row of seqs) {
      const seq = num(row.seq);
      const { lo, hi } = db.span(fileId, seq);
      held.run(CANCELLED_DETAIL, now, lo, hi, seq);
    }
    return changes(db.stmt(S.CANCEL_UNSENT).run(CANCELLED_DETAIL, now, fileId));
  });
}
