import { afterEach, describe, expect, it } from 'vitest';
import type { NotificationAttempt } from '../../src/sandbox/notifier.ts';
import {
  type RequestRecord,
  type Sandbox,
  type SandboxOptions,
  startSandbox,
} from '../../src/sandbox/server.ts';
import {
  closedPort,
  getJson,
  number,
  postJson,
  type Receiver,
  startReceiver,
  waitFor,
} from '../service/helpers.ts';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function sandboxWith(opts: SandboxOptions = {}): Promise<Sandbox> {
  const s = await startSandbox({ timeScale: 0.001, ...opts });
  open.push(s);
  return s;
}
async function receiver(answer?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const r = await startReceiver(answer);
  open.push(r);
  return r;
}

const basic = (u: string, p: string) => ({
  authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`,
});

async function login(
  s: Sandbox,
  user = 'demo',
  pass = 'demo',
): Promise<{ access_token: string; refresh_token: string }> {
  const res = await postJson(`${s.url}/token`, { grant_type: 'password' }, basic(user, pass));
  expect(res.status).toBe(200);
  return res.body as { access_token: string; refresh_token: string };
}

function massive(s: Sandbox, token: string, body: unknown) {
  return postJson(`${s.url}/mtmessage/massive`, body, { authorization: `Bearer ${token}` });
}

interface NotificationsView {
  pending: number;
  attempts: NotificationAttempt[];
}
const notifications = (s: Sandbox, messageId?: string) =>
  getJson<NotificationsView>(`${s.url}/_sandbox/notifications${messageId ? `?messageId=${messageId}` : ''}`);

/** All attempts for `messageId` once nothing more is pending for anyone. */
async function settled(s: Sandbox, messageId: string, atLeast = 1): Promise<NotificationAttempt[]> {
  return waitFor(async () => {
    const n = await notifications(s, messageId);
    return n.pending === 0 && n.attempts.length >= atLeast ? n.attempts : undefined;
  }, `notifications of ${messageId} to settle`);
}

describe('sandbox /token', () => {
  it('issues a token by password (JSON or form) and renews it by refresh_token', async () => {
    const s = await sandboxWith({ tokenLifetimeS: 600 });
    const first = await postJson(`${s.url}/token`, { grant_type: 'password' }, basic('demo', 'demo'));
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ token_type: 'bearer', expires_in: 600 });
    const form = await fetch(`${s.url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...basic('demo', 'demo') },
      body: 'grant_type=password',
    });
    expect(form.status).toBe(200);
    const { refresh_token } = (await form.json()) as { refresh_token: string };
    const renewed = await postJson(`${s.url}/token`, { grant_type: 'refresh_token', refresh_token });
    expect(renewed.status).toBe(200);
    // A refresh token is good once: the renewal replaced the token it belonged to.
    const again = await postJson(`${s.url}/token`, { grant_type: 'refresh_token', refresh_token });
    expect(again).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('refuses wrong credentials and unknown grants', async () => {
    const s = await sandboxWith({ accounts: [{ username: 'acme', password: 'pw' }] });
    expect((await postJson(`${s.url}/token`, { grant_type: 'password' }, basic('acme', 'nope'))).status).toBe(
      401,
    );
    expect((await postJson(`${s.url}/token`, { grant_type: 'password' })).status).toBe(401);
    expect(
      (await postJson(`${s.url}/token`, { grant_type: 'client_credentials' }, basic('acme', 'pw'))).status,
    ).toBe(400);
    expect((await postJson(`${s.url}/token`, { grant_type: 'password' }, basic('acme', 'pw'))).status).toBe(
      200,
    );
  });

  it('keeps one active token per account: a second login makes the first answer 401', async () => {
    const s = await sandboxWith({ notify: false });
    const body = { messages: [{ text: 'hi', destinations: [{ to: number(1), messageId: 'a' }] }] };
    const first = await login(s);
    expect((await massive(s, first.access_token, body)).status).toBe(200);
    const second = await login(s);
    expect(await massive(s, first.access_token, body)).toMatchObject({ status: 401 });
    expect((await massive(s, second.access_token, body)).status).toBe(200);
    // Bearer only: Basic is refused on /mtmessage/massive.
    expect((await postJson(`${s.url}/mtmessage/massive`, body, basic('demo', 'demo'))).status).toBe(401);
  });
});

