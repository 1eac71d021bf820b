// The messaging-service client for SMS (POST /mtmessage/massive) and RCS or flash SMS (POST
// /mtmessage): one keep-alive undici Pool per service host; every body is serialised once per
// part and reused across retries, so a resend is byte-identical (docs/service.md "Use").
//
// A part's requests are a thin loop (#sendPart): its turn on the account (send-turn.ts), one
// request, and the step the answer calls for, decided by the retry policy (retry-policy.ts:
// docs/service.md "Which answers are safe to resend", "Retry schedule"): settle, send again
// after a wait, or cut it in halves (bisect.ts). The service has no idempotency key: a part
// whose body may have reached it is in doubt and never resent here.
import { EventEmitter } from 'node:events';
import { Pool } from 'undici';
import { querySecrets, redactSecrets, secretsOf } from '../core/redact.ts';
import { DroplineError } from '../errors.ts';
import { type AttemptEvent, publishAttempt, publishToken } from './attempt-events.ts';
import { sendHalves } from './bisect.ts';
import {
  type RetryOptions,
  retryOptions,
  type SendOptions,
  type ServiceClientOptions,
  type TokenOptions,
  tokenOptions,
} from './client-options.ts';
import { Dispatcher, type Flow, MemoryBudget, type Permit } from './dispatch.ts';
import { describeError, type HttpAnswer, postOnce, serviceHost } from './http.ts';
import {
  type AccountHealth,
  MONITORING_ENDPOINTS,
  MONITORING_READ_BYTES,
  MONITORING_TIMEOUT_MS,
  type MonitoringEndpoint,
  type MonitoringName,
  monitoringData,
  withoutSecrets,
} from './monitoring.ts';
import { type PartFailure, type PartTally, type Step, stepFor, turnFailure } from './retry-policy.ts';
import { type PartResult, partResult, type SendResult } from './send-result.ts';
import { permitLeaseMs, type Turn, takeTurn } from './send-turn.ts';
import { type TokenAnswer, TokenManager } from './token.ts';
import { pause, requestToken } from './token-request.ts';
import {
  type BackoffPolicy,
  type ChunkPart,
  checkChunk,
  countDestinations,
  massiveBody,
  mtMessageBody,
  type PlannedChunk,
  reasonOf,
  type TokenGrant,
  wholePart,
} from './wire.ts';

// The client's API as it was when all of it lived here: importers keep importing this file.
export {
  ATTEMPT_CHANNEL,
  type AttemptEvent,
  type AttemptResult,
  TOKEN_CHANNEL,
  type TokenEvent,
} from './attempt-events.ts';
export type { RetryOptions, SendOptions, ServiceClientOptions, TokenOptions } from './client-options.ts';
export type { FailureKind, PartResult, SendOutcome, SendResult } from './send-result.ts';

export class ServiceClient extends EventEmitter {
  readonly #pool: Pool;
  readonly #basePath: string;
  readonly #basic: string;
  readonly #notify: { notifyUrl?: string | undefined; notifyContentType?: string | undefined };
  readonly #dispatcher: Dispatcher;
  readonly #retry: RetryOptions;
  readonly #backoff: BackoffPolicy;
  readonly #random: () => number;
  readonly #tokens: TokenManager;
  readonly #headersTimeout: number;
  readonly #bodyTimeout: number;
  readonly #closing = new AbortController();
  /** What the requests carry that no reason may show (a service may echo a request back). */
  readonly #secrets: readonly string[];

