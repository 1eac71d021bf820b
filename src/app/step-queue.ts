// The daemon's queue for the short work (claims, rejections, progress checks): one step after
// the other, beside the files driven in their slots (docs/architecture.md "The daemon"). A
// failure in one step is logged and never stops the queue. The watchdog: a step during which
// nothing moves (no batch read, no chunk answered, no transition) for workStallMs is stalled;
// the queue stops waiting for it and it goes on in the background (its file keeps its lease,
// so nothing else drives it), named by /readyz until it ends.
import type { Logger, RepeatGate } from '../log.ts';

interface Step {
  readonly what: string;
  readonly startedAt: number;
  /** Lets the queue go on without this step. */
  release: () => void;
  /** Settles when the step's work has ended (stalled or not). */
  ended: Promise<void>;
}

/** Work in hand that no longer moves: what it is and when it started. */
export interface StalledWork {
  readonly what: string;
  readonly startedAt: number;
}

export interface StepQueueOptions {
  log: Logger;
  /** A failure that repeats every poll is one line a minute, not one a poll. */
  gate: RepeatGate;
  /** How long a step may go without progress before the queue goes on without it. */
  stallMs: number;
  /** When the pipeline last moved (Pipeline.lastProgress). */
  lastProgress: () => number;
  now?: () => number;
}

export class StepQueue {
  readonly #o: StepQueueOptions;
  readonly #now: () => number;
  #tail: Promise<void> = Promise.resolve();
  #current: Step | null = null;
  readonly #stalled = new Set<Step>();
  #closing = false;

  constructor(options: StepQueueOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Runs `fn` after the steps queued before it; settles when it ends or is left stalled. */
  enqueue(what: string, fn: () => Promise<unknown>): Promise<void> {
    this.#tail = this.#tail.then(() => this.#run(what, fn));
    return this.#tail;
  }

  async #run(what: string, fn: () => Promise<unknown>): Promise<void> {
    if (this.#closing) return;
    const step: Step = { what, startedAt: this.#now(), release: () => {}, ended: Promise.resolve() };
    const run = fn().then(
      () => {},
      (err: unknown) => this.#failed(what, err as Error),
    );
    step.ended = run;
    this.#current = step;
    await new Promise<void>((release) => {
      step.release = release;
      void run.then(release);
    });
    if (this.#current === step) this.#current = null;
    void run.then(() => {
      if (this.#stalled.delete(step))
        this.#o.log.warn(
          { work: what, s: Math.round((this.#now() - step.startedAt) / 1000) },
          'stalled work ended',
        );
    });
  }

  #failed(what: string, err: Error): void {
    const { log: shown, repeated } = this.#o.gate.pass(`step:${what.split(' ')[0]}`, err.message);
    if (shown)
      this.#o.log.error(
        { err: err.message, stack: err.stack, ...(repeated ? { repeated } : {}) },
        `${what} failed`,
      );
  }

  /** The watchdog's look: the current step, quiet for stallMs, is left to run on its own. */
  watch(): void {
    const step = this.#current;
    if (!step) return;
    const quiet = this.#now() - Math.max(step.startedAt, this.#o.lastProgress());
    if (quiet < this.#o.stallMs) return;
    this.#stalled.add(step);
    this.#current = null;
    this.#o.log.error(
      { work: step.what, quietMs: quiet },
      `no progress in ${step.what} for ${Math.round(quiet / 1000)} s: going on with the other files`,
    );
    step.release();
  }

  /** The steps left stalled that have not ended yet. */
  stalled(): StalledWork[] {
    return [...this.#stalled].map((s) => ({ what: s.what, startedAt: s.startedAt }));
  }

  /** No new step starts from now on (those queued end at once). */
  stop(): void {
    this.#closing = true;
  }

  /** Settles when the steps queued now and the stalled ones have ended. */
  ended(): Promise<void> {
    return Promise.all([this.#tail, ...[...this.#stalled].map((s) => s.ended)]).then(() => {});
  }
}
