// What one request's answer makes of its part, decided without I/O: the retry policy as data,
// which ServiceClient's sending loop applies (as undici's RetryHandler applies its `retry`
// function). One rule per answerDecision (src/service/http.ts): docs/service.md "Which answers
// are safe to resend" says which answers may be sent again, "Retry schedule" how often and
// after how long.
import { DroplineError, type ErrorCode } from '../errors.ts';
import type { AttemptResult } from './attempt-events.ts';
import type { RetryOptions } from './client-options.ts';
import { type AnswerDecision, answerDecision, describeError, type HttpAnswer, headerOf } from './http.ts';
import type { FailureKind, PartEnd } from './send-result.ts';
import {
  type BackoffPolicy,
  backoffDelay,
  type MtMessageVia,
  mtMessageAnswer,
  parseBody,
  parseRetryAfter,
  reasonOf,
  transactionNumberOf,
} from './wire.ts';

/**
 * Renewals of a refused token (401) in a row before the part is `unauthorized`: another
 * worker's renewal may replace the renewed token before the retry reaches the service
 * (docs/service.md "Retry schedule").
 */
export const MAX_REAUTHS = 3;

/** What the policy counts of a part's requests; the loop adds one where a step says `count`. */
export interface PartTally {
  /** Requests made for the part. */
  attempts: number;
  /** 500/503 answers and requests that never left: they use up maxAttempts. */
  tries: number;
  /** 429 answers: they use up maxRateLimited, not maxAttempts. */
  rateLimited: number;
  /** Renewals of a refused token in a row. */
  reauths: number;
}

export type PartFailure = Extract<PartEnd, { kind: FailureKind }>;

/** The account's pace lowered (and held for `retryAfterMs`): trouble is the account's. */
export interface SlowDown {
  readonly reason: string;
  readonly retryAfterMs?: number | undefined;
}

interface Effects {
  /** What the attempt event reports. */
  readonly result: AttemptResult;
  readonly error?: string | undefined;
  /** The tally's count this step uses up. */
  readonly count?: 'tries' | 'rateLimited' | 'reauths' | undefined;
  readonly slowDown?: SlowDown | undefined;
  /** The token the request went with was refused: drop it (if it is still the one held). */
  readonly dropToken?: boolean | undefined;
}

/**
 * next: settle: the part ends with `end`; halve: both halves are sent as parts of their own; again:
 * the part is sent again, after `wait.ms` when given, and ends as `wait.stopped` when the
 * client stops during that wait.
 */
export type Step = Effects &
  (
    | { readonly next: 'settle'; readonly end: PartEnd }
    | { readonly next: 'halve' }
    | { readonly next: 'again'; readonly wait?: { readonly ms: number; readonly stopped: PartFailure } }
  );

/** What the policy reads besides the answer. */
export interface AttemptContext {
  readonly retry: RetryOptions;
  /** Source of jitter in [0, 1), drawn only for a delay the step needs. */
  readonly random: () => number;
  readonly tally: Readonly<PartTally>;
  /** Destinations in the part: one is never cut. */
  readonly size: number;
  /** Set for a chunk sent with POST /mtmessage (its answer carries a Status). */
  readonly via: MtMessageVia | undefined;
  /** What the request carried, kept out of every reason. */
  readonly secrets: readonly string[];
}

function failure(
  kind: FailureKind,
  code: ErrorCode,
  status: number | null,
  reason: string,
  retryable = false,
): PartFailure {
  return { kind, code, status, reason, retryable };
}

/** The step for one request's answer, or its lack of one. */
export function stepFor(answer: HttpAnswer, ctx: AttemptContext): Step {
  if (!answer.ok) return noAnswer(describeError(answer.error), answer.written, ctx);
  const { status } = answer;
  const decision = answerDecision(status, answer.written);
  if (decision === 'accepted') return accepted(answer, ctx);
  const parsed = parseBody(answer.text, headerOf(answer.headers, 'content-type'));
  const reason = reasonOf(parsed, status, ctx.secrets);
  return RULES[decision]({ status, reason, retryAfter: headerOf(answer.headers, 'retry-after') }, ctx);
}

