// The PostgreSQL store's sending area: chunks, their recipients and destinations, and the
// results of their requests (the rules: ../outcomes.ts), under the chunk's row lock.

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
import { textArray } from './arrays.ts';
import type { PgDb, Queryable } from './connection.ts';
import { giveBackContacts } from './ledger.ts';
import { writeReplyTargets } from './reply-targets.ts';
import * as S from './sql.ts';

/** Chunk states whose rows still read `pending` (chunkDestinations). */
const PENDING_CHUNK_STATES = (Object.keys(CHUNK_OUTCOME) as ChunkState[]).filter(
  (s) => CHUNK_OUTCOME[s] === 'pending',
);

export async function listChunks(
  db: PgDb,
  fileId: string,
  states?: readonly ChunkState[],
): Promise<ChunkRecord[]> {
  return (
    await db.rows(`reading the chunks of ${fileId}`, S.LIST_CHUNKS, {
      file_id: fileId,
      states: states ?? null,
    })
  ).map(toChunk);
}

export async function chunkRecipients(
  db: PgDb,
  fileId: string,
  seq: number,
  outcomes?: readonly RecipientOutcome[],
): Promise<RecipientRecord[]> {
  const rows = await db.rows(`reading chunk ${seq} of ${fileId}`, S.CHUNK_RECIPIENTS, {
    file_id: fileId,
    seq,
    outcomes: outcomes ?? null,
  });
  if (rows.length === 0) return [];
  const base = Math.floor(num(rows[0]!.id) / SPAN) * SPAN;
  return rows.map((r) => toRecipient(r, fileId, base));
}

export async function chunkDestinations(db: PgDb, fileId: string, seq: number): Promise<ChunkDestination[]> {
  const rows = await db.arrays(`reading chunk ${seq} of ${fileId}`, S.CHUNK_DESTINATIONS, {
    file_id: fileId,
    seq,
    pending_states: PENDING_CHUNK_STATES,
  });
  return rows.map((r) => toDestination(r, fileId));
}

export async function chunkMessageIds(
  db: PgDb,
  fileId: string,
  seq: number,
  numbers: readonly string[],
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  // A seq an integer column cannot hold names no chunk, and would fail the read (a report's
  // batch with it). Text parameters cannot hold NUL.
  if (numbers.length === 0 || !isChunkSeq(seq)) return out;
  if (fileId.includes('\0')) return out;
  const rows = await db.arrays(`reading the messageIds of chunk ${seq} of ${fileId}`, S.CHUNK_MESSAGE_IDS, {
    file_id: fileId,
    seq,
    numbers: textArray(numbers.filter((n) => !n.includes('\0'))),
  });
  for (const [number, messageId] of rows) {
    if (messageId === null || messageId === undefined) continue;
    const n = str(number);
    if (!out.has(n)) out.set(n, str(messageId));
  }
  return out;
}

/** One statement, on `on`: the pool, or beginChunk's transaction. */
export async function setChunkState(
  db: PgDb,
  fileId: string,
  seq: number,
  to: ChunkState,
  from: readonly ChunkState[],
  options: ChunkStateGuard = {},
  on: Queryable = db.pool,
  now = db.now(),
): Promise<boolean> {
  const params = {
    to,
    from,
    file_id: fileId,
    seq,
    owner: options.owner ?? null,
    file_state: options.fileState ?? null,
    now,
  };
  return (await db.count(`moving chunk ${seq} of ${fileId} to ${to}`, S.SET_CHUNK_STATE, params, on)) === 1;
}

export async function recordChunkResult(
  db: PgDb,
  fileId: string,
  seq: number,
  result: ChunkResult,
  options: { owner?: string } = {},
): Promise<ChunkState> {
  const what = `recording the result of chunk ${seq} of ${fileId}`;
  const parts = resultParts(result);
  // A file with a short code keeps its chunk's recipients as reply targets in the same
  // transaction (docs/replies.md); others take the one-statement path when they can.
  const shortCode = await db.shortCode(fileId);
  if (!parts.some(needsReportCheck) && !result.finalStatus && shortCode === null) {
    const plan = planChunkResult(result, parts, () => false);
    if (plan.byIds.length === 0 && !givesBack(result, plan.state))
      return finishAlone(db, fileId, seq, result, plan);
  }
  return db.tx(what, async (c) => {
    const now = db.now();
    const [span] = await db.rows(what, S.LOCK_CHUNK, { file_id: fileId, seq }, c);
    const lo = span?.first_id == null ? 1 : num(span.first_id);
    const hi = span?.last_id == null ? 0 : num(span.last_id);
    const at = { file_id: fileId, seq, lo, hi };
    // Read after the chunk's lock: every report recorded for the chunk so far is seen.
    const reported = new Map<PartOutcome, boolean>();
    for (const part of parts) {
      if (!needsReportCheck(part)) continue;
      const check = reportCheck(part);
      const found =
        check.kind === 'whole'
          ? await db.rows(what, S.REPORTED_WHOLE, at, c)
          : await db.rows(what, S.REPORTED_PART, { ...at, ids: check.kind === 'ids' ? check.ids : null }, c);
      reported.set(part, found.length > 0);
    }
    const plan = planChunkResult(result, parts, (p) => reported.get(p) === true);
    const write = (w: PartWrite) => ({
      outcome: w.outcome,
      code: w.code,
      detail: w.detail,
      tn: w.transactionNumber,
      now,
    });
    for (const { messageIds, transactionNumbers, write: w } of plan.byIds)
      await db.count(what, S.SET_PART, { ...at, ...w, now, ids: messageIds, tns: transactionNumbers }, c);
    const chunk = {
      ...at,
      state: plan.state,
      attempts: result.attempts,
      chunk_tn: result.transactionNumber ?? null,
      error_code: plan.code,
      error_message: plan.message,
      now,
    };
    if (!plan.whole) await db.count(what, S.FINISH_CHUNK, chunk, c);
    else if (plan.whole.follows) await db.count(what, S.FINISH_CHUNK_FOLLOW_WHOLE, chunk, c);
    else await db.count(what, S.FINISH_CHUNK_SET_WHOLE, { ...chunk, ...write(plan.whole.write) }, c);
    if (result.finalStatus)
      await db.count(
        what,
        S.SET_FINAL_STATUS,
        { ...at, status: result.finalStatus, follows: plan.state === 'accepted', now },
        c,
      );
    // Inflight until now and the file still the recording worker's: the result is its latest
    // start's, made at `started_at` (a worker that took the file over since has it in doubt, or
    // started it again).
    if (
      span?.state === 'inflight' &&
      givesBack(result, plan.state) &&
      (options.owner === undefined || span.lease_owner === options.owner)
    )
      await giveBackContacts(db, c, what, { hi, state: plan.state, started_at: span.started_at });
    // Replies to the file's short code find these recipients (docs/replies.md).
    await writeReplyTargets(db, c, fileId, seq, now, { shortCode, lo, hi });
    return plan.state;
  });
}

