// The messaging-service client: the only I/O of src/service/. One keep-alive undici Pool per
// service host; every POST /mtmessage/massive body is serialised once per part and reused across
// retries, so a resend is byte-identical.
//
// Retry policy in one place (docs/service.md; what each status means: answerDecision in http.ts):
// - a request that never left (refused, connect timeout, reset before the body was written) and
//   500/503 are retried with exponential backoff and jitter, at most `maxAttempts` tries;
// - once the body may have reached the service (written, then reset or timed out, or a
//   gateway's 502/504) the part is `in_doubt` and never resent here: the service has no
//   idempotency key (docs/service.md "Which answers are safe to resend");
// - 400 bisects until the offending destinations are isolated, 413 halves, 429 waits Retry-After,
//   401 renews the token once, 403 stops and reports the service's message.
import diagnosticsChannel from 'node:diagnostics_channel';
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { querySecrets, redactSecrets, secretsOf } from '../core/redact.ts';
import { DroplineError, type ErrorCode } from '../errors.ts';
import { type BudgetSource, Dispatcher, type Flow, MemoryBudget, type Permit } from './dispatch.ts';
import { answerDecision, describeError, type HttpAnswer, headerOf, postOnce, serviceHost } from './http.ts';
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
import { type TokenAnswer, TokenManager, type TokenShare } from './token.ts';
import {
  type BackoffPolicy,
  backoffDelay,
  type ChunkPart,
  checkChunk,
  countDestinations,
  type Destination,
  massiveBody,
  mtMessageAnswer,
  mtMessageBody,
  type PlannedChunk,
  parseBody,
  parseRetryAfter,
  parseTokenResponse,
  partDestinations,
  reasonOf,
  subPart,
  type TokenGrant,
  tokenRequestBody,
  transactionNumberOf,
  wholePart,
} from './wire.ts';

/** Renewals of a token refused (401) before a send is an authentication error. */
const MAX_REAUTHS = 3;

/** diagnostics_channel names; the client also emits the same objects as 'attempt' and 'token' events. */

export const ATTEMPT_CHANNEL = 'dropline:service:attempt';
export const TOKEN_CHANNEL = 'dropline:service:token';

export interface RetryOptions {
  /** First backoff delay (default 5 s); doubles each retry. */
  readonly baseMs: number;
  /** Backoff ceiling (default 5 min). */
  readonly maxMs: number;
  /** Tries in all, the first included, for 5xx and requests that never left (default 8). */
  readonly maxAttempts: number;
  /** 429 answers tolerated per part before it fails (default 20); they do not use up maxAttempts. */
  readonly maxRateLimited: number;
  /** Longest Retry-After honoured (default 15 min); longer ones are cut to this. */
  readonly maxRetryAfterMs: number;
}

export interface TokenOptions {
  /**
   * Milliseconds per unit of `expires_in` (default 1000: seconds; not documented, docs/service.md
   * "Tokens").
   */
  readonly expiresInUnitMs: number;
  /** Cap on the token lifetime whatever `expires_in` says (default 14400 s: the documented 4 h). */
  readonly maxLifetimeS: number;
  /** Renew this long before expiry (default 60 s; at most half the lifetime). */
  readonly renewBeforeS: number;
}

