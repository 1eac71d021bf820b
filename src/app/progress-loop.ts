// The daemon's progress loop: completion, delivery timeout, in-doubt settlement, and the
// report.csv of a finished file written again once the delivery reports that change its rows
// settle (docs/architecture.md "The daemon"). Each check, completion and report rewrite runs
// under the file's lease: a file another process holds (a `send --wait`, another daemon) is
// left to it.
import type { FileRecord, Store } from '../store/store.ts';

/** How long delivery reports of a finished or stopped file gather before its report.csv is rewritten. */
export const REPORT_SETTLE_MS = 2000;
/** A file whose reports never stop coming has its report.csv rewritten at most this often. */
export const REPORT_MAX_WAIT_MS = 60_000;
/** Files whose owed reports one progress round writes again, at most. */
const OWED_PER_ROUND = 20;
/** States in which a file's report.csv is on disk while delivery reports may still change its rows. */
export const REPORTED_STATES: ReadonlySet<string> = new Set(['paused', 'cancelled', 'partial', 'completed']);

/** What the loop asks of the pipeline (Pipeline's methods of these names). */
export interface ProgressWork {
  checkProgress(file: FileRecord): Promise<FileRecord | null | undefined>;
  rewriteReports(fileId: string, options: { states: ReadonlySet<string> }): Promise<unknown>;
  writeOwedReports(fileId: string): Promise<unknown>;
}

export interface ProgressLoopOptions {
  store: Pick<Store, 'listFiles' | 'getFile' | 'reportsDue'>;
  work: ProgressWork;
  now?: () => number;
}

export class ProgressLoop {
  readonly #store: ProgressLoopOptions['store'];
  readonly #work: ProgressWork;
  readonly #now: () => number;
  /** Files whose delivery reports came since the last round. */
  readonly #delivered = new Set<string>();
  /** Finished files whose report.csv is due again: since the first report, and when. */
  readonly #reportDue = new Map<string, { first: number; due: number }>();

  constructor(options: ProgressLoopOptions) {
    this.#store = options.store;
    this.#work = options.work;
    this.#now = options.now ?? Date.now;
  }

  /** Delivery reports were stored for these files (the receiver's onDelivered). */
  delivered(fileIds: Iterable<string>): void {
    for (const id of fileIds) this.#delivered.add(id);
  }

  /** The finished files whose report.csv waits to be written again, and when. */
  reportsDue(): ReadonlyMap<string, { readonly first: number; readonly due: number }> {
    return this.#reportDue;
  }

  /** One round: the files reports came for (every sending file when `all`), then rewrites due. */
  async round(all: boolean): Promise<void> {
    const delivered = new Set(this.#delivered);
    this.#delivered.clear();
    const ids = new Set(delivered);
    if (all)
      for (const f of await this.#store.listFiles({ states: ['submitted', 'partial'] })) ids.add(f.fileId);
    for (const id of ids) await this.#check(id, delivered.has(id));
    for (const [id, { due }] of this.#reportDue) {
      if (due > this.#now()) continue;
      this.#reportDue.delete(id);
      // Resumed or retried meanwhile: its old report is gone on purpose until it finishes.
      await this.#work.rewriteReports(id, { states: REPORTED_STATES });
    }
    // Reports a source refused, due again (the store's back-off): whichever worker finds them.
    for (const id of await this.#store.reportsDue(OWED_PER_ROUND)) await this.#work.writeOwedReports(id);
  }

  async #check(id: string, delivered: boolean): Promise<void> {
    let file = await this.#store.getFile(id);
    if (!file) return;
    // Its report.csv was written before these delivery reports changed its rows (a file
    // that completes now has just had its report written by checkProgress).
    const written = REPORTED_STATES.has(file.state);
    if (file.state === 'submitted' || file.state === 'partial')
      file = (await this.#work.checkProgress(file)) ?? file;
    // Written again once the burst settles: each burst pushes the rewrite back, up to
    // REPORT_MAX_WAIT_MS after the first, so a steady stream costs one rewrite a minute.
    if (written && delivered && REPORTED_STATES.has(file.state)) {
      const now = this.#now();
      const first = this.#reportDue.get(id)?.first ?? now;
      this.#reportDue.set(id, { first, due: Math.min(now + REPORT_SETTLE_MS, first + REPORT_MAX_WAIT_MS) });
    }
  }
}
