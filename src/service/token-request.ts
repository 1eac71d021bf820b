// POST /token as every client of the SMS host asks it (docs/service.md "Token"): the password
// grant with Basic credentials, the refresh grant without; 5xx, 429 and requests that never
// left retried with back-off; its answer what TokenManager (token.ts) expects of a requester.
import { setTimeout as sleep } from 'node:timers/promises';
import type { TokenEvent } from './attempt-events.ts';
import type { TokenOptions } from './client-options.ts';
import { answerDecision, describeError, type HttpAnswer, headerOf } from './http.ts';
import type { TokenAnswer } from './token.ts';
import {
  type BackoffPolicy,
  backoffDelay,
  parseBody,
  parseRetryAfter,
  parseTokenResponse,
  reasonOf,
  type TokenGrant,
  tokenRequestBody,
} from './wire.ts';

export interface TokenRequestOptions {
  /** One POST on the client's pool, `path` after the host's base path. */
  readonly post: (path: string, body: Buffer, headers: Record<string, string>) => Promise<HttpAnswer>;
  /** `Basic base64(username:password)`: sent with the password grant only. */
  readonly basic: string;
  /** The client's credentials, which no reason may show. */
  readonly secrets: readonly string[];
  readonly policy: TokenOptions;
  readonly retry: BackoffPolicy & { readonly maxAttempts: number };
  /**
   * A 429's Retry-After (else retry.baseMs) is waited, at most this long, without the
   * try-count check before the wait; unset, a 429 is retried with the back-off as a 500 is.
   */
  readonly maxRetryAfterMs?: number | undefined;
  readonly random: () => number;
  /** The client closing: a wait it stops ends the tries. */
  readonly closing: AbortSignal;
  /** Each answer, or its absence (status 0), as docs/service.md "Observing attempts" says. */
  readonly onAnswer?: ((event: TokenEvent) => void) | undefined;
}

export async function requestToken(grant: TokenGrant, o: TokenRequestOptions): Promise<TokenAnswer> {
  const body = Buffer.from(tokenRequestBody(grant));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
  };
  // The refresh grant is the "renewal without credentials" (docs/service.md "Tokens").
  if (grant.grant === 'password') headers.authorization = o.basic;
  const secrets = grant.grant === 'refresh_token' ? [...o.secrets, grant.refreshToken] : o.secrets;
  let tries = 0;
  let lastReason = '';
  while (tries < o.retry.maxAttempts) {
    tries++;
    const started = performance.now();
    const answer = await o.post('/token', body, headers);
    const latencyMs = performance.now() - started;
    const status = answer.ok ? answer.status : 0;
    const event = { grant: grant.grant, attempt: tries, status, latencyMs };
    if (answer.ok) {
      const parsed = parseBody(answer.text, headerOf(answer.headers, 'content-type'));
      if (status >= 200 && status < 300) {
        const token = parseTokenResponse(parsed, {
          expiresInUnitMs: o.policy.expiresInUnitMs,
          maxLifetimeMs: o.policy.maxLifetimeS * 1000,
        });
        o.onAnswer?.(event);
        if (token) return { kind: 'ok', token };
        return { kind: 'unavailable', reason: `HTTP ${status} without an access_token` };
      }
      const reason = reasonOf(parsed, status, secrets);
      o.onAnswer?.({ ...event, error: reason });
      if (status === 400 || status === 401) return { kind: 'refused', status, reason };
      if (status === 403) return { kind: 'forbidden', reason };
      lastReason = `HTTP ${status}: ${reason}`;
      if (status === 429 && o.maxRetryAfterMs !== undefined) {
        const hinted = parseRetryAfter(headerOf(answer.headers, 'retry-after'), Date.now());
        if (!(await pause(Math.min(hinted ?? o.retry.baseMs, o.maxRetryAfterMs), o.closing))) break;
        continue;
      }
      // A login is safe to repeat even when it may have been processed: it only expires a
      // token this process never received. An answer in doubt is retried as a declined one.
      const decision = answerDecision(status, answer.written);
      if (decision !== 'retry' && decision !== 'in_doubt' && decision !== 'rate_limited')
        return { kind: 'unavailable', reason: `unexpected HTTP ${status}: ${reason}` };
    } else {
      // Safe to repeat even when the request was written, for the same reason.
      lastReason = describeError(answer.error);
      o.onAnswer?.({ ...event, error: lastReason });
    }
    if (tries >= o.retry.maxAttempts) break;
    if (!(await pause(backoffDelay(tries, o.retry, o.random()), o.closing))) break;
  }
  return { kind: 'unavailable', reason: `${lastReason} (${tries} tries)` };
}

/** Waits `ms`; false when the signal stopped it. */
export async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}