describe('sandbox /mtmessage/massive', () => {
  const ok = { to: number(1), messageId: 'a' };
  const cases: [string, unknown, RegExp][] = [
    ['not JSON', '{"messages": [', /not valid JSON/],
    ['no messages', { bulkId: 'b' }, /messages is required/],
    ['empty messages', { messages: [] }, /messages must not be empty/],
    ['no destinations', { messages: [{ text: 'x' }] }, /messages\[0\]\.destinations is required/],
    ['empty destinations', { messages: [{ text: 'x', destinations: [] }] }, /destinations must not be empty/],
    [
      'no to',
      { messages: [{ text: 'x', destinations: [{ messageId: 'a' }] }] },
      /destinations\[0\]\.to is required/,
    ],
    [
      'non-digit to',
      { messages: [{ text: 'x', destinations: [ok, { to: '57300123456a' }] }] },
      /destinations\[1\]\.to is not a number/,
    ],
    [
      'short Colombian',
      { messages: [{ text: 'x', destinations: [{ to: '5730012345' }] }] },
      /without 12 digits/,
    ],
    ['too long', { messages: [{ text: 'x', destinations: [{ to: '1234567890123456' }] }] }, /8 to 15 digits/],
    ['bad notifyUrl', { messages: [{ text: 'x', destinations: [ok], notifyUrl: 'ftp://x' }] }, /notifyUrl/],
    [
      'object callbackData',
      { messages: [{ text: 'x', destinations: [ok], callbackData: { a: 1 } }] },
      /callbackData must be text/,
    ],
    ['no text', { messages: [{ destinations: [ok] }] }, /text must be non-empty/],
  ];
  it.each(cases)('400 with a readable reason: %s', async (_name, body, reason) => {
    const s = await sandboxWith({ notify: false });
    const { access_token } = await login(s);
    const res = await massive(s, access_token, body);
    expect(res.status).toBe(400);
    expect((res.body as { message: string }).message).toMatch(reason);
    expect((res.body as { message: string }).message).not.toMatch(/57300/);
    expect((await getJson<{ destinations: number }>(`${s.url}/_sandbox/ledger`)).destinations).toBe(0);
  });

  it('answers the documented JSON body and records every destination in the ledger', async () => {
    const s = await sandboxWith({ notify: false });
    const { access_token } = await login(s);
    const body = {
      bulkId: 'bulk-1',
      messages: [
        {
          text: 'uno',
          destinations: [
            { to: number(1), messageId: 'm1' },
            { to: number(2), messageId: 'm2' },
          ],
        },
        { text: 'dos', destinations: [{ to: '5215512345678', messageId: 'm3' }] },
      ],
    };
    const res = await massive(s, access_token, body);
    expect(res.status).toBe(200);
    const answer = res.body as { transactionNumber: string };
    expect(answer).toEqual({
      transactionNumber: expect.stringMatching(/^\d{28}$/),
      bulkId: 'bulk-1',
      status: 0,
      destinations: [
        { to: number(1), messageId: 'm1', status: 0 },
        { to: number(2), messageId: 'm2', status: 0 },
        { to: '5215512345678', messageId: 'm3', status: 0 },
      ],
    });
    const second = await massive(s, access_token, body);
    expect((second.body as { transactionNumber: string }).transactionNumber).not.toBe(
      answer.transactionNumber,
    );
    const ledger = await getJson<{ destinations: number; duplicates: number; entries: unknown[] }>(
      `${s.url}/_sandbox/ledger`,
    );
    expect(ledger.destinations).toBe(3);
    expect(ledger.duplicates).toBe(3);
    expect(ledger.entries).toContainEqual({
      bulkId: 'bulk-1',
      messageId: 'm3',
      to: '5215512345678',
      text: 'dos',
      count: 2,
      transactionNumber: (second.body as { transactionNumber: string }).transactionNumber,
    });
  });
});

