// SmppReplyReceiver against the sandbox's SMPP server (docs/opt-outs.md, "Replies over SMPP"):
// real TCP (and TLS) on 127.0.0.1, nothing mocked. Waits are for states, never for durations;
// back-off is checked by counts and the waits the receiver chose, not by a clock.
import { afterEach, describe, expect, it } from 'vitest';
import {
  backoffDelay,
  type SmppReply,
  SmppReplyReceiver,
  type SmppReplyReceiverOptions,
} from '../../src/replies/smpp-receiver.ts';
import type { Sandbox } from '../../src/sandbox/server.ts';
import { closedPort, waitFor } from '../service/helpers.ts';
import {
  dropSmpp,
  type LogLine,
  memoryLogger,
  postReplies,
  repliesView,
  sandboxWithSmpp,
  testCertificate,
} from './smpp-helpers.ts';

const open: { close(): Promise<void> }[] = [];
const receivers: SmppReplyReceiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.stop()));
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function sandbox(...args: Parameters<typeof sandboxWithSmpp>) {
  const s = await sandboxWithSmpp(...args);
  open.push(s);
  return s;
}

const FROM = '573001234567';

/** A receiver of `s` whose onReply keeps every reply (after an optional hook). */
function receiverOf(
  s: Sandbox & { smpp: NonNullable<Sandbox['smpp']> },
  options: Partial<SmppReplyReceiverOptions> & { before?: (reply: SmppReply) => Promise<void> | void } = {},
) {
  const recorded: SmppReply[] = [];
  const logger = memoryLogger();
  const { before, ...rest } = options;
  const receiver = new SmppReplyReceiver({
    host: '127.0.0.1',
    port: s.smpp.port,
    systemId: 'demo',
    password: 'demo',
    logger,
    backoff: { baseMs: 20, maxMs: 200 },
    responseTimeoutMs: 5000,
    onReply: async (reply) => {
      await before?.(reply);
      recorded.push(reply);
    },
    ...rest,
  });
  receivers.push(receiver);
  return { receiver, recorded, logs: logger.lines };
}

const acknowledged = (s: Sandbox, n: number) =>
  waitFor(async () => {
    const v = await repliesView(s);
    return v.acknowledged === n && v.queued === 0 && v.inflight === 0 ? v : undefined;
  }, `${n} replies acknowledged, none left`);

