// The WhatsApp client (src/channels/whatsapp/client.ts) against the sandbox's WhatsApp endpoint on
// loopback: one request a message with Basic credentials, the transaction number of each 200,
// 400 rejected with the service's reason, 401/403 stopping the messages not yet sent, 5xx
// retried, a request written without an answer in doubt and never sent again.
import { describe, expect, it } from 'vitest';
import {
  WhatsAppClient,
  type WhatsAppClientOptions,
  type WhatsAppMessage,
} from '../../src/channels/whatsapp/client.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/server.ts';
import type { WhatsAppLedgerEntry } from '../../src/sandbox/whatsapp.ts';
import { closedAfterEach } from '../helpers/closed-after-each.ts';
import { sandboxLedger, sandboxRequests } from '../helpers/sandbox-views.ts';
import { postJson } from './helpers.ts';

const opened = closedAfterEach();

const PASSWORD = 'clave-wa-secreta';
const FAST = { baseMs: 5, maxMs: 20 };
const FROM = '573001112233';

async function sandbox(): Promise<Sandbox> {
  const s = await startSandbox({
    timeScale: 0.001,
    notify: false,
    accounts: [
      { username: 'demo', password: PASSWORD, whatsapp: { numbers: [FROM], templates: { factura: 2 } } },
      { username: 'sinwa', password: 'x' },
    ],
  });
  return opened(s);
}

function client(s: Sandbox, opts: Partial<WhatsAppClientOptions> = {}): WhatsAppClient {
  return opened(
    new WhatsAppClient({ baseUrl: s.url, username: 'demo', password: PASSWORD, retry: FAST, ...opts }),
  );
}

const messages = (n: number, templateId = 'factura'): WhatsAppMessage[] =>
  Array.from({ length: n }, (_, i) => ({
    source: FROM,
    destination: `57300100${String(i).padStart(4, '0')}`,
    templateId,
    parameters: [`Cliente ${i}`, `$${i}`],
  }));

const ledger = async (s: Sandbox) => (await sandboxLedger<WhatsAppLedgerEntry>(s.url, 'whatsapp')).entries;
const requests = (s: Sandbox) => sandboxRequests(s.url, '/MultiChannelInput/SendMessageMetaWhatsApp');

describe('WhatsAppClient', () => {
  it('one request a message; each accepted once with its parameters and its transaction number', async () => {
    const s = await sandbox();
    const r = await client(s).send(messages(5));
    expect(r.requests).toBe(5);
    const entries = await ledger(s);
    expect(entries).toHaveLength(5);
    expect(entries.every((e) => e.count === 1 && e.source === FROM)).toBe(true);
    expect(entries.find((e) => e.destination === '573001000003')?.parameters).toEqual(['Cliente 3', '$3']);
    // Each outcome carries the transaction number the sandbox gave that message.
    const byDestination = new Map(entries.map((e) => [e.destination, e.transactionNumber]));
    expect(r.outcomes.map((o) => (o.kind === 'accepted' ? o.messageId : o.kind))).toEqual(
      messages(5).map((m) => byDestination.get(m.destination)),
    );
  });

  it("400 (a template not approved, a wrong parameter count): rejected with the service's reason, not retried", async () => {
    const s = await sandbox();
    const wrongCount = { ...messages(1)[0]!, parameters: ['solo uno'] };
    const r = await client(s).send([...messages(1, 'promo'), wrongCount]);
    expect(r.outcomes).toMatchObject([
      { kind: 'rejected', code: 'DROPLINE_ERR_SERVICE_REJECTED' },
      { kind: 'rejected', code: 'DROPLINE_ERR_SERVICE_REJECTED' },
    ]);
    expect(r.outcomes[0]?.kind === 'rejected' && r.outcomes[0].reason).toContain('not an approved template');
    expect(r.outcomes[1]?.kind === 'rejected' && r.outcomes[1].reason).toContain(
      'takes 2 parameter(s), 1 given',
    );
    expect(r.requests).toBe(2);
    expect(await ledger(s)).toEqual([]);
  });

  it('401 and 403: each message refused with the reason, the password never in it, nothing sent', async () => {
    const s = await sandbox();
    const wrong = await client(s, { password: 'inventada' }).send(messages(2));
    expect(wrong.outcomes.map((o) => o.kind)).toEqual(['unauthorized', 'unauthorized']);
    expect(JSON.stringify(wrong)).not.toContain('inventada');
    const noWhatsApp = await client(s, { username: 'sinwa', password: 'x' }).send(messages(1));
    expect(noWhatsApp.outcomes[0]).toMatchObject({ kind: 'forbidden' });
    expect(noWhatsApp.outcomes[0]?.kind === 'forbidden' && noWhatsApp.outcomes[0].reason).toContain(
      'WhatsApp is not enabled',
    );
    expect(await ledger(s)).toEqual([]);
  });

  it.each([502, 504])('%i (a gateway) after the request was written: in doubt, sent once', async (status) => {
    const s = await sandbox();
    await postJson(`${s.url}/_sandbox/faults`, { whatsapp: { [status]: { probability: 1, times: 1 } } });
    const r = await client(s).send(messages(1));
    expect(r.outcomes[0]).toMatchObject({ kind: 'in_doubt' });
    expect(r.outcomes[0]!.kind === 'in_doubt' && r.outcomes[0]!.reason).toContain(`HTTP ${status}`);
    expect(r.requests).toBe(1);
  });

  it('5xx retried with back-off; a request written without an answer is in doubt, not sent again', async () => {
    const s = await sandbox();
    await postJson(`${s.url}/_sandbox/faults`, { whatsapp: { '503': { probability: 1, times: 2 } } });
    const r = await client(s).send(messages(1));
    expect(r.outcomes[0]?.kind).toBe('accepted');
    expect((await requests(s)).map((q) => q.status)).toEqual([503, 503, 200]);
    await postJson(`${s.url}/_sandbox/faults`, { whatsapp: { '503': 1 } });
    const gaveUp = await client(s, { retry: { baseMs: 1, maxMs: 2, maxAttempts: 3 } }).send(messages(1));
    expect(gaveUp.outcomes[0]).toMatchObject({ kind: 'failed', retryable: true });
    expect(gaveUp.requests).toBe(3);
    await postJson(`${s.url}/_sandbox/faults`, { whatsapp: { reset: { probability: 1, times: 1 } } });
    const reset = await client(s).send(messages(1));
    expect(reset.outcomes[0]?.kind).toBe('in_doubt');
    expect(reset.requests).toBe(1);
  });
});