  constructor(opts: ServiceClientOptions) {
    super();
    const host = serviceHost(opts.baseUrl, 'api.baseUrl');
    const concurrency = opts.concurrency ?? 4;
    const timeout = opts.timeoutMs ?? 30_000;
    this.#headersTimeout = opts.headersTimeoutMs ?? timeout;
    this.#bodyTimeout = opts.bodyTimeoutMs ?? timeout;
    this.#pool = new Pool(host.origin, {
      connections: opts.connections ?? concurrency + 1,
      pipelining: 1,
      connectTimeout: opts.connectTimeoutMs ?? 10_000,
      headersTimeout: this.#headersTimeout,
      bodyTimeout: this.#bodyTimeout,
      keepAliveTimeout: opts.keepAliveTimeoutMs ?? 4_000,
    });
    this.#basePath = host.basePath;
    const credentials = Buffer.from(`${opts.username}:${opts.password}`).toString('base64');
    this.#basic = `Basic ${credentials}`;
    this.#notify = { notifyUrl: opts.notifyUrl, notifyContentType: opts.notifyContentType };
    this.#secrets = secretsOf([opts.password, credentials, ...querySecrets(opts.notifyUrl)]);
    this.#dispatcher = new Dispatcher({
      budget: opts.budget ?? new MemoryBudget(),
      owner: opts.owner ?? `pid-${process.pid}`,
      concurrency,
      ratePerSecond: opts.ratePerSecond ?? 0,
      leaseMs: permitLeaseMs(this.#headersTimeout, this.#bodyTimeout),
      onError: opts.onBudgetError,
    });
    this.#retry = retryOptions(opts.retry);
    this.#backoff = { baseMs: this.#retry.baseMs, maxMs: this.#retry.maxMs };
    this.#random = opts.random ?? Math.random;
    const now = opts.now ?? Date.now;
    const tokenOpts = tokenOptions(opts.token);
    this.#tokens = new TokenManager({
      now,
      renewBeforeMs: tokenOpts.renewBeforeS * 1000,
      request: (grant) => this.#requestToken(grant, tokenOpts),
      share: opts.tokenShare,
    });
  }

  /**
   * The account's bearer token, for another endpoint of the same host (the answers to users'
   * replies, docs/opt-outs.md "Answers"): one token an account, never a second login.
   */
  get tokens(): Pick<TokenManager, 'get' | 'invalidate'> {
    return this.#tokens;
  }

  /**
   * Sends one planned chunk. Resolves (never rejects for service trouble) with one result per
   * part: the whole chunk, or the pieces a 400 bisection or a 413 split made of it.
   *
   * `flow` is the file the chunk belongs to: the account's requests are granted fairly across
   * files, by weight. `start` is called once the chunk's turn has come, right before its first
   * request: the caller records the chunk in flight there (write-ahead), so a chunk that only
   * waited for its turn is never in doubt. When `start` answers false nothing is sent and the
   * result is null; a failure to get the turn (the budget's store) rejects, nothing sent.
   */
  sendChunk(chunk: PlannedChunk, options?: SendOptions & { start?: undefined }): Promise<SendResult>;
  sendChunk(chunk: PlannedChunk, options: SendOptions): Promise<SendResult | null>;
  async sendChunk(chunk: PlannedChunk, options: SendOptions = {}): Promise<SendResult | null> {
    checkChunk(chunk);
    const signal = options.signal
      ? AbortSignal.any([options.signal, this.#closing.signal])
      : this.#closing.signal;
    const flow = options.flow ?? { id: chunk.bulkId, weight: 1 };
    const whole = wholePart(chunk);
    // The body and the turn, token in hand, before the chunk is recorded in flight: between
    // that record and the request only the request itself (a process killed there leaves a
    // chunk in doubt that never left). Stopped while waiting, the part says so (#sendPart).
    const body = this.#body(whole);
    let first: Turn | undefined;
    try {
      first = await takeTurn(this.#tokens, this.#dispatcher, flow, whole.end - whole.start, signal);
    } catch (err) {
      if (!signal.aborted) throw err;
      if (options.start) return null;
    }
    if (first && options.start) {
      let go = false;
      try {
        go = await options.start();
      } finally {
        if (!go) first.permit.release();
      }
      if (!go) return null;
    }
    const parts = await this.#sendPart(whole, signal, flow, first, body);
    parts.sort((a, b) => a.start - b.start);
    return { chunkId: chunk.chunkId, destinations: countDestinations(chunk), parts };
  }

  /**
   * The service's monitoring endpoints (src/service/monitoring.ts), the three at
   * once, each within `timeoutMs` (default 5 s) from its start to its answer, the token wait
   * included. The account's own token (a login or renewal is the sends' own, shared as
   * theirs; a 401 renews it once, as a send does) and pool, but no send permit: monitoring is
   * not a send and does not wait for the account's budget. Never rejects: a failure is the
   * endpoint's `error`, without the token or any query string.
   */
  async monitoring(options: { readonly timeoutMs?: number | undefined } = {}): Promise<AccountHealth> {
    const timeoutMs = options.timeoutMs ?? MONITORING_TIMEOUT_MS;
    const checkedAt = new Date().toISOString();
    const endpoints = await Promise.all(
      MONITORING_ENDPOINTS.map(({ name, path }) => this.#monitor(name, path, timeoutMs)),
    );
    return { checkedAt, endpoints };
  }

  async #monitor(name: MonitoringName, path: string, timeoutMs: number): Promise<MonitoringEndpoint> {
    const started = performance.now();
    const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), this.#closing.signal]);
    const used: string[] = [];
    let status: number | null = null;
    let data: unknown = null;
    let error: string | null = null;
    let waiting: 'token' | 'answer' = 'token';
    try {
      for (let renewed = false; ; renewed = true) {
        waiting = 'token';
        const token = await untilAborted(() => this.#tokens.get(), signal);
        used.push(token);
        waiting = 'answer';
        const answer = await this.#get(path, token, signal);
        status = answer.status;
        data = withoutSecrets(monitoringData(answer.body, answer.contentType, answer.complete), used);
        if (status === 401 && !renewed) {
          this.#tokens.invalidate(token);
          continue;
        }
        if (status < 200 || status >= 300)
          error = `HTTP ${status}${renewed && status === 401 ? ' (after renewing the token)' : ''}: ${reasonOf(data, status, [...this.#secrets, ...used])}`;
        break;
      }
    } catch (err) {
      if (this.#closing.signal.aborted) error = 'the service client was closed';
      else if (signal.aborted)
        error =
          waiting === 'token'
            ? `no token within ${timeoutMs} ms (POST /token)`
            : `no answer within ${timeoutMs} ms`;
      else error = err instanceof DroplineError ? err.message : describeError(err as Error);
    }
    return {
      name,
      path,
      ok: error === null,
      status,
      ms: Math.round(performance.now() - started),
      // A failed answer's body says why in `error`: nothing else of it is shown.
      data: error === null ? data : null,
      error: error === null ? null : redactSecrets(error, used),
    };
  }

  /** One GET on the pool, its body read up to MONITORING_READ_BYTES. */
  async #get(
    path: string,
    token: string,
    signal: AbortSignal,
  ): Promise<{ status: number; contentType: string | undefined; body: Buffer; complete: boolean }> {
    const res = await this.#pool.request({
      method: 'GET',
      path: this.#basePath + path,
      headers: { accept: 'application/json', authorization: `Bearer ${token}` },
      signal,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let complete = true;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      if (size + chunk.length > MONITORING_READ_BYTES) {
        chunks.push(chunk.subarray(0, MONITORING_READ_BYTES - size));
        complete = false;
        break;
      }
      chunks.push(chunk);
      size += chunk.length;
    }
    const type = res.headers['content-type'];
    return {
      status: res.statusCode,
      contentType: Array.isArray(type) ? type[0] : type,
      body: Buffer.concat(chunks),
      complete,
    };
  }

  /** Waits for requests in flight, then closes the sockets; pending waits end as `failed`. */
  async close(): Promise<void> {
    this.#closing.abort();
    await this.#pool.close();
  }

  /**
   * Sends a part until the retry policy settles it (or cuts it in halves, each sent the same
   * way). `first`: the turn of its first attempt, already granted; `prepared`: its body, made.
   */
  async #sendPart(
    part: ChunkPart,
    signal: AbortSignal,
    flow: Flow,
    first?: Turn,
    prepared?: Buffer,
  ): Promise<PartResult[]> {
    const body = prepared ?? this.#body(part);
    const size = part.end - part.start;
    const tally: PartTally = { attempts: 0, tries: 0, rateLimited: 0, reauths: 0 };
    for (;;) {
      const turn = await this.#partTurn(flow, size, signal, first);
      first = undefined;
      if (!('permit' in turn)) return partResult(part, turn, tally.attempts);
      tally.attempts++;
      const started = performance.now();
      const answer = await this.#post(part.chunk.via ? '/mtmessage' : '/mtmessage/massive', body, {
        'content-type': 'application/json',
        accept: 'application/json',
        authorization: `Bearer ${turn.token}`,
      }).finally(() => turn.permit.release());
      const latencyMs = performance.now() - started;
      const step = stepFor(answer, {
        retry: this.#retry,
        random: this.#random,
        tally,
        size,
        via: part.chunk.via,
        secrets: [...this.#secrets, turn.token],
      });
      this.#apply(step, tally, turn.token);
      publishAttempt(this, attemptEvent(part, tally.attempts, answer, latencyMs, step));
      if (step.next === 'settle') return partResult(part, step.end, tally.attempts);
      if (step.next === 'halve') return sendHalves(part, (half) => this.#sendPart(half, signal, flow));
      if (step.wait && !(await pause(step.wait.ms, signal)))
        return partResult(part, step.wait.stopped, tally.attempts);
    }
  }

  /**
   * The part's turn and its token, in hand: `first` when the chunk's turn was granted before
   * it was recorded in flight, else a new one. Without them (stopped, a login refused), the
   * permit is given back and the part ends as the policy says.
   */
  async #partTurn(
    flow: Flow,
    size: number,
    signal: AbortSignal,
    first: Turn | undefined,
  ): Promise<{ permit: Permit; token: string } | PartFailure> {
    let permit = first?.permit;
    let got = first?.token;
    try {
      if (signal.aborted) throw signal.reason;
      if (!permit || !got)
        ({ permit, token: got } = await takeTurn(this.#tokens, this.#dispatcher, flow, size, signal));
      return { permit, token: await got };
    } catch (err) {
      permit?.release();
      return turnFailure(err);
    }
  }

  /** A step's effects on the account: its pace, its token, and the part's tally. */
  #apply(step: Step, tally: PartTally, token: string): void {
    if (step.count) tally[step.count]++;
    if (step.slowDown) this.#dispatcher.slowDown(step.slowDown);
    if (step.dropToken) this.#tokens.invalidate(token);
  }

  /** POST /token (token-request.ts), each answer published as a token event. */
  #requestToken(grant: TokenGrant, policy: TokenOptions): Promise<TokenAnswer> {
    return requestToken(grant, {
      post: (path, body, headers) => this.#post(path, body, headers),
      basic: this.#basic,
      secrets: this.#secrets,
      policy,
      retry: { ...this.#backoff, maxAttempts: this.#retry.maxAttempts },
      maxRetryAfterMs: this.#retry.maxRetryAfterMs,
      random: this.#random,
      closing: this.#closing.signal,
      onAnswer: (event) => publishToken(this, event),
    });
  }

  /** A part's request body: POST /mtmessage's for a chunk that says so, else the massive one. */
  #body(part: ChunkPart): Buffer {
    const via = part.chunk.via;
    return via ? mtMessageBody(part, via) : massiveBody(part, this.#notify);
  }

  #post(path: string, body: Buffer, headers: Record<string, string>): Promise<HttpAnswer> {
    return postOnce(this.#pool, {
      path: this.#basePath + path,
      body,
      headers,
      headersTimeout: this.#headersTimeout,
      bodyTimeout: this.#bodyTimeout,
    });
  }
}

/** What the attempt event says of one request and the step its answer called for. */
function attemptEvent(
  part: ChunkPart,
  attempt: number,
  answer: HttpAnswer,
  latencyMs: number,
  step: Step,
): AttemptEvent {
  return {
    chunkId: part.chunkId,
    partId: part.partId,
    attempt,
    destinations: part.end - part.start,
    status: answer.ok ? answer.status : 0,
    latencyMs,
    result: step.result,
    written: answer.ok || answer.written,
    error: step.error,
    delayMs: step.next === 'again' ? step.wait?.ms : undefined,
  };
}

/**
 * `start()`'s promise, or the signal's reason once it aborts (the promise goes on, its outcome
 * unread). Not started when the signal has aborted already.
 */
function untilAborted<T>(start: () => Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  const promise = start();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