describe('sandbox notifications', () => {
  it('one POST per accepted destination, body exactly as docs/sandbox.md "Notifications", to the notifyUrl as sent', async () => {
    const r = await receiver();
    const s = await sandboxWith();
    const { access_token } = await login(s);
    const long = 'a'.repeat(200);
    const res = await massive(s, access_token, {
      bulkId: 'B',
      messages: [
        {
          text: 'hola',
          destinations: [1, 2, 3].map((i) => ({ to: number(i), messageId: `s${i}` })),
          notifyUrl: `${r.url}/notify?token=tok%2Fen`,
          notifyContentType: 'application/json; charset=utf-8',
          callbackData: '{"file":"x"}',
        },
        {
          text: long,
          destinations: [{ to: number(4), messageId: 'l4' }],
          notifyUrl: `${r.url}/notify?token=t`,
        },
        {
          text: 'ñandú 😀',
          destinations: [{ to: number(5), messageId: 'u5' }],
          notifyUrl: `${r.url}/notify?token=t`,
        },
        { text: 'nobody listens', destinations: [{ to: number(6), messageId: 'n6' }] },
      ],
    });
    const txn = (res.body as { transactionNumber: string }).transactionNumber;
    await waitFor(() => r.received.length >= 5, '5 notifications');
    await waitFor(async () => (await notifications(s)).pending === 0, 'nothing pending');
    expect(r.received).toHaveLength(5);
    const first = r.received.find((q) => JSON.parse(q.body).results[0].messageId === 's1')!;
    expect(first.path).toBe('/notify?token=tok%2Fen');
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(first.body)).toEqual({
      results: [
        {
          bulkId: 'B',
          messageId: 's1',
          to: number(1),
          transactionNumber: txn,
          callbackData: '{"file":"x"}',
          smsCount: 1,
          status: { name: 'DELIVERED_TO_HANDSET' },
        },
      ],
    });
    const byId = new Map(
      r.received.map((q) => [JSON.parse(q.body).results[0].messageId, JSON.parse(q.body)]),
    );
    expect(byId.get('l4').results[0]).toMatchObject({ smsCount: 2, callbackData: '' });
    expect(byId.get('u5').results[0].smsCount).toBe(1);
    expect(byId.has('n6')).toBe(false);
    expect(r.received.find((q) => q.path.endsWith('token=t'))!.headers['content-type']).toBe(
      'application/json',
    );
    const log = await notifications(s);
    expect(log.attempts.every((a) => a.code === 200 && a.attempt === 1 && a.response === 'ok')).toBe(true);
    expect(JSON.stringify(log)).not.toContain('token=');
  });

  it('reports NO_SUCCESS by the failure ratio', async () => {
    const r = await receiver();
    const s = await sandboxWith({ failureRatio: 1 });
    const { access_token } = await login(s);
    await massive(s, access_token, {
      messages: [{ text: 'x', destinations: [{ to: number(1), messageId: 'f' }], notifyUrl: `${r.url}/n` }],
    });
    await waitFor(() => r.received.length === 1, 'a notification');
    expect(JSON.parse(r.received[0]!.body).results[0].status.name).toBe('NO_SUCCESS');
  });

  it('503: exactly 6 attempts, spaced 10/20/30/40/50 s × time scale; 500: exactly 1; no answer: 1 with code 0', async () => {
    const timeScale = 0.01;
    const r = await receiver((req) =>
      req.path.startsWith('/busy') ? 503 : req.path.startsWith('/broken') ? 500 : 200,
    );
    const s = await sandboxWith({ timeScale, deliveryDelayMs: 0, notifyTimeoutMs: 2000 });
    const { access_token } = await login(s);
    const refused = await closedPort();
    const msg = (id: string, url: string) => ({
      text: 'x',
      destinations: [{ to: number(1), messageId: id }],
      notifyUrl: url,
    });
    await massive(s, access_token, {
      messages: [
        msg('busy', `${r.url}/busy`),
        msg('broken', `${r.url}/broken`),
        msg('gone', `http://127.0.0.1:${refused}/n`),
      ],
    });

    const busy = await settled(s, 'busy', 6);
    expect(busy.map((a) => [a.attempt, a.code, a.willRetry])).toEqual([
      [1, 503, true],
      [2, 503, true],
      [3, 503, true],
      [4, 503, true],
      [5, 503, true],
      [6, 503, false],
    ]);
    // Spacing at the receiver: never sooner than the scaled schedule, and not far later.
    const arrivals = r.received.filter((q) => q.path === '/busy').map((q) => q.at);
    expect(arrivals).toHaveLength(6);
    const gaps = arrivals.slice(1).map((t, i) => t - arrivals[i]!);
    [10, 20, 30, 40, 50].forEach((seconds, i) => {
      const expected = seconds * 1000 * timeScale;
      expect(gaps[i]).toBeGreaterThanOrEqual(expected - 2);
      expect(gaps[i]).toBeLessThan(expected + 400);
    });

    const broken = await settled(s, 'broken');
    expect(broken.map((a) => [a.code, a.willRetry])).toEqual([[500, false]]);
    const gone = await settled(s, 'gone');
    expect(gone.map((a) => [a.code, a.willRetry])).toEqual([[0, false]]);
    expect(gone[0]!.error).toMatch(/ECONNREFUSED|connect/i);
  });

  it('a receiver that never answers is recorded with code 0 after the timeout, not retried', async () => {
    const r = await receiver(() => null);
    const s = await sandboxWith({ notifyTimeoutMs: 200, deliveryDelayMs: 0 });
    const { access_token } = await login(s);
    await massive(s, access_token, {
      messages: [
        { text: 'x', destinations: [{ to: number(1), messageId: 'slow' }], notifyUrl: `${r.url}/n` },
      ],
    });
    const attempts = await settled(s, 'slow');
    expect(attempts.map((a) => [a.code, a.willRetry])).toEqual([[0, false]]);
    expect(r.received).toHaveLength(1);
  });

  it('held, the notifier sends nothing; released, it sends what came due meanwhile', async () => {
    const r = await receiver();
    const s = await sandboxWith({ deliveryDelayMs: 0 });
    s.notifier.hold();
    const { access_token } = await login(s);
    const to = (id: string, i: number) => ({ to: number(i), messageId: id });
    await massive(s, access_token, {
      messages: [{ text: 'x', destinations: [to('a', 1), to('b', 2)], notifyUrl: `${r.url}/n` }],
    });
    // Due at once: only a hold keeps them (an absence is seen by waiting).
    await new Promise((done) => setTimeout(done, 200));
    expect(r.received).toHaveLength(0);
    expect(s.notifier.pending).toBe(2);
    s.notifier.release();
    await waitFor(() => r.received.length === 2, 'both notifications');
    expect((await settled(s, 'a')).map((a) => a.code)).toEqual([200]);
  });
});