describe('SmppReplyReceiver', () => {
  it('binds as a receiver, records each reply, acknowledges it, and unbinds on stop', async () => {
    const s = await sandbox();
    const { ids } = await postReplies(s, [
      { from: FROM, text: 'SALIR' },
      { from: '+573109876543', to: '899', text: 'Sí, SALIR ñandú' },
    ]);
    const { receiver, recorded, logs } = receiverOf(s);
    expect(receiver.state).toBe('idle');
    receiver.start();
    await waitFor(() => receiver.connected, 'the bind');
    expect(receiver.state).toBe('bound');
    await acknowledged(s, 2);
    expect(recorded).toHaveLength(2);
    expect(recorded[0]).toMatchObject({ from: FROM, to: '85000', text: 'SALIR', messageId: ids[0] });
    expect(recorded[1]).toMatchObject({
      from: '573109876543',
      to: '899',
      text: 'Sí, SALIR ñandú',
      messageId: ids[1],
    });
    expect(Number.isNaN(Date.parse(recorded[0]!.receivedAt))).toBe(false);
    expect(receiver.stats).toMatchObject({ binds: 1, replies: 2, failures: 0 });

    // Replies in logs: masked numbers, never the text.
    const replyLogs = logs.filter((l) => l.msg === 'reply received');
    expect(replyLogs.map((l) => l.obj.from)).toEqual(['57300****567', '57310****543']);
    expect(JSON.stringify(logs)).not.toContain(FROM);
    expect(JSON.stringify(logs)).not.toContain('SALIR');

    await receiver.stop();
    expect(receiver.state).toBe('stopped');
    expect(receiver.connected).toBe(false);
    await waitFor(async () => (await repliesView(s)).sessions.length === 0, 'the server to see the unbind');
  });

  it('retries a refused bind with growing waits, logs the status but never the password, and binds once it is fixed', async () => {
    const s = await sandbox();
    let password = 'wr0ng-s3cret';
    const { receiver, recorded, logs } = receiverOf(s, {
      password: () => password,
      backoff: { baseMs: 10, maxMs: 80 },
    });
    receiver.start();
    await waitFor(() => receiver.stats.bindsRefused >= 6, 'six refused binds');
    expect(receiver.connected).toBe(false);
    expect(['waiting', 'connecting']).toContain(receiver.state);
    expect(receiver.status.lastError).toBe('bind refused: ESME_RINVPASWD');
    expect((await repliesView(s)).binds.refused).toBeGreaterThanOrEqual(6);

    const refusals = logs.filter((l) => l.msg === 'SMPP bind refused');
    expect(refusals.length).toBeGreaterThanOrEqual(6);
    for (const l of refusals) {
      expect(l.level).toBe('error');
      expect(l.obj).toMatchObject({ status: 'ESME_RINVPASWD', commandStatus: 0x0e, systemId: 'demo' });
    }
    // Doubling ceilings 10, 20, 40, 80, 80…, each wait in the upper half of its ceiling: never
    // shorter than the one before until the cap, never above it.
    const waits = refusals.map((l) => l.obj.retryInMs as number);
    for (let i = 1; i < 4; i++) expect(waits[i]!).toBeGreaterThanOrEqual(waits[i - 1]!);
    for (const w of waits) expect(w).toBeLessThanOrEqual(80);
    expect(waits[4]!).toBeGreaterThanOrEqual(40);
    expect(JSON.stringify(logs)).not.toContain(password);

    password = 'demo';
    await waitFor(() => receiver.connected, 'the bind with the fixed password');
    expect(receiver.status.lastError).toBeNull();
    await postReplies(s, { from: FROM, text: 'STOP' });
    await waitFor(() => recorded.length === 1, 'the reply after the fix');
    expect(receiver.stats.binds).toBe(1);
  });

  it('loses no reply when connections drop or are unbound by the server mid-stream', async () => {
    const s = await sandbox({ redeliveryMs: 300 });
    const { receiver, recorded } = receiverOf(s, {
      before: () => new Promise((resolve) => setTimeout(resolve, 1)),
    });
    receiver.start();
    await waitFor(() => receiver.connected, 'the first bind');
    const texts: string[] = [];
    let drops = 0;
    for (let batch = 0; batch < 6; batch++) {
      const body = Array.from({ length: 50 }, (_, i) => ({ from: FROM, text: `R${batch * 50 + i}` }));
      texts.push(...body.map((b) => b.text));
      if (batch % 2 === 0) await waitFor(() => receiver.stats.binds === drops + 1, 'bound again');
      await postReplies(s, body);
      // While they flow: drop at once, or by an unbind from the server, every other batch.
      if (batch % 2 === 0) {
        expect(await dropSmpp(s, batch === 2 ? 'unbind' : 'destroy')).toBe(1);
        drops++;
      }
    }
    const view = await acknowledged(s, 300);
    const seen = new Set(recorded.map((r) => r.text));
    expect(texts.filter((t) => !seen.has(t))).toEqual([]);
    // Every reply the server counts as taken was recorded first.
    const recordedIds = new Set(recorded.map((r) => r.messageId));
    expect(view.replies.filter((r) => !recordedIds.has(r.id))).toEqual([]);
    await waitFor(() => receiver.connected, 'bound again');
    expect(receiver.stats.binds).toBe(4);
    expect(receiver.stats.disconnects).toBe(3);
  });

  it('detects a dead link by its unanswered enquire_link and binds again', async () => {
    const s = await sandbox();
    const { receiver, recorded, logs } = receiverOf(s, { enquireLinkMs: 50, responseTimeoutMs: 1000 });
    receiver.start();
    await waitFor(() => receiver.connected, 'the bind');
    await waitFor(async () => (await repliesView(s)).enquireLinks >= 2, 'enquire_link answered');
    expect(await dropSmpp(s, 'silence')).toBe(1);
    await waitFor(
      () => logs.some((l) => l.level === 'warn' && String(l.obj.reason).includes('enquire_link_resp')),
      'the dead link noticed',
    );
    await waitFor(() => receiver.connected, 'a new bind after the dead link');
    expect(receiver.stats.binds).toBeGreaterThanOrEqual(2);
    await postReplies(s, { from: FROM, text: 'BAJA' });
    await waitFor(() => recorded.length === 1, 'the reply on the new bind');
  });

  it('answers ESME_RX_T_APPN when onReply fails, and records the reply at its redelivery', async () => {
    const s = await sandbox({ redeliveryMs: 1000 });
    const calls: string[] = [];
    let failed = false;
    const { receiver, recorded, logs } = receiverOf(s, {
      before: (reply) => {
        calls.push(reply.text);
        if (reply.text === 'FAIL ONCE' && !failed) {
          failed = true;
          throw new Error('store away');
        }
      },
    });
    receiver.start();
    await postReplies(s, [
      { from: FROM, text: 'FAIL ONCE' },
      { from: FROM, text: 'fine' },
    ]);
    const view = await acknowledged(s, 2);
    expect(calls.filter((t) => t === 'FAIL ONCE').length).toBeGreaterThanOrEqual(2);
    expect(recorded.map((r) => r.text).sort()).toEqual(['FAIL ONCE', 'fine']);
    // refusals 1, attempts 2, unless the error answer took longer than redeliveryMs to arrive.
    const failing = view.replies.find((r) => r.text === 'FAIL ONCE')!;
    expect(failing.attempts).toBeGreaterThanOrEqual(2);
    expect(failing.refusals + failing.unanswered).toBeGreaterThanOrEqual(1);
    expect(receiver.stats.failures).toBe(1);
    const warn = logs.find((l) => l.msg.startsWith('reply not recorded'))!;
    expect(warn.obj).toMatchObject({ from: '57300****567', err: 'store away' });
  });

  it('loses no reply across a restart: a new receiver gets what the stopped one did not acknowledge', async () => {
    const s = await sandbox({ redeliveryMs: 300 });
    // The store both processes share: replies by the server's id.
    const store = new Map<string, SmppReply>();
    const record = (r: SmppReply) => {
      store.set(r.messageId!, r);
    };
    const a = receiverOf(s, { before: () => new Promise((resolve) => setTimeout(resolve, 2)) });
    a.receiver.start();
    const first = await postReplies(
      s,
      Array.from({ length: 100 }, (_, i) => ({ from: FROM, text: `A${i}` })),
    );
    await waitFor(() => a.recorded.length >= 20, 'some replies taken by the first process');
    await a.receiver.stop();
    for (const r of a.recorded) record(r);
    // Everything the server counts as taken was recorded by the first process.
    const after = await repliesView(s);
    expect(after.sessions).toEqual([]);
    expect(after.replies.filter((r) => r.state === 'acknowledged' && !store.has(r.id))).toEqual([]);

    // Replies that arrive while no receiver is bound wait for the next one.
    const second = await postReplies(
      s,
      Array.from({ length: 30 }, (_, i) => ({ from: FROM, text: `B${i}` })),
    );
    const b = receiverOf(s, { before: (r) => record(r) });
    b.receiver.start();
    await acknowledged(s, 130);
    expect([...first.ids, ...second.ids].filter((id) => !store.has(id))).toEqual([]);
  });

  it('answers ESME_RTHROTTLED past maxInProgress, and records those replies at their redelivery', async () => {
    const s = await sandbox({ redeliveryMs: 300 });
    const { receiver, recorded } = receiverOf(s, {
      maxInProgress: 2,
      before: () => new Promise((resolve) => setTimeout(resolve, 20)),
    });
    receiver.start();
    await waitFor(() => receiver.connected, 'the bind');
    await postReplies(
      s,
      Array.from({ length: 10 }, (_, i) => ({ from: FROM, text: `T${i}` })),
    );
    await acknowledged(s, 10);
    expect(new Set(recorded.map((r) => r.text)).size).toBe(10);
    expect(receiver.stats.throttled).toBeGreaterThan(0);
  });

  it('records replies in the order they arrived, even when recording one takes longer', async () => {
    const s = await sandbox();
    // The first reply's recording is slow: the ones after it must not overtake it (the store's
    // ids, and so `dropline replies`, follow the order the replies were received in).
    const { receiver, recorded } = receiverOf(s, {
      before: (reply) =>
        reply.text === 'T0' ? new Promise((resolve) => setTimeout(resolve, 100)) : undefined,
    });
    receiver.start();
    await waitFor(() => receiver.connected, 'the bind');
    await postReplies(
      s,
      Array.from({ length: 5 }, (_, i) => ({ from: FROM, text: `T${i}` })),
    );
    await acknowledged(s, 5);
    expect(recorded.map((r) => r.text)).toEqual(['T0', 'T1', 'T2', 'T3', 'T4']);
  });

  it('acknowledges delivery receipts without passing them to onReply', async () => {
    const s = await sandbox();
    const { receiver, recorded } = receiverOf(s);
    receiver.start();
    await postReplies(s, [
      { from: FROM, receipt: true, text: 'id:1 sub:001 dlvr:001 stat:DELIVRD err:000 text:' },
      { from: FROM, text: 'No gracias' },
    ]);
    await acknowledged(s, 2);
    expect(recorded.map((r) => r.text)).toEqual(['No gracias']);
    expect(receiver.stats.receipts).toBe(1);
  });

  it('reads long UCS-2 replies from message_payload', async () => {
    const s = await sandbox();
    const { receiver, recorded } = receiverOf(s);
    receiver.start();
    const long = `cancelár ${'ñandú '.repeat(40)}`;
    await postReplies(s, { from: FROM, text: long });
    await waitFor(() => recorded.length === 1, 'the long reply');
    expect(recorded[0]!.text).toBe(long);
  });

  it('an 8,200-character UCS-2 reply (a 16 KiB PDU) and a SALIR queued after it: both recorded, no reconnection', async () => {
    const s = await sandbox();
    const long = `${'á'.repeat(8199)}!`; // á is no GSM 03.38 letter: UCS-2, 16,400 octets
    await postReplies(s, [
      { from: FROM, text: long },
      { from: '573109876543', text: 'SALIR' },
    ]);
    const { receiver, recorded } = receiverOf(s);
    receiver.start();
    await acknowledged(s, 2);
    expect(recorded.map((r) => r.text)).toEqual([long, 'SALIR']);
    expect(receiver.stats.disconnects).toBe(0);
    expect(receiver.stats.binds).toBe(1);
  });

  it('a PDU beyond maxPduBytes is answered with an error status and skipped: the SALIR after it is recorded', async () => {
    const s = await sandbox();
    await postReplies(s, [
      { from: FROM, text: 'x'.repeat(5000) },
      { from: '573109876543', text: 'SALIR' },
    ]);
    const { receiver, recorded, logs } = receiverOf(s, { maxPduBytes: 4096 });
    receiver.start();
    await waitFor(() => recorded.length === 1, 'the SALIR');
    expect(recorded[0]!.text).toBe('SALIR');
    // The server was told for good: the long one is not waiting for another delivery.
    const view = await waitFor(async () => {
      const v = await repliesView(s);
      return v.queued === 0 && v.inflight === 0 ? v : undefined;
    }, 'nothing left to deliver');
    expect(view).toMatchObject({ acknowledged: 1, rejected: 1 });
    expect(view.replies.find((r) => r.state === 'rejected')).toMatchObject({ attempts: 1, refusals: 1 });
    expect(receiver.stats.disconnects).toBe(0);
    expect(receiver.stats.oversize).toBe(1);
    const said = logs.find((l) => l.msg.includes('too large'));
    expect(said?.level).toBe('error');
    expect(said?.obj).toMatchObject({ commandStatus: 0x65, maxPduBytes: 4096 });
  });

  it('keeps its back-off across binds that die at once (no delivery or enquire_link answered)', async () => {
    const s = await sandbox();
    const { receiver, logs } = receiverOf(s, { backoff: { baseMs: 20, maxMs: 5000 }, random: () => 0 });
    receiver.start();
    for (let bind = 1; bind <= 4; bind++) {
      await waitFor(() => receiver.connected && receiver.stats.binds === bind, `bind ${bind}`);
      expect(await dropSmpp(s, 'destroy')).toBe(1);
    }
    await waitFor(
      () => logs.filter((l) => l.msg.startsWith('SMPP connection lost')).length === 4,
      'four losses',
    );
    const waits = logs.filter((l) => l.msg.startsWith('SMPP connection lost')).map((l) => l.obj.retryInMs);
    // Ceilings 20, 40, 80, 160 ms, the lower half of each (random 0): not 10 ms after every bind.
    expect(waits).toEqual([10, 20, 40, 80]);
  });

  it('binds over TLS, checking the server certificate', async () => {
    const { key, cert } = testCertificate();
    const s = await sandbox({ tls: { key, cert } });
    const { receiver, recorded } = receiverOf(s, { tls: { ca: cert } });
    receiver.start();
    await waitFor(() => receiver.connected, 'the bind over TLS');
    await postReplies(s, { from: FROM, text: 'Salir.' });
    await waitFor(() => recorded.length === 1, 'the reply over TLS');

    // A certificate it cannot check: no bind, retried.
    const untrusting = receiverOf(s, { tls: true });
    untrusting.receiver.start();
    await waitFor(() => untrusting.receiver.stats.disconnects >= 2, 'two failed TLS connections');
    expect(untrusting.receiver.stats.binds).toBe(0);
    expect(untrusting.logs.some((l: LogLine) => l.msg === 'SMPP connection failed: retrying')).toBe(true);
  });

  it('retries a refused connection, and stops while waiting', async () => {
    const port = await closedPort();
    const s = await sandbox();
    const { receiver, logs } = receiverOf(s, { port });
    receiver.start();
    await waitFor(() => receiver.stats.connections >= 3, 'three connection attempts');
    expect(logs.some((l) => l.level === 'warn' && l.obj.reason === 'ECONNREFUSED')).toBe(true);
    await receiver.stop();
    expect(receiver.state).toBe('stopped');
    const attempts = receiver.stats.connections;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.stats.connections).toBe(attempts);
  });
});

describe('backoffDelay', () => {
  it('doubles its ceiling from baseMs up to maxMs and draws from the upper half', () => {
    const low = () => 0;
    const high = () => 0.999_999;
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(n, 1000, 60_000, low))).toEqual([
      500, 1000, 2000, 4000, 8000, 16_000, 30_000,
    ]);
    expect([1, 2, 7, 50, 10_000].map((n) => backoffDelay(n, 1000, 60_000, high))).toEqual([
      1000, 2000, 60_000, 60_000, 60_000,
    ]);
  });
});
