// Status notifications (docs/service.md "Status notifications"): one POST per accepted destination
// to its message's notifyUrl, used exactly as sent. Only 503 is retried, 5 times, 10/20/30/40/50 s
// after the previous answer (× timeScale); any other code is final; no answer (refused, reset,
// timeout) is recorded as code 0 and never retried.
//
// Speed: one FIFO per attempt number. Every job in a FIFO waits the same delay, so each FIFO is
// already ordered by due time and picking the next job is a look at six heads (no heap, no timer
// per job). Requests go through one undici Agent (a keep-alive pool per receiver origin).
import { Agent, type Dispatcher } from 'undici';
import { redactUrl } from '../core/redact.ts';

export const RETRY_DELAYS_S = [10, 20, 30, 40, 50] as const;

export interface NotificationJob {
  readonly url: string;
  readonly contentType: string;
  readonly transactionNumber: string;
  readonly to: string;
  readonly messageId: string;
  readonly callbackData: string;
  readonly bulkId: string;
  readonly smsCount: number;
  readonly statusName: 'DELIVERED_TO_HANDSET' | 'NO_SUCCESS';
  /** The account that sent it, and when it was accepted (sandbox clock), for the monitoring endpoints. */
  readonly account?: string | undefined;
  readonly acceptedAt?: number | undefined;
  /** The account webhook's Basic credentials, sent on every attempt. */
  readonly authorization?: string | undefined;
}

/** One delivery attempt and the receiver's answer (GET /_sandbox/notifications). */
export interface NotificationAttempt {
  readonly transactionNumber: string;
  readonly to: string;
  readonly messageId: string;
  readonly bulkId: string;
  readonly statusName: string;
  /** The notifyUrl without its query string (it carries the receiver's token). */
  readonly url: string;
  /** 1 for the first try, up to 6. */
  readonly attempt: number;
  /** The receiver's HTTP status, 0 when no answer came. */
  readonly code: number;
  readonly error: string | null;
  /** Start of the attempt, ms since the epoch. */
  readonly at: number;
  readonly latencyMs: number;
  /** The receiver's answer body (first 200 characters), recorded, not interpreted. */
  readonly response: string | null;
  /** Whether another attempt is scheduled. */
  readonly willRetry: boolean;
}

interface Queued {
  readonly job: NotificationJob;
  readonly attempt: number;
  readonly dueAt: number;
}

export interface NotifierOptions {
  readonly timeScale: number;
  /** Requests in flight at once (default 256). */
  readonly concurrency?: number | undefined;
  /** Per attempt, not scaled (default 10 s). */
  readonly timeoutMs?: number | undefined;
  /** Called as a job's first attempt starts: the moment its status is reported. */
  readonly onReport?: ((job: NotificationJob) => void) | undefined;
}

class Fifo {
  #items: Queued[] = [];
  #head = 0;
  get size(): number {
    return this.#items.length - this.#head;
  }
  peek(): Queued | undefined {
    return this.#items[this.#head];
  }
  push(q: Queued): void {
    this.#items.push(q);
  }
  shift(): Queued | undefined {
    const q = this.#items[this.#head];
    if (q === undefined) return undefined;
    this.#items[this.#head++] = undefined as unknown as Queued;
    if (this.#head > 4096 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return q;
  }
  clear(): void {
    this.#items = [];
    this.#head = 0;
  }
}

export class Notifier {
  readonly #queues = Array.from({ length: RETRY_DELAYS_S.length + 1 }, () => new Fifo());
  readonly #agent: Agent;
  readonly #concurrency: number;
  readonly #timeoutMs: number;
  readonly #timeScale: number;
  readonly #onReport: ((job: NotificationJob) => void) | undefined;
  readonly #targets = new Map<string, { origin: string; path: string; redacted: string }>();
  #log: NotificationAttempt[] = [];
  #inflight = 0;
  #timer: NodeJS.Timeout | null = null;
  #timerAt = Infinity;
  #generation = 0;
  #closed = false;
  #held = false;