export interface ServiceClientOptions {
  /** Origin of the service (`https://host[:port]`, an optional path prefix is kept). */
  readonly baseUrl: string;
  readonly username: string;
  readonly password: string;
  /** Receiver URL for status notifications, used exactly as given (its query string carries a token). */
  readonly notifyUrl?: string | undefined;
  readonly notifyContentType?: string | undefined;
  /** Requests in flight at once, for the account as a whole (default 4). */
  readonly concurrency?: number | undefined;
  /** Destinations per second across all requests, retries included; 0 = unlimited (default). */
  readonly ratePerSecond?: number | undefined;
  /** Where the account's budget (concurrency, rate, pace) is kept: the store, shared by every
   * worker on the account (default: this client only). */
  readonly budget?: BudgetSource | undefined;
  /** This worker, as the budget's permits name it (default: the process id). */
  readonly owner?: string | undefined;
  /** A budget write that failed (it is not retried: the permit's lease ends it). */
  readonly onBudgetError?: ((err: unknown, what: string) => void) | undefined;
  /** Pool sockets (default concurrency + 1, so a token request never queues behind sends). */
  readonly connections?: number | undefined;
  readonly connectTimeoutMs?: number | undefined;
  /** Default for both headersTimeoutMs and bodyTimeoutMs (default 30 s). */
  readonly timeoutMs?: number | undefined;
  readonly headersTimeoutMs?: number | undefined;
  readonly bodyTimeoutMs?: number | undefined;
  readonly keepAliveTimeoutMs?: number | undefined;
  readonly retry?: Partial<RetryOptions> | undefined;
  readonly token?: Partial<TokenOptions> | undefined;
  /** Several workers on this account: its token kept in the store for all of them (token.ts). */
  readonly tokenShare?: TokenShare | undefined;
  /** Clock for token expiry (tests move it); sleeps use real timers. */
  readonly now?: (() => number) | undefined;
  /** Source of jitter in [0, 1). */
  readonly random?: (() => number) | undefined;
}

export type FailureKind = 'rejected' | 'forbidden' | 'unauthorized' | 'failed' | 'in_doubt';

export type SendOutcome =
  | {
      readonly kind: 'accepted';
      readonly status: number;
      /** Parsed when JSON, text otherwise, null when empty or unreadable. */
      readonly body: unknown;
      readonly transactionNumber: string | null;
      readonly attempts: number;
    }
  | {
      /**
       * rejected: 400 for this (isolated) part, nothing of it was accepted;
       * forbidden: 403, pause the account with `reason` (the service's message);
       * unauthorized: credentials refused or a second 401, pause the account;
       * failed: retries exhausted or an unexpected answer, nothing of it was accepted;
       * in_doubt: the body may have reached the service, no answer came back.
       */
      readonly kind: FailureKind;
      readonly code: ErrorCode;
      /** HTTP status of the last answer, null when there was none. */
      readonly status: number | null;
      /** Human-readable, with phone numbers masked and URL query strings removed. */
      readonly reason: string;
      readonly retryable: boolean;
      readonly attempts: number;
    };

/** One slice [start, end) of the chunk's destinations (counted across its messages in order). */
export interface PartResult {
  readonly partId: string;
  readonly start: number;
  readonly end: number;
  readonly destinations: readonly Destination[];
  readonly outcome: SendOutcome;
}

/** Every destination of the chunk is in exactly one part; parts are ordered by `start`. */
export interface SendResult {
  readonly chunkId: string;
  readonly destinations: number;
  readonly parts: readonly PartResult[];
}

export type AttemptResult =
  | 'accepted'
  | 'rejected'
  | 'bisect'
  | 'split'
  | 'retry'
  | 'rate_limited'
  | 'reauth'
  | 'unauthorized'
  | 'forbidden'
  | 'failed'
  | 'in_doubt';

/** Published for every HTTP attempt of POST /mtmessage/massive. No numbers, no tokens. */
export interface AttemptEvent {
  readonly chunkId: string;
  readonly partId: string;
  /** 1-based count of requests made for this part. */
  readonly attempt: number;
  readonly destinations: number;
  /** HTTP status, 0 when no answer came. */
  readonly status: number;
  readonly latencyMs: number;
  readonly result: AttemptResult;
  /** Whether the body was handed to the socket (only meaningful when status is 0). */
  readonly written: boolean;
  readonly error?: string | undefined;
  /** Wait before the next attempt, for retry and rate_limited. */
  readonly delayMs?: number | undefined;
}

export interface TokenEvent {
  readonly grant: TokenGrant['grant'];
  readonly attempt: number;
  readonly status: number;
  readonly latencyMs: number;
  readonly error?: string | undefined;
}

const attemptChannel = diagnosticsChannel.channel(ATTEMPT_CHANNEL);
const tokenChannel = diagnosticsChannel.channel(TOKEN_CHANNEL);

