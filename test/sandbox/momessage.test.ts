// The sandbox's POST /momessage (docs/sandbox.md "POST /momessage"): Bearer only, one message to one number from a
// short code of the account; `Message` OK with an Id, or ERROR with the sandbox's Status;
// 400 for a broken body; recorded in its ledger and the request log with its short code; a
// massive message's shortCode checked against the same short codes; a reply posted without
// `to` goes to the short code that last wrote to its sender.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readAccountsFile } from '../../src/sandbox/accounts-file.ts';
import type { MoLedgerEntry } from '../../src/sandbox/mo-ledger.ts';
import {
  type RequestRecord,
  type Sandbox,
  type SandboxOptions,
  startSandbox,
} from '../../src/sandbox/server.ts';
import type { SmppServerView } from '../../src/sandbox/smpp.ts';
import { getJson, postJson } from '../service/helpers.ts';

const open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function sandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  const s = await startSandbox({
    timeScale: 0.001,
    notify: false,
    accounts: [
      { username: 'demo', password: 'demo', shortCodes: ['890123'] },
      { username: 'otra', password: 'otra' },
    ],
    ...opts,
  });
  open.push(s);
  return s;
}

async function bearer(s: Sandbox, username = 'demo'): Promise<Record<string, string>> {
  const r = await postJson(
    `${s.url}/token`,
    { grant_type: 'password' },
    { authorization: `Basic ${Buffer.from(`${username}:${username}`).toString('base64')}` },
  );
  return { authorization: `Bearer ${(r.body as { access_token: string }).access_token}` };
}

const message = (over: Record<string, unknown> = {}) => ({
  MessageText: 'Responde SI para confirmar',
  PhoneNumber: '573109876543',
  ShortCode: '890123',
  ...over,
});

const ledger = async (s: Sandbox) =>
  await getJson<{ entries: MoLedgerEntry[]; duplicates: number }>(`${s.url}/_sandbox/momessage/ledger`);
const requests = async (s: Sandbox, endpoint: string) =>
  (await getJson<{ requests: RequestRecord[] }>(`${s.url}/_sandbox/requests`)).requests.filter(
    (r) => r.endpoint === endpoint,
  );

