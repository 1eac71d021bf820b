// Who sends next. Every request of an account asks the dispatcher for a permit; the
// dispatcher grants them one at a time, fairly across the files waiting (start-time fair
// queueing, weighted by the file's priority: each grant moves its file's virtual time on by
// destinations / weight, and the waiting file with the earliest virtual time goes next), and
// within the account's budget (budget.ts), which the store shares with every other worker.
// A file that has nothing waiting for a moment (its request in flight, its result being
// recorded) resumes from its own virtual time when it asks again, unless the others have
// moved past it: started afresh from the last grant's, it would go ahead of every file waiting
// each time it asked (docs/scaling.md "Several files at once (one worker)").
// Hand-written: p-limit and the like are FIFO, and no maintained library both weighs waiters
// and asks a shared store before each grant.
import diagnosticsChannel from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type BudgetState,
  decidePermit,
  NEW_BUDGET,
  type PermitAnswer,
  type PermitRequest,
  slowedDown,
} from '../core/budget.ts';

/** Where the account's budget lives: the store for a real deployment, memory for a lone client. */
export interface BudgetSource {
  take(req: PermitRequest): Promise<PermitAnswer>;
  release(permitId: string): Promise<void>;
  slowDown(trouble: { reason: string; retryAfterMs?: number | undefined }): Promise<void>;
}

/**
 * diagnostics_channel: each permit granted, with the files that had a request waiting when it
 * was decided: the turns the files took, which the service's order of arrival blurs (tests).
 */
export const GRANT_CHANNEL = 'dropline:dispatch:grant';
const grantChannel = diagnosticsChannel.channel(GRANT_CHANNEL);

/** Published on GRANT_CHANNEL. File ids only. */
export interface GrantEvent {
  /** The file granted. */
  readonly flow: string;
  /** Its request's destinations. */
  readonly destinations: number;
  /** Every file with a request waiting when the grant was decided, the one granted among them. */
  readonly waiting: readonly string[];
}

/** A file (or any stream of requests) sharing the account, and its weight (priority). */
export interface Flow {
  readonly id: string;
  readonly weight: number;
}

/** The right to have one request in flight; released once its answer is in (or it never went). */
export interface Permit {
  release(): void;
}

/** The last permit id's number in this process (an owner is one process). */
let permitSeq = 0;

/** The budget in this process only (a client without a store: tools, unit tests). */
export class MemoryBudget implements BudgetSource {
  #state: BudgetState = NEW_BUDGET;
  readonly #permits = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async take(req: PermitRequest): Promise<PermitAnswer> {
    const now = this.#now();
    for (const [id, until] of this.#permits) if (until <= now) this.#permits.delete(id);
    const { state, answer } = decidePermit(this.#state, now, this.#permits.size, req);
    if (state) this.#state = state;
    if (answer.granted) this.#permits.set(req.permitId, now + answer.waitMs + req.leaseMs);
    return answer;
  }

  async release(permitId: string): Promise<void> {
    this.#permits.delete(permitId);
  }

  async slowDown(trouble: { reason: string; retryAfterMs?: number | undefined }): Promise<void> {
    this.#state = slowedDown(this.#state, this.#now(), trouble);
  }
}

interface Waiter {
  readonly flow: FlowQueue;
  readonly destinations: number;
  readonly signal: AbortSignal;
  resolve(permit: Permit): void;
  reject(err: unknown): void;
}

interface FlowQueue {
  readonly id: string;
  weight: number;
  /** Virtual time of the file's next grant. */
  pass: number;
  /** The number of its last grant (0: none): among equal virtual times the file served least recently goes first. */
  lastGrant: number;
  readonly waiters: Waiter[];
}

export interface DispatcherOptions {
  readonly budget: BudgetSource;
  /** This worker (permits are recorded under it). */
  readonly owner: string;
  readonly concurrency: number;
  readonly ratePerSecond: number;
  /** How long a permit outlives a worker that died holding it. */
  readonly leaseMs: number;
  /** A release or slow-down the store could not record (the permit's lease ends it anyway). */
  readonly onError?: ((err: unknown, what: string) => void) | undefined;
}

export class Dispatcher {
  readonly #opts: DispatcherOptions;
  /** Files with requests waiting, by id. */
  readonly #flows = new Map<string, FlowQueue>();
  /** Files with nothing waiting whose virtual time is still ahead of the last grant's. */
  readonly #idle = new Map<string, FlowQueue>();
  /** Grants so far (numbers `lastGrant`). */
  #grants = 0;
  /** Virtual time of the last grant: a file that starts waiting starts from here. */
  #virtual = 0;
  #inFlight = 0;
  #pumping = false;
  /** Wakes the pump early when a permit of this worker is released. */
  #released: (() => void) | null = null;

  constructor(opts: DispatcherOptions) {
    this.#opts = opts;
  }

