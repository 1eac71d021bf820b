// The receiver's group committer (docs/notify.md): requests queue their events; one batch per
// commit (`batchMs` after its first event queued, at `maxBatch` events, or at once when every
// open connection has a request waiting), one store.recordDeliveries call (one transaction),
// then every request of the batch is answered. One commit at a time: while it runs the next
// batch fills up. A failed commit answers its batch 503; a commit that hangs past
// `commitTimeoutMs` answers 503 too, and until it settles new requests get 503 at once. A full
// queue answers 503 at once. The header of receiver.ts says why each rule is there.
import diagnosticsChannel from 'node:diagnostics_channel';
import type { Logger } from 'pino';
import { chunkReports, namesChunks } from '../channels/sms/reports.ts';
import { maskNumber, redactText } from '../core/redact.ts';
import type { DeliveryEvent, DeliveryResult, Store } from '../store/store.ts';

/** diagnostics_channel: every commit of delivery reports (/metrics counts them). */
export const COMMIT_CHANNEL = 'dropline:notify:commit';
const commitChannel = diagnosticsChannel.channel(COMMIT_CHANNEL);

export interface CommitEvent {
  /** Reports of the batch by delivery status (repeats included; bounded names, see metricStatus). */
  readonly statuses: Readonly<Record<string, number>>;
  /** Each request's time from arrival to its answer, ms. */
  readonly lagsMs: readonly number[];
  readonly recorded: number;
  readonly duplicates: number;
  readonly orphans: number;
}

/** The committer's part of the receiver's stats (ReceiverStats), updated in place. */
export interface CommitStats {
  /** Transactions run (successful or not). */
  commits: number;
  failedCommits: number;
  /** Events committed: recorded + duplicates. */
  events: number;
  /** New to the store (orphans included). */
  recorded: number;
  /** Already recorded: changed nothing. */
  duplicates: number;
  /** Recorded, matching no recipient. */
  orphans: number;
  /** Largest batch committed, in events. */
  largestBatch: number;
  /** Events waiting for a commit now. */
  queued: number;
}

/** Answers one request: its HTTP status and JSON body. */
export type Respond = (status: number, body: string) => void;

interface Waiter {
  readonly events: DeliveryEvent[];
  readonly respond: Respond;
  /** performance.now() when queued. */
  readonly at: number;
  answered: boolean;
}

export const OK_BODY = '{"status":"ok"}';
export const UNAVAILABLE_BODY = '{"status":"unavailable","reason":"the report could not be recorded yet"}';
export const BUSY_BODY = '{"status":"unavailable","reason":"too many reports waiting"}';

/** Distinct status names /metrics shows (NO_SUCCESS, DELIVERED_TO_HANDSET and a few more). */
const METRIC_STATUSES = 32;
/** A status name as a label: capitals and underscores, so never a number. */
const STATUS_NAME = /^[A-Z][A-Z_]{0,63}$/;
const OTHER_STATUS = 'OTHER';

/** How often a store that stays away is mentioned again. */
export const AWAY_REMINDER_MS = 60_000;

export interface GroupCommitterOptions {
  store: Pick<Store, 'recordDeliveries' | 'chunkMessageIds'>;
  batchMs: number;
  maxBatch: number;
  maxQueue: number;
  commitTimeoutMs: number;
  log: Logger;
  stats: CommitStats;
  /** Open connections now: when each has a request queued, no further one can arrive unanswered. */
  connections: () => number;
  /** After a commit that changed recipients of these files. */
  onDelivered?: ((fileIds: string[]) => void) | undefined;
}

export class GroupCommitter {
  readonly #o: GroupCommitterOptions;
  #pending: Waiter[] = [];
  #pendingEvents = 0;
  #committing = false;
  /** The running commit overran commitTimeoutMs: the store is treated as unavailable until it settles. */
  #stalled = false;
  #timer: NodeJS.Timeout | null = null;
  #immediate: NodeJS.Immediate | null = null;
  #closing = false;
  #idle: (() => void) | null = null;
  /** Since when commits fail because the store cannot be reached, and how many did. */
  #away: { since: number; saidAt: number; failed: number } | null = null;
  /**
   * Status names published for /metrics, where each is a label value kept for the life of the
   * process: a sender's made-up names (one per report, a number in one) must not grow it
   * without bound. The first METRIC_STATUSES names shaped like one are shown as they are;
   * anything else is OTHER_STATUS.
   */
  readonly #metricStatuses = new Set<string>();

