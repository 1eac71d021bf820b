// The HTTP client of a channel that sends one request a recipient (WhatsApp, two-way SMS:
// docs/channels.md): its messages sent all at once, each retried until its answer settles it.
// The channel owns what its request is and what a 2xx answers (RecipientEndpoint); this is the
// transport every such channel shares:
//
// - 401 with Basic credentials, a login refused, a 401 to a token still refused after
//   MAX_REAUTHS renewals, or a 403: the account is refused (the file pauses) and the messages
//   not yet sent are not sent. A 401 to a Bearer token renews it and sends again (not a try).
// - 400 rejects the message; 413 and other refusals fail it.
// - 5xx, 429 and requests that never left are sent again with back-off; a request written
//   without an answer, or answered by a gateway's 502/504, is in doubt, never sent again here
//   (docs/service.md "Which answers are safe to resend").
import { Pool } from 'undici';
import { secretsOf } from '../core/redact.ts';
import { DroplineError, type ErrorCode } from '../errors.ts';
import type { RecipientOutcome } from './channel-account.ts';
import { type TokenOptions, tokenOptions } from './client-options.ts';
import { answerDecision, describeError, type HttpAnswer, headerOf, postOnce, serviceHost } from './http.ts';
import { MAX_REAUTHS } from './retry-policy.ts';
import { TokenManager, type TokenShare } from './token.ts';
import { pause, requestToken } from './token-request.ts';
import { backoffDelay, parseBody, parseRetryAfter, reasonOf } from './wire.ts';

/** What a channel's client is given: the host, the account's credentials, the transport's limits. */
export interface RecipientClientOptions {
  readonly baseUrl: string;
  readonly username: string;
  readonly password: string;
  /** Per request, headers and body (default 30 s). */
  readonly timeoutMs?: number | undefined;
  readonly retry?: { baseMs?: number; maxMs?: number; maxAttempts?: number } | undefined;
  /** A 429 on POST /token waits its Retry-After, at most this long (default 15 min, as the SMS client). */
  readonly maxRetryAfterMs?: number | undefined;
  /** Connections kept to the host (default 8). */
  readonly connections?: number | undefined;
  readonly random?: (() => number) | undefined;
}

/** A channel's endpoint: its request for one message and what its 2xx answer means. */
export interface RecipientEndpoint<M> {
  /** The endpoint's path after the host's base path. */
  readonly path: string;
  /** The body, made once: a message sent again is the same bytes. */
  body(message: M): Buffer;
  /** A 2xx answer's outcome; `parsed` null when its body broke off. */
  accepted(parsed: unknown, status: number, secrets: readonly string[]): RecipientOutcome;
}

/** The account's Bearer token from POST /token (token-request.ts), instead of Basic on every request. */
export interface BearerOptions {
  readonly token?: Partial<TokenOptions> | undefined;
  /** The account's token kept in the store, shared with every worker on the same credentials. */
  readonly share?: TokenShare | undefined;
  readonly now?: (() => number) | undefined;
}

export class RecipientClient<M> {
  readonly #pool: Pool;
  readonly #basePath: string;
  readonly #endpoint: RecipientEndpoint<M>;
  readonly #basic: string;
  readonly #tokens: TokenManager | null = null;
  /** The credentials, which no reason may show (a service may echo the request's headers back). */
  readonly #secrets: readonly string[];
  readonly #timeout: number;
  readonly #retry: { baseMs: number; maxMs: number; maxAttempts: number };
  readonly #maxRetryAfterMs: number;
  readonly #random: () => number;
  readonly #closing = new AbortController();