/** A send permit's lease beyond the request's own time-outs. */
const PERMIT_LEASE_MARGIN_MS = 10_000;

/** A request's turn: its permit on the account, and the token it goes with. */
interface Turn {
  readonly permit: Permit;
  readonly token: Promise<string>;
}

export interface SendOptions {
  readonly signal?: AbortSignal | undefined;
  /** The file the chunk belongs to, and its weight (default: its bulkId, weight 1). */
  readonly flow?: Flow | undefined;
  /** Called when the chunk's turn comes, before its first request; false: do not send. */
  readonly start?: (() => Promise<boolean>) | undefined;
}

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
      // A permit outlives a worker that died holding it by one request's time at most.
      leaseMs: this.#headersTimeout + this.#bodyTimeout + PERMIT_LEASE_MARGIN_MS,
      onError: opts.onBudgetError,
    });
    this.#retry = {
      baseMs: opts.retry?.baseMs ?? 5_000,
      maxMs: opts.retry?.maxMs ?? 300_000,
      maxAttempts: Math.max(1, opts.retry?.maxAttempts ?? 8),
      maxRateLimited: opts.retry?.maxRateLimited ?? 20,
      maxRetryAfterMs: opts.retry?.maxRetryAfterMs ?? 15 * 60_000,
    };
    this.#backoff = { baseMs: this.#retry.baseMs, maxMs: this.#retry.maxMs };
    this.#random = opts.random ?? Math.random;
    const now = opts.now ?? Date.now;
    const tokenOpts: TokenOptions = {
      expiresInUnitMs: opts.token?.expiresInUnitMs ?? 1000,
      maxLifetimeS: opts.token?.maxLifetimeS ?? 14_400,
      renewBeforeS: opts.token?.renewBeforeS ?? 60,
    };
    this.#tokens = new TokenManager({
      now,
      renewBeforeMs: tokenOpts.renewBeforeS * 1000,
      request: (grant) => this.#requestToken(grant, tokenOpts),
      share: opts.tokenShare,
    });
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
      first = await this.#turn(flow, whole.end - whole.start, signal);
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

  /** `first`: the turn of the part's first attempt, already granted; `prepared`: its body, made. */
  async #sendPart(
    part: ChunkPart,
    signal: AbortSignal,
    flow: Flow,
    first?: Turn,
    prepared?: Buffer,
  ): Promise<PartResult[]> {
    const body = prepared ?? this.#body(part);
    const via = part.chunk.via;
    const size = part.end - part.start;
    let attempts = 0;
    let tries = 0;
    let rateLimited = 0;
    let reauths = 0;
    const result = (outcome: SendOutcome): PartResult[] => [
      {
        partId: part.partId,
        start: part.start,
        end: part.end,
        destinations: partDestinations(part),
        outcome,
      },
    ];
    const failure = (
      kind: FailureKind,
      code: ErrorCode,
      status: number | null,
      reason: string,
      retryable = false,
    ): PartResult[] => result({ kind, code, status, reason, retryable, attempts });

    for (;;) {
      let token: string;
      let permit = first?.permit;
      let got = first?.token;
      first = undefined;
      try {
        if (signal.aborted) throw signal.reason;
        if (!permit || !got) ({ permit, token: got } = await this.#turn(flow, size, signal));
        token = await got;
      } catch (err) {
        permit?.release();
        if (err instanceof DroplineError) {
          if (err.code === 'DROPLINE_ERR_SERVICE_AUTH')
            return failure('unauthorized', err.code, null, err.message);
          if (err.code === 'DROPLINE_ERR_SERVICE_FORBIDDEN')
            return failure('forbidden', err.code, 403, err.message);
          return failure('failed', err.code, null, err.message, err.retryable);
        }
        return failure(
          'failed',
          'DROPLINE_ERR_SERVICE_UNAVAILABLE',
          null,
          'stopped before the request was sent',
          true,
        );
      }
      attempts++;
      const started = performance.now();
      const answer = await this.#post(via ? '/mtmessage' : '/mtmessage/massive', body, {
        'content-type': 'application/json',
        accept: 'application/json',
        authorization: `Bearer ${token}`,
      }).finally(() => permit.release());
      const latencyMs = performance.now() - started;
      const observe = (result: AttemptResult, extra?: { error?: string; delayMs?: number }): void =>
        this.#publishAttempt({
          chunkId: part.chunkId,
          partId: part.partId,
          attempt: attempts,
          destinations: size,
          status: answer.ok ? answer.status : 0,
          latencyMs,
          result,
          written: answer.ok || answer.written,
          error: extra?.error,
          delayMs: extra?.delayMs,
        });
      /** The body may have reached the service: the part is never sent again by the client. */
      const inDoubt = (status: number | null, why: string): PartResult[] => {
        observe('in_doubt', { error: why });
        return failure('in_doubt', 'DROPLINE_ERR_SERVICE_IN_DOUBT', status, why);
      };
      /**
       * Answers the service declined (500, 503) and requests that never left are retried with
       * back-off until maxAttempts: null means go again, else the part's failure.
       */
      const backOff = async (
        status: number | null,
        reason: string,
        exhausted: (tries: number) => string,
        stopped: string,
      ): Promise<PartResult[] | null> => {
        tries++;
        if (tries >= this.#retry.maxAttempts) {
          observe('failed', { error: reason });
          return failure('failed', 'DROPLINE_ERR_SERVICE_UNAVAILABLE', status, exhausted(tries), true);
        }
        const delayMs = backoffDelay(tries, this.#backoff, this.#random());
        observe('retry', { error: reason, delayMs });
        if (await this.#wait(delayMs, signal)) return null;
        return failure('failed', 'DROPLINE_ERR_SERVICE_UNAVAILABLE', status, stopped, true);
      };

      if (!answer.ok) {
        const reason = describeError(answer.error);
        if (answer.written) return inDoubt(null, `${reason} after the request was sent`);
        const gaveUp = await backOff(
          null,
          reason,
          (n) => `${reason} (${n} tries)`,
          `${reason}; stopped before retrying`,
        );
        if (gaveUp) return gaveUp;
        continue;
      }

      const { status } = answer;
      const decision = answerDecision(status, answer.written);
      if (decision === 'accepted') {
        const parsed = answer.bodyError
          ? null
          : parseBody(answer.text, headerOf(answer.headers, 'content-type'));
        // POST /mtmessage answers a business rejection 200, Status 1 (docs/service.md "Answers"):
        // the whole request, its reason said once for every recipient (not bisected: it is the
        // account's or the text's, rarely one device's, which dropline validated). A 200 without a
        // Status may have been either: in doubt, for the reports to settle.
        const mt = via ? mtMessageAnswer(parsed, [...this.#secrets, token]) : null;
        if (mt?.kind === 'rejected') {
          observe('rejected', { error: mt.reason });
          return failure('rejected', 'DROPLINE_ERR_SERVICE_REJECTED', status, mt.reason);
        }
        if (mt?.kind === 'unclear')
          return inDoubt(status, `HTTP ${status} without the Status of POST /mtmessage`);
        observe('accepted');
        return result({
          kind: 'accepted',
          status,
          body: parsed,
          transactionNumber: transactionNumberOf(parsed),
          attempts,
        });
      }
      const reason = reasonOf(parseBody(answer.text, headerOf(answer.headers, 'content-type')), status, [
        ...this.#secrets,
        token,
      ]);
      switch (decision) {
        case 'bad_request':
          if (size > 1) {
            observe('bisect', { error: reason });
            return this.#halves(part, signal, flow);
          }
          observe('rejected', { error: reason });
          return failure('rejected', 'DROPLINE_ERR_SERVICE_REJECTED', status, reason);
        case 'too_large':
          if (size > 1) {
            observe('split', { error: reason });
            return this.#halves(part, signal, flow);
          }
          observe('failed', { error: reason });
          return failure('failed', 'DROPLINE_ERR_SERVICE_TOO_LARGE', status, reason);
        case 'unauthorized':
          this.#tokens.invalidate(token);
          // A renewed token may be refused because another worker renewed it again meanwhile
          // (the service keeps one token an account): only renewals refused MAX_REAUTHS times
          // in a row are an authentication error.
          if (reauths === MAX_REAUTHS) {
            observe('unauthorized', { error: reason });
            return failure(
              'unauthorized',
              'DROPLINE_ERR_SERVICE_AUTH',
              status,
              `a renewed token was refused too (401, ${MAX_REAUTHS} renewals): ${reason}`,
            );
          }
          reauths++;
          observe('reauth', { error: reason });
          continue;
        case 'forbidden':
          observe('forbidden', { error: reason });
          return failure('forbidden', 'DROPLINE_ERR_SERVICE_FORBIDDEN', status, reason);
        case 'rate_limited': {
          rateLimited++;
          if (rateLimited > this.#retry.maxRateLimited) {
            observe('failed', { error: reason });
            return failure('failed', 'DROPLINE_ERR_SERVICE_RATE_LIMITED', status, reason, true);
          }
          const hinted = parseRetryAfter(headerOf(answer.headers, 'retry-after'), Date.now());
          const delayMs = Math.min(
            hinted ?? backoffDelay(rateLimited, this.#backoff, this.#random()),
            this.#retry.maxRetryAfterMs,
          );
          // A rate limit is the account's, not this request's: every worker holds its sends
          // and the account's pace is lowered.
          this.#dispatcher.slowDown({ reason: `HTTP 429: ${reason}`, retryAfterMs: delayMs });
          observe('rate_limited', { error: reason, delayMs });
          if (!(await this.#wait(delayMs, signal))) {
            return failure(
              'failed',
              'DROPLINE_ERR_SERVICE_RATE_LIMITED',
              status,
              `${reason}; stopped before retrying`,
              true,
            );
          }
          continue;
        }
        case 'retry': {
          // The service struggling: the whole account sends slower for a while.
          this.#dispatcher.slowDown({ reason: `HTTP ${status}: ${reason}` });
          const gaveUp = await backOff(
            status,
            reason,
            (n) => `HTTP ${status} (${n} tries): ${reason}`,
            `HTTP ${status}; stopped before retrying`,
          );
          if (gaveUp) return gaveUp;
          continue;
        }
        case 'in_doubt': {
          // A gateway's answer (502, 504…): the backend may have the request. The same path
          // as a reset after writing; the account slows down as for any service trouble.
          this.#dispatcher.slowDown({ reason: `HTTP ${status}: ${reason}` });
          return inDoubt(
            status,
            `HTTP ${status} after the request was sent (a gateway's answer: the service may have taken it): ${reason}`,
          );
        }
        default:
          observe('failed', { error: reason });
          return failure(
            'failed',
            'DROPLINE_ERR_SERVICE_FAILED',
            status,
            `unexpected HTTP ${status}: ${reason}`,
          );
      }
    }
  }

  /**
   * A request's turn on the account, its token got (or renewed) before it waits: a request
   * that waited for a login after its turn came would go late and bunch with the next ones,
   * past the account's rate. The token is settled, not awaited: its failure is the request's
   * to report after its turn (one login asked, not two).
   *
   * Once the turn came, the request takes the token in force: a renewal while it waited (by
   * this worker or another) replaced the one it got. Not due, that is the token held now,
   * without I/O. Due, the turn is given back and taken again after the renewal (adopted
   * from the store, or made by this worker once per renewal): no login while a permit is
   * held. The token is settled before the caller records the chunk in flight: between that
   * record and the request, only the request.
   */
  async #turn(flow: Flow, destinations: number, signal: AbortSignal): Promise<Turn> {
    for (let turns = 1; ; turns++) {
      const got = this.#tokens.get();
      const failed = await got.then(
        () => false,
        () => true,
      );
      const permit = await this.#dispatcher.acquire(flow, destinations, signal);
      // A failed login is the request's to report; a token that fell due again during a
      // second wait (a lifetime shorter than the waits) goes as it is, a 401 renews it.
      const fresh = this.#tokens.fresh();
      if (failed || fresh || turns === 2) {
        const token = fresh ? this.#tokens.get() : got;
        await token.catch(() => {});
        return { permit, token };
      }
      permit.release();
    }
  }

  async #halves(part: ChunkPart, signal: AbortSignal, flow: Flow): Promise<PartResult[]> {
    const mid = part.start + Math.ceil((part.end - part.start) / 2);
    const [left, right] = await Promise.all([
      this.#sendPart(subPart(part, part.start, mid), signal, flow),
      this.#sendPart(subPart(part, mid, part.end), signal, flow),
    ]);
    return [...left, ...right];
  }

  async #wait(ms: number, signal: AbortSignal): Promise<boolean> {
    try {
      await sleep(ms, undefined, { signal });
      return true;
    } catch {
      return false;
    }
  }

  async #requestToken(grant: TokenGrant, policy: TokenOptions): Promise<TokenAnswer> {
    const body = Buffer.from(tokenRequestBody(grant));
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
    };
    // The refresh grant is the "renewal without credentials" (docs/service.md "Tokens").
    if (grant.grant === 'password') headers.authorization = this.#basic;
    let tries = 0;
    let lastReason = '';
    while (tries < this.#retry.maxAttempts) {
      tries++;
      const started = performance.now();
      const answer = await this.#post('/token', body, headers);
      const latencyMs = performance.now() - started;
      const status = answer.ok ? answer.status : 0;
      let reason: string | undefined;
      if (answer.ok) {
        const parsed = parseBody(answer.text, headerOf(answer.headers, 'content-type'));
        if (status >= 200 && status < 300) {
          const token = parseTokenResponse(parsed, {
            expiresInUnitMs: policy.expiresInUnitMs,
            maxLifetimeMs: policy.maxLifetimeS * 1000,
          });
          this.#publishToken({ grant: grant.grant, attempt: tries, status, latencyMs });
          if (token) return { kind: 'ok', token };
          return { kind: 'unavailable', reason: `HTTP ${status} without an access_token` };
        }
        reason = reasonOf(
          parsed,
          status,
          grant.grant === 'refresh_token' ? [...this.#secrets, grant.refreshToken] : this.#secrets,
        );
        this.#publishToken({ grant: grant.grant, attempt: tries, status, latencyMs, error: reason });
        if (status === 400 || status === 401) return { kind: 'refused', status, reason };
        if (status === 403) return { kind: 'forbidden', reason };
        if (status === 429) {
          const hinted = parseRetryAfter(headerOf(answer.headers, 'retry-after'), Date.now());
          lastReason = `HTTP 429: ${reason}`;
          if (
            !(await this.#wait(
              Math.min(hinted ?? this.#retry.baseMs, this.#retry.maxRetryAfterMs),
              this.#closing.signal,
            ))
          )
            break;
          continue;
        }
        // A login is safe to repeat even when it may have been processed (below): an answer
        // in doubt is retried as one the service declined.
        const decision = answerDecision(status, answer.written);
        if (decision !== 'retry' && decision !== 'in_doubt')
          return { kind: 'unavailable', reason: `unexpected HTTP ${status}: ${reason}` };
        lastReason = `HTTP ${status}: ${reason}`;
      } else {
        // Safe to repeat even when the request was written: a login that reached the service only
        // expires a token this process never received.
        lastReason = describeError(answer.error);
        this.#publishToken({ grant: grant.grant, attempt: tries, status, latencyMs, error: lastReason });
      }
      if (tries >= this.#retry.maxAttempts) break;
      if (!(await this.#wait(backoffDelay(tries, this.#backoff, this.#random()), this.#closing.signal)))
        break;
    }
    return { kind: 'unavailable', reason: `${lastReason} (${tries} tries)` };
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

  #publishAttempt(event: AttemptEvent): void {
    if (attemptChannel.hasSubscribers) attemptChannel.publish(event);
    this.emit('attempt', event);
  }

  #publishToken(event: TokenEvent): void {
    if (tokenChannel.hasSubscribers) tokenChannel.publish(event);
    this.emit('token', event);
  }
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