  constructor(options: GroupCommitterOptions) {
    this.#o = options;
  }

  /** Queues a request's events; `respond` is called once, when they are committed or refused. */
  add(events: DeliveryEvent[], respond: Respond): void {
    if (this.#closing || this.#stalled) {
      respond(503, UNAVAILABLE_BODY);
      return;
    }
    if (this.#pendingEvents + events.length > this.#o.maxQueue) {
      respond(503, BUSY_BODY);
      return;
    }
    this.#pending.push({ events, respond, at: performance.now(), answered: false });
    this.#pendingEvents += events.length;
    this.#o.stats.queued = this.#pendingEvents;
    this.#schedule();
  }

  /** New requests are refused 503; what is queued commits at once. */
  stop(): void {
    this.#closing = true;
  }

  /** After stop(): settles once everything queued is committed and answered (a hung store is not waited for). */
  async drain(): Promise<void> {
    if (this.#committing || this.#pending.length > 0) {
      await new Promise<void>((resolve) => {
        this.#idle = resolve;
        if (this.#stalled) resolve();
        else this.#schedule();
      });
    }
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#immediate) clearImmediate(this.#immediate);
  }

  #answer(w: Waiter, status: number, body: string): void {
    if (w.answered) return;
    w.answered = true;
    w.respond(status, body);
  }

