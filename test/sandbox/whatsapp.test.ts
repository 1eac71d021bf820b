// The sandbox's POST /MultiChannelInput/SendMessageMetaWhatsApp (docs/sandbox.md "WhatsApp"): Basic
// only, one approved template to one recipient from one of the account's sending numbers, its
// parameters in the template's count; 200 with a transaction number on receipt, recorded in a
// ledger of its own that counts a message sent twice; the account's rate measured.
import { afterEach, describe, expect, it } from 'vitest';
import type { AccountRate } from '../../src/sandbox/meter.ts';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/server.ts';
import type { WhatsAppLedgerEntry } from '../../src/sandbox/whatsapp.ts';
import { getJson, postJson } from '../service/helpers.ts';

const PATH = '/MultiChannelInput/SendMessageMetaWhatsApp';
const open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function sandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  const s = await startSandbox({ timeScale: 0.001, notify: false, ...opts });
  open.push(s);
  return s;
}

const basic = (u: string, p: string) => ({
  authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`,
});
const message = (over: Record<string, unknown> = {}) => ({
  source: '573001112233',
  destination: '573109876543',
  templateId: 'factura',
  parameters: ['Ana', '$120.000'],
  ...over,
});

describe('POST /MultiChannelInput/SendMessageMetaWhatsApp', () => {
  it('the default account sends an approved template: 200 with a transaction number, in the ledger once', async () => {
    const s = await sandbox();
    const r = await postJson(`${s.url}${PATH}`, message(), basic('demo', 'demo'));
    expect(r.status).toBe(200);
    expect((r.body as { transactionNumber: string }).transactionNumber).toMatch(/^\d{28}$/);
    // The same message again is accepted (the service does not deduplicate) and counted twice.
    await postJson(`${s.url}${PATH}`, message(), basic('demo', 'demo'));
    await postJson(`${s.url}${PATH}`, message({ destination: '573001234567' }), basic('demo', 'demo'));
    const ledger = await getJson<{ accepted: number; duplicates: number; entries: WhatsAppLedgerEntry[] }>(
      `${s.url}/_sandbox/whatsapp/ledger`,
    );
    expect(ledger).toMatchObject({ accepted: 3, duplicates: 1 });
    expect(ledger.entries.map((e) => [e.destination, e.templateId, e.parameters, e.count])).toEqual([
      ['573109876543', 'factura', ['Ana', '$120.000'], 2],
      ['573001234567', 'factura', ['Ana', '$120.000'], 1],
    ]);
    const rates = await getJson<{ accounts: Record<string, AccountRate> }>(`${s.url}/_sandbox/rates`);
    expect(rates.accounts['whatsapp:demo']?.destinations).toBe(3);
  });

  it('Basic only: 401 without it, with a wrong password or with a Bearer token; 403 for an account without WhatsApp', async () => {
    const s = await sandbox({
      accounts: [
        {
          username: 'demo',
          password: 'demo',
          whatsapp: { numbers: ['573001112233'], templates: { hola: 0 } },
        },
        { username: 'solo-sms', password: 'x' },
      ],
    });
    expect((await postJson(`${s.url}${PATH}`, message())).status).toBe(401);
    expect((await postJson(`${s.url}${PATH}`, message(), basic('demo', 'mal'))).status).toBe(401);
    expect((await postJson(`${s.url}${PATH}`, message(), { authorization: 'Bearer x' })).status).toBe(401);
    const forbidden = await postJson(`${s.url}${PATH}`, message(), basic('solo-sms', 'x'));
    expect(forbidden).toMatchObject({
      status: 403,
      body: { message: 'WhatsApp is not enabled for this account' },
    });
    const hola = await postJson(
      `${s.url}${PATH}`,
      message({ templateId: 'hola', parameters: [] }),
      basic('demo', 'demo'),
    );
    expect(hola.status).toBe(200);
  });

  it('400 with the reason for a message the account cannot send, and nothing recorded', async () => {
    const s = await sandbox();
    const reasons: string[] = [];
    for (const bad of [
      message({ source: '573009999999' }),
      message({ destination: '+57 310' }),
      message({ templateId: 'promo' }),
      message({ parameters: ['Ana'] }),
      message({ parameters: 'Ana' }),
      message({ templateId: '' }),
      'not json',
    ]) {
      const r = await postJson(`${s.url}${PATH}`, bad, basic('demo', 'demo'));
      expect(r.status, JSON.stringify(bad)).toBe(400);
      reasons.push((r.body as { message: string }).message);
    }
    expect(reasons.slice(0, 4)).toEqual([
      'source 573009999999 is not a sending number of this account',
      'destination +57 310 is not a number of 8 to 15 digits',
      'template promo is not an approved template of this account',
      'template factura takes 2 parameter(s), 1 given',
    ]);
    expect((await getJson<{ accepted: number }>(`${s.url}/_sandbox/whatsapp/ledger`)).accepted).toBe(0);
  });

  it('faults of the endpoint: a 503 once, then receipt', async () => {
    const s = await sandbox();
    await postJson(`${s.url}/_sandbox/faults`, { whatsapp: { '503': { probability: 1, times: 1 } } });
    expect((await postJson(`${s.url}${PATH}`, message(), basic('demo', 'demo'))).status).toBe(503);
    expect((await postJson(`${s.url}${PATH}`, message(), basic('demo', 'demo'))).status).toBe(200);
  });
});
