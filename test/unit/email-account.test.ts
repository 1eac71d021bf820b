// What one email request's answer becomes in the store (EmailAccount's toResult): accepted
// recipients sent and ACCEPTED at once, rejected ones with the service's code, unsent ones put
// back or failed, a refusal named for the pause.
import { describe, expect, it } from 'vitest';
import type { EmailOutcome } from '../../src/channels/email/client.ts';
import { toResult } from '../../src/service/channel-account.ts';

const rows = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    number: `r${i + 1}@example.com`,
    messageId: `m${i + 1}`,
    text: null,
  }));

describe('toResult', () => {
  it('accepted and rejected recipients: the chunk accepted, ACCEPTED for the sent, each rejection its code', () => {
    const outcomes: EmailOutcome[] = [
      { kind: 'accepted', messageId: 'E1' },
      { kind: 'rejected', code: 'INVALID_RECIPIENT', reason: 'bad address' },
      { kind: 'accepted', messageId: null },
      { kind: 'rejected', code: 'INVALID_RECIPIENT', reason: 'bad address' },
    ];
    const { result, refused } = toResult(rows(4), outcomes, 1, false);
    expect(refused).toBeNull();
    expect(result).toMatchObject({ state: 'accepted', attempts: 1, finalStatus: 'ACCEPTED' });
    expect(result.parts).toEqual([
      { messageIds: ['m1'], outcome: 'sent', transactionNumber: 'E1' },
      { messageIds: ['m2', 'm4'], outcome: 'rejected', code: 'INVALID_RECIPIENT', detail: 'bad address' },
      { messageIds: ['m3'], outcome: 'sent', transactionNumber: null },
    ]);
  });

  it("a request not plainly accepted: its overallStatus and errors in each of its recipients' detail", () => {
    const request = 'request partial: QUOTA_LOW daily quota almost used';
    const outcomes: EmailOutcome[] = [
      { kind: 'accepted', messageId: 'E1', request },
      { kind: 'rejected', code: 'INVALID_RECIPIENT', reason: 'bad address', request },
      { kind: 'accepted', messageId: null, request },
    ];
    const { result } = toResult(rows(3), outcomes, 1, false);
    expect(result.parts).toEqual([
      { messageIds: ['m1'], outcome: 'sent', transactionNumber: 'E1', detail: request },
      {
        messageIds: ['m2'],
        outcome: 'rejected',
        code: 'INVALID_RECIPIENT',
        detail: `bad address (${request})`,
      },
      { messageIds: ['m3'], outcome: 'sent', transactionNumber: null, detail: request },
    ]);
  });

  it('a refusal after a retryable failure in row order: the failure is put back too, not failed for good', () => {
    // WhatsApp sends a chunk's requests at once: recipient 1 met a 503 and, retrying, found
    // the account refused by recipient 2's 401. Neither was sent: both go back pending.
    const outcomes: EmailOutcome[] = [
      {
        kind: 'failed',
        code: 'DROPLINE_ERR_SERVICE_AUTH',
        reason: 'not sent: the account was refused',
        retryable: true,
      },
      { kind: 'unauthorized', reason: 'HTTP 401: wrong Basic credentials' },
    ];
    const { result, refused } = toResult(rows(2), outcomes, 3, false);
    expect(refused).toBe('HTTP 401: wrong Basic credentials');
    expect(result.state).toBe('pending');
    expect(result.parts.every((p) => p.outcome === 'pending')).toBe(true);
  });

  it('every recipient rejected: the chunk rejected, with the first code', () => {
    const outcomes: EmailOutcome[] = rows(2).map(() => ({
      kind: 'rejected',
      code: 'FROM_NOT_VERIFIED',
      reason: 'not verified',
    }));
    const { result } = toResult(rows(2), outcomes, 1, false);
    expect(result).toMatchObject({ state: 'rejected', errorCode: 'FROM_NOT_VERIFIED' });
  });

  it('a 401: put back pending with the refusal, which names the pause', () => {
    const outcomes: EmailOutcome[] = rows(2).map(() => ({
      kind: 'unauthorized',
      reason: 'HTTP 401: bad key',
    }));
    const { result, refused } = toResult(rows(2), outcomes, 1, false);
    expect(refused).toBe('HTTP 401: bad key');
    expect(result.state).toBe('pending');
    expect(result.parts).toEqual([
      {
        messageIds: ['m1', 'm2'],
        outcome: 'pending',
        code: 'DROPLINE_ERR_SERVICE_AUTH',
        detail: 'HTTP 401: bad key',
      },
    ]);
  });

  it('no answer after the request was written: in doubt; retries exhausted: failed; stopped before sending: pending', () => {
    expect(toResult(rows(1), [{ kind: 'in_doubt', reason: 'reset' }], 1, false).result.state).toBe(
      'in_doubt',
    );
    const unsent: EmailOutcome = {
      kind: 'failed',
      code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE',
      reason: 'HTTP 503 (5 tries)',
      retryable: true,
    };
    expect(toResult(rows(1), [unsent], 5, false).result.state).toBe('failed');
    expect(toResult(rows(1), [unsent], 5, true).result.state).toBe('pending');
  });
});