describe('sandbox test surface', () => {
  it('GET /_sandbox/logins counts logins, and sends refused for a replaced or a lapsed token', async () => {
    let clock = Date.now();
    const s = await sandboxWith({ notify: false, tokenLifetimeS: 60, now: () => clock });
    const body = { messages: [{ text: 'x', destinations: [{ to: number(1), messageId: 'a' }] }] };
    const first = await login(s);
    const second = await login(s);
    // The first token was replaced by the second login: twice refused, counted twice.
    expect((await massive(s, first.access_token, body)).status).toBe(401);
    expect((await massive(s, first.access_token, body)).status).toBe(401);
    // A token never issued is neither replaced nor expired.
    expect((await massive(s, 'made-up', body)).status).toBe(401);
    clock += 61_000;
    expect((await massive(s, second.access_token, body)).status).toBe(401);
    const renewed = await postJson(`${s.url}/token`, {
      grant_type: 'refresh_token',
      refresh_token: second.refresh_token,
    });
    expect(renewed.status).toBe(200);
    expect(await getJson(`${s.url}/_sandbox/logins`)).toEqual({
      accounts: { demo: { password: 2, refresh: 1, replaced: 2, expired: 1 } },
    });
    await postJson(`${s.url}/_sandbox/reset`, {});
    expect(await getJson(`${s.url}/_sandbox/logins`)).toEqual({ accounts: {} });
  });

  it('a fault rule with an account fires for that account only (its sends or its logins)', async () => {
    const s = await sandboxWith({
      notify: false,
      accounts: [
        { username: 'demo', password: 'demo' },
        { username: 'beta', password: 'clave' },
      ],
    });
    const body = { messages: [{ text: 'x', destinations: [{ to: number(1), messageId: 'a' }] }] };
    const demo = await login(s);
    const beta = await login(s, 'beta', 'clave');
    expect(
      (await postJson(`${s.url}/_sandbox/faults`, { massive: { '403': { probability: 1, account: 7 } } }))
        .status,
    ).toBe(400);
    const set = await postJson(`${s.url}/_sandbox/faults`, {
      massive: { '403': { probability: 1, account: 'beta' } },
      token: { '403': { probability: 1, account: 'beta' } },
    });
    expect(set.body).toMatchObject({ massive: { '403': { probability: 1, account: 'beta' } } });
    const refused = await massive(s, beta.access_token, body);
    expect(refused).toMatchObject({ status: 403, body: { message: 'injected fault 403' } });
    expect((await massive(s, demo.access_token, body)).status).toBe(200);
    // A token that is not valid is nobody's: 401 as usual, not the account's fault.
    expect((await massive(s, 'made-up', body)).status).toBe(401);
    expect(
      (await postJson(`${s.url}/token`, { grant_type: 'password' }, basic('beta', 'clave'))).status,
    ).toBe(403);
    expect(
      (await postJson(`${s.url}/token`, { grant_type: 'refresh_token', refresh_token: beta.refresh_token }))
        .status,
    ).toBe(403);
    expect((await postJson(`${s.url}/token`, { grant_type: 'password' }, basic('demo', 'demo'))).status).toBe(
      200,
    );
    const { requests } = await getJson<{ requests: RequestRecord[] }>(`${s.url}/_sandbox/requests`);
    expect(
      requests.filter((r) => r.endpoint === '/mtmessage/massive').map((r) => [r.status, r.account ?? null]),
    ).toEqual([
      [403, 'beta'],
      [200, 'demo'],
      [401, null],
    ]);
  });

  const NO_FAULTS = {
    token: {},
    massive: {},
    platformmonitory: {},
    effectivitybyclient: {},
    msgmtclient: {},
    maxBodyBytes: null,
  };

  it('validates fault bodies, reports them, and reset clears everything', async () => {
    const s = await sandboxWith({ notify: false });
    expect((await postJson(`${s.url}/_sandbox/faults`, { massive: { '418': 1 } })).status).toBe(400);
    expect((await postJson(`${s.url}/_sandbox/faults`, { massive: { '503': 2 } })).status).toBe(400);
    expect((await postJson(`${s.url}/_sandbox/faults`, { nowhere: {} })).status).toBe(400);
    const set = await postJson(`${s.url}/_sandbox/faults`, {
      massive: { '503': { probability: 1, times: 1 } },
    });
    expect(set.body).toMatchObject({ massive: { '503': { probability: 1, times: 1 } } });

    const { access_token } = await login(s);
    const body = { messages: [{ text: 'x', destinations: [{ to: number(1), messageId: 'a' }] }] };
    expect((await massive(s, access_token, body)).status).toBe(503);
    expect((await massive(s, access_token, body)).status).toBe(200);
    expect(await getJson(`${s.url}/_sandbox/faults`)).toEqual(NO_FAULTS);

    await postJson(`${s.url}/_sandbox/faults`, { massive: { '500': 1 } });
    expect((await postJson(`${s.url}/_sandbox/reset`, {})).status).toBe(200);
    expect((await getJson<{ destinations: number }>(`${s.url}/_sandbox/ledger`)).destinations).toBe(0);
    expect(await getJson(`${s.url}/_sandbox/faults`)).toEqual(NO_FAULTS);
    // Tokens are gone too.
    expect((await massive(s, access_token, body)).status).toBe(401);
  });
});
