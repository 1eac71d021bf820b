// What a chunk's result and its delivery reports make of its recipients: the rules every
// backend applies, as pure functions. A backend only runs the queries they ask for and the
// writes they return.
//
// - A valid recipient whose row says `pending` without a code follows its chunk: its outcome is
//   the chunk's state as a recipient outcome (CHUNK_OUTCOME), its code and message the chunk's.
//   `pending` with a code is a row held back on its own (a part the service refused with 403
//   while other parts went on).
// - A delivery report already in for a recipient of an in-doubt part proves that part's
//   request reached the service (docs/architecture.md "The guarantees and where they live"):
//   the part is sent. Checked per part, not per chunk: the reports of a bisected chunk's
//   accepted part prove nothing about its other parts.

import type { ChunkResult, ChunkState, PartOutcome, RecipientOutcome } from './store.ts';

/** What a row that follows its chunk holds (migration 0003). */
const FOLLOW: Omit<PartWrite, 'transactionNumber'> = { outcome: 'pending', code: null, detail: null };

/** The recipient outcome a chunk state gives the rows that follow it. */
export const CHUNK_OUTCOME: Readonly<Record<ChunkState, RecipientOutcome>> = {
  pending: 'pending',
  inflight: 'pending',
  accepted: 'sent',
  rejected: 'rejected',
  failed: 'failed',
  in_doubt: 'in_doubt',
  cancelled: 'cancelled',
};

/**
 * The outcomes of a recipient the service never took: it refused it, nothing of its request
 * was accepted, or it was put back unsent. Its contact of the day is given back when its
 * chunk's result is recorded (docs/campaign-rules.md "Contacts given back").
 */
export const UNTAKEN_OUTCOMES: readonly RecipientOutcome[] = ['pending', 'failed', 'rejected'];

/** Whether a result (its chunk's new state `state`) leaves any recipient untaken, itself or by following the chunk. */
export function givesBack(result: ChunkResult, state: ChunkState): boolean {
  const untaken = (o: RecipientOutcome) => UNTAKEN_OUTCOMES.includes(o);
  return untaken(CHUNK_OUTCOME[state]) || result.parts.some((p) => untaken(p.outcome));
}

/** The detail a recipient never sent because its file was cancelled reads (Store.cancelUnsent). */
export const CANCELLED_DETAIL = 'not sent: the file was cancelled';

/**
 * The parts of a result as they are recorded: a chunk in doubt without in-doubt parts gets one,
 * for the chunk's unanswered recipients (no messageIds: "the rest of the chunk").
 */
export function resultParts(result: ChunkResult): PartOutcome[] {
  const parts = [...result.parts];
  const doubtParts = parts.filter(
    (p) => p.outcome === 'in_doubt' && (p.wholeChunk === true || p.messageIds.length > 0),
  );
  if (result.state === 'in_doubt' && doubtParts.length === 0)
    parts.push({ messageIds: [], outcome: 'in_doubt', code: result.errorCode, detail: result.errorMessage });
  return parts;
}

/**
 * Which recipients a part's "is it already reported?" question is about:
 * - `whole`: the chunk's unsettled rows (outcome pending or in_doubt): the part is the request;
 * - `rest`: any row of the chunk (the unanswered rest of the chunk);
 * - `ids`: the rows with these messageIds.
 * Only in-doubt parts are asked about (needsReportCheck).
 */
export type ReportCheck = { kind: 'whole' } | { kind: 'rest' } | { kind: 'ids'; ids: readonly string[] };

export function reportCheck(part: PartOutcome): ReportCheck {
  if (part.wholeChunk === true) return { kind: 'whole' };
  if (part.messageIds.length === 0) return { kind: 'rest' };
  return { kind: 'ids', ids: part.messageIds };
}

export function needsReportCheck(part: PartOutcome): boolean {
  return part.outcome === 'in_doubt';
}

/** What one part's rows are written with. */
export interface PartWrite {
  outcome: RecipientOutcome;
  code: string | null;
  detail: string | null;
  transactionNumber: string | null;
}

/**
 * Rows named by messageId that get the same outcome, code and detail, each its own transaction
 * number (null: the row keeps its own): one statement writes them all, however many parts they
 * came in (a service that numbers each recipient makes a part of each).
 */
