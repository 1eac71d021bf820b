import { describe, expect, it } from 'vitest';
import { maskNumber, redactText, redactUrl } from '../../src/core/redact.ts';
import {
  backoffDelay,
  encodeCallbackData,
  massiveBody,
  mtMessageAnswer,
  mtMessageBody,
  type PlannedChunk,
  parseRetryAfter,
  parseTokenResponse,
  partDestinations,
  partMessages,
  subPart,
  wholePart,
} from '../../src/service/wire.ts';

const policy = { expiresInUnitMs: 1000, maxLifetimeMs: 14_400_000 };

describe('wire', () => {
  it('reads expires_in as seconds, capped at 4 h; both configurable', () => {
    expect(parseTokenResponse({ access_token: 'a', expires_in: 3600 }, policy)?.lifetimeMs).toBe(3_600_000);
    expect(parseTokenResponse({ access_token: 'a', expires_in: '600' }, policy)?.lifetimeMs).toBe(600_000);
    expect(parseTokenResponse({ access_token: 'a', expires_in: 86_400 }, policy)?.lifetimeMs).toBe(
      14_400_000,
    );
    expect(parseTokenResponse({ access_token: 'a' }, policy)?.lifetimeMs).toBe(14_400_000);
    expect(
      parseTokenResponse({ access_token: 'a', expires_in: 5 }, { ...policy, expiresInUnitMs: 60_000 })
        ?.lifetimeMs,
    ).toBe(300_000);
    expect(parseTokenResponse({ expires_in: 5 }, policy)).toBeNull();
  });

  it('backs off exponentially with equal jitter, up to the ceiling', () => {
    const p = { baseMs: 5000, maxMs: 300_000 };
    expect([1, 2, 3].map((r) => backoffDelay(r, p, 0))).toEqual([2500, 5000, 10_000]);
    expect([1, 2, 3].map((r) => backoffDelay(r, p, 1))).toEqual([5000, 10_000, 20_000]);
    expect(backoffDelay(20, p, 1)).toBe(300_000);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('3', 0)).toBe(3000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(parseRetryAfter('soon', 0)).toBeNull();
    expect(parseRetryAfter(undefined, 0)).toBeNull();
  });

  it('slices parts across messages and builds deterministic bodies', () => {
    const chunk = {
      chunkId: 'c',
      bulkId: 'b',
      messages: [
        {
          text: 'one',
          destinations: [
            { to: '573000000001', messageId: '1' },
            { to: '573000000002', messageId: '2' },
          ],
        },
        { text: 'two', destinations: [{ to: '573000000003', messageId: '3' }] },
      ],
    };
    const part = subPart(wholePart(chunk), 1, 3);
    expect(part.partId).toBe('c#1-3');
    expect(partDestinations(part).map((d) => d.messageId)).toEqual(['2', '3']);
    const body = massiveBody(part, { notifyUrl: 'https://h/n?token=t' });
    expect(body.toString()).toBe(
      JSON.stringify({
        bulkId: 'b',
        messages: [
          {
            destinations: [{ to: '573000000002', messageId: '2' }],
            text: 'one',
            notifyUrl: 'https://h/n?token=t',
          },
          {
            destinations: [{ to: '573000000003', messageId: '3' }],
            text: 'two',
            notifyUrl: 'https://h/n?token=t',
          },
        ],
      }),
    );
    expect(body.toString()).toBe(
      '{"bulkId":"b","messages":[{"destinations":[{"to":"573000000002","messageId":"2"}],"text":"one","notifyUrl":"https://h/n?token=t"},{"destinations":[{"to":"573000000003","messageId":"3"}],"text":"two","notifyUrl":"https://h/n?token=t"}]}',
    );
    expect(massiveBody(part, { notifyUrl: 'https://h/n?token=t' }).equals(body)).toBe(true);
  });

  it('the body is the bytes of JSON.stringify of the whole, also for non-ASCII texts', () => {
    const texts = ['Señor Núñez: ñandú', 'emoji 😀 and \u2028 and "quotes" \\ \n', 'plain'];
    const chunk: PlannedChunk = {
      chunkId: 'c',
      bulkId: 'b-ñ',
      callbackData: '{"k":"ü"}',
      messages: texts.map((text, i) => ({
        text,
        destinations: [{ to: `57300000000${i}`, messageId: `m${i}` }],
      })),
    };
    const notify = { notifyUrl: 'https://h/n?token=t', notifyContentType: 'application/json' };
    const expected = JSON.stringify({
      bulkId: 'b-ñ',
      messages: texts.map((text, i) => ({
        destinations: [{ to: `57300000000${i}`, messageId: `m${i}` }],
        text,
        notifyUrl: notify.notifyUrl,
        notifyContentType: notify.notifyContentType,
        callbackData: '{"k":"ü"}',
      })),
    });
    expect(massiveBody(wholePart(chunk), notify).equals(Buffer.from(expected))).toBe(true);
  });

  it('the body is the bytes of JSON.stringify of the whole for a chunk of many messages and of one', () => {
    // 150 messages (written 64 to a string), then one message of 1000 destinations (a bulk chunk).
    const many: PlannedChunk = {
      chunkId: 'c',
      bulkId: 'b',
      messages: Array.from({ length: 150 }, (_, i) => ({
        text: `Hola ${i}, ñ "${i}"`,
        destinations: Array.from({ length: (i % 3) + 1 }, (_, j) => ({
          to: `5730000${String(i).padStart(3, '0')}${j}0`,
          messageId: `m${i}-${j}`,
        })),
      })),
    };
    const bulk: PlannedChunk = {
      chunkId: 'c',
      bulkId: 'b',
      messages: [
        {
          text: 'Recordatorio',
          destinations: Array.from({ length: 1000 }, (_, i) => ({
            to: `57300${String(i).padStart(7, '0')}`,
            messageId: `m${i}`,
          })),
        },
      ],
    };
    const notify = { notifyUrl: 'https://h/n?token=t' };
    for (const chunk of [many, bulk]) {
      const expected = JSON.stringify({
        bulkId: 'b',
        // The wire format spelt out: each destination exactly {to, messageId}, in that order.
        messages: chunk.messages.map((m) => ({
          destinations: m.destinations.map((d) => ({ to: d.to, messageId: d.messageId })),
          text: m.text,
          notifyUrl: notify.notifyUrl,
        })),
      });
      expect(massiveBody(wholePart(chunk), notify).toString()).toBe(expected);
    }
    // A part that starts and ends inside messages.
    const part = subPart(wholePart(many), 5, 250);
    const expected = JSON.stringify({
      bulkId: 'b',
      messages: partMessages(part).map((m) => ({
        destinations: m.destinations.map((d) => ({ to: d.to, messageId: d.messageId })),
        text: m.text,
      })),
    });
    expect(massiveBody(part, {}).toString()).toBe(expected);
  });

  it('refuses callbackData above 200 characters', () => {
    expect(encodeCallbackData({ a: 1 })).toBe('{"a":1}');
    expect(() => encodeCallbackData({ a: 'x'.repeat(200) })).toThrow(/200/);
  });

  it('masks numbers and redacts query strings', () => {
    expect(maskNumber('573001234567')).toBe('57300****567');
    expect(redactUrl('https://h/notify?token=s3cret')).toBe('https://h/notify?<redacted>');
    expect(
      redactText('to 573001234567 via http://h:1/n?token=abc failed; txn 1234567890123456789012345678'),
    ).toBe('to 57300****567 via http://h:1/n?<redacted> failed; txn 1234567890123456789012345678');
  });

  describe('POST /mtmessage (docs/channels.md "RCS and flash SMS")', () => {
    const via = {
      channel: 'RCS' as const,
      flash: false,
      customMessageId: 'f1/3',
      callbackData: { f: 'f1', c: 3 },
    };
    const d = (to: string, messageId: string) => ({ to, messageId });

    it('one text: Type 1, MessageText, Devices joined by -, the chunk named in CustomMessageId and CallbackData', () => {
      const chunk: PlannedChunk = {
        chunkId: 'f1/3',
        bulkId: 'f1',
        messages: [{ text: 'Hola', destinations: [d('573001', 'f1-1'), d('573002', 'f1-2')] }],
      };
      expect(JSON.parse(mtMessageBody(wholePart(chunk), via).toString())).toEqual({
        Type: 1,
        Devices: '573001-573002',
        MessageText: 'Hola',
        Channel: 'RCS',
        CustomMessageId: 'f1/3',
        CallbackData: { f: 'f1', c: 3 },
      });
    });

    it('several texts: Type 2, one MessageData value list a device in the order of Devices; flash is FlashSMS 1', () => {
      const chunk: PlannedChunk = {
        chunkId: 'f1/3',
        bulkId: 'f1',
        messages: [
          { text: 'Hola Ana', destinations: [d('573001', 'f1-1')] },
          { text: 'Hola {1} Luis', destinations: [d('573002', 'f1-2'), d('573003', 'f1-3')] },
        ],
      };
      const part = subPart(wholePart(chunk), 0, 2);
      expect(JSON.parse(mtMessageBody(part, { ...via, channel: 'SMS', flash: true }).toString())).toEqual({
        Type: 2,
        Devices: '573001-573002',
        MessagePattern: '{0}',
        MessageData: [['Hola Ana'], ['Hola {1} Luis']],
        Channel: 'SMS',
        FlashSMS: 1,
        CustomMessageId: 'f1/3',
        CallbackData: { f: 'f1', c: 3 },
      });
    });

    it('Status 0 accepted, Status 1 a rejection with its reason, anything else unclear (in doubt)', () => {
      expect(mtMessageAnswer({ Status: 1, MessageText: 'RCS is not enabled for this account' }, [])).toEqual({
        kind: 'rejected',
        reason: 'RCS is not enabled for this account',
      });
      expect(mtMessageAnswer({ Status: '1', MessageText: '' }, [])).toEqual({
        kind: 'rejected',
        reason: 'Status 1',
      });
      expect(mtMessageAnswer({ Status: 0, TransactionNumber: '1' }, [])).toEqual({ kind: 'accepted' });
      expect(mtMessageAnswer({ TransactionNumber: '1' }, [])).toEqual({ kind: 'unclear' });
      expect(mtMessageAnswer(null, [])).toEqual({ kind: 'unclear' });
      // A reason echoing the request's bearer token (12345678901 digits inside) keeps none of it.
      const token = 'tok-12345678901-xyz';
      expect(mtMessageAnswer({ Status: 1, MessageText: `Bearer ${token} refused` }, [token])).toEqual({
        kind: 'rejected',
        reason: 'Bearer <redacted> refused',
      });
    });
  });
});
