// The sandbox's SMPP server for replies (docs/sandbox.md, "SMPP server for replies"): real TCP
// (and TLS) on 127.0.0.1 with the smpp package's own client, nothing mocked. Waits are for
// states, never for durations.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/server.ts';
import {
  bareReceiver,
  bind,
  connectSession,
  dropSmpp,
  type PDU,
  pduText,
  postReplies,
  repliesView,
  request,
  type Session,
  sandboxWithSmpp,
  smpp,
  testCertificate,
} from '../optout/smpp-helpers.ts';
import { postJson, waitFor } from '../service/helpers.ts';

const open: { close(): Promise<void> }[] = [];
const sessions: Session[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) s.destroy();
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function sandbox(...args: Parameters<typeof sandboxWithSmpp>) {
  const s = await sandboxWithSmpp(...args);
  open.push(s);
  return s;
}

async function receiver(...args: Parameters<typeof bareReceiver>) {
  const r = await bareReceiver(...args);
  sessions.push(r.session);
  return r;
}

const FROM = '573001234567';

describe('sandbox SMPP server: binds', () => {
  it('binds a receiver with an account, refuses a wrong password, an unknown System ID and other modes', async () => {
    const s = await sandbox({}, { accounts: [{ username: 'demo', password: 'demo' }] });
    const port = s.smpp.port;

    const ok = await bind(port, 'demo', 'demo');
    sessions.push(ok.session);
    expect(ok.resp.command).toBe('bind_receiver_resp');
    expect(ok.resp.command_status).toBe(0);
    expect(ok.resp.system_id).toBe('dropline-sandbox');
    // A second bind on a bound connection.
    expect(
      (await request(ok.session, 'bind_receiver', { system_id: 'demo', password: 'demo' })).command_status,
    ).toBe(smpp.errors.ESME_RALYBND);

    const wrong = await bind(port, 'demo', 'nope');
    sessions.push(wrong.session);
    expect(wrong.resp.command_status).toBe(smpp.errors.ESME_RINVPASWD);
    const unknown = await bind(port, 'mallory', 'demo');
    sessions.push(unknown.session);
    expect(unknown.resp.command_status).toBe(smpp.errors.ESME_RINVSYSID);
    for (const mode of ['bind_transmitter', 'bind_transceiver'] as const) {
      const other = await bind(port, 'demo', 'demo', mode);
      sessions.push(other.session);
      expect(other.resp.command).toBe(`${mode}_resp`);
      expect(other.resp.command_status).toBe(smpp.errors.ESME_RINVBNDSTS);
    }

    const view = await repliesView(s);
    expect(view.binds).toEqual({ accepted: 1, refused: 4 });
    expect(view.sessions.filter((x) => x.bound)).toEqual([expect.objectContaining({ account: 'demo' })]);
  });

  it('answers enquire_link, before and after a bind, and unbind', async () => {
    const s = await sandbox();
    const session = await connectSession(s.smpp.port);
    sessions.push(session);
    const before = await request(session, 'enquire_link');
    expect(before.command).toBe('enquire_link_resp');
    expect(before.command_status).toBe(0);
    // A request a receiver may not make, before a bind.
    expect(
      (await request(session, 'submit_sm', { destination_addr: FROM, short_message: 'x' })).command_status,
    ).toBe(smpp.errors.ESME_RINVBNDSTS);
    expect(
      (await request(session, 'bind_receiver', { system_id: 'demo', password: 'demo' })).command_status,
    ).toBe(0);
    expect((await request(session, 'enquire_link')).command_status).toBe(0);
    expect((await repliesView(s)).enquireLinks).toBe(2);

    const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
    expect((await request(session, 'unbind')).command).toBe('unbind_resp');
    await closed;
    await waitFor(
      async () => (await repliesView(s)).sessions.length === 0,
      'the server to forget the session',
    );
  });
});