describe('POST /momessage', () => {
  it('OK with a 28-digit Id, in the ledger once (twice counted a duplicate), logged with its short code', async () => {
    const s = await sandbox();
    const auth = await bearer(s);
    const r = await postJson(`${s.url}/momessage`, message(), auth);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ Message: 'OK', Status: 0 });
    expect((r.body as { Id: string }).Id).toMatch(/^\d{28}$/);
    await postJson(`${s.url}/momessage`, message(), auth);
    const l = await ledger(s);
    expect(l.entries).toMatchObject([
      { account: 'demo', shortCode: '890123', phoneNumber: '573109876543', count: 2 },
    ]);
    expect(l.duplicates).toBe(1);
    expect((await requests(s, '/momessage')).map((q) => [q.status, q.account, q.shortCode])).toEqual([
      [200, 'demo', '890123'],
      [200, 'demo', '890123'],
    ]);
  });

  it.each([
    ['a number that is not one', { PhoneNumber: '57310' }, 1],
    ['a Colombian number without 12 digits', { PhoneNumber: '5731098765' }, 1],
    ['a short code not the account', { ShortCode: '85000' }, 2],
    ['no short code', { ShortCode: undefined }, 2],
    ['an empty text', { MessageText: '  ' }, 3],
  ])('%s: ERROR with the sandbox Status for it, nothing recorded', async (_what, over, status) => {
    const s = await sandbox();
    const r = await postJson(`${s.url}/momessage`, message(over), await bearer(s));
    expect(r).toMatchObject({ status: 200, body: { Id: '', Message: 'ERROR', Status: status } });
    expect((await ledger(s)).entries).toEqual([]);
  });

  it('400 for a body that is not an object or a field that is not text; 401 without a valid Bearer', async () => {
    const s = await sandbox();
    const auth = await bearer(s);
    expect((await postJson(`${s.url}/momessage`, '[1]', auth)).status).toBe(400);
    expect((await postJson(`${s.url}/momessage`, 'no', auth)).status).toBe(400);
    expect((await postJson(`${s.url}/momessage`, message({ PhoneNumber: 573109876543 }), auth)).status).toBe(
      400,
    );
    expect((await postJson(`${s.url}/momessage`, message())).status).toBe(401);
    const basic = { authorization: `Basic ${Buffer.from('demo:demo').toString('base64')}` };
    expect((await postJson(`${s.url}/momessage`, message(), basic)).status).toBe(401);
    expect((await ledger(s)).entries).toEqual([]);
  });

  it('every account has 85000 unless it names its short codes; --accounts reads shortCodes', async () => {
    const s = await sandbox();
    const r = await postJson(`${s.url}/momessage`, message({ ShortCode: '85000' }), await bearer(s, 'otra'));
    expect(r.body).toMatchObject({ Message: 'OK' });
    const dir = await mkdtemp(join(tmpdir(), 'dropline-mo-'));
    try {
      const file = join(dir, 'accounts.json');
      await writeFile(file, JSON.stringify([{ username: 'a', password: 'b', shortCodes: ['890123'] }]));
      expect(readAccountsFile(file)).toEqual([{ username: 'a', password: 'b', shortCodes: ['890123'] }]);
      await writeFile(file, JSON.stringify([{ username: 'a', password: 'b', shortCodes: [] }]));
      expect(() => readAccountsFile(file)).toThrow('account 0: shortCodes must be a non-empty array of text');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a massive message's shortCode: one of the account's, logged; another is 400", async () => {
    const s = await sandbox();
    const auth = await bearer(s);
    const batch = (shortCode: unknown) => ({
      bulkId: 'b1',
      messages: [{ destinations: [{ to: '573109876543', messageId: 'm1' }], text: 'Hola', shortCode }],
    });
    expect((await postJson(`${s.url}/mtmessage/massive`, batch(890123), auth)).status).toBe(200);
    const foreign = await postJson(`${s.url}/mtmessage/massive`, batch('85000'), auth);
    expect(foreign).toMatchObject({
      status: 400,
      body: { message: 'shortCode 85000 is not a short code of this account' },
    });
    expect((await postJson(`${s.url}/mtmessage/massive`, batch('8'), auth)).status).toBe(400);
    expect((await requests(s, '/mtmessage/massive')).map((q) => [q.status, q.shortCode])).toEqual([
      [200, '890123'],
      [400, '85000'],
      [400, undefined],
    ]);
  });

  it('a reply without `to` answers the short code that last wrote to its sender, for its account', async () => {
    const s = await sandbox({ smpp: {} });
    await postJson(`${s.url}/momessage`, message(), await bearer(s));
    const posted = await postJson(`${s.url}/_sandbox/replies`, [
      { from: '+573109876543', text: 'SI' },
      { from: '573000000001', text: 'Hola' },
    ]);
    expect(posted.status).toBe(202);
    const view = await getJson<SmppServerView>(`${s.url}/_sandbox/replies`);
    expect(view.replies.map((r) => [r.from, r.to, r.account])).toEqual([
      ['+573109876543', '890123', 'demo'],
      ['573000000001', '85000', null],
    ]);
  });

  it('faults: momessage takes them as the other endpoints (503 then accepted, reset after taking it)', async () => {
    const s = await sandbox();
    const auth = await bearer(s);
    await postJson(`${s.url}/_sandbox/faults`, { momessage: { '503': { probability: 1, times: 1 } } });
    expect((await postJson(`${s.url}/momessage`, message(), auth)).status).toBe(503);
    expect((await postJson(`${s.url}/momessage`, message(), auth)).status).toBe(200);
    await postJson(`${s.url}/_sandbox/faults`, { momessage: { reset: { probability: 1, times: 1 } } });
    await expect(postJson(`${s.url}/momessage`, message(), auth)).rejects.toThrow();
    expect((await ledger(s)).entries[0]?.count).toBe(2);
  });
});
