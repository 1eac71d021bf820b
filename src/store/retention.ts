// Retention (retentionDays): finished files older than the retention lose their recipients,
// chunks and delivery reports; their files row (the manifest) stays. The work is a loop of
// small Store.prune steps, one short transaction each, with a pause between them: the
// delivery-report receiver shares the process and the database, and never waits for more
// than one step.
import type { Store } from './store.ts';

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
  /** The cutoff: finished files last updated before it were pruned. */
  finishedBefore: string;
}

export function retentionCutoff(retentionDays: number, now: Date = new Date()): string {
  return new Date(now.getTime() - retentionDays * 86_400_000).toISOString();
}

export async function pruneOld(store: Store, options: PruneOptions): Promise<PruneTotals> {
  const finishedBefore = retentionCutoff(options.retentionDays, options.now);
  const maxRows = options.maxRows ?? PRUNE_ROWS_PER_STEP;
  const totals: PruneTotals = { files: 0, recipients: 0, events: 0, finishedBefore };
  for (;;) {
    if (options.stopped?.()) return totals;
    const step = await store.prune({ finishedBefore, maxRows });
    if (step.marked) totals.files++;
    totals.recipients += step.recipients;
    totals.events += step.events;
    if (step.idle) return totals;
    await new Promise((resolve) => setTimeout(resolve, options.pauseMs ?? 0));
  }
}