/**
 * Why a part could not get its turn or its token: a login refused or forbidden is the
 * account's (docs/service.md "Outcomes"); anything else stopped the part before its request.
 */
export function turnFailure(err: unknown): PartFailure {
  if (!(err instanceof DroplineError))
    return failure(
      'failed',
      'DROPLINE_ERR_SERVICE_UNAVAILABLE',
      null,
      'stopped before the request was sent',
      true,
    );
  if (err.code === 'DROPLINE_ERR_SERVICE_AUTH') return failure('unauthorized', err.code, null, err.message);
  if (err.code === 'DROPLINE_ERR_SERVICE_FORBIDDEN') return failure('forbidden', err.code, 403, err.message);
  return failure('failed', err.code, null, err.message, err.retryable);
}

/** A request with no answer: in doubt once its body was written, else sent again. */
function noAnswer(reason: string, written: boolean, ctx: AttemptContext): Step {
  if (written) return inDoubt(null, `${reason} after the request was sent`);
  return backOff(ctx, null, reason, (n) => `${reason} (${n} tries)`, `${reason}; stopped before retrying`);
}

/**
 * A 2xx. POST /mtmessage answers a business rejection 200 with Status 1 (docs/channels.md
 * "RCS and flash SMS"): the whole request, its reason said once for every recipient (not
 * bisected: it is the account's or the text's, rarely one device's, which dropline validated).
 * A 200 without a Status may have been either: in doubt, for the reports to settle.
 */
function accepted(answer: Extract<HttpAnswer, { ok: true }>, ctx: AttemptContext): Step {
  const { status } = answer;
  const parsed = answer.bodyError ? null : parseBody(answer.text, headerOf(answer.headers, 'content-type'));
  const mt = ctx.via ? mtMessageAnswer(parsed, ctx.secrets) : null;
  if (mt?.kind === 'rejected') return settle('rejected', mt.reason, 'DROPLINE_ERR_SERVICE_REJECTED', status);
  if (mt?.kind === 'unclear') return inDoubt(status, `HTTP ${status} without the Status of POST /mtmessage`);
  const end = {
    kind: 'accepted',
    status,
    body: parsed,
    transactionNumber: transactionNumberOf(parsed),
  } as const;
  return { next: 'settle', result: 'accepted', end };
}

/** A part ending as `kind` (the attempt's result too) with the answer's reason. */
function settle(kind: FailureKind, reason: string, code: ErrorCode, status: number): Step {
  return { next: 'settle', result: kind, error: reason, end: failure(kind, code, status, reason) };
}

/** The body may have reached the service: the part is never sent again by the client. */
function inDoubt(status: number | null, why: string): Step {
  return {
    next: 'settle',
    result: 'in_doubt',
    error: why,
    end: failure('in_doubt', 'DROPLINE_ERR_SERVICE_IN_DOUBT', status, why),
  };
}

/**
 * Answers the service declined (500, 503) and requests that never left are sent again after
 * an exponential back-off, until maxAttempts tries in all.
 */
function backOff(
  ctx: AttemptContext,
  status: number | null,
  reason: string,
  exhausted: (tries: number) => string,
  stopped: string,
): Step {
  const tries = ctx.tally.tries + 1;
  const code = 'DROPLINE_ERR_SERVICE_UNAVAILABLE';
  if (tries >= ctx.retry.maxAttempts)
    return {
      next: 'settle',
      result: 'failed',
      error: reason,
      count: 'tries',
      end: failure('failed', code, status, exhausted(tries), true),
    };
  return {
    next: 'again',
    result: 'retry',
    error: reason,
    count: 'tries',
    wait: {
      ms: backoffDelay(tries, backoffOf(ctx.retry), ctx.random()),
      stopped: failure('failed', code, status, stopped, true),
    },
  };
}

function backoffOf(retry: RetryOptions): BackoffPolicy {
  return { baseMs: retry.baseMs, maxMs: retry.maxMs };
}

