// ServiceClient.monitoring() against the real sandbox on 127.0.0.1 (and, for a service that
// echoes the token back, a bare server): the three endpoints at once, the account's own
// token, no send permit, never a rejection, no secret in the result.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openRuntime } from '../../src/app/runtime.ts';
import { loadConfig } from '../../src/config/load.ts';
import { silentLogger } from '../../src/log.ts';
import {
  type RequestRecord,
  type Sandbox,
  type SandboxOptions,
  startSandbox,
} from '../../src/sandbox/server.ts';
import { ServiceClient, type ServiceClientOptions } from '../../src/service/client.ts';
import {
  type AccountHealth,
  MONITORING_TEXT_BYTES,
  type MonitoringEndpoint,
  serviceHealth,
  withoutSecrets,
} from '../../src/service/monitoring.ts';
import type { SharedToken, TokenShare } from '../../src/service/token.ts';
import type { PlannedChunk } from '../../src/service/wire.ts';
import { closedPort, getJson, postJson, startReceiver, waitFor } from './helpers.ts';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  // Clients first: their pools wait for requests in flight to the sandbox.
  for (const o of open.splice(0).reverse()) await o.close();
});

async function sandboxWith(opts: SandboxOptions = {}): Promise<Sandbox> {
  const s = await startSandbox({ timeScale: 0.01, ...opts });
  open.push(s);
  return s;
}

/** A client whose token is visible to the test: kept in a TokenShare, as the store keeps it. */
function clientOf(
  baseUrl: string,
  opts: Partial<ServiceClientOptions> = {},
): { client: ServiceClient; tokens: string[] } {
  const tokens: string[] = [];
  let shared: SharedToken | null = null;
  const share: TokenShare = {
    read: async () => shared,
    claim: async () => true,
    store: async (t) => {
      tokens.push(t.accessToken);
      shared = { ...t, generation: (shared?.generation ?? 0) + 1 };
      return shared;
    },
    release: async () => {},
  };
  const client = new ServiceClient({
    baseUrl,
    username: 'demo',
    password: 'demo',
    retry: { baseMs: 5, maxMs: 20, maxAttempts: 2 },
    tokenShare: share,
    ...opts,
  });
  open.push(client);
  return { client, tokens };
}

const byName = (h: AccountHealth) =>
  Object.fromEntries(h.endpoints.map((e) => [e.name, e])) as Record<
    MonitoringEndpoint['name'],
    MonitoringEndpoint
  >;

async function requests(s: Sandbox): Promise<RequestRecord[]> {
  return (await getJson<{ requests: RequestRecord[] }>(`${s.url}/_sandbox/requests`)).requests;
}

function chunk(bulkId: string, tos: readonly string[]): PlannedChunk {
  return {
    chunkId: bulkId,
    bulkId,
    messages: [{ text: 'hola', destinations: tos.map((to, i) => ({ to, messageId: `${bulkId}-${i}` })) }],
  };
}

