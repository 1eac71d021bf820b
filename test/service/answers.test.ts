// Issue 32, item 3: what each status means for a request, on every channel (answerDecision,
// docs/service.md "Which answers are safe to resend"). A gateway's 502 or 504 after the body
// was written may follow a backend that took the request: in doubt, never resent.
import { describe, expect, it } from 'vitest';
import { type AnswerDecision, answerDecision } from '../../src/service/http.ts';

const TABLE: [status: number, written: AnswerDecision, unwritten: AnswerDecision][] = [
  [200, 'accepted', 'accepted'],
  [202, 'accepted', 'accepted'],
  [204, 'accepted', 'accepted'],
  [400, 'bad_request', 'bad_request'],
  [401, 'unauthorized', 'unauthorized'],
  [403, 'forbidden', 'forbidden'],
  [413, 'too_large', 'too_large'],
  [429, 'rate_limited', 'rate_limited'],
  // The service's own answers asking to come back: safe to resend.
  [500, 'retry', 'retry'],
  [503, 'retry', 'retry'],
  // A gateway lost the backend's answer (502) or stopped waiting for it (504).
  [502, 'in_doubt', 'retry'],
  [504, 'in_doubt', 'retry'],
  // Undocumented 5xx: a CDN's 520-524, storage, loops: whoever answered, maybe after the backend.
  [507, 'in_doubt', 'retry'],
  [520, 'in_doubt', 'retry'],
  [524, 'in_doubt', 'retry'],
  // The server does not do this at all: nothing processed, nothing to retry.
  [501, 'failed', 'failed'],
  [505, 'failed', 'failed'],
  // Refused for good.
  [301, 'failed', 'failed'],
  [404, 'failed', 'failed'],
  [405, 'failed', 'failed'],
  [409, 'failed', 'failed'],
  [422, 'failed', 'failed'],
];

describe('answerDecision', () => {
  it.each(TABLE)('%i: %s once the body was written, %s before', (status, written, unwritten) => {
    expect(answerDecision(status, true)).toBe(written);
    expect(answerDecision(status, false)).toBe(unwritten);
  });
});
