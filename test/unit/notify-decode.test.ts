// Status notification bodies (docs/service.md "Status notifications") → DeliveryEvents: strict on
// the idempotency key and the status, lenient on the rest (a 400 loses the report for good).
import { describe, expect, it } from 'vitest';
import { chunkOf } from '../../src/channels/sms/reports.ts';
import { decodeNotification, MAX_RESULTS } from '../../src/notify/decode.ts';

const AT = '2025-01-02T03:04:05.000Z';

const element = (over: Record<string, unknown> = {}) => ({
  bulkId: 'f-1',
  messageId: 'm-1',
  to: '573001234567',
  transactionNumber: '1234567890123456789012345678',
  callbackData: 'cb',
  smsCount: 2,
  status: { name: 'DELIVERED_TO_HANDSET' },
  ...over,
});

const decode = (body: unknown) =>
  decodeNotification(typeof body === 'string' ? body : JSON.stringify(body), AT);

function reason(body: unknown): string {
  const r = decode(body);
  if (r.ok) throw new Error('expected a decode error');
  return r.reason;
}

describe('decodeNotification', () => {
  it('decodes a status notification body into one event, receivedAt passed in', () => {
    const r = decodeNotification(Buffer.from(JSON.stringify({ results: [element()] })), AT);
    expect(r).toEqual({
      ok: true,
      events: [
        {
          transactionNumber: '1234567890123456789012345678',
          to: '573001234567',
          messageId: 'm-1',
          bulkId: 'f-1',
          callbackData: 'cb',
          smsCount: 2,
          status: 'DELIVERED_TO_HANDSET',
          receivedAt: AT,
        },
      ],
    });
  });

  it('keeps unknown fields out and tolerates extra ones', () => {
    const r = decode({ results: [element({ price: 1, status: { name: 'NO_SUCCESS', groupId: 5 } })], x: 1 });
    expect(r.ok && r.events[0]?.status).toBe('NO_SUCCESS');
  });

  it('optional fields: absent or empty become empty ids and null', () => {
    const r = decode({
      results: [{ transactionNumber: '1', to: '573001234567', status: { name: 'NO_SUCCESS' } }],
    });
    expect(r.ok && r.events[0]).toMatchObject({
      messageId: '',
      bulkId: '',
      callbackData: null,
      smsCount: null,
    });
    const empty = decode({
      results: [element({ messageId: '', bulkId: '', callbackData: '', smsCount: '' })],
    });
    expect(empty.ok && empty.events[0]).toMatchObject({
      messageId: '',
      bulkId: '',
      callbackData: null,
      smsCount: null,
    });
  });

  it('smsCount as a number or as digits; anything else is unknown, not a rejection', () => {
    const count = (v: unknown) => {
      const r = decode({ results: [element({ smsCount: v })] });
      return r.ok ? r.events[0]?.smsCount : 'rejected';
    };
    expect(count(3)).toBe(3);
    expect(count('3')).toBe(3);
    expect(count(' 4 ')).toBe(4);
    expect(count(0)).toBe(0);
    expect(count(-1)).toBeNull();
    expect(count(1.5)).toBeNull();
    expect(count('two')).toBeNull();
    expect(count(null)).toBeNull();
    expect(count({})).toBeNull();
    // Past a 32-bit integer (the column on PostgreSQL): no count, not a failed batch.
    expect(count(3_000_000_000)).toBeNull();
    expect(count(2 ** 31 - 1)).toBe(2 ** 31 - 1);
  });

  it('NUL characters (which PostgreSQL text cannot hold) are dropped from every text field', () => {
    const r = decode({
      results: [
        element({
          bulkId: 'f-\u00001',
          messageId: 'm\u0000-1',
          to: '57300\u00001234567',
          transactionNumber: '12\u000034',
          callbackData: 'c\u0000b',
          status: { name: 'DELIVERED\u0000_TO_HANDSET' },
        }),
      ],
    });
    expect(r.ok && r.events[0]).toMatchObject({
      bulkId: 'f-1',
      messageId: 'm-1',
      to: '573001234567',
      transactionNumber: '1234',
      callbackData: 'cb',
      status: 'DELIVERED_TO_HANDSET',
    });
  });

  it('callbackData as an object (docs/notify.md "Reports of POST /mtmessage": as JSON text) becomes that text', () => {
    const r = decode({ results: [element({ callbackData: { a: 1 } })] });
    expect(r.ok && r.events[0]?.callbackData).toBe('{"a":1}');
  });

  it('ids given as JSON numbers are kept only when exact', () => {
    const r = decode({ results: [element({ transactionNumber: 42, to: 573001234567, messageId: 7 })] });
    expect(r.ok && r.events[0]).toMatchObject({
      transactionNumber: '42',
      to: '573001234567',
      messageId: '7',
    });
    // 28 digits do not survive JSON.parse as a number: recording it would break idempotency.
    expect(
      reason(
        '{"results":[{"transactionNumber":1234567890123456789012345678,"to":"5730","status":{"name":"X"}}]}',
      ),
    ).toBe('results[0].transactionNumber is required text');
  });

  it('missing required fields name the field, never the value', () => {
    expect(reason({ results: [element({ transactionNumber: undefined })] })).toBe(
      'results[0].transactionNumber is required text',
    );
    expect(reason({ results: [element({ transactionNumber: '  ' })] })).toBe(
      'results[0].transactionNumber is required text',
    );
    expect(reason({ results: [element({ to: '' })] })).toBe('results[0].to is required text');
    expect(reason({ results: [element({ status: undefined })] })).toBe(
      'results[0].status is required and must be an object',
    );
    expect(reason({ results: [element({ status: 'DELIVERED_TO_HANDSET' })] })).toBe(
      'results[0].status is required and must be an object',
    );
    expect(reason({ results: [element({ status: { name: '' } })] })).toBe(
      'results[0].status.name is required text',
    );
    expect(reason({ results: [element({ status: { name: 3 } })] })).toBe(
      'results[0].status.name is required text',
    );
    for (const r of [
      reason({ results: [element({ to: {} })] }),
      reason({ results: [element({ to: [] })] }),
    ]) {
      expect(r).not.toContain('573001234567');
    }
  });

  it('wrong shapes of the body', () => {
    expect(reason('')).toBe('the body is empty');
    expect(reason('{"results":')).toBe('the body is not JSON');
    expect(reason('[1]')).toBe('the body must be a JSON object');
    expect(reason('null')).toBe('the body must be a JSON object');
    expect(reason({})).toBe('results is required and must be an array');
    expect(reason({ results: element() })).toBe('results is required and must be an array');
    expect(reason({ results: [] })).toBe('results must not be empty');
    expect(reason({ results: [null] })).toBe('results[0] must be an object');
    expect(reason({ results: ['x'] })).toBe('results[0] must be an object');
    expect(reason({ results: Array.from({ length: MAX_RESULTS + 1 }, () => element()) })).toMatch(
      /more than/,
    );
    const r = decodeNotification(Buffer.from([0x7b, 0xff, 0x7d]), AT);
    expect(r).toEqual({ ok: false, reason: 'the body is not UTF-8 text' });
  });

  it('several results: each decoded; one bad element rejects the whole body', () => {
    const two = decode({ results: [element(), element({ to: '573009999999', transactionNumber: '2' })] });
    expect(two.ok && two.events.map((e) => e.to)).toEqual(['573001234567', '573009999999']);
    expect(reason({ results: [element(), element({ to: undefined })] })).toBe(
      'results[1].to is required text',
    );
  });

  it('a JSON body under a BOM-less UTF-8 with non-ASCII text', () => {
    const r = decode({ results: [element({ callbackData: '{"nombre":"Añez"}' })] });
    expect(r.ok && r.events[0]?.callbackData).toBe('{"nombre":"Añez"}');
  });
});