describe('ServiceClient.monitoring()', () => {
  it('answers the three endpoints ok, with data that reflects the sends, and no token in it', async () => {
    const s = await sandboxWith({ deliveryDelayMs: 1000 }); // × 0.01: 10 ms
    const r = await startReceiver();
    open.push(r);
    const { client, tokens } = clientOf(s.url, { notifyUrl: `${r.url}/notify?token=receiver-secret` });
    const sent = await Promise.all([
      client.sendChunk(chunk('a', ['573101234567', '573111234567', '573151234567'])),
      client.sendChunk(chunk('b', ['573001234567', '573501234567'])),
    ]);
    expect(sent.every((x) => x.parts[0]!.outcome.kind === 'accepted')).toBe(true);
    await waitFor(async () => {
      const v = await getJson<{ pending: number; attempts: unknown[] }>(`${s.url}/_sandbox/notifications`);
      return v.pending === 0 && v.attempts.length === 5;
    }, 'the five reports');

    const health = await client.monitoring();
    expect(Number.isNaN(Date.parse(health.checkedAt))).toBe(false);
    expect(health.endpoints.map((e) => [e.name, e.path, e.ok, e.status, e.error])).toEqual([
      ['platformmonitory', '/platformmonitory', true, 200, null],
      ['effectivitybyclient', '/bireports/effectivitybyclient', true, 200, null],
      ['msgmtclient', '/bireports/msgmtclient', true, 200, null],
    ]);
    for (const e of health.endpoints) expect(e.ms).toBeGreaterThanOrEqual(0);
    const { platformmonitory, effectivitybyclient, msgmtclient } = byName(health);
    expect(msgmtclient.data).toMatchObject({
      account: 'demo',
      messages: [
        { operator: 'Claro', status: 'DELIVERED_TO_HANDSET', count: 2 },
        { operator: 'Movistar', status: 'DELIVERED_TO_HANDSET', count: 1 },
        { operator: 'Tigo', status: 'DELIVERED_TO_HANDSET', count: 1 },
        { operator: 'WOM', status: 'DELIVERED_TO_HANDSET', count: 1 },
      ],
    });
    expect(effectivitybyclient.data).toMatchObject({
      statuses: [
        { status: 'DELIVERED_TO_HANDSET', count: 5 },
        { status: 'NO_SUCCESS', count: 0, avgMs: null },
      ],
    });
    expect(platformmonitory.data).toMatchObject({
      operators: expect.arrayContaining([
        expect.objectContaining({ operator: 'Claro', status: 'UP', alternate: false, reportsLastMinute: 2 }),
      ]),
    });

    // The sends' token, no second login for monitoring.
    expect(tokens.length).toBe(1);
    const logins = (await requests(s)).filter((x) => x.endpoint === '/token');
    expect(logins.length).toBe(1);
    expect(JSON.stringify(health)).not.toContain(tokens[0]);
    expect(JSON.stringify(health)).not.toContain('receiver-secret');
  });

  it('logs in on a cold client, once for the three endpoints', async () => {
    const s = await sandboxWith();
    const { client, tokens } = clientOf(s.url);
    const health = await client.monitoring();
    expect(health.endpoints.every((e) => e.ok)).toBe(true);
    expect(tokens.length).toBe(1);
    expect((await requests(s)).filter((x) => x.endpoint === '/token').map((x) => x.status)).toEqual([200]);
  });

  it('a 500 or a timeout on one endpoint: ok false with a clear error, the others ok', async () => {
    const s = await sandboxWith();
    const { client, tokens } = clientOf(s.url);
    await postJson(`${s.url}/_sandbox/faults`, {
      effectivitybyclient: { '500': { probability: 1, times: 1 } },
    });
    const failed = byName(await client.monitoring());
    expect(failed.effectivitybyclient).toMatchObject({
      ok: false,
      status: 500,
      error: 'HTTP 500: injected fault 500',
      data: null, // the failed answer's body is only its error
    });
    expect(failed.platformmonitory.ok).toBe(true);
    expect(failed.msgmtclient.ok).toBe(true);

    await postJson(`${s.url}/_sandbox/faults`, { msgmtclient: { timeout: 1 } });
    const started = Date.now();
    const health = await client.monitoring({ timeoutMs: 300 });
    expect(Date.now() - started).toBeLessThan(3000);
    const timedOut = byName(health);
    expect(timedOut.msgmtclient).toMatchObject({
      ok: false,
      status: null,
      data: null,
      error: 'no answer within 300 ms',
    });
    expect(timedOut.msgmtclient.ms).toBeGreaterThanOrEqual(290);
    expect(timedOut.platformmonitory.ok).toBe(true);
    expect(timedOut.effectivitybyclient.ok).toBe(true);

    // A reset: the connection's error, the others fine.
    await postJson(`${s.url}/_sandbox/faults`, { platformmonitory: { reset: 1 } });
    const reset = byName(await client.monitoring());
    expect(reset.platformmonitory).toMatchObject({ ok: false, status: null });
    expect(reset.platformmonitory.error).toMatch(/socket|closed|reset/i);
    expect(reset.msgmtclient.ok && reset.effectivitybyclient.ok).toBe(true);
    expect(JSON.stringify([failed, health, reset])).not.toContain(tokens[0]);
  });

  it('a token that does not come in time: the endpoints fail with it, the client stays usable', async () => {
    const s = await sandboxWith();
    // The login is held once (the service never answers it); the client's own retry gets one.
    await postJson(`${s.url}/_sandbox/faults`, { token: { timeout: { probability: 1, times: 1 } } });
    const { client } = clientOf(s.url, { timeoutMs: 800 });
    const started = Date.now();
    const waited = await client.monitoring({ timeoutMs: 300 });
    expect(Date.now() - started).toBeLessThan(800);
    expect(waited.endpoints.map((e) => [e.ok, e.status, e.error])).toEqual(
      Array(3).fill([false, null, 'no token within 300 ms (POST /token)']),
    );
    // The login goes on in the background (sends share it); the next check has the token.
    await waitFor(async () => (await client.monitoring()).endpoints.every((e) => e.ok), 'a token');
    expect((await requests(s)).filter((x) => x.endpoint === '/token').map((x) => x.status)).toEqual([0, 200]);
  });

  it('renews a replaced token once on a 401, as a send does; a second 401 is the error', async () => {
    const s = await sandboxWith();
    const { client, tokens } = clientOf(s.url);
    expect((await client.monitoring()).endpoints.every((e) => e.ok)).toBe(true);
    // Another login with the account's credentials replaces the client's token.
    const other = await postJson(
      `${s.url}/token`,
      { grant_type: 'password' },
      { authorization: `Basic ${Buffer.from('demo:demo').toString('base64')}` },
    );
    expect(other.status).toBe(200);
    const renewed = await client.monitoring();
    expect(renewed.endpoints.map((e) => [e.ok, e.status])).toEqual([
      [true, 200],
      [true, 200],
      [true, 200],
    ]);
    // One renewal for the three 401s (the refresh token died with the replaced token: a login).
    expect(tokens.length).toBe(2);
    const log = await requests(s);
    expect(log.filter((x) => x.endpoint === '/token').map((x) => [x.grant, x.status])).toEqual([
      ['password', 200],
      ['password', 200], // the other login
      ['refresh_token', 400],
      ['password', 200],
    ]);
    expect(log.filter((x) => x.endpoint === '/platformmonitory').map((x) => x.status)).toEqual([
      200, 401, 200,
    ]);

    // A token revoked on every request: the renewed one is refused too, reported once.
    await postJson(`${s.url}/_sandbox/faults`, {
      platformmonitory: { revoke: { probability: 1, times: 2 } },
    });
    const refused = byName(await client.monitoring());
    expect(refused.platformmonitory).toMatchObject({ ok: false, status: 401 });
    expect(refused.platformmonitory.error).toMatch(/^HTTP 401 \(after renewing the token\): /);
    const all = JSON.stringify([renewed, refused]);
    for (const t of tokens) expect(all).not.toContain(t);
  });

  it('takes no send permit: answers while every permit of the account is held', async () => {
    const s = await sandboxWith({ notify: false });
    const { client } = clientOf(s.url, { concurrency: 1, timeoutMs: 1500 });
    // The account's only permit, held by a send the service never answers.
    await postJson(`${s.url}/_sandbox/faults`, { massive: { timeout: 1 } });
    const stuck = client.sendChunk(chunk('held', ['573001234567']));
    await waitFor(
      async () => (await requests(s)).some((x) => x.endpoint === '/mtmessage/massive'),
      'the send',
    );
    // Were a permit needed, the endpoints would wait for the send's own time-out (1.5 s).
    const health = await client.monitoring({ timeoutMs: 1000 });
    expect(health.endpoints.map((e) => e.ok)).toEqual([true, true, true]);
    expect((await stuck).parts[0]!.outcome.kind).toBe('in_doubt');
  });

  it('never rejects: an unreachable service, bad credentials, a closed client', async () => {
    const down = clientOf(`http://127.0.0.1:${await closedPort()}`).client;
    const unreachable = await down.monitoring({ timeoutMs: 2000 });
    expect(unreachable.endpoints.every((e) => !e.ok && e.status === null && e.data === null)).toBe(true);
    expect(unreachable.endpoints[0]!.error).toMatch(/POST \/token|ECONNREFUSED|no token within/);

    const s = await sandboxWith();
    const wrong = clientOf(s.url, { password: 'nope' }).client;
    const refused = await wrong.monitoring();
    for (const e of refused.endpoints)
      expect(e.error).toMatch(/POST \/token answered 401: wrong or missing Basic credentials$/);
    expect(JSON.stringify(refused)).not.toContain('nope');

    const closing = new ServiceClient({ baseUrl: s.url, username: 'demo', password: 'demo' });
    await closing.close();
    const closed = await closing.monitoring();
    expect(closed.endpoints.every((e) => !e.ok && e.error === 'the service client was closed')).toBe(true);
  });

  it('keeps a body that is not JSON as text (64 KiB at most), and masks a token echoed back', async () => {
    const token = 'tok-SECRET-0123456789abcdef';
    const server = createServer((req, res) => {
      if (req.url === '/token') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ access_token: token, token_type: 'bearer', expires_in: 3600 }));
      }
      const auth = req.headers.authorization ?? '';
      if (req.url === '/platformmonitory') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ echo: auth, nested: [{ [auth]: auth }] }));
      }
      if (req.url === '/bireports/effectivitybyclient') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(`${auth} ${'x'.repeat(100_000)}`);
      }
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`failed for ${auth} at https://svc/x?key=abc for 573001234567`);
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    open.push({
      close: () =>
        new Promise<void>((done) => {
          server.close(() => done());
          server.closeAllConnections();
        }),
    });
    const { client } = clientOf(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, {
      tokenShare: undefined,
    });
    const health = await client.monitoring();
    expect(JSON.stringify(health).includes('SECRET')).toBe(false);
    const { platformmonitory, effectivitybyclient, msgmtclient } = byName(health);
    expect(platformmonitory).toMatchObject({
      ok: true,
      data: { echo: 'Bearer <redacted>', nested: [{ 'Bearer <redacted>': 'Bearer <redacted>' }] },
    });
    expect(effectivitybyclient.ok).toBe(true);
    expect(typeof effectivitybyclient.data).toBe('string');
    expect((effectivitybyclient.data as string).startsWith('Bearer <redacted> xxx')).toBe(true);
    expect(Buffer.byteLength(effectivitybyclient.data as string)).toBeLessThanOrEqual(MONITORING_TEXT_BYTES);
    expect(msgmtclient).toMatchObject({ ok: false, status: 500 });
    expect(msgmtclient.error).toBe(
      'HTTP 500: failed for Bearer <redacted> at https://svc/x?<redacted> for 57300****567',
    );
  });

  it('serviceHealth: every account by name', async () => {
    const s = await sandboxWith({
      accounts: [
        { username: 'demo', password: 'demo' },
        { username: 'beta', password: 'b' },
      ],
    });
    const accounts = new Map([
      ['default', clientOf(s.url).client],
      ['beta', clientOf(s.url, { username: 'beta', password: 'b' }).client],
    ]);
    const health = await serviceHealth(accounts);
    expect(health.map((h) => [h.account, h.endpoints.every((e) => e.ok)])).toEqual([
      ['default', true],
      ['beta', true],
    ]);
    expect(byName(health[1]!).msgmtclient.data).toMatchObject({ account: 'beta' });
  });

  it('Runtime.accounts: every configured account and "default", each with its own token', async () => {
    const s = await sandboxWith({
      accounts: [
        { username: 'demo', password: 'demo' },
        { username: 'beta', password: 'b' },
      ],
    });
    const dir = await mkdtemp(join(tmpdir(), 'dropline-monitoring-'));
    open.push({ close: () => rm(dir, { recursive: true, force: true }) });
    const path = join(dir, 'dropline.config.json');
    await writeFile(
      path,
      JSON.stringify({
        api: { baseUrl: s.url, username: 'demo', password: 'demo' },
        accounts: { beta: { baseUrl: s.url, username: 'beta', password: 'b' } },
        store: `sqlite:${join(dir, 'state.db')}`,
        notify: { token: 'receiver-secret' },
        sources: [{ name: 'local', type: 'local', path: join(dir, 'drop') }],
      }),
    );
    const rt = await openRuntime(loadConfig({ path, env: {} }), { logger: silentLogger, sandbox: 'share' });
    open.push(rt);
    expect([...rt.accounts.keys()]).toEqual(['default', 'beta']);
    expect(rt.accounts.get('default')).toBe(rt.client);
    const health = await serviceHealth(rt.accounts);
    expect(health.map((h) => [h.account, h.endpoints.map((e) => e.ok)])).toEqual([
      ['default', [true, true, true]],
      ['beta', [true, true, true]],
    ]);
    expect(health.map((h) => (byName(h).msgmtclient.data as { account: string }).account)).toEqual([
      'demo',
      'beta',
    ]);
  });
});

