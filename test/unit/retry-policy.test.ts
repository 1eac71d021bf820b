// The retry policy as data (src/service/retry-policy.ts): what each answer makes of a part,
// without a server. The same answers through a real sandbox are test/service/outcomes.test.ts;
// this pins the steps the client's loop applies (docs/service.md "Retry schedule").
import { describe, expect, it } from 'vitest';
import { DroplineError } from '../../src/errors.ts';
import type { HttpAnswer } from '../../src/service/http.ts';
import {
  type AttemptContext,
  MAX_REAUTHS,
  type PartTally,
  stepFor,
  turnFailure,
} from '../../src/service/retry-policy.ts';

const retry = { baseMs: 1000, maxMs: 60_000, maxAttempts: 3, maxRateLimited: 2, maxRetryAfterMs: 30_000 };

function context(over: Partial<PartTally> = {}, size = 4, via?: AttemptContext['via']): AttemptContext {
  return {
    retry,
    random: () => 0.5,
    tally: { attempts: 1, tries: 0, rateLimited: 0, reauths: 0, ...over },
    size,
    via,
    secrets: ['s3cret'],
  };
}

function answer(status: number, body = '', headers: Record<string, string> = {}): HttpAnswer {
  return {
    ok: true,
    status,
    headers: { 'content-type': 'application/json', ...headers },
    text: body,
    bodyError: false,
    written: true,
  };
}

const reset = (written: boolean): HttpAnswer => ({
  ok: false,
  written,
  error: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
});

describe('stepFor', () => {
  it('a 2xx settles the part accepted, with its transactionNumber', () => {
    const step = stepFor(answer(200, '{"transactionNumber":"t-1"}'), context());
    expect(step).toMatchObject({
      next: 'settle',
      result: 'accepted',
      end: { kind: 'accepted', status: 200, transactionNumber: 't-1' },
    });
    expect(step.count).toBeUndefined();
  });

  it('a 500 is sent again after the back-off, and slows the account; the last try fails', () => {
    expect(stepFor(answer(500, '{"message":"boom"}'), context())).toMatchObject({
      next: 'again',
      result: 'retry',
      count: 'tries',
      // first retry: base 1000 ms, equal jitter at random 0.5
      wait: {
        ms: 750,
        stopped: { kind: 'failed', code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE', retryable: true },
      },
      slowDown: { reason: 'HTTP 500: boom' },
    });
    expect(stepFor(answer(500, '{"message":"boom"}'), context({ tries: 2 }))).toMatchObject({
      next: 'settle',
      result: 'failed',
      slowDown: { reason: 'HTTP 500: boom' },
      end: { kind: 'failed', reason: 'HTTP 500 (3 tries): boom', retryable: true },
    });
  });

  it('a 429 waits its Retry-After, capped, and holds the account as long; past maxRateLimited it fails', () => {
    expect(stepFor(answer(429, '', { 'retry-after': '120' }), context())).toMatchObject({
      next: 'again',
      result: 'rate_limited',
      count: 'rateLimited',
      wait: { ms: 30_000 },
      slowDown: { retryAfterMs: 30_000 },
    });
    expect(stepFor(answer(429), context({ rateLimited: 2 }))).toMatchObject({
      next: 'settle',
      end: { kind: 'failed', code: 'DROPLINE_ERR_SERVICE_RATE_LIMITED' },
    });
  });

  it('a 401 drops the token and goes again, until MAX_REAUTHS renewals were refused', () => {
    expect(stepFor(answer(401), context())).toMatchObject({
      next: 'again',
      result: 'reauth',
      dropToken: true,
      count: 'reauths',
    });
    expect(stepFor(answer(401), context({ reauths: MAX_REAUTHS }))).toMatchObject({
      next: 'settle',
      result: 'unauthorized',
      dropToken: true,
      end: { kind: 'unauthorized', code: 'DROPLINE_ERR_SERVICE_AUTH' },
    });
  });

  it('a 400 or 413 halves a part of several destinations, and settles one of a single', () => {
    expect(stepFor(answer(400), context())).toMatchObject({ next: 'halve', result: 'bisect' });
    expect(stepFor(answer(413), context())).toMatchObject({ next: 'halve', result: 'split' });
    expect(stepFor(answer(400), context({}, 1))).toMatchObject({
      next: 'settle',
      end: { kind: 'rejected', code: 'DROPLINE_ERR_SERVICE_REJECTED' },
    });
    expect(stepFor(answer(413), context({}, 1))).toMatchObject({
      next: 'settle',
      end: { kind: 'failed', code: 'DROPLINE_ERR_SERVICE_TOO_LARGE' },
    });
  });

  it("a gateway's 502 after the body was written, or a reset after it, is in doubt; a reset before it is retried", () => {
    expect(stepFor(answer(502), context())).toMatchObject({
      next: 'settle',
      result: 'in_doubt',
      slowDown: { reason: expect.stringContaining('HTTP 502') },
      end: { kind: 'in_doubt', code: 'DROPLINE_ERR_SERVICE_IN_DOUBT', status: 502 },
    });
    expect(stepFor(reset(true), context())).toMatchObject({
      next: 'settle',
      end: {
        kind: 'in_doubt',
        status: null,
        reason: 'ECONNRESET: socket hang up after the request was sent',
      },
    });
    expect(stepFor(reset(false), context())).toMatchObject({
      next: 'again',
      result: 'retry',
      count: 'tries',
    });
  });

  it('POST /mtmessage: a 200 with Status 1 is rejected, without a Status in doubt', () => {
    const via = {
      channel: 'RCS',
      flash: false,
      customMessageId: 'f/1',
      callbackData: { f: 'f', c: 1 },
    } as const;
    expect(stepFor(answer(200, '{"Status":1,"MessageText":"no RCS"}'), context({}, 4, via))).toMatchObject({
      next: 'settle',
      end: { kind: 'rejected', reason: 'no RCS' },
    });
    expect(stepFor(answer(200, '{}'), context({}, 4, via))).toMatchObject({
      next: 'settle',
      end: { kind: 'in_doubt' },
    });
  });

  it('keeps what the request carried out of every reason', () => {
    const step = stepFor(answer(403, '{"message":"no access for s3cret"}'), context());
    expect(step).toMatchObject({ next: 'settle', end: { kind: 'forbidden' } });
    expect(JSON.stringify(step)).not.toContain('s3cret');
  });
});

describe('turnFailure', () => {
  it('a refused login is unauthorized, a forbidden one forbidden, a stop failed and retryable', () => {
    expect(turnFailure(new DroplineError('DROPLINE_ERR_SERVICE_AUTH', 'refused'))).toMatchObject({
      kind: 'unauthorized',
      status: null,
    });
    expect(turnFailure(new DroplineError('DROPLINE_ERR_SERVICE_FORBIDDEN', 'no'))).toMatchObject({
      kind: 'forbidden',
      status: 403,
    });
    expect(turnFailure(new Error('aborted'))).toEqual({
      kind: 'failed',
      code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE',
      status: null,
      reason: 'stopped before the request was sent',
      retryable: true,
    });
  });
});