  /** `what` names the baseUrl in a configuration error; `bearer` unset: Basic on every request. */
  constructor(
    opts: RecipientClientOptions,
    what: string,
    endpoint: RecipientEndpoint<M>,
    bearer?: BearerOptions | undefined,
  ) {
    const host = serviceHost(opts.baseUrl, what);
    this.#timeout = opts.timeoutMs ?? 30_000;
    this.#pool = new Pool(host.origin, {
      connections: opts.connections ?? 8,
      pipelining: 1,
      headersTimeout: this.#timeout,
      bodyTimeout: this.#timeout,
      keepAliveTimeout: 4_000,
    });
    this.#basePath = host.basePath;
    this.#endpoint = endpoint;
    const credentials = Buffer.from(`${opts.username}:${opts.password}`).toString('base64');
    this.#basic = `Basic ${credentials}`;
    this.#secrets = secretsOf([opts.password, credentials]);
    this.#retry = {
      baseMs: opts.retry?.baseMs ?? 5_000,
      maxMs: opts.retry?.maxMs ?? 60_000,
      // At least one try: fewer would send nothing.
      maxAttempts: Math.max(1, opts.retry?.maxAttempts ?? 5),
    };
    this.#maxRetryAfterMs = opts.maxRetryAfterMs ?? 15 * 60_000;
    this.#random = opts.random ?? Math.random;
    if (bearer) this.#tokens = this.#tokenManager(bearer);
  }

  /**
   * Sends each message, all at once; one outcome each, in order. A refused account stops the
   * messages not yet sent (failed, retryable: sent once it is fixed).
   */
  async send(
    messages: readonly M[],
    signal: AbortSignal = new AbortController().signal,
  ): Promise<{ outcomes: RecipientOutcome[]; requests: number }> {
    const run: Run = { signal, requests: 0, refused: null };
    const outcomes = await Promise.all(messages.map((m) => this.#sendOne(run, m)));
    return { outcomes, requests: run.requests };
  }

  close(): Promise<void> {
    this.#closing.abort();
    return this.#pool.close();
  }

  async #sendOne(run: Run, message: M): Promise<RecipientOutcome> {
    const body = this.#endpoint.body(message);
    let reauths = 0;
    for (let tries = 1; ; ) {
      if (run.refused !== null) return failed(run.refused.code, `not sent: ${run.refused.why}`, true);
      if (run.signal.aborted)
        return failed('DROPLINE_ERR_SERVICE_UNAVAILABLE', 'not sent: stopped before it was sent', true);
      let authorization = this.#basic;
      let token: string | null = null;
      if (this.#tokens) {
        try {
          token = await this.#tokens.get();
        } catch (err) {
          return refusedLogin(run, err);
        }
        authorization = `Bearer ${token}`;
      }
      run.requests++;
      const answer = await this.#post(this.#endpoint.path, body, {
        'content-type': 'application/json',
        accept: 'application/json',
        authorization,
      });
      const step = this.#step(answer, token === null ? this.#secrets : [...this.#secrets, token]);
      if (step.kind === 'unauthorized') {
        if (token === null) return refuse(run, 'DROPLINE_ERR_SERVICE_AUTH', step.why);
        this.#tokens?.invalidate(token);
        if (++reauths <= MAX_REAUTHS) continue;
        const why = `a renewed token was refused too (401, ${MAX_REAUTHS} renewals): ${step.why}`;
        return refuse(run, 'DROPLINE_ERR_SERVICE_AUTH', why);
      }
      if (step.kind === 'forbidden') return refuse(run, 'DROPLINE_ERR_SERVICE_FORBIDDEN', step.why);
      if (step.kind === 'done') return step.outcome;
      if (tries >= this.#retry.maxAttempts)
        return failed('DROPLINE_ERR_SERVICE_UNAVAILABLE', `${step.why} (${tries} tries)`, true);
      const wait = step.retryAfterMs ?? backoffDelay(tries, this.#retry, this.#random());
      tries++;
      if (!(await pause(wait, run.signal)))
        return failed('DROPLINE_ERR_SERVICE_UNAVAILABLE', `${step.why}; stopped before retrying`, true);
    }
  }

  /** What one answer calls for. */
  #step(answer: HttpAnswer, secrets: readonly string[]): Step {
    if (!answer.ok) {
      const why = describeError(answer.error);
      if (answer.written) return done({ kind: 'in_doubt', reason: `${why} after the request was sent` });
      return { kind: 'again', why, retryAfterMs: null };
    }
    const { status } = answer;
    const decision = answerDecision(status, answer.written);
    const parsed = answer.bodyError ? null : parseBody(answer.text, headerOf(answer.headers, 'content-type'));
    if (decision === 'accepted') return done(this.#endpoint.accepted(parsed, status, secrets));
    const why = `HTTP ${status}: ${reasonOf(parsed, status, secrets).slice(0, 200)}`;
    switch (decision) {
      case 'unauthorized':
        return { kind: 'unauthorized', why };
      case 'forbidden':
        return { kind: 'forbidden', why };
      case 'bad_request':
        return done({ kind: 'rejected', code: 'DROPLINE_ERR_SERVICE_REJECTED', reason: why });
      case 'rate_limited': {
        // At most retry.maxMs: the chunk holds the account's permit meanwhile.
        const hinted = parseRetryAfter(headerOf(answer.headers, 'retry-after'), Date.now());
        return {
          kind: 'again',
          why,
          retryAfterMs: hinted === null ? null : Math.min(hinted, this.#retry.maxMs),
        };
      }
      case 'retry':
        return { kind: 'again', why, retryAfterMs: null };
      case 'in_doubt':
        return done({ kind: 'in_doubt', reason: `${why}, a gateway's answer after the request was sent` });
      // One message a request: a body too large has nothing to split.
      case 'too_large':
      case 'failed':
        return done(failed('DROPLINE_ERR_SERVICE_FAILED', why, false));
    }
  }

  /** The account's token, asked as the SMS client asks it (docs/service.md "Tokens"). */
  #tokenManager(bearer: BearerOptions): TokenManager {
    const policy = tokenOptions(bearer.token);
    return new TokenManager({
      now: bearer.now ?? Date.now,
      renewBeforeMs: policy.renewBeforeS * 1000,
      request: (grant) =>
        requestToken(grant, {
          post: (path, body, headers) => this.#post(path, body, headers),
          basic: this.#basic,
          secrets: this.#secrets,
          policy,
          retry: this.#retry,
          maxRetryAfterMs: this.#maxRetryAfterMs,
          random: this.#random,
          closing: this.#closing.signal,
        }),
      share: bearer.share,
    });
  }

  #post(path: string, body: Buffer, headers: Record<string, string>): Promise<HttpAnswer> {
    return postOnce(this.#pool, {
      path: this.#basePath + path,
      body,
      headers,
      headersTimeout: this.#timeout,
      bodyTimeout: this.#timeout,
    });
  }
}