  #schedule(): void {
    if (this.#committing || this.#pending.length === 0) {
      if (!this.#committing && this.#idle) this.#idle();
      return;
    }
    if (
      this.#pendingEvents >= this.#o.maxBatch ||
      this.#closing ||
      this.#pending.length >= this.#o.connections()
    ) {
      this.#flush();
      return;
    }
    if (this.#timer || this.#immediate) return;
    const wait = this.#pending[0]!.at + this.#o.batchMs - performance.now();
    // setImmediate runs after the current round of socket reads: every request that arrived in
    // it joins the batch, without the ≥1 ms of a timer.
    if (wait <= 0) this.#immediate = setImmediate(() => this.#flush());
    else this.#timer = setTimeout(() => this.#flush(), wait);
  }

  /** Whole requests, up to maxBatch events (one oversized request still goes alone). */
  #take(): { batch: Waiter[]; n: number } {
    let take = 0;
    let n = 0;
    while (take < this.#pending.length) {
      const size = this.#pending[take]!.events.length;
      if (n > 0 && n + size > this.#o.maxBatch) break;
      n += size;
      take++;
    }
    const batch = this.#pending.slice(0, take);
    this.#pending = this.#pending.slice(take);
    this.#pendingEvents -= n;
    this.#o.stats.queued = this.#pendingEvents;
    return { batch, n };
  }

  #flush(): void {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (this.#immediate) {
      clearImmediate(this.#immediate);
      this.#immediate = null;
    }
    if (this.#committing || this.#pending.length === 0) return;
    const { stats, store, log } = this.#o;
    const { batch, n } = this.#take();
    const events = batch.length === 1 ? batch[0]!.events : batch.flatMap((w) => w.events);
    this.#committing = true;
    stats.commits++;
    if (n > stats.largestBatch) stats.largestBatch = n;
    const started = performance.now();
    const watchdog = setTimeout(() => this.#overran(batch, n), this.#o.commitTimeoutMs);
    let commit: Promise<DeliveryResult>;
    /** The events as recorded: reports of a chunk sent with POST /mtmessage given their recipient. */
    let recorded = events;
    if (namesChunks(events)) {
      // Read in the commit's time (the watchdog covers it); a failed read fails the batch as a
      // failed commit does: 503, nothing recorded, the service retries.
      commit = chunkReports(store, events).then((resolved) => {
        recorded = resolved;
        return store.recordDeliveries(resolved);
      });
    } else {
      try {
        commit = store.recordDeliveries(events);
      } catch (err) {
        commit = Promise.reject(err);
      }
    }
    commit.then(
      (result) => {
        clearTimeout(watchdog);
        this.#committed(batch, events, n, result);
        if (log.isLevelEnabled('debug')) {
          log.debug(
            { events: n, requests: batch.length, ms: performance.now() - started, ...result },
            'notify: committed',
          );
        }
        if (result.orphans > 0 && log.isLevelEnabled('debug')) {
          // A messageId may be the operator's own, a number as well: masked like one.
          for (const e of recorded)
            log.debug({ messageId: redactText(e.messageId), to: maskNumber(e.to) }, 'notify: report');
        }
        this.#settled();
        if (result.fileIds.length > 0 && this.#o.onDelivered) {
          try {
            this.#o.onDelivered(result.fileIds);
          } catch (err) {
            log.error({ err: errorText(err) }, 'notify: onDelivered failed');
          }
        }
      },
      (err: unknown) => {
        clearTimeout(watchdog);
        stats.failedCommits++;
        if ((err as { code?: unknown } | null)?.code === 'DROPLINE_ERR_STORE_UNAVAILABLE')
          this.#storeAway(err);
        else
          log.error(
            { events: n, err: errorText(err) },
            'notify: commit failed; answering 503 (the service retries)',
          );
        for (const w of batch) this.#answer(w, 503, UNAVAILABLE_BODY);
        this.#settled();
      },
    );
  }

  /** The commit ran past commitTimeoutMs: its batch and the queue answered 503. */
  #overran(batch: Waiter[], n: number): void {
    this.#stalled = true;
    this.#o.log.error(
      { events: n, ms: this.#o.commitTimeoutMs },
      'notify: the store did not commit in time; answering 503',
    );
    for (const w of batch) this.#answer(w, 503, UNAVAILABLE_BODY);
    for (const w of this.#pending) this.#answer(w, 503, UNAVAILABLE_BODY);
    this.#pending = [];
    this.#pendingEvents = 0;
    this.#o.stats.queued = 0;
    if (this.#closing && this.#idle) this.#idle();
  }

  #committed(batch: Waiter[], events: DeliveryEvent[], n: number, result: DeliveryResult): void {
    const { stats, log } = this.#o;
    stats.events += n;
    stats.recorded += result.recorded;
    stats.duplicates += result.duplicates;
    stats.orphans += result.orphans;
    for (const w of batch) this.#answer(w, 200, OK_BODY);
    if (commitChannel.hasSubscribers) {
      const now = performance.now();
      const statuses: Record<string, number> = {};
      for (const e of events) {
        const name = this.#metricStatus(e.status);
        statuses[name] = (statuses[name] ?? 0) + 1;
      }
      commitChannel.publish({
        statuses,
        lagsMs: batch.map((w) => now - w.at),
        recorded: result.recorded,
        duplicates: result.duplicates,
        orphans: result.orphans,
      } satisfies CommitEvent);
    }
    if (this.#away) {
      log.info(
        { failedCommits: this.#away.failed, s: Math.round((Date.now() - this.#away.since) / 1000) },
        'notify: the store answers again; reports are recorded',
      );
      this.#away = null;
    }
  }

  #metricStatus(name: string): string {
    if (this.#metricStatuses.has(name)) return name;
    if (this.#metricStatuses.size >= METRIC_STATUSES || !STATUS_NAME.test(name)) return OTHER_STATUS;
    this.#metricStatuses.add(name);
    return name;
  }

  // A store that is away (PostgreSQL restarting, a connection refused) fails every commit
  // until it is back: thousands a minute under a stream of reports. Said when it goes, again
  // each AWAY_REMINDER_MS it stays away, and when it is back, with the failed commits counted.
  #storeAway(err: unknown): void {
    const at = Date.now();
    const log = this.#o.log;
    if (this.#away) {
      this.#away.failed++;
      if (at - this.#away.saidAt < AWAY_REMINDER_MS) return;
      this.#away.saidAt = at;
      log.warn(
        {
          failedCommits: this.#away.failed,
          s: Math.round((at - this.#away.since) / 1000),
          err: errorText(err),
        },
        'notify: the store is still unavailable; answering 503 (the service retries)',
      );
      return;
    }
    this.#away = { since: at, saidAt: at, failed: 1 };
    log.warn(
      { err: errorText(err) },
      'notify: the store is unavailable; answering 503 until it answers (the service retries)',
    );
  }

  #settled(): void {
    this.#committing = false;
    this.#stalled = false;
    this.#schedule();
  }
}

export function errorText(err: unknown): string {
  return redactText(err instanceof Error ? err.message : String(err));
}
