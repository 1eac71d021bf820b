// The two-way SMS client (docs/channels.md "Two-way SMS"): POST /momessage on the SMS host, one
// message to one recipient a request, with the account's Bearer token (the SMS accounts' token,
// shared through the store: docs/service.md "Tokens"). Transport only: what the service answered
// for each message, in order; the pipeline records it.
//
// - 200 with `Message: OK`: taken, final (ACCEPTED), the answer's `Id` its transaction number.
// - 200 with `Message: ERROR`: this message refused, with the service's `Status`. Final.
// - A 200 with neither: unclear, in doubt (it may have been sent).
// - 401: the token is renewed and the message sent again (a 401 was not processed); still
//   refused after MAX_REAUTHS renewals, or a login refused: the account is (the file pauses).
//   403: the account may not (the file pauses). The messages not yet sent are not sent.
// - 5xx, 429 and requests that never left are sent again with back-off; a request written
//   without an answer, or answered by a gateway's 502/504, is in doubt, never sent again here.
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { secretsOf } from '../../core/redact.ts';
import { DroplineError, type ErrorCode } from '../../errors.ts';
import type { RecipientOutcome } from '../../service/channel-account.ts';
import { type TokenOptions, tokenOptions } from '../../service/client-options.ts';
import {
  answerDecision,
  describeError,
  type HttpAnswer,
  headerOf,
  postOnce,
  serviceHost,
} from '../../service/http.ts';
import { MAX_REAUTHS } from '../../service/retry-policy.ts';
import { type TokenAnswer, TokenManager, type TokenShare } from '../../service/token.ts';
import {
  backoffDelay,
  parseBody,
  parseRetryAfter,
  parseTokenResponse,
  reasonOf,
  type TokenGrant,
  tokenRequestBody,
} from '../../service/wire.ts';

export const MOMESSAGE_PATH = '/momessage';

/** One two-way message: its text to one number, from a short code. */
export interface TwoWayMessage {
  readonly text: string;
  /** The recipient, digits with the country code (as the reader normalised it). */
  readonly phoneNumber: string;
  readonly shortCode: string;
}

export interface TwoWayClientOptions {
  /** `{base_url}`: the SMS host. */
  readonly baseUrl: string;
  readonly username: string;
  readonly password: string;
  /** Per request, headers and body (default 30 s). */
  readonly timeoutMs?: number | undefined;
  readonly retry?: { baseMs?: number; maxMs?: number; maxAttempts?: number } | undefined;
  readonly token?: Partial<TokenOptions> | undefined;
  /** The account's token kept in the store, shared with every worker and SMS account on it. */
  readonly tokenShare?: TokenShare | undefined;
  /** Connections kept to the host (default 8). */
  readonly connections?: number | undefined;
  readonly now?: (() => number) | undefined;
  readonly random?: (() => number) | undefined;
}

export class TwoWayClient {
  readonly #pool: Pool;
  readonly #basePath: string;
  readonly #basic: string;
  readonly #tokens: TokenManager;
  /** The credentials, which no reason may show (a service may echo the request's headers back). */
  readonly #secrets: readonly string[];
  readonly #timeout: number;
  readonly #retry: { baseMs: number; maxMs: number; maxAttempts: number };
  readonly #random: () => number;
  readonly #closing = new AbortController();