/** One send of messages: its requests, the stop, and the refusal that stops the rest. */
interface Run {
  readonly signal: AbortSignal;
  requests: number;
  refused: { code: ErrorCode; why: string } | null;
}

type Step =
  | { readonly kind: 'done'; readonly outcome: RecipientOutcome }
  /** Not processed: sent again after a wait (Retry-After, or the back-off). */
  | { readonly kind: 'again'; readonly why: string; readonly retryAfterMs: number | null }
  /** 401: a Bearer token is renewed and the message sent again; Basic credentials are refused. */
  | { readonly kind: 'unauthorized'; readonly why: string }
  | { readonly kind: 'forbidden'; readonly why: string };

function done(outcome: RecipientOutcome): Step {
  return { kind: 'done', outcome };
}

function failed(code: ErrorCode, why: string, retryable: boolean): RecipientOutcome {
  return { kind: 'failed', code, reason: why, retryable };
}

/** The account refused: this message's outcome, and the messages not yet sent are not sent. */
function refuse(
  run: Run,
  code: 'DROPLINE_ERR_SERVICE_AUTH' | 'DROPLINE_ERR_SERVICE_FORBIDDEN',
  why: string,
): RecipientOutcome {
  run.refused = { code, why: `the account was refused (${why})` };
  return { kind: code === 'DROPLINE_ERR_SERVICE_AUTH' ? 'unauthorized' : 'forbidden', reason: why };
}

/** A token that could not be had: a refused or forbidden login is the account's; else it never left. */
function refusedLogin(run: Run, err: unknown): RecipientOutcome {
  const why = err instanceof Error ? err.message : String(err);
  if (
    err instanceof DroplineError &&
    (err.code === 'DROPLINE_ERR_SERVICE_AUTH' || err.code === 'DROPLINE_ERR_SERVICE_FORBIDDEN')
  )
    return refuse(run, err.code, why);
  return failed('DROPLINE_ERR_SERVICE_UNAVAILABLE', `not sent: ${why}`, true);
}
