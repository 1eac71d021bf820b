// The two-way SMS client (src/channels/twoway/client.ts) against the sandbox's POST /momessage
// on loopback: a Bearer token from POST /token, one request a message; Message OK accepted with
// its Id, ERROR rejected with the service's Status, a refused login or a token refused after
// renewals stopping the messages not yet sent, 500/503 retried, a request that may have been
// processed (a gateway's 502/504, a reset after the body was written) in doubt, never resent.
import { describe, expect, it } from 'vitest';
import {
  moMessageAnswer,
  TwoWayClient,
  type TwoWayClientOptions,
  type TwoWayMessage,
} from '../../src/channels/twoway/client.ts';
import type { MoLedgerEntry } from '../../src/sandbox/mo-ledger.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/server.ts';
import { closedAfterEach } from '../helpers/closed-after-each.ts';
import { sandboxLedger, sandboxRequests } from '../helpers/sandbox-views.ts';
import { postJson } from './helpers.ts';

const opened = closedAfterEach();

const PASSWORD = 'clave-dos-vias';
const FAST = { baseMs: 5, maxMs: 20 };

async function sandbox(): Promise<Sandbox> {
  const s = await startSandbox({
    timeScale: 0.001,
    notify: false,
    accounts: [{ username: 'demo', password: PASSWORD, shortCodes: ['890123', '85000'] }],
  });
  return opened(s);
}

function client(s: Sandbox, opts: Partial<TwoWayClientOptions> = {}): TwoWayClient {
  return opened(
    new TwoWayClient({ baseUrl: s.url, username: 'demo', password: PASSWORD, retry: FAST, ...opts }),
  );
}

const messages = (n: number, shortCode = '890123'): TwoWayMessage[] =>
  Array.from({ length: n }, (_, i) => ({
    text: `Responde SI para confirmar tu cita ${i}`,
    phoneNumber: `57300100${String(i).padStart(4, '0')}`,
    shortCode,
  }));

const ledger = async (s: Sandbox) => (await sandboxLedger<MoLedgerEntry>(s.url, 'momessage')).entries;
const requests = (s: Sandbox, endpoint = '/momessage') => sandboxRequests(s.url, endpoint);