interface Refusal {
  readonly status: number;
  /** The answer's reason, secret-free. */
  readonly reason: string;
  readonly retryAfter: string | undefined;
}

/** What each answer other than a 2xx makes of the part (docs/service.md "Retry schedule"). */
const RULES: {
  readonly [D in Exclude<AnswerDecision, 'accepted'>]: (a: Refusal, ctx: AttemptContext) => Step;
} = {
  bad_request: ({ status, reason }, ctx) =>
    ctx.size > 1
      ? { next: 'halve', result: 'bisect', error: reason }
      : settle('rejected', reason, 'DROPLINE_ERR_SERVICE_REJECTED', status),
  too_large: ({ status, reason }, ctx) =>
    ctx.size > 1
      ? { next: 'halve', result: 'split', error: reason }
      : settle('failed', reason, 'DROPLINE_ERR_SERVICE_TOO_LARGE', status),
  unauthorized: ({ status, reason }, ctx) =>
    ctx.tally.reauths >= MAX_REAUTHS
      ? {
          next: 'settle',
          result: 'unauthorized',
          error: reason,
          dropToken: true,
          end: failure(
            'unauthorized',
            'DROPLINE_ERR_SERVICE_AUTH',
            status,
            `a renewed token was refused too (401, ${MAX_REAUTHS} renewals): ${reason}`,
          ),
        }
      : { next: 'again', result: 'reauth', error: reason, dropToken: true, count: 'reauths' },
  forbidden: ({ status, reason }) => settle('forbidden', reason, 'DROPLINE_ERR_SERVICE_FORBIDDEN', status),
  rate_limited: rateLimited,
  // The service struggling: the whole account sends slower for a while.
  retry: ({ status, reason }, ctx) => ({
    ...backOff(
      ctx,
      status,
      reason,
      (n) => `HTTP ${status} (${n} tries): ${reason}`,
      `HTTP ${status}; stopped before retrying`,
    ),
    slowDown: { reason: `HTTP ${status}: ${reason}` },
  }),
  // A gateway's answer (502, 504…): the backend may have the request. The same path as a
  // reset after writing; the account slows down as for any service trouble.
  in_doubt: ({ status, reason }) => ({
    ...inDoubt(
      status,
      `HTTP ${status} after the request was sent (a gateway's answer: the service may have taken it): ${reason}`,
    ),
    slowDown: { reason: `HTTP ${status}: ${reason}` },
  }),
  failed: ({ status, reason }) => ({
    next: 'settle',
    result: 'failed',
    error: reason,
    end: failure('failed', 'DROPLINE_ERR_SERVICE_FAILED', status, `unexpected HTTP ${status}: ${reason}`),
  }),
};

/**
 * A 429 waits its Retry-After (else the back-off), at most maxRetryAfterMs. A rate limit is the
 * account's, not this request's: every worker holds its sends and the account's pace is lowered.
 */
function rateLimited({ status, reason, retryAfter }: Refusal, ctx: AttemptContext): Step {
  const count = ctx.tally.rateLimited + 1;
  const code = 'DROPLINE_ERR_SERVICE_RATE_LIMITED';
  if (count > ctx.retry.maxRateLimited)
    return {
      next: 'settle',
      result: 'failed',
      error: reason,
      count: 'rateLimited',
      end: failure('failed', code, status, reason, true),
    };
  const hinted = parseRetryAfter(retryAfter, Date.now());
  const delayMs = Math.min(
    hinted ?? backoffDelay(count, backoffOf(ctx.retry), ctx.random()),
    ctx.retry.maxRetryAfterMs,
  );
  return {
    next: 'again',
    result: 'rate_limited',
    error: reason,
    count: 'rateLimited',
    slowDown: { reason: `HTTP 429: ${reason}`, retryAfterMs: delayMs },
    wait: {
      ms: delayMs,
      stopped: failure('failed', code, status, `${reason}; stopped before retrying`, true),
    },
  };
}
