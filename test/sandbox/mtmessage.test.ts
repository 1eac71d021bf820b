// The sandbox's POST /mtmessage (docs/sandbox.md "POST /mtmessage"): Bearer or Basic, Types 1 and 2, SMS
// or RCS, business rejections as Status 1, and every accepted device's notification to the account
// webhook (Basic, or a token in its URL), bulkId empty, CustomMessageId and CallbackData back.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../../src/sandbox/ledger.ts';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/server.ts';
import { getJson, postJson, waitFor } from '../service/helpers.ts';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

interface Received {
  url: string;
  headers: IncomingHttpHeaders;
  body: { results: Record<string, unknown>[] };
}

/** A receiver that answers 200 and keeps what it got. */
async function receiver(): Promise<{ url: string; got: Received[] }> {
  const got: Received[] = [];
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (b: Buffer) => {
      text += b;
    });
    req.on('end', () => {
      got.push({ url: req.url ?? '', headers: req.headers, body: JSON.parse(text) });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  open.push({ close: () => new Promise<void>((r) => server.close(() => r())) });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got };
}

async function sandboxWith(accounts: SandboxOptions['accounts']): Promise<Sandbox> {
  const s = await startSandbox({ timeScale: 0.001, deliveryDelayMs: 10, accounts });
  open.push(s);
  return s;
}

const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

async function bearer(s: Sandbox, user: string, password: string): Promise<string> {
  const r = await postJson(
    `${s.url}/token`,
    { grant_type: 'password' },
    { authorization: basic(user, password) },
  );
  return `Bearer ${(r.body as { access_token: string }).access_token}`;
}

const ledger = async (s: Sandbox) =>
  (await getJson<{ entries: LedgerEntry[] }>(`${s.url}/_sandbox/ledger`)).entries.map((e) => [
    e.bulkId,
    e.messageId,
    e.to,
    e.text,
  ]);