  /** Requests of this worker in flight now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Resolves with a permit once it is this flow's turn and the account's budget allows. */
  acquire(flow: Flow, destinations: number, signal: AbortSignal): Promise<Permit> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<Permit>((resolve, reject) => {
      let queue = this.#flows.get(flow.id);
      if (!queue) {
        queue = this.#idle.get(flow.id) ?? { id: flow.id, weight: 1, pass: 0, lastGrant: 0, waiters: [] };
        this.#idle.delete(flow.id);
        queue.weight = Math.max(1, flow.weight);
        queue.pass = Math.max(queue.pass, this.#virtual);
        this.#flows.set(flow.id, queue);
      }
      const waiter: Waiter = { flow: queue, destinations, signal, resolve, reject };
      queue.waiters.push(waiter);
      const onAbort = (): void => {
        if (this.#remove(waiter)) reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      waiter.resolve = (permit) => {
        signal.removeEventListener('abort', onAbort);
        resolve(permit);
      };
      waiter.reject = (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      };
      void this.#pump();
    });
  }

  /** A 429 or 5xx: the whole account slows down (every worker), and holds for a Retry-After. */
  slowDown(trouble: { reason: string; retryAfterMs?: number | undefined }): void {
    this.#opts.budget.slowDown(trouble).catch((err: unknown) => this.#opts.onError?.(err, 'slowing down'));
  }

  /** The waiter whose file has the earliest virtual time (among equals, the file served least recently). */
  #next(): Waiter | undefined {
    let best: FlowQueue | undefined;
    for (const q of this.#flows.values())
      if (!best || q.pass < best.pass || (q.pass === best.pass && q.lastGrant < best.lastGrant)) best = q;
    return best?.waiters[0];
  }

  #remove(waiter: Waiter): boolean {
    const q = waiter.flow;
    const i = q.waiters.indexOf(waiter);
    if (i < 0) return false;
    q.waiters.splice(i, 1);
    if (q.waiters.length === 0 && this.#flows.get(q.id) === q) {
      this.#flows.delete(q.id);
      this.#idle.set(q.id, q);
    }
    return true;
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      for (let waiter = this.#next(); waiter; waiter = this.#next()) {
        // The files among which this iteration's waiter was chosen.
        const waiting = grantChannel.hasSubscribers ? [...this.#flows.keys()] : [];
        if (this.#inFlight >= this.#opts.concurrency) {
          await this.#waitRelease(null);
          continue;
        }
        // Counted across every dispatcher of the process: the store keys permits by id alone.
        const permitId = `${this.#opts.owner}:${++permitSeq}`;
        let answer: PermitAnswer;
        try {
          answer = await this.#opts.budget.take({
            permitId,
            owner: this.#opts.owner,
            destinations: waiter.destinations,
            ratePerSecond: this.#opts.ratePerSecond,
            concurrency: this.#opts.concurrency,
            leaseMs: this.#opts.leaseMs,
          });
        } catch (err) {
          if (this.#remove(waiter)) waiter.reject(err);
          continue;
        }
        if (!answer.granted) {
          // Other workers hold the account's permits: asked again soon, or at once when one of
          // this worker's own ends.
          await this.#waitRelease(answer.retryInMs * (0.5 + Math.random()));
          continue;
        }
        this.#inFlight++;
        const permit = this.#permit(permitId);
        if (!this.#remove(waiter)) {
          permit.release(); // stopped meanwhile
          continue;
        }
        this.#granted(waiter, waiting);
        // The rate: this grant starts at its reserved time, and the next is decided after it.
        if (answer.waitMs > 0)
          await sleep(answer.waitMs, undefined, { signal: waiter.signal }).catch(() => {});
        if (waiter.signal.aborted) {
          permit.release();
          waiter.reject(waiter.signal.reason);
        } else waiter.resolve(permit);
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Moves the virtual times on past a grant to `waiter`'s file. */
  #granted(waiter: Waiter, waiting: readonly string[]): void {
    const q = waiter.flow;
    if (grantChannel.hasSubscribers)
      grantChannel.publish({ flow: q.id, destinations: waiter.destinations, waiting } satisfies GrantEvent);
    this.#virtual = q.pass;
    q.pass += waiter.destinations / q.weight;
    q.lastGrant = ++this.#grants;
    // An idle file the virtual time has reached would start from it anyway: forgotten.
    for (const [id, idle] of this.#idle) if (idle.pass <= this.#virtual) this.#idle.delete(id);
  }

  #permit(permitId: string): Permit {
    let done = false;
    return {
      release: () => {
        if (done) return;
        done = true;
        // Counted free here once the store has it free too, so the next take finds room.
        this.#opts.budget
          .release(permitId)
          .catch((err: unknown) => this.#opts.onError?.(err, 'releasing a send permit'))
          .finally(() => {
            this.#inFlight--;
            this.#released?.();
          });
      },
    };
  }

  /** Until one of this worker's permits is released, or `ms` (null: no time limit) pass. */
  async #waitRelease(ms: number | null): Promise<void> {
    const released = new Promise<void>((wake) => {
      this.#released = wake;
    });
    if (ms === null) {
      await released;
      return;
    }
    const timer = new AbortController();
    await Promise.race([released, sleep(ms, undefined, { signal: timer.signal }).catch(() => {})]);
    timer.abort();
  }
}