describe('chunkOf: the chunk a POST /mtmessage report names in its callbackData', () => {
  it('{"f": <fileId>, "c": <seq>} as the service returns it (JSON text); other keys ignored', () => {
    expect(chunkOf('{"f":"abc123","c":3}')).toEqual({ fileId: 'abc123', seq: 3 });
    expect(chunkOf(' { "c": 0, "f": "abc123-r2", "v": 1 } ')).toEqual({ fileId: 'abc123-r2', seq: 0 });
    expect(chunkOf('{"f":"a","c":2147483647}')).toEqual({ fileId: 'a', seq: 2147483647 });
    // decodeNotification keeps an object sent as an object as its JSON text: the same answer.
    const r = decode({ results: [element({ bulkId: '', callbackData: { f: 'abc', c: 7 } })] });
    expect(r.ok && chunkOf(r.events[0]!.callbackData)).toEqual({ fileId: 'abc', seq: 7 });
  });

  it('anything else is null', () => {
    for (const text of [
      null,
      '',
      'cb',
      'not json {',
      '{"f":"a","c":3',
      '[{"f":"a","c":3}]',
      '"{\\"f\\":\\"a\\",\\"c\\":3}"',
      'null',
      '{"f":"","c":3}',
      '{"f":3,"c":3}',
      '{"f":null,"c":3}',
      '{"c":3}',
      '{"f":"a"}',
      '{"f":"a","c":"3"}',
      '{"f":"a","c":-1}',
      '{"f":"a","c":1.5}',
      '{"f":"a","c":2147483648}',
      '{"f":"a","c":1e300}',
      '{"f":"a","c":null}',
      '{"f":"a\\u0000b","c":3}',
    ])
      expect(chunkOf(text), String(text)).toBeNull();
  });
});