describe('TwoWayClient', () => {
  it('one Bearer request a message, each accepted once with its Id as transaction number', async () => {
    const s = await sandbox();
    const r = await client(s).send(messages(4));
    expect(r.requests).toBe(4);
    const entries = await ledger(s);
    expect(entries).toHaveLength(4);
    expect(entries.every((e) => e.count === 1 && e.shortCode === '890123' && e.account === 'demo')).toBe(
      true,
    );
    const idOf = new Map(entries.map((e) => [e.phoneNumber, e.id]));
    expect(r.outcomes).toEqual(
      messages(4).map((m) => ({ kind: 'accepted', messageId: idOf.get(m.phoneNumber) })),
    );
    // One login for the four, and the request log names each one's short code.
    expect(await requests(s, '/token')).toHaveLength(1);
    expect((await requests(s)).map((q) => [q.status, q.shortCode])).toEqual(
      Array.from({ length: 4 }, () => [200, '890123']),
    );
  });

  it("Message ERROR: rejected with the service's Status, not retried, nothing sent", async () => {
    const s = await sandbox();
    const notOurs = messages(1, '55555')[0]!;
    const badNumber = { ...messages(1)[0]!, phoneNumber: '12' };
    const r = await client(s).send([notOurs, badNumber]);
    expect(r.outcomes).toEqual([
      { kind: 'rejected', code: 'DROPLINE_ERR_SERVICE_REJECTED', reason: 'Message ERROR, Status 2' },
      { kind: 'rejected', code: 'DROPLINE_ERR_SERVICE_REJECTED', reason: 'Message ERROR, Status 1' },
    ]);
    expect(r.requests).toBe(2);
    expect(await ledger(s)).toEqual([]);
  });

  it('a 2xx answer without Message OK or ERROR is in doubt; an Id given as a number is kept as text', () => {
    expect(moMessageAnswer({ Id: 12345, Message: 'ok', Status: 0 }, 200, [])).toEqual({
      kind: 'accepted',
      messageId: '12345',
    });
    expect(moMessageAnswer(null, 200, [])).toMatchObject({ kind: 'in_doubt' });
    expect(moMessageAnswer({ Status: 0 }, 200, [])).toMatchObject({ kind: 'in_doubt' });
  });

  it('a refused login: every message unauthorized, the password in no reason, nothing sent', async () => {
    const s = await sandbox();
    const r = await client(s, { password: 'inventada' }).send(messages(3));
    expect(r.outcomes.map((o) => o.kind)).toEqual(['unauthorized', 'unauthorized', 'unauthorized']);
    expect(r.requests).toBe(0);
    expect(JSON.stringify(r)).not.toContain('inventada');
    expect(await ledger(s)).toEqual([]);
  });

  it('401 to a token another login replaced: renewed, and the message sent once', async () => {
    const s = await sandbox();
    await postJson(`${s.url}/_sandbox/faults`, { momessage: { revoke: { probability: 1, times: 1 } } });
    const r = await client(s).send(messages(1));
    expect(r.outcomes[0]?.kind).toBe('accepted');
    expect((await requests(s)).map((q) => q.status)).toEqual([401, 200]);
    // The revoked token's refresh token went with it: a refresh refused, then a login.
    expect((await requests(s, '/token')).map((q) => [q.grant, q.status])).toEqual([
      ['password', 200],
      ['refresh_token', 400],
      ['password', 200],
    ]);
    expect((await ledger(s))[0]?.count).toBe(1);
  });

  it('401 however often the token is renewed: the account is refused, the rest not sent', async () => {
    const s = await sandbox();
    await postJson(`${s.url}/_sandbox/faults`, { momessage: { revoke: 1 } });
    const r = await client(s).send(messages(1));
    expect(r.outcomes[0]).toMatchObject({ kind: 'unauthorized' });
    expect(r.outcomes[0]?.kind === 'unauthorized' && r.outcomes[0].reason).toContain('renewals');
    expect(r.requests).toBe(4);
  });

  it('403: forbidden with the reason, the other messages of the send not sent', async () => {
    const s = await sandbox();
    await postJson(`${s.url}/_sandbox/faults`, { momessage: { '403': { probability: 1, times: 1 } } });
    const r = await client(s).send(messages(1));
    expect(r.outcomes[0]).toMatchObject({ kind: 'forbidden', reason: 'HTTP 403: injected fault 403' });
  });

  it('500 and 503 (declined, not processed) retried with back-off; given up: failed, retryable', async () => {
    const s = await sandbox();
    await postJson(`${s.url}/_sandbox/faults`, {
      momessage: { '500': { probability: 1, times: 1 }, '503': { probability: 1, times: 1 } },
    });
    const r = await client(s).send(messages(1));
    expect(r.outcomes[0]?.kind).toBe('accepted');
    expect((await requests(s)).map((q) => q.status)).toEqual([500, 503, 200]);
    expect((await ledger(s))[0]?.count).toBe(1);
    await postJson(`${s.url}/_sandbox/faults`, { momessage: { '503': 1 } });
    const gaveUp = await client(s, { retry: { baseMs: 1, maxMs: 2, maxAttempts: 3 } }).send(messages(1));
    expect(gaveUp.outcomes[0]).toMatchObject({ kind: 'failed', retryable: true });
    expect(gaveUp.requests).toBe(3);
  });

  it("a 429 on POST /token waits the service's Retry-After, not the back-off", async () => {
    const s = await sandbox();
    await postJson(`${s.url}/_sandbox/faults`, {
      token: { '429': { probability: 1, times: 1, retryAfter: '0' } },
    });
    // A back-off of ten minutes: only the Retry-After lets the message out within the test.
    const patient = client(s, {
      retry: { baseMs: 600_000, maxMs: 600_000, maxAttempts: 5 },
      random: () => 1,
    });
    const r = await patient.send(messages(1));
    expect(r.outcomes[0]?.kind).toBe('accepted');
    expect((await requests(s, '/token')).map((q) => q.status)).toEqual([429, 200]);
  });

  it.each([
    ['502', 'HTTP 502'],
    ['504', 'HTTP 504'],
    ['reset', 'after the request was sent'],
  ])('%s after the body was written: in doubt, sent once', async (fault, reason) => {
    const s = await sandbox();
    await postJson(`${s.url}/_sandbox/faults`, { momessage: { [fault]: { probability: 1, times: 1 } } });
    const r = await client(s).send(messages(1));
    expect(r.outcomes[0]).toMatchObject({ kind: 'in_doubt' });
    expect(r.outcomes[0]!.kind === 'in_doubt' && r.outcomes[0]!.reason).toContain(reason);
    expect(r.requests).toBe(1);
  });

  it('a host that refuses connections: never left, retried, then failed and retryable', async () => {
    // A sandbox closed here, not after the test: its port refuses connections.
    const s = await startSandbox({ timeScale: 0.001, notify: false });
    const url = s.url;
    await s.close();
    const r = await client(s, { baseUrl: url, retry: { baseMs: 1, maxMs: 2, maxAttempts: 2 } }).send(
      messages(1),
    );
    expect(r.outcomes[0]).toMatchObject({
      kind: 'failed',
      code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE',
      retryable: true,
    });
  });
});
