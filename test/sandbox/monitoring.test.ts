// The sandbox's monitoring endpoints (docs/service.md "Monitoring"; shapes: docs/sandbox.md
// "Monitoring"), over real HTTP on 127.0.0.1.
import { afterEach, describe, expect, it } from 'vitest';
import {
  type RequestRecord,
  type Sandbox,
  type SandboxOptions,
  startSandbox,
} from '../../src/sandbox/server.ts';
import { operatorOf } from '../../src/sandbox/traffic.ts';
import { getJson, postJson, type Receiver, startReceiver, waitFor } from '../service/helpers.ts';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

let clock = 0;
async function sandboxWith(opts: SandboxOptions = {}): Promise<Sandbox> {
  clock = 0;
  const s = await startSandbox({ timeScale: 0.01, now: () => Date.now() + clock, ...opts });
  open.push(s);
  return s;
}
async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  open.push(r);
  return r;
}

const basic = (u: string, p: string) => ({
  authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`,
});

async function login(s: Sandbox, user = 'demo', pass = 'demo'): Promise<string> {
  const res = await postJson(`${s.url}/token`, { grant_type: 'password' }, basic(user, pass));
  expect(res.status).toBe(200);
  return (res.body as { access_token: string }).access_token;
}

const PATHS = ['/platformmonitory', '/bireports/effectivitybyclient', '/bireports/msgmtclient'] as const;

async function get(s: Sandbox, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${s.url}${path}`, { headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

interface OperatorRow {
  operator: string;
  status: string;
  alternate: boolean;
  deliveryTimeMs: number;
  reportsLastMinute: number;
}
interface StatusRow {
  status: string;
  count: number;
  avgMs: number | null;
  maxMs: number | null;
}
interface CountRow {
  operator: string;
  status: string;
  count: number;
}

// Two Claro, one Movistar, one Tigo, one WOM, one unknown Colombian prefix, one foreign number.
const CLARO_1 = '573101234567';
const CLARO_2 = '573201234567';
const MOVISTAR = '573151234567';
const TIGO = '573001234567';
const WOM = '573501234567';
const CO_UNKNOWN = '573991234567';
const FOREIGN = '5215512345678';

function chunkBody(notifyUrl: string | undefined, tos: readonly string[], bulkId: string) {
  return {
    bulkId,
    messages: [
      {
        text: 'hola',
        destinations: tos.map((to, i) => ({ to, messageId: `${bulkId}-${i}` })),
        ...(notifyUrl ? { notifyUrl } : {}),
      },
    ],
  };
}

async function send(s: Sandbox, token: string, body: unknown): Promise<void> {
  const res = await postJson(`${s.url}/mtmessage/massive`, body, bearer(token));
  expect(res.status).toBe(200);
}

async function reportsSettled(s: Sandbox, n: number): Promise<void> {
  await waitFor(async () => {
    const v = await getJson<{ pending: number; attempts: unknown[] }>(`${s.url}/_sandbox/notifications`);
    return v.pending === 0 && v.attempts.length >= n;
  }, `${n} status reports`);
}

describe('operator prefixes', () => {
  it('names Colombian mobile prefixes and calls the rest OTHER', () => {
    expect(
      [CLARO_1, CLARO_2, MOVISTAR, TIGO, WOM, CO_UNKNOWN, FOREIGN, '57310123456'].map(operatorOf),
    ).toEqual(['Claro', 'Claro', 'Movistar', 'Tigo', 'WOM', 'OTHER', 'OTHER', 'OTHER']);
  });
});

describe('sandbox monitoring endpoints', () => {
  it('answer 401 without a Bearer token, with Basic, a made-up, a replaced or an expired token', async () => {
    const s = await sandboxWith({ tokenLifetimeS: 60 });
    const first = await login(s);
    const second = await login(s); // replaces the first
    for (const path of PATHS) {
      expect(await get(s, path)).toEqual({ status: 401, body: { message: 'a Bearer token is required' } });
      expect((await get(s, path, basic('demo', 'demo'))).status).toBe(401);
      expect(await get(s, path, bearer('made-up'))).toEqual({
        status: 401,
        body: { message: 'the token is unknown or was replaced by a newer one' },
      });
      expect((await get(s, path, bearer(first))).status).toBe(401);
      expect((await get(s, path, bearer(second))).status).toBe(200);
    }
    clock += 61_000;
    for (const path of PATHS) {
      expect(await get(s, path, bearer(second))).toEqual({
        status: 401,
        body: { message: 'the token has expired' },
      });
    }
    // The same body style as /mtmessage/massive's 401.
    const massive = await postJson(`${s.url}/mtmessage/massive`, {}, bearer(second));
    expect(massive).toMatchObject({ status: 401, body: { message: 'the token has expired' } });
    // Every answer is in the request log, with the account once its token was valid.
    const { requests } = await getJson<{ requests: RequestRecord[] }>(`${s.url}/_sandbox/requests`);
    const monitoring = requests.filter((r) => (PATHS as readonly string[]).includes(r.endpoint));
    expect(monitoring.length).toBe(PATHS.length * 6);
    expect(monitoring.filter((r) => r.status === 200).every((r) => r.account === 'demo')).toBe(true);
  });

  it('show the traffic of the last 15 minutes by operator and status, per account', async () => {
    const s = await sandboxWith({
      accounts: [
        { username: 'demo', password: 'demo' },
        { username: 'beta', password: 'b' },
      ],
      deliveryDelayMs: 2000, // × 0.01: 20 ms
      // One draw per login and per request (faults), one per destination notified (outcome):
      // two logins, f1's request, Claro, Claro, then Movistar (the 6th) fails; the rest deliver.
      random: sequence([0.9, 0.9, 0.9, 0.9, 0.9, 0.1], 0.9),
      failureRatio: 0.5,
    });
    const r = await receiver();
    const token = await login(s);
    const beta = await login(s, 'beta', 'b');
    const notifyUrl = `${r.url}/notify?token=t`;
    await send(s, token, chunkBody(notifyUrl, [CLARO_1, CLARO_2, MOVISTAR, TIGO], 'f1'));
    await send(s, token, chunkBody(notifyUrl, [WOM, CO_UNKNOWN, FOREIGN], 'f2'));
    // No notifyUrl: accepted, never reported, so still PENDING.
    await send(s, token, chunkBody(undefined, [TIGO], 'f3'));
    // Another account's traffic: not in demo's bireports.
    await send(s, beta, chunkBody(undefined, [CLARO_1, CLARO_1], 'b1'));
    await reportsSettled(s, 7);

    const messages = await get(s, '/bireports/msgmtclient', bearer(token));
    expect(messages.status).toBe(200);
    expect(messages.body.account).toBe('demo');
    expect(Date.parse(messages.body.to as string) - Date.parse(messages.body.from as string)).toBe(
      15 * 60_000,
    );
    expect(messages.body.messages as CountRow[]).toEqual([
      { operator: 'Claro', status: 'DELIVERED_TO_HANDSET', count: 2 },
      { operator: 'Movistar', status: 'NO_SUCCESS', count: 1 },
      { operator: 'Tigo', status: 'DELIVERED_TO_HANDSET', count: 1 },
      { operator: 'Tigo', status: 'PENDING', count: 1 },
      { operator: 'WOM', status: 'DELIVERED_TO_HANDSET', count: 1 },
      { operator: 'OTHER', status: 'DELIVERED_TO_HANDSET', count: 2 },
    ]);
    const betaMessages = await get(s, '/bireports/msgmtclient', bearer(beta));
    expect(betaMessages.body).toMatchObject({
      account: 'beta',
      messages: [{ operator: 'Claro', status: 'PENDING', count: 2 }],
    });

    const effectivity = await get(s, '/bireports/effectivitybyclient', bearer(token));
    expect(effectivity.body.account).toBe('demo');
    const statuses = effectivity.body.statuses as StatusRow[];
    expect(statuses.map((x) => [x.status, x.count])).toEqual([
      ['DELIVERED_TO_HANDSET', 6],
      ['NO_SUCCESS', 1],
    ]);
    // Processing time: acceptance → report, at least the delivery delay (20 ms).
    for (const x of statuses) {
      expect(x.avgMs).toBeGreaterThanOrEqual(19);
      expect(x.maxMs).toBeGreaterThanOrEqual(x.avgMs!);
      expect(x.maxMs).toBeLessThan(5000);
    }
    expect((await get(s, '/bireports/effectivitybyclient', bearer(beta))).body.statuses).toEqual([
      { status: 'DELIVERED_TO_HANDSET', count: 0, avgMs: null, maxMs: null },
      { status: 'NO_SUCCESS', count: 0, avgMs: null, maxMs: null },
    ]);

    // Platform-wide, near real time: every operator, measured where reports came.
    const platform = await get(s, '/platformmonitory', bearer(beta));
    const operators = platform.body.operators as OperatorRow[];
    expect(operators.map((o) => [o.operator, o.status, o.alternate, o.reportsLastMinute])).toEqual([
      ['Claro', 'UP', false, 2],
      ['Movistar', 'UP', false, 1],
      ['Tigo', 'UP', false, 1],
      ['WOM', 'UP', false, 1],
      ['OTHER', 'UP', false, 2],
    ]);
    for (const o of operators) expect(o.deliveryTimeMs).toBeGreaterThanOrEqual(19);

    // A query string (its parameters are "not shown") changes nothing.
    const queried = await get(s, '/bireports/msgmtclient?from=2020-01-01&operator=x', bearer(token));
    expect(queried.body.messages).toEqual(messages.body.messages);

    // A minute on: the platform falls back to the configured delay; the bireports still count.
    clock += 61_000;
    const later = (await get(s, '/platformmonitory', bearer(token))).body.operators as OperatorRow[];
    expect(later.every((o) => o.reportsLastMinute === 0 && o.deliveryTimeMs === 20)).toBe(true);
    expect(((await get(s, '/bireports/msgmtclient', bearer(token))).body.messages as CountRow[]).length).toBe(
      6,
    );

    // Past 15 minutes: nothing left.
    clock += 15 * 60_000;
    expect((await get(s, '/bireports/msgmtclient', bearer(token))).body.messages).toEqual([]);
    expect(
      ((await get(s, '/bireports/effectivitybyclient', bearer(token))).body.statuses as StatusRow[]).map(
        (x) => x.count,
      ),
    ).toEqual([0, 0]);
  });

  it('counts a message once: PENDING until its report, then under its status', async () => {
    const s = await sandboxWith({ deliveryDelayMs: 100_000 }); // × 0.01: 1 s
    const r = await receiver();
    const token = await login(s);
    await send(s, token, chunkBody(`${r.url}/n`, [MOVISTAR, MOVISTAR], 'p1'));
    expect((await get(s, '/bireports/msgmtclient', bearer(token))).body.messages).toEqual([
      { operator: 'Movistar', status: 'PENDING', count: 2 },
    ]);
    await reportsSettled(s, 2);
    expect((await get(s, '/bireports/msgmtclient', bearer(token))).body.messages).toEqual([
      { operator: 'Movistar', status: 'DELIVERED_TO_HANDSET', count: 2 },
    ]);
    const [delivered] = (await get(s, '/bireports/effectivitybyclient', bearer(token))).body
      .statuses as StatusRow[];
    expect(delivered!.avgMs).toBeGreaterThanOrEqual(999);
    // Reset forgets the traffic.
    await postJson(`${s.url}/_sandbox/reset`, {});
    const fresh = await login(s);
    expect((await get(s, '/bireports/msgmtclient', bearer(fresh))).body.messages).toEqual([]);
  });

  it('take per-endpoint faults: one endpoint fails while the others answer', async () => {
    const s = await sandboxWith();
    const token = await login(s);
    const set = await postJson(`${s.url}/_sandbox/faults`, {
      effectivitybyclient: { '500': { probability: 1, times: 1 } },
      msgmtclient: { reset: { probability: 1, times: 1 } },
      platformmonitory: { revoke: { probability: 1, times: 1 } },
    });
    expect(set.status).toBe(200);
    expect(await get(s, '/bireports/effectivitybyclient', bearer(token))).toEqual({
      status: 500,
      body: { message: 'injected fault 500' },
    });
    expect((await get(s, '/bireports/effectivitybyclient', bearer(token))).status).toBe(200);
    await expect(fetch(`${s.url}/bireports/msgmtclient`, { headers: bearer(token) })).rejects.toThrow();
    expect((await get(s, '/bireports/msgmtclient', bearer(token))).status).toBe(200);
    // revoke: the account's token expires, as a login elsewhere would.
    expect((await get(s, '/platformmonitory', bearer(token))).status).toBe(401);
    expect((await get(s, '/bireports/msgmtclient', bearer(token))).status).toBe(401);

    // timeout: never answers.
    const fresh = await login(s);
    await postJson(`${s.url}/_sandbox/faults`, { platformmonitory: { timeout: 1 } });
    const held = await fetch(`${s.url}/platformmonitory`, {
      headers: bearer(fresh),
      signal: AbortSignal.timeout(300),
    }).then(
      () => 'answered',
      (err: Error) => err.name,
    );
    expect(held).toBe('TimeoutError');
    expect((await get(s, '/bireports/msgmtclient', bearer(fresh))).status).toBe(200);
    const { requests } = await getJson<{ requests: RequestRecord[] }>(`${s.url}/_sandbox/requests`);
    expect(requests.filter((r) => r.fault !== undefined).map((r) => [r.endpoint, r.status, r.fault])).toEqual(
      [
        ['/bireports/effectivitybyclient', 500, '500'],
        ['/bireports/msgmtclient', 0, 'reset'],
        ['/platformmonitory', 401, 'revoke'],
        ['/platformmonitory', 0, 'timeout'],
      ],
    );
  });

  it('leave the delivery outcomes of a seeded random as they were when no fault is set', async () => {
    const draws: number[] = [];
    const s = await sandboxWith({
      random: () => {
        draws.push(0);
        return 0.5;
      },
    });
    const token = await login(s);
    draws.length = 0; // the login's
    for (const path of PATHS) expect((await get(s, path, bearer(token))).status).toBe(200);
    expect(draws).toEqual([]);
  });
});

function sequence(values: readonly number[], then: number): () => number {
  let i = 0;
  return () => values[i++] ?? then;
}