export interface IdsWrite {
  messageIds: string[];
  /** Parallel to messageIds. */
  transactionNumbers: (string | null)[];
  write: Omit<PartWrite, 'transactionNumber'>;
}

export interface ChunkResultPlan {
  /** Parts naming their recipients by messageId, grouped by what they write: write these rows. */
  byIds: IdsWrite[];
  /**
   * The part that is the whole request (at most one), applied to the chunk's unsettled rows:
   * `follows` when they may simply follow the chunk (rows an earlier result marked go back to
   * following it), otherwise they are written with `write`.
   */
  whole: { write: PartWrite; follows: boolean } | null;
  /** The chunk's new state, code and message. */
  state: ChunkState;
  code: string | null;
  message: string | null;
}

/**
 * The writes a chunk result makes, given for each in-doubt part whether a delivery report is
 * already in for its recipients (`reported`, asked only for parts where needsReportCheck).
 */
export function planChunkResult(
  result: ChunkResult,
  parts: readonly PartOutcome[],
  reported: (part: PartOutcome) => boolean,
): ChunkResultPlan {
  let settled = false;
  let doubtful = false;
  const settle = (part: PartOutcome): PartWrite => {
    let outcome: RecipientOutcome = part.outcome;
    if (outcome === 'in_doubt') {
      if (reported(part)) {
        outcome = 'sent';
        settled = true;
      } else doubtful = true;
    }
    const proven = outcome === 'sent' && part.outcome === 'in_doubt';
    return {
      outcome,
      code: proven ? null : (part.code ?? null),
      detail: proven ? null : (part.detail ?? null),
      transactionNumber: part.transactionNumber ?? null,
    };
  };
  const groups = new Map<string, IdsWrite>();
  let whole: PartWrite | null = null;
  for (const part of parts) {
    if (part.wholeChunk === true) whole = settle(part);
    else if (part.messageIds.length > 0) {
      const { transactionNumber, ...write } = settle(part);
      const key = JSON.stringify([write.outcome, write.code, write.detail]);
      let group = groups.get(key);
      if (!group) groups.set(key, (group = { messageIds: [], transactionNumbers: [], write }));
      for (const id of part.messageIds) {
        group.messageIds.push(id);
        group.transactionNumbers.push(transactionNumber);
      }
    }
    // The chunk's unanswered recipients follow the chunk, in doubt or proven.
    else if (part.outcome === 'in_doubt') settle(part);
  }
  const state: ChunkState = result.state === 'in_doubt' && settled && !doubtful ? 'accepted' : result.state;
  const cleared = state !== result.state;
  const code = cleared ? null : (result.errorCode ?? null);
  const message = cleared ? null : (result.errorMessage ?? null);
  // In an accepted chunk (final: it never changes again), a group that reads as the chunk would
  // (sent, the chunk's code and message, and a transaction number the chunk's report shows: the
  // chunk has none, or the same) follows the chunk rather than keeping an outcome of its own:
  // counting the file then reads its chunks, not its rows (an email service numbers each
  // recipient, so the rows of every email chunk answered in full are such a group).
  const chunkTn = result.transactionNumber ?? null;
  for (const group of groups.values())
    if (
      state === 'accepted' &&
      group.write.outcome === CHUNK_OUTCOME[state] &&
      group.write.code === code &&
      group.write.detail === message &&
      (chunkTn === null || group.transactionNumbers.every((tn) => tn === null || tn === chunkTn))
    )
      group.write = FOLLOW;
  return {
    byIds: [...groups.values()],
    whole: whole && {
      write: whole,
      follows:
        whole.outcome === CHUNK_OUTCOME[state] &&
        whole.code === code &&
        whole.detail === message &&
        (whole.transactionNumber === null || whole.transactionNumber === (result.transactionNumber ?? null)),
    },
    state,
    code,
    message,
  };
}

/**
 * A chunk left inflight by a worker that died: accepted when a report already came in for
 * any of its recipients (left in doubt, nothing would ever settle it: its reports are not
 * sent again), in doubt otherwise.
 */
export function abandonedChunkState(reported: boolean): ChunkState {
  return reported ? 'accepted' : 'in_doubt';
}
