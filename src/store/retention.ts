// Retention (retentionDays): finished files older than the retention lose their recipients,
// chunks and delivery reports; their files row (the manifest) stays. The work is a loop of
// small Store.prune steps, one short transaction each, with a pause between them: the
// delivery-report receiver shares the process and the database, and never waits for more
// than one step. One step (Store.prune) is one rule both backends apply (pruneRule, run on
// each backend's operations: ./steps.ts).
import { asker, type Rule } from './steps.ts';
import { FINAL_FILE_STATES, type FileState, type PruneStep, type Store } from './store.ts';

/** Recipients (or orphan reports) removed per step: a transaction of a few milliseconds. */
export const PRUNE_ROWS_PER_STEP = 5000;

export interface PruneOptions {
  retentionDays: number;
  now?: Date;
  maxRows?: number;
  /** Pause between steps (ms): the receiver's group commits go in between. */
  pauseMs?: number;
  /** Checked between steps: a stopping daemon does not wait for a whole prune. */
  stopped?: () => boolean;
}

export interface PruneTotals {
  /** Files marked pruned by this run. */
  files: number;
  recipients: number;
  events: number;
  /** Replies received before the cutoff, removed with their answers. */
  replies: number;
  /** The cutoff: finished files last updated before it were pruned. */
  finishedBefore: string;
}

export function retentionCutoff(retentionDays: number, now: Date = new Date()): string {
  return new Date(now.getTime() - retentionDays * 86_400_000).toISOString();
}

export async function pruneOld(store: Store, options: PruneOptions): Promise<PruneTotals> {
  const finishedBefore = retentionCutoff(options.retentionDays, options.now);
  const maxRows = options.maxRows ?? PRUNE_ROWS_PER_STEP;
  const totals: PruneTotals = { files: 0, recipients: 0, events: 0, replies: 0, finishedBefore };
  for (;;) {
    if (options.stopped?.()) return totals;
    const step = await store.prune({ finishedBefore, maxRows });
    if (step.marked) totals.files++;
    totals.recipients += step.recipients;
    totals.events += step.events;
    totals.replies += step.replies;
    if (step.idle) return totals;
    await new Promise((resolve) => setTimeout(resolve, options.pauseMs ?? 0));
  }
}

/** The file a prune step works on. */
export interface PruneFile {
  readonly fileId: string;
  /** Its number (its recipients' id range); null for a row from before file numbers (SQLite). */
  readonly fileNo: number | null;
}

/** What a backend does for a prune step, inside its one transaction. */
export type PruneOperations = {
  /** A file an earlier step left half pruned (`pruning`), or null. */
  pruningFile(): PruneFile | null;
  /** The least recently updated file in one of `states`, updated before `before`, not pruned yet. */
  prunableFile(states: readonly FileState[], before: string): PruneFile | null;
  /** The file marked pruned (and `pruning`), with its counts as they are now: what status shows once its rows are gone. */
  markPruned(file: PruneFile): void;
  /** Orphan reports recorded before `before`, at most maxRows of them, deleted: how many. */
  pruneOrphans(before: string, maxRows: number): number;
  /**
   * Replies received before `before`, at most maxRows of them (the oldest), deleted with their
   * answers: how many. The opt-outs they made and the numbers' histories stay.
   */
  pruneReplies(before: string, maxRows: number): number;
  /** At most maxRows of the file's recipients deleted: how many, their transaction numbers, and whether rows are left. */
  pruneRecipients(file: PruneFile, maxRows: number): { deleted: number; tns: string[]; left: boolean };
  /** The file's chunks, attachments and spans deleted, its `pruning` done: the chunks' transaction numbers. */
  finishFile(file: PruneFile): string[];
  /** The file's delivery reports with these transaction numbers (and its bulkId) deleted: how many. */
  pruneEvents(file: PruneFile, tns: readonly string[]): number;
};

const ask = asker<PruneOperations>();

/**
 * One prune step: a file being pruned first, else the oldest finished file past the cutoff
 * (marked, its counts kept); at most maxRows of its recipients, then, once none is left, its
 * chunks and attachments; the file's delivery reports found by the transaction numbers of its
 * rows and chunks (a report names its request's), not by a scan of every report. With no
 * file left: orphan reports recorded before the cutoff, and replies received before it, a
 * batch of each at a time.
 */
export function* pruneRule(options: {
  finishedBefore: string;
  maxRows: number;
}): Rule<PruneOperations, PruneStep> {
  const maxRows = Math.max(1, Math.trunc(options.maxRows));
  const step: PruneStep = {
    fileId: null,
    marked: false,
    fileDone: false,
    recipients: 0,
    events: 0,
    replies: 0,
    idle: false,
  };
  let file = yield* ask('pruningFile');
  if (!file) {
    file = yield* ask('prunableFile', FINAL_FILE_STATES, options.finishedBefore);
    if (file) {
      yield* ask('markPruned', file);
      step.marked = true;
    }
  }
  if (!file) {
    step.events = yield* ask('pruneOrphans', options.finishedBefore, maxRows);
    step.replies = yield* ask('pruneReplies', options.finishedBefore, maxRows);
    step.idle = step.events < maxRows && step.replies < maxRows;
    return step;
  }
  step.fileId = file.fileId;
  const removed = yield* ask('pruneRecipients', file, maxRows);
  step.recipients = removed.deleted;
  const tns = new Set(removed.tns);
  if (!removed.left) {
    for (const tn of yield* ask('finishFile', file)) tns.add(tn);
    step.fileDone = true;
  }
  if (tns.size > 0) step.events = yield* ask('pruneEvents', file, [...tns]);
  return step;
}