describe('sandbox SMPP server: replies', () => {
  it('delivers replies posted before and after a bind as deliver_sm, acknowledged once answered', async () => {
    const s = await sandbox();
    const early = await postReplies(s, { from: FROM, text: 'SALIR' });
    expect(early.queued).toBe(1);
    expect((await repliesView(s)).queued).toBe(1);

    const r = await receiver(s.smpp.port);
    await waitFor(() => r.delivered.length === 1, 'the reply posted before the bind');
    const late = await postReplies(s, [
      { from: '573109876543', to: '899', text: 'Hola' },
      { from: FROM, text: 'baja' },
    ]);
    expect(late.queued).toBe(2);
    await waitFor(() => r.delivered.length === 3, 'the replies posted after the bind');

    const [first, second, third] = r.delivered as [PDU, PDU, PDU];
    expect(first).toMatchObject({
      source_addr: FROM,
      destination_addr: '85000',
      esm_class: 0,
      data_coding: 0,
      receipted_message_id: early.ids[0],
    });
    expect(pduText(first)).toBe('SALIR');
    expect(second).toMatchObject({ source_addr: '573109876543', destination_addr: '899', data_coding: 0 });
    expect(pduText(second)).toBe('Hola');
    expect(pduText(third)).toBe('baja');

    const view = await waitFor(async () => {
      const v = await repliesView(s);
      return v.acknowledged === 3 ? v : undefined;
    }, 'three acknowledged');
    expect(view).toMatchObject({ queued: 0, inflight: 0 });
    expect(view.replies.map((x) => [x.text, x.state, x.attempts])).toEqual([
      ['SALIR', 'acknowledged', 1],
      ['Hola', 'acknowledged', 1],
      ['baja', 'acknowledged', 1],
    ]);
  });

  it('sends UCS-2 (data_coding 8) for text outside GSM-7, in message_payload past 254 octets', async () => {
    const s = await sandbox();
    const r = await receiver(s.smpp.port);
    const long = `Sí, ${'ñandú '.repeat(40)}`;
    await postReplies(s, [
      { from: FROM, text: 'Sí, SALIR ñandú' },
      { from: FROM, text: long },
      { from: FROM, text: 'Ñoño @ 5€ {x}' }, // GSM-7, with its extension table
    ]);
    await waitFor(() => r.delivered.length === 3, 'three deliveries');
    const [ucs2, payload, gsm] = r.delivered as [PDU, PDU, PDU];
    expect(ucs2.data_coding).toBe(8);
    expect(pduText(ucs2)).toBe('Sí, SALIR ñandú');
    expect(payload.data_coding).toBe(8);
    expect((payload.short_message as { message: string }).message).toBe('');
    expect(pduText(payload)).toBe(long);
    expect(gsm.data_coding).toBe(0);
    expect(pduText(gsm)).toBe('Ñoño @ 5€ {x}');
  });

  it('delivers a reply for an account only to a receiver of that account', async () => {
    const s = await sandbox(
      {},
      {
        accounts: [
          { username: 'demo', password: 'demo' },
          { username: 'beta', password: 'b' },
        ],
      },
    );
    const demo = await receiver(s.smpp.port);
    await postReplies(s, [
      { from: FROM, text: 'for beta', account: 'beta' },
      { from: FROM, text: 'for anyone' },
    ]);
    await waitFor(() => demo.delivered.length === 1, 'the reply for anyone');
    expect(pduText(demo.delivered[0]!)).toBe('for anyone');
    const beta = await receiver(s.smpp.port, () => 0, 'beta', 'b');
    await waitFor(() => beta.delivered.length === 1, 'the reply for beta');
    expect(pduText(beta.delivered[0]!)).toBe('for beta');
    expect(demo.delivered).toHaveLength(1);
  });

  it('redelivers a deliver_sm left unanswered, or answered with an error', async () => {
    const s = await sandbox({ redeliveryMs: 1000 });
    // First delivery: no answer; second: ESME_RX_T_APPN; third: taken.
    const r = await receiver(s.smpp.port, (_pdu, i) => (i === 0 ? null : i === 1 ? 0x64 : 0));
    const { ids } = await postReplies(s, { from: FROM, text: 'SALIR' });
    const view = await waitFor(async () => {
      const v = await repliesView(s);
      return v.acknowledged === 1 ? v : undefined;
    }, 'the reply acknowledged at its third delivery');
    expect(r.delivered.map((p) => p.receipted_message_id)).toEqual([ids[0], ids[0], ids[0]]);
    expect(r.delivered.map(pduText)).toEqual(['SALIR', 'SALIR', 'SALIR']);
    // unanswered 1 and refusals 1, unless the error answer took longer than redeliveryMs to arrive.
    expect(view.replies[0]).toMatchObject({ state: 'acknowledged', attempts: 3 });
    expect(view.replies[0]!.unanswered).toBeGreaterThanOrEqual(1);
    expect(view.replies[0]!.unanswered + view.replies[0]!.refusals).toBe(2);
  });

  it('keeps what a dropped connection left unanswered for the next bind', async () => {
    const s = await sandbox({ redeliveryMs: 60_000 });
    const first = await receiver(s.smpp.port, () => null);
    await postReplies(s, [
      { from: FROM, text: 'uno' },
      { from: FROM, text: 'dos' },
    ]);
    await waitFor(() => first.delivered.length === 2, 'two unanswered deliveries');
    expect((await repliesView(s)).inflight).toBe(2);
    first.session.destroy();
    await waitFor(async () => (await repliesView(s)).queued === 2, 'both queued again');

    const second = await receiver(s.smpp.port);
    await waitFor(
      async () => (await repliesView(s)).acknowledged === 2,
      'both acknowledged on the next bind',
    );
    expect(second.delivered.map(pduText).sort()).toEqual(['dos', 'uno']);
  });

  it('sends delivery receipts with esm_class 0x04 when asked', async () => {
    const s = await sandbox();
    const r = await receiver(s.smpp.port);
    await postReplies(s, { from: FROM, receipt: true, text: 'id:1 sub:001 dlvr:001 stat:DELIVRD err:000' });
    await waitFor(() => r.delivered.length === 1, 'the receipt');
    expect(r.delivered[0]).toMatchObject({ esm_class: 0x04, message_state: 2 });
  });

  it('drops every connection on POST /_sandbox/smpp/drop (at once, or by unbind)', async () => {
    const s = await sandbox();
    const a = await receiver(s.smpp.port);
    const b = await receiver(s.smpp.port);
    expect(await dropSmpp(s)).toBe(2);
    await Promise.all([a.closed, b.closed]);

    const c = await receiver(s.smpp.port);
    const unbound = new Promise<PDU>((resolve) =>
      c.session.once('unbind', (pdu: PDU) => {
        c.session.send(pdu.response());
        resolve(pdu);
      }),
    );
    expect(await dropSmpp(s, 'unbind')).toBe(1);
    await unbound;
    await c.closed;
    await waitFor(async () => (await repliesView(s)).sessions.length === 0, 'no session left');
    expect((await postJson(`${s.url}/_sandbox/smpp/drop`, { how: 'gently' })).status).toBe(400);
  });

  it('answers 400 for a bad reply, 404 without an SMPP server; reset forgets the replies', async () => {
    const s = await sandbox();
    for (const body of [
      {},
      [],
      { from: '57300 1234567', text: 'x' },
      { from: FROM },
      { from: FROM, text: '' },
      { from: FROM, text: 'x', account: 'nobody' },
      { from: FROM, text: 'x', to: 'a b' },
      [{ from: FROM, text: 'ok' }, { from: 'x' }],
    ]) {
      const res = await postJson(`${s.url}/_sandbox/replies`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect((await postJson(`${s.url}/_sandbox/replies`, '{')).status).toBe(400);
    // Nothing of a refused batch was queued.
    expect((await repliesView(s)).queued).toBe(0);

    await postReplies(s, { from: FROM, text: 'x' });
    expect((await repliesView(s)).queued).toBe(1);
    await postJson(`${s.url}/_sandbox/reset`, {});
    expect((await repliesView(s)).replies).toEqual([]);

    const plain = await startSandbox({ notify: false });
    open.push(plain);
    expect(plain.smpp).toBeNull();
    expect((await postJson(`${plain.url}/_sandbox/replies`, { from: FROM, text: 'x' })).status).toBe(404);
  });

  it('speaks TLS when given a key and certificate', async () => {
    const { key, cert } = testCertificate();
    const s = await sandbox({ tls: { key, cert } });
    expect(s.smpp.url).toMatch(/^ssmpp:\/\/127\.0\.0\.1:\d+$/);
    const { session, resp } = await bind(s.smpp.port, 'demo', 'demo', 'bind_receiver', { ca: cert });
    sessions.push(session);
    expect(resp.command_status).toBe(0);
    const got = new Promise<PDU>((resolve) =>
      session.once('deliver_sm', (pdu: PDU) => {
        session.send(pdu.response());
        resolve(pdu);
      }),
    );
    await postReplies(s, { from: FROM, text: 'Sí, SALIR ñandú' });
    expect(pduText(await got)).toBe('Sí, SALIR ñandú');
    await waitFor(async () => (await repliesView(s)).acknowledged === 1, 'acknowledged over TLS');
  });
});

describe('dropline sandbox --smpp-port', () => {
  it('prints the SMPP address on a second line and serves replies there', async () => {
    const main = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');
    const child = spawn(process.execPath, [main, 'sandbox', '--port', '0', '--smpp-port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    const first = (await lines.next()).value as string;
    const second = (await lines.next()).value as string;
    expect(first).toMatch(/^sandbox listening on http:\/\/127\.0\.0\.1:\d+$/);
    expect(second).toMatch(/^sandbox smpp listening on smpp:\/\/127\.0\.0\.1:\d+$/);
    const url = first.slice('sandbox listening on '.length);
    const port = Number(
      new URL(second.slice('sandbox smpp listening on '.length).replace('smpp:', 'http:')).port,
    );

    const r = await receiver(port);
    const res = await postJson(`${url}/_sandbox/replies`, { from: FROM, text: 'STOP' });
    expect(res).toMatchObject({ status: 202, body: { queued: 1 } });
    await waitFor(() => r.delivered.length === 1, 'the reply over the CLI sandbox');
    expect(pduText(r.delivered[0]!)).toBe('STOP');

    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
  });

  it('exits 2 when --smpp-tls-key comes without its certificate', async () => {
    const main = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');
    const child = spawn(process.execPath, [main, 'sandbox', '--smpp-port', '0', '--smpp-tls-key', '/x'], {
      stdio: 'ignore',
    });
    children.push(child);
    expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(2);
  });
});