  constructor(opts: TwoWayClientOptions) {
    const host = serviceHost(opts.baseUrl, 'the twoway baseUrl');
    this.#timeout = opts.timeoutMs ?? 30_000;
    this.#pool = new Pool(host.origin, {
      connections: opts.connections ?? 8,
      pipelining: 1,
      headersTimeout: this.#timeout,
      bodyTimeout: this.#timeout,
      keepAliveTimeout: 4_000,
    });
    this.#basePath = host.basePath;
    const credentials = Buffer.from(`${opts.username}:${opts.password}`).toString('base64');
    this.#basic = `Basic ${credentials}`;
    this.#secrets = secretsOf([opts.password, credentials]);
    this.#retry = {
      baseMs: opts.retry?.baseMs ?? 5_000,
      maxMs: opts.retry?.maxMs ?? 60_000,
      maxAttempts: opts.retry?.maxAttempts ?? 5,
    };
    this.#random = opts.random ?? Math.random;
    const policy = tokenOptions(opts.token);
    this.#tokens = new TokenManager({
      now: opts.now ?? Date.now,
      renewBeforeMs: policy.renewBeforeS * 1000,
      request: (grant) => this.#requestToken(grant, policy),
      share: opts.tokenShare,
    });
  }

  /**
   * Sends each message, all at once; one outcome each, in order. A refused account (401 after
   * renewals, 403) stops the messages not yet sent (failed, retryable: sent once it is fixed).
   */
  async send(
    messages: readonly TwoWayMessage[],
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

  async #sendOne(run: Run, message: TwoWayMessage): Promise<RecipientOutcome> {
    // Fixed key order: a message sent again is the same bytes.
    const body = Buffer.from(
      JSON.stringify({
        MessageText: message.text,
        PhoneNumber: message.phoneNumber,
        ShortCode: message.shortCode,
      }),
    );
    let reauths = 0;
    for (let tries = 1; ; ) {
      if (run.refused !== null) return failed(run.refused.code, `not sent: ${run.refused.why}`, true);
      if (run.signal.aborted)
        return failed('DROPLINE_ERR_SERVICE_UNAVAILABLE', 'not sent: stopped before it was sent', true);
      let token: string;
      try {
        token = await this.#tokens.get();
      } catch (err) {
        return refusedLogin(run, err);
      }
      run.requests++;
      const answer = await this.#post(MOMESSAGE_PATH, body, {
        'content-type': 'application/json',
        accept: 'application/json',
        authorization: `Bearer ${token}`,
      });
      const step = this.#step(answer, [...this.#secrets, token]);
      if (step.kind === 'reauth') {
        this.#tokens.invalidate(token);
        if (++reauths <= MAX_REAUTHS) continue;
        const why = `a renewed token was refused too (401, ${MAX_REAUTHS} renewals): ${step.why}`;
        run.refused = { code: 'DROPLINE_ERR_SERVICE_AUTH', why: `the account was refused (${why})` };
        return { kind: 'unauthorized', reason: why };
      }
      if (step.kind === 'forbidden') {
        run.refused = {
          code: 'DROPLINE_ERR_SERVICE_FORBIDDEN',
          why: `the account was refused (${step.why})`,
        };
        return { kind: 'forbidden', reason: step.why };
      }
      if (step.kind === 'done') return step.outcome;
      if (tries >= this.#retry.maxAttempts)
        return failed('DROPLINE_ERR_SERVICE_UNAVAILABLE', `${step.why} (${tries} tries)`, true);
      tries++;
      const wait = step.retryAfterMs ?? backoffDelay(tries - 1, this.#retry, this.#random());
      if (!(await pause(wait, run.signal)))
        return failed('DROPLINE_ERR_SERVICE_UNAVAILABLE', `${step.why}; stopped before retrying`, true);
    }
  }

  /** What one answer to POST /momessage calls for. */
  #step(answer: HttpAnswer, secrets: readonly string[]): Step {
    if (!answer.ok) {
      const why = describeError(answer.error);
      if (answer.written) return done({ kind: 'in_doubt', reason: `${why} after the request was sent` });
      return { kind: 'again', why, retryAfterMs: null };
    }
    const { status } = answer;
    const decision = answerDecision(status, answer.written);
    const parsed = answer.bodyError ? null : parseBody(answer.text, headerOf(answer.headers, 'content-type'));
    if (decision === 'accepted') return done(moMessageAnswer(parsed, status, secrets));
    const why = `HTTP ${status}: ${reasonOf(parsed, status, secrets).slice(0, 200)}`;
    switch (decision) {
      case 'unauthorized':
        return { kind: 'reauth', why };
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
      case 'too_large':
      case 'failed':
        return done(failed('DROPLINE_ERR_SERVICE_FAILED', why, false));
    }
  }

  /** POST /token as the SMS client asks it (docs/service.md "Tokens"): Basic for the password grant. */
  async #requestToken(grant: TokenGrant, policy: TokenOptions): Promise<TokenAnswer> {
    const body = Buffer.from(tokenRequestBody(grant));
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
    };
    if (grant.grant === 'password') headers.authorization = this.#basic;
    const secrets = grant.grant === 'refresh_token' ? [...this.#secrets, grant.refreshToken] : this.#secrets;
    let why = '';
    for (let tries = 1; ; tries++) {
      const answer = await this.#post('/token', body, headers);
      if (answer.ok) {
        const { status } = answer;
        const parsed = parseBody(answer.text, headerOf(answer.headers, 'content-type'));
        if (status >= 200 && status < 300) {
          const token = parseTokenResponse(parsed, {
            expiresInUnitMs: policy.expiresInUnitMs,
            maxLifetimeMs: policy.maxLifetimeS * 1000,
          });
          return token
            ? { kind: 'ok', token }
            : { kind: 'unavailable', reason: `HTTP ${status} without an access_token` };
        }
        const reason = reasonOf(parsed, status, secrets);
        if (status === 400 || status === 401) return { kind: 'refused', status, reason };
        if (status === 403) return { kind: 'forbidden', reason };
        // A login is safe to repeat even when it was processed: it only expires a token this
        // process never received.
        const decision = answerDecision(status, answer.written);
        if (decision !== 'retry' && decision !== 'in_doubt' && decision !== 'rate_limited')
          return { kind: 'unavailable', reason: `unexpected HTTP ${status}: ${reason}` };
        why = `HTTP ${status}: ${reason}`;
      } else why = describeError(answer.error);
      if (tries >= this.#retry.maxAttempts) return { kind: 'unavailable', reason: `${why} (${tries} tries)` };
      if (!(await pause(backoffDelay(tries, this.#retry, this.#random()), this.#closing.signal)))
        return { kind: 'unavailable', reason: `${why}; closed before retrying` };
    }
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

/**
 * POST /momessage's 2xx answer (docs/channels.md "Two-way SMS"): `Message` OK is the message
 * taken, its `Id` the transaction number; ERROR refuses it, with the service's `Status`.
 * Anything else may be either: in doubt, never sent again.
 */
export function moMessageAnswer(body: unknown, status: number, secrets: readonly string[]): RecipientOutcome {
  const o = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const message = typeof o.Message === 'string' ? o.Message.trim().toUpperCase() : null;
  if (message === 'OK') {
    const id = o.Id;
    const messageId =
      typeof id === 'string' && id !== ''
        ? id
        : typeof id === 'number' && Number.isSafeInteger(id)
          ? String(id)
          : null;
    return { kind: 'accepted', messageId };
  }
  if (message === 'ERROR') {
    const code = typeof o.Status === 'string' || typeof o.Status === 'number' ? String(o.Status) : 'none';
    return {
      kind: 'rejected',
      code: 'DROPLINE_ERR_SERVICE_REJECTED',
      reason: reasonOf(`Message ERROR, Status ${code}`.slice(0, 200), status, secrets),
    };
  }
  return { kind: 'in_doubt', reason: `HTTP ${status} without Message OK or ERROR: it may have been sent` };
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
  /** 401: renew the token, then send again. */
  | { readonly kind: 'reauth'; readonly why: string }
  | { readonly kind: 'forbidden'; readonly why: string };

function done(outcome: RecipientOutcome): Step {
  return { kind: 'done', outcome };
}

function failed(code: ErrorCode, why: string, retryable: boolean): RecipientOutcome {
  return { kind: 'failed', code, reason: why, retryable };
}

/** A token that could not be had: a refused or forbidden login is the account's; else it never left. */
function refusedLogin(run: Run, err: unknown): RecipientOutcome {
  const why = err instanceof Error ? err.message : String(err);
  if (err instanceof DroplineError && err.code === 'DROPLINE_ERR_SERVICE_AUTH') {
    run.refused = { code: err.code, why: `the account was refused (${why})` };
    return { kind: 'unauthorized', reason: why };
  }
  if (err instanceof DroplineError && err.code === 'DROPLINE_ERR_SERVICE_FORBIDDEN') {
    run.refused = { code: err.code, why: `the account was refused (${why})` };
    return { kind: 'forbidden', reason: why };
  }
  return failed('DROPLINE_ERR_SERVICE_UNAVAILABLE', `not sent: ${why}`, true);
}

/** Waits `ms`; false when the signal stopped it. */
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}
