// One source's poll in the daemon: its inbox listed, files that never became ready
// rejected, ready ones claimed in batches on the step queue, then started as slots allow.
import type { Logger, RepeatGate } from '../log.ts';
import type { createMetrics } from '../ops/metrics.ts';
import type { Pipeline } from '../pipeline/pipeline.ts';
import { type ReadinessTracker, sourceProbes } from '../sources/readiness.ts';
import type { Source, SourceEntry } from '../sources/source.ts';
import type { StepQueue } from './step-queue.ts';

/** Ready files claimed per store transaction. */
export const CLAIM_BATCH = 500;

export interface SourceScanOptions {
  source: Source;
  tracker: ReadinessTracker;
  pipeline: Pipeline;
  queue: StepQueue;
  /** Starts claimed files as slots allow. */
  fill: () => void;
  metrics: Pick<ReturnType<typeof createMetrics>, 'scanned'>;
  alerts: { sourceListed(source: string, error: string | null): void };
  log: Logger;
  gate: RepeatGate;
  stopped: () => boolean;
}

export class SourceScan {
  readonly #o: SourceScanOptions;
  #scanning = false;
  /** Inbox entries that are not drop files: said once while they stay there. */
  #ignoredSaid = new Map<string, string>();

  constructor(options: SourceScanOptions) {
    this.#o = options;
  }

  /** One poll; a poll while the last one runs is skipped. */
  async scan(): Promise<void> {
    if (this.#scanning || this.#o.stopped()) return;
    this.#scanning = true;
    try {
      const listing = await this.#list();
      if (listing) await this.#take(listing);
    } finally {
      this.#scanning = false;
    }
  }

  async #list(): Promise<SourceEntry[] | null> {
    const { source, metrics, alerts, log, gate } = this.#o;
    const ignored = new Map<string, string>();
    const listed = performance.now();
    let listing: SourceEntry[];
    try {
      listing = await source.list({ ignored: (name, why) => ignored.set(name, why) });
      metrics.scanned(source.name, (performance.now() - listed) / 1000, false);
      alerts.sourceListed(source.name, null);
    } catch (err) {
      metrics.scanned(source.name, (performance.now() - listed) / 1000, true);
      const message = (err as Error).message;
      alerts.sourceListed(source.name, message);
      const { log: shown, repeated } = gate.pass(`list:${source.name}`, message);
      if (shown)
        log.warn(
          { source: source.name, err: message, ...(repeated ? { repeated } : {}) },
          'cannot list the inbox',
        );
      return null;
    }
    if (gate.clear(`list:${source.name}`)) log.info({ source: source.name }, 'inbox listed again');
    for (const [name, why] of ignored)
      if (this.#ignoredSaid.get(name) !== why)
        log.warn({ source: source.name, file: name }, `ignoring inbox/${name}: ${why}`);
    this.#ignoredSaid = ignored;
    return listing;
  }

  async #take(listing: SourceEntry[]): Promise<void> {
    const { source, tracker, pipeline, queue } = this.#o;
    const { ready, timedOut } = await tracker.observe(listing, Date.now(), sourceProbes(source));
    for (const entry of timedOut) {
      await queue.enqueue(`reject ${entry.name}`, async () => {
        await pipeline.rejectIncomplete(source, entry);
        tracker.forget(entry.path);
      });
    }
    // Claimed in batches (one store transaction each), then started as room allows.
    for (let i = 0; i < ready.length; i += CLAIM_BATCH) {
      const batch = ready.slice(i, i + CLAIM_BATCH);
      await queue.enqueue(`claim ${batch.length} file(s)`, async () => {
        try {
          await pipeline.claimReady(source, batch);
        } finally {
          for (const entry of batch) tracker.forget(entry.path);
        }
        this.#o.fill();
      });
    }
  }
}