/**
 * A result that asks nothing of delivery reports and names no recipient by messageId: one
 * statement, its own transaction (no decision rests on a read before it).
 */
async function finishAlone(
  db: PgDb,
  fileId: string,
  seq: number,
  result: ChunkResult,
  plan: ReturnType<typeof planChunkResult>,
): Promise<ChunkState> {
  const what = `recording the result of chunk ${seq} of ${fileId}`;
  const now = db.now();
  const chunk = {
    file_id: fileId,
    seq,
    state: plan.state,
    attempts: result.attempts,
    chunk_tn: result.transactionNumber ?? null,
    error_code: plan.code,
    error_message: plan.message,
    now,
  };
  if (!plan.whole) await db.count(what, S.FINISH_CHUNK, chunk);
  else {
    const fileNo = (await db.fileNo(fileId)) ?? -1;
    if (plan.whole.follows)
      await db.count(what, S.FINISH_CHUNK_FOLLOW_WHOLE_ALONE, { ...chunk, file_no: fileNo });
    else {
      const w = plan.whole.write;
      await db.count(what, S.FINISH_CHUNK_SET_WHOLE_ALONE, {
        ...chunk,
        file_no: fileNo,
        outcome: w.outcome,
        code: w.code,
        detail: w.detail,
        tn: w.transactionNumber,
      });
    }
  }
  return plan.state;
}

export async function markInflightInDoubt(db: PgDb, fileId: string): Promise<number> {
  const what = `marking the inflight chunks of ${fileId} in doubt`;
  return db.tx(what, async (c) => {
    const seqs = (await db.rows(what, S.LOCK_INFLIGHT, { file_id: fileId }, c)).map((r) => num(r.seq));
    if (seqs.length === 0) return 0;
    const fileNo = await db.fileNo(fileId, c);
    // Read after the lock: a report recorded before it proves its chunk was accepted.
    const proven = new Set(
      fileNo === null
        ? []
        : (await db.rows(what, S.CHUNKS_REPORTED, { file_no: fileNo, seqs }, c)).map((r) => num(r.seq)),
    );
    await db.count(
      what,
      S.SET_INFLIGHT_STATES,
      {
        file_id: fileId,
        file_no: fileNo ?? -1,
        seqs,
        states: seqs.map((s) => abandonedChunkState(proven.has(s))),
        now: db.now(),
      },
      c,
    );
    // Accepted by their reports: their recipients are sent, and can be replied to.
    for (const seq of seqs) if (proven.has(seq)) await writeReplyTargets(db, c, fileId, seq, db.now());
    return seqs.length;
  });
}

export async function requeueChunks(
  db: PgDb,
  fileId: string,
  states: readonly ChunkState[],
  options: { addPossibleDuplicates?: number } = {},
): Promise<number> {
  // Only recipients the service did not take go back: a failed chunk may hold sent ones.
  const outcomes = states.filter((s) => s === 'failed' || s === 'in_doubt' || s === 'rejected');
  const [r] = await db.rows(`requeueing chunks of ${fileId}`, S.REQUEUE_CHUNKS, {
    file_id: fileId,
    states,
    outcomes,
    add_pd: options.addPossibleDuplicates ?? 0,
    now: db.now(),
  });
  return num(r?.n ?? 0);
}

export async function cancelUnsent(db: PgDb, fileId: string): Promise<number> {
  const [r] = await db.rows(`cancelling the unsent chunks of ${fileId}`, S.CANCEL_UNSENT, {
    file_id: fileId,
    detail: CANCELLED_DETAIL,
    now: db.now(),
  });
  return num(r?.n ?? 0);
}