describe('POST /mtmessage', () => {
  it('Type 1 with a Bearer token: every device sent, each notified to the account webhook with its Basic credentials', async () => {
    const hook = await receiver();
    const s = await sandboxWith([
      {
        username: 'demo',
        password: 'demo',
        webhook: { url: `${hook.url}/hook`, username: 'recv', password: 'clave-recv' },
      },
    ]);
    const r = await postJson(
      `${s.url}/mtmessage`,
      {
        Type: 1,
        Devices: '573001234567-573109876543',
        MessageText: 'Hola',
        CustomMessageId: 'f1-3',
        CallbackData: { file: 'f1', line: 3 },
      },
      { authorization: await bearer(s, 'demo', 'demo') },
    );
    expect(r.status).toBe(200);
    const answer = r.body as { TransactionNumber: string; Status: number; MessageText: string };
    expect(answer).toMatchObject({ Status: 0, MessageText: '' });
    expect(answer.TransactionNumber).toMatch(/^\d{28}$/);
    expect(await ledger(s)).toEqual([
      ['', 'f1-3', '573001234567', 'Hola'],
      ['', 'f1-3', '573109876543', 'Hola'],
    ]);
    await waitFor(() => hook.got.length === 2, 'two notifications');
    for (const n of hook.got) {
      expect(n.url).toBe('/hook');
      expect(n.headers.authorization).toBe(basic('recv', 'clave-recv'));
      expect(n.body.results).toHaveLength(1);
      expect(n.body.results[0]).toMatchObject({
        bulkId: '',
        messageId: 'f1-3',
        callbackData: '{"file":"f1","line":3}',
        transactionNumber: answer.TransactionNumber,
        smsCount: 1,
        status: { name: 'DELIVERED_TO_HANDSET' },
      });
    }
    expect(hook.got.map((n) => n.body.results[0]!.to).sort()).toEqual(['573001234567', '573109876543']);
  });

  it('Type 2 with Basic credentials: each device its own text; a webhook registered later, its token in the URL', async () => {
    const hook = await receiver();
    const s = await sandboxWith([{ username: 'demo', password: 'demo' }]);
    const set = await postJson(`${s.url}/_sandbox/webhooks`, {
      account: 'demo',
      url: `${hook.url}/hook?token=secreto`,
    });
    expect(set.status).toBe(200);
    expect(JSON.stringify(set.body)).not.toContain('secreto');
    const r = await postJson(
      `${s.url}/mtmessage`,
      {
        Type: 2,
        Devices: '573001234567-573109876543',
        MessagePattern: 'Hola {0}, su saldo es {1}',
        MessageData: [
          ['Ana', '$1'],
          ['Luis', '$2'],
        ],
        Channel: 'RCS',
      },
      { authorization: basic('demo', 'demo') },
    );
    expect((r.body as { Status: number }).Status).toBe(0);
    expect(await ledger(s)).toEqual([
      ['', '', '573001234567', 'Hola Ana, su saldo es $1'],
      ['', '', '573109876543', 'Hola Luis, su saldo es $2'],
    ]);
    await waitFor(() => hook.got.length === 2, 'two notifications');
    expect(
      hook.got.every((n) => n.url === '/hook?token=secreto' && n.headers.authorization === undefined),
    ).toBe(true);
    // Without CustomMessageId the messageId is empty (docs/sandbox.md "POST /mtmessage").
    expect(hook.got.every((n) => n.body.results[0]!.messageId === '')).toBe(true);
  });

  it('business rejections answer 200 with Status 1 and the reason, and send nothing', async () => {
    const s = await sandboxWith([
      { username: 'demo', password: 'demo' },
      { username: 'norcs', password: 'x', rcs: false },
    ]);
    const send = async (body: unknown, user = 'demo', password = 'demo') =>
      (await postJson(`${s.url}/mtmessage`, body, { authorization: basic(user, password) })).body;
    expect(await send({ Type: 1, Devices: '573001234567-abc', MessageText: 'x' })).toEqual({
      TransactionNumber: '',
      Status: 1,
      MessageText: 'invalid device abc',
    });
    expect(
      await send({ Type: 1, Devices: '573001234567', MessageText: 'x', Channel: 'RCS' }, 'norcs', 'x'),
    ).toMatchObject({ Status: 1, MessageText: 'RCS is not set up for this account' });
    expect(await send({ Type: 3, Devices: '573001234567', TemplateId: 't' })).toMatchObject({ Status: 1 });
    expect(
      await send({
        Type: 2,
        Devices: '573001234567-573109876543',
        MessagePattern: '{0}',
        MessageData: [['a']],
      }),
    ).toMatchObject({ Status: 1 });
    expect(
      await send({ Type: 2, Devices: '573001234567', MessagePattern: '{0} {1}', MessageData: [['a']] }),
    ).toMatchObject({
      Status: 1,
    });
    expect(await send({ Type: 1, Devices: '573001234567' })).toMatchObject({ Status: 1 });
    expect(await ledger(s)).toEqual([]);
  });

  it('401 without valid credentials, 400 for a broken structure, and the faults of the endpoint', async () => {
    const s = await sandboxWith([{ username: 'demo', password: 'demo' }]);
    const ok = { Type: 1, Devices: '573001234567', MessageText: 'x' };
    expect((await postJson(`${s.url}/mtmessage`, ok)).status).toBe(401);
    expect((await postJson(`${s.url}/mtmessage`, ok, { authorization: basic('demo', 'mal') })).status).toBe(
      401,
    );
    expect((await postJson(`${s.url}/mtmessage`, ok, { authorization: 'Bearer inventado' })).status).toBe(
      401,
    );
    const auth = { authorization: basic('demo', 'demo') };
    for (const broken of [
      'not json',
      [],
      { Type: '1', Devices: '573001234567', MessageText: 'x' },
      { ...ok, CallbackData: 'text' },
      { ...ok, Channel: 'WHATSAPP' },
      { ...ok, FlashSMS: true },
      { ...ok, DateMessage: '2026-12-01T09:00' },
    ]) {
      expect((await postJson(`${s.url}/mtmessage`, broken, auth)).status, JSON.stringify(broken)).toBe(400);
    }
    expect(
      (await postJson(`${s.url}/mtmessage`, { ...ok, FlashSMS: 1, DateMessage: '2026-12-01 09:00:00' }, auth))
        .status,
    ).toBe(200);
    expect(
      (await postJson(`${s.url}/_sandbox/faults`, { mtmessage: { '503': { probability: 1, times: 1 } } }))
        .status,
    ).toBe(200);
    expect((await postJson(`${s.url}/mtmessage`, ok, auth)).status).toBe(503);
    expect((await postJson(`${s.url}/mtmessage`, ok, auth)).status).toBe(200);
    // Two acceptances of the same device (no CustomMessageId tells them apart): one entry, twice.
    expect((await getJson<{ accepted: number }>(`${s.url}/_sandbox/ledger`)).accepted).toBe(2);
  });
});