  constructor(opts: NotifierOptions) {
    this.#timeScale = opts.timeScale;
    this.#concurrency = opts.concurrency ?? 256;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#onReport = opts.onReport;
    this.#agent = new Agent({
      connections: this.#concurrency,
      pipelining: 1,
      connectTimeout: this.#timeoutMs,
      headersTimeout: this.#timeoutMs,
      bodyTimeout: this.#timeoutMs,
    });
  }

  /** Schedules the first attempt `delayMs` from now. */
  schedule(job: NotificationJob, delayMs: number): void {
    if (this.#closed) return;
    this.#queues[0]!.push({ job, attempt: 1, dueAt: Date.now() + delayMs });
    this.#pump();
  }

  get attempts(): readonly NotificationAttempt[] {
    return this.#log;
  }

  /** Jobs waiting for their time or in flight. */
  get pending(): number {
    let n = this.#inflight;
    for (const q of this.#queues) n += q.size;
    return n;
  }

  /** Sends nothing until release(): due notifications wait, in order (a test's receiver outage). */
  hold(): void {
    this.#held = true;
  }

  /** Sends what came due while held, then as usual. */
  release(): void {
    this.#held = false;
    this.#pump();
  }

  reset(): void {
    this.#generation++;
    for (const q of this.#queues) q.clear();
    this.#log = [];
    this.#clearTimer();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.reset();
    await this.#agent.destroy();
  }

  #clearTimer(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#timerAt = Infinity;
  }

  #pump(): void {
    if (this.#closed || this.#held) return;
    const now = Date.now();
    while (this.#inflight < this.#concurrency) {
      let best: Fifo | null = null;
      let bestDue = Infinity;
      for (const q of this.#queues) {
        const head = q.peek();
        if (head && head.dueAt < bestDue) {
          bestDue = head.dueAt;
          best = q;
        }
      }
      if (!best) return;
      if (bestDue > now) {
        if (bestDue < this.#timerAt) {
          this.#clearTimer();
          this.#timerAt = bestDue;
          this.#timer = setTimeout(() => {
            this.#timer = null;
            this.#timerAt = Infinity;
            this.#pump();
          }, bestDue - now);
        }
        return;
      }
      this.#send(best.shift()!);
    }
  }

  #target(url: string): { origin: string; path: string; redacted: string } {
    let t = this.#targets.get(url);
    if (!t) {
      const u = new URL(url);
      t = { origin: u.origin, path: `${u.pathname}${u.search}`, redacted: redactUrl(url) };
      if (this.#targets.size > 10_000) this.#targets.clear();
      this.#targets.set(url, t);
    }
    return t;
  }

  #send(q: Queued): void {
    const { job } = q;
    const generation = this.#generation;
    if (q.attempt === 1) this.#onReport?.(job);
    const target = this.#target(job.url);
    const body = JSON.stringify({
      results: [
        {
          bulkId: job.bulkId,
          messageId: job.messageId,
          to: job.to,
          transactionNumber: job.transactionNumber,
          callbackData: job.callbackData,
          smsCount: job.smsCount,
          status: { name: job.statusName },
        },
      ],
    });
    this.#inflight++;
    const at = Date.now();
    const started = performance.now();
    let code = 0;
    const chunks: Buffer[] = [];
    const finish = (error: string | null): void => {
      this.#inflight--;
      if (generation === this.#generation) {
        const willRetry = code === 503 && q.attempt <= RETRY_DELAYS_S.length;
        const response = chunks.length ? Buffer.concat(chunks).toString('utf8').slice(0, 200) : null;
        this.#log.push({
          transactionNumber: job.transactionNumber,
          to: job.to,
          messageId: job.messageId,
          bulkId: job.bulkId,
          statusName: job.statusName,
          url: target.redacted,
          attempt: q.attempt,
          code,
          error,
          at,
          latencyMs: performance.now() - started,
          response,
          willRetry,
        });
        if (willRetry) {
          const delayMs = RETRY_DELAYS_S[q.attempt - 1]! * 1000 * this.#timeScale;
          this.#queues[q.attempt]!.push({ job, attempt: q.attempt + 1, dueAt: Date.now() + delayMs });
        }
      }
      this.#pump();
    };
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart() {},
      onResponseStart(_controller, statusCode) {
        code = statusCode;
      },
      onResponseData(_controller, chunk) {
        if (chunks.length < 4) chunks.push(chunk);
      },
      onResponseEnd() {
        finish(null);
      },
      onResponseError(_controller, err) {
        // An answer whose body broke off still counts by its status code.
        finish(redactUrl(err.message || err.name));
      },
    };
    try {
      this.#agent.dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: 'POST',
          headers: job.authorization
            ? { 'content-type': job.contentType, authorization: job.authorization }
            : { 'content-type': job.contentType },
          body,
        },
        handler,
      );
    } catch (err) {
      finish(err instanceof Error ? err.message : String(err));
    }
  }
}