describe('accounts of the same credentials in one process', () => {
  it('an SMS and an RCS account on one service account log in once between them, and neither is refused', async () => {
    const s = await sandboxWith();
    const dir = await mkdtemp(join(tmpdir(), 'dropline-same-account-'));
    open.push({ close: () => rm(dir, { recursive: true, force: true }) });
    const path = join(dir, 'dropline.config.json');
    await writeFile(
      path,
      JSON.stringify({
        api: { baseUrl: s.url, username: 'demo', password: 'demo' },
        accounts: { rcs: { channel: 'rcs', baseUrl: s.url, username: 'demo', password: 'demo' } },
        store: `sqlite:${join(dir, 'state.db')}`,
        notify: { token: 'receiver-secret' },
        sources: [{ name: 'local', type: 'local', path: join(dir, 'drop') }],
      }),
    );
    const rt = await openRuntime(loadConfig({ path, env: {} }), { logger: silentLogger, sandbox: 'share' });
    open.push(rt);
    // Both need a token at once: one logs in, the other takes the token it stored (the service
    // keeps one token an account: a second login would expire the first one's).
    const health = await serviceHealth(rt.accounts);
    expect(health.map((h) => [h.account, h.endpoints.every((e) => e.ok)])).toEqual([
      ['default', true],
      ['rcs', true],
    ]);
    const requests = (await getJson<{ requests: RequestRecord[] }>(`${s.url}/_sandbox/requests`)).requests;
    expect(requests.filter((r) => r.endpoint === '/token')).toHaveLength(1);
    expect(requests.filter((r) => r.status === 401)).toEqual([]);
  });
});

describe('what the dashboard is given of an answer', () => {
  it('masks phone numbers in texts, keys and numbers (the fields are not documented), and the token', () => {
    const shown = withoutSecrets(
      {
        destinations: ['573001234567', 'to +573001234567 via tok-123'],
        573001234568: 'x',
        last: 573001234569,
        count: 1234,
        at: 'https://svc/x?token=abc',
      },
      ['tok-123'],
    );
    expect(shown).toEqual({
      destinations: ['57300****567', 'to +57300****567 via <redacted>'],
      '57300****568': 'x',
      last: '57300****569',
      count: 1234,
      at: 'https://svc/x?<redacted>',
    });
  });
});
