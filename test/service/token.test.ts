import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RequestRecord, type Sandbox, startSandbox } from '../../src/sandbox/server.ts';
import { ServiceClient, type ServiceClientOptions, type TokenEvent } from '../../src/service/client.ts';
import { SqliteStore } from '../../src/store/index.ts';
import { getJson, makeChunk, postJson, waitFor } from './helpers.ts';

let sandbox: Sandbox;
let sandboxClock = 0;
const clients: ServiceClient[] = [];

beforeEach(async () => {
  sandboxClock = 0;
  sandbox = await startSandbox({ timeScale: 0.001, notify: false, now: () => Date.now() + sandboxClock });
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await sandbox.close();
});

function client(opts: Partial<ServiceClientOptions> = {}): ServiceClient {
  const c = new ServiceClient({
    baseUrl: sandbox.url,
    username: 'demo',
    password: 'demo',
    retry: { baseMs: 5, maxMs: 50 },
    ...opts,
  });
  clients.push(c);
  return c;
}

async function requests(endpoint: string): Promise<RequestRecord[]> {
  const { requests } = await getJson<{ requests: RequestRecord[] }>(`${sandbox.url}/_sandbox/requests`);
  return requests.filter((r) => r.endpoint === endpoint);
}

describe('token', () => {
  it('50 concurrent sends on a cold client make exactly one POST /token', async () => {
    const c = client({ concurrency: 8 });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => c.sendChunk(makeChunk(3, { chunkId: `c${i}`, bulkId: `b${i}` }))),
    );
    expect(results.every((r) => r.parts.length === 1 && r.parts[0]!.outcome.kind === 'accepted')).toBe(true);
    const tokens = await requests('/token');
    expect(tokens.map((r) => [r.grant, r.status])).toEqual([['password', 200]]);
    expect((await requests('/mtmessage/massive')).length).toBe(50);
  });

  it('renews a token revoked by a second login, and the send succeeds', async () => {
    const c = client();
    const events: TokenEvent[] = [];
    c.on('token', (e: TokenEvent) => events.push(e));
    expect((await c.sendChunk(makeChunk(2, { chunkId: 'a' }))).parts[0]!.outcome.kind).toBe('accepted');

    // Someone else logs in with the same account: the client's token now answers 401.
    const login = await postJson(
      `${sandbox.url}/token`,
      { grant_type: 'password' },
      {
        authorization: `Basic ${Buffer.from('demo:demo').toString('base64')}`,
      },
    );
    expect(login.status).toBe(200);

    const result = await c.sendChunk(makeChunk(2, { chunkId: 'b', bulkId: 'b2' }));
    expect(result.parts[0]!.outcome).toMatchObject({ kind: 'accepted', attempts: 2 });
    const massive = await requests('/mtmessage/massive');
    expect(massive.map((r) => r.status)).toEqual([200, 401, 200]);
    // The refresh token died with the revoked token, so the client falls back to its credentials.
    expect(events.map((e) => [e.grant, e.status])).toEqual([
      ['password', 200],
      ['refresh_token', 400],
      ['password', 200],
    ]);
  });

  it('renews with the refresh_token before expiry, without logging in again', async () => {
    let clock = Date.now();
    const c = client({ now: () => clock });
    await c.sendChunk(makeChunk(1, { chunkId: 'a' }));
    clock += 4 * 3600_000 - 30_000; // inside the renew-before margin of a 4 h token
    const result = await c.sendChunk(makeChunk(1, { chunkId: 'b', bulkId: 'b2' }));
    expect(result.parts[0]!.outcome).toMatchObject({ kind: 'accepted', attempts: 1 });
    expect((await requests('/token')).map((r) => [r.grant, r.status])).toEqual([
      ['password', 200],
      ['refresh_token', 200],
    ]);
    expect((await requests('/mtmessage/massive')).map((r) => r.status)).toEqual([200, 200]);
  });

  it('caps the lifetime at 4 h whatever expires_in says, and renews at the cap', async () => {
    await sandbox.close();
    sandbox = await startSandbox({ notify: false, tokenLifetimeS: 30 * 86_400 });
    let clock = Date.now();
    const c = client({ now: () => clock });
    await c.sendChunk(makeChunk(1, { chunkId: 'a' }));
    clock += 4 * 3600_000;
    await c.sendChunk(makeChunk(1, { chunkId: 'b', bulkId: 'b2' }));
    expect((await requests('/token')).map((r) => r.grant)).toEqual(['password', 'refresh_token']);
  });

  it('an expired token answered 401 is refreshed once and the send retried', async () => {
    const c = client();
    await c.sendChunk(makeChunk(1, { chunkId: 'a' }));
    sandboxClock = 5 * 3600_000; // the service's clock passes the 4 h lifetime; the client's does not
    const result = await c.sendChunk(makeChunk(1, { chunkId: 'b', bulkId: 'b2' }));
    expect(result.parts[0]!.outcome).toMatchObject({ kind: 'accepted', attempts: 2 });
    expect((await requests('/token')).map((r) => [r.grant, r.status])).toEqual([
      ['password', 200],
      ['refresh_token', 200],
    ]);
    expect((await requests('/mtmessage/massive')).map((r) => r.status)).toEqual([200, 401, 200]);
  });

  it('a 401 after three renewals is an authentication error, with no secret in its reason', async () => {
    await postJson(`${sandbox.url}/_sandbox/faults`, { massive: { revoke: 1 } });
    const c = client();
    const result = await c.sendChunk(makeChunk(2));
    const outcome = result.parts[0]!.outcome;
    expect(outcome).toMatchObject({ kind: 'unauthorized', code: 'DROPLINE_ERR_SERVICE_AUTH', status: 401 });
    expect(outcome.kind !== 'accepted' && outcome.reason).toMatch(/401/);
    // The first token and three renewals, each refused.
    expect((await requests('/mtmessage/massive')).length).toBe(4);
  });

  it('wrong credentials give an authentication error without the password', async () => {
    const c = client({ password: 'hunter2-secret' });
    const results = await Promise.all([
      c.sendChunk(makeChunk(1, { chunkId: 'a' })),
      c.sendChunk(makeChunk(1, { chunkId: 'b' })),
    ]);
    for (const r of results) {
      expect(r.parts[0]!.outcome).toMatchObject({ kind: 'unauthorized', code: 'DROPLINE_ERR_SERVICE_AUTH' });
      expect(JSON.stringify(r)).not.toContain('hunter2');
    }
    // Both sends shared the one failed login.
    expect((await requests('/token')).length).toBe(1);
    expect((await requests('/mtmessage/massive')).length).toBe(0);
  });

  it('a request that waited for its turn while the token was renewed goes with the renewed token', async () => {
    let clock = Date.now();
    // 5 destinations at 5 a second: each request waits about a second for the one before.
    const c = client({ now: () => clock, ratePerSecond: 5, concurrency: 4 });
    await c.sendChunk(makeChunk(5, { chunkId: 'a', bulkId: 'a' }));
    // b gets the token in force, then waits for its turn.
    const b = c.sendChunk(makeChunk(5, { chunkId: 'b', bulkId: 'b' }));
    await new Promise((r) => setTimeout(r, 100));
    // Meanwhile the token is due: the next request renews it, which expires the one b got.
    clock += 4 * 3600_000;
    const next = c.sendChunk(makeChunk(5, { chunkId: 'c', bulkId: 'c' }));
    await waitFor(async () => (await requests('/token')).length === 2, 'the renewal');
    expect((await b).parts[0]!.outcome).toMatchObject({ kind: 'accepted', attempts: 1 });
    expect((await next).parts[0]!.outcome).toMatchObject({ kind: 'accepted', attempts: 1 });
    expect((await requests('/token')).map((r) => [r.grant, r.status])).toEqual([
      ['password', 200],
      ['refresh_token', 200],
    ]);
    // Not one send carried a token that the renewal had replaced.
    expect((await requests('/mtmessage/massive')).map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it('retries a failing token endpoint with backoff', async () => {
    await postJson(`${sandbox.url}/_sandbox/faults`, { token: { '503': { probability: 1, times: 2 } } });
    const c = client();
    const result = await c.sendChunk(makeChunk(1));
    expect(result.parts[0]!.outcome.kind).toBe('accepted');
    expect((await requests('/token')).map((r) => r.status)).toEqual([503, 503, 200]);
  });
});

// Issue 12: several workers on one account share its token through the store. Each worker
// here is a client with a store connection of its own on one SQLite file (as processes would
// have); the sandbox expires an account's previous token whenever it issues a new one.
describe('a token shared by several workers through the store', () => {
  let dir: string;
  const stores: SqliteStore[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dropline-token-share-'));
  });
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
    await rm(dir, { recursive: true, force: true });
  });

  async function worker(
    name: string,
    clock: () => number,
    opts: Partial<ServiceClientOptions> = {},
    share: { failStore?: { times: number }; claimMs?: number } = {},
  ): Promise<ServiceClient> {
    const failStore = share.failStore ?? { times: 0 };
    const store = new SqliteStore({ path: join(dir, 'state.db') });
    await store.migrate();
    stores.push(store);
    const key = 'the-account';
    return client({
      now: () => Date.now() + clock(),
      tokenShare: {
        read: () => store.sharedToken(key),
        claim: (seen) => store.claimTokenRenewal(key, name, seen, share.claimMs ?? 60_000),
        store: async (token) => {
          if (failStore.times > 0) {
            failStore.times--;
            throw new Error('the store is unavailable');
          }
          return store.storeToken(key, name, token);
        },
        release: () => store.releaseTokenRenewal(key, name),
      },
      ...opts,
    });
  }

  it('four workers: one login, one renewal after the lifetime, and no worker expires another’s token', async () => {
    let clock = 0;
    const workers = await Promise.all(['w1', 'w2', 'w3', 'w4'].map((n) => worker(n, () => clock)));
    const round = async (r: number) => {
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          workers[i % 4]!.sendChunk(makeChunk(2, { chunkId: `r${r}c${i}`, bulkId: `r${r}b${i}` })),
        ),
      );
      expect(results.every((x) => x.parts[0]?.outcome.kind === 'accepted')).toBe(true);
    };
    await round(1);
    expect((await requests('/token')).map((r) => [r.grant, r.status])).toEqual([['password', 200]]);
    // Past the 4 h lifetime on both clocks: every worker needs a new token at once.
    clock = 4 * 3600_000 + 1000;
    sandboxClock = clock;
    await round(2);
    const tokens = await requests('/token');
    expect(tokens).toHaveLength(2);
    expect(tokens[1]?.status).toBe(200);
    // Not one request was answered 401: nobody's token was expired under it by another login.
    expect((await requests('/mtmessage/massive')).filter((r) => r.status === 401)).toEqual([]);
  });

  it('a worker whose token was replaced by another worker’s renewal adopts the new one after its 401, without a login', async () => {
    let clock = 0;
    const [a, b] = await Promise.all(['w1', 'w2'].map((n) => worker(n, () => clock)));
    await a!.sendChunk(makeChunk(1, { chunkId: 'a1', bulkId: 'a1' }));
    await b!.sendChunk(makeChunk(1, { chunkId: 'b1', bulkId: 'b1' }));
    // b's clock alone passes the renewal point: b renews (a refresh), which expires a's token.
    clock = 4 * 3600_000;
    await b!.sendChunk(makeChunk(1, { chunkId: 'b2', bulkId: 'b2' }));
    clock = 0;
    const r = await a!.sendChunk(makeChunk(1, { chunkId: 'a2', bulkId: 'a2' }));
    expect(r.parts[0]?.outcome.kind).toBe('accepted');
    // One login, one refresh (b's); a's 401 made it read the store, not log in again.
    expect((await requests('/token')).map((t) => [t.grant, t.status])).toEqual([
      ['password', 200],
      ['refresh_token', 200],
    ]);
  });

  it('a renewal the store failed to record leaves the renewal free: another worker renews at once instead of waiting out the claim', async () => {
    let clock = 0;
    const failStore = { times: 0 };
    const a = await worker('w1', () => clock);
    // A claim longer than the test may take: a claim held after the failure fails the test.
    const b = await worker('w2', () => clock, {}, { failStore, claimMs: 3600_000 });
    await a.sendChunk(makeChunk(1, { chunkId: 'a1', bulkId: 'a1' }));
    await b.sendChunk(makeChunk(1, { chunkId: 'b1', bulkId: 'b1' }));
    // b renews, and the store fails as it records the new token: a cannot adopt it, and its
    // own token was expired by b's renewal.
    failStore.times = 1;
    clock = 4 * 3600_000;
    expect((await b.sendChunk(makeChunk(1, { chunkId: 'b2', bulkId: 'b2' }))).parts[0]!.outcome.kind).toBe(
      'accepted',
    );
    clock = 0;
    // a's 401 renews: b's claim was given back when its record failed. Held instead, a would
    // wait for it to lapse (a minute in production) before its send went out.
    const r = await a.sendChunk(makeChunk(1, { chunkId: 'a2', bulkId: 'a2' }));
    expect(r.parts[0]?.outcome.kind).toBe('accepted');
    // a renews with the refresh token the store still has, which b's renewal used up: refused,
    // then a login. b's token lost with the store's failure, a login is the only way left.
    expect((await requests('/token')).map((t) => [t.grant, t.status])).toEqual([
      ['password', 200],
      ['refresh_token', 200],
      ['refresh_token', 400],
      ['password', 200],
    ]);
    // And b, whose token a's login expired, adopts a's from the store.
    expect((await b.sendChunk(makeChunk(1, { chunkId: 'b3', bulkId: 'b3' }))).parts[0]!.outcome.kind).toBe(
      'accepted',
    );
    expect(await requests('/token')).toHaveLength(4);
  });

  it('a request that waited for its turn while another worker renewed the token goes with the renewed one', async () => {
    let clock = 0;
    // a: 5 destinations at 5 a second, each request waits about a second for the one before.
    const a = await worker('w1', () => clock, { ratePerSecond: 5 });
    const b = await worker('w2', () => clock);
    await a.sendChunk(makeChunk(5, { chunkId: 'a1', bulkId: 'a1' }));
    const waiting = a.sendChunk(makeChunk(5, { chunkId: 'a2', bulkId: 'a2' }));
    await new Promise((r) => setTimeout(r, 100));
    // The token is due while a2 waits: b renews it, which expires the one a2 got.
    clock = 4 * 3600_000;
    expect((await b.sendChunk(makeChunk(1, { chunkId: 'b1', bulkId: 'b1' }))).parts[0]!.outcome.kind).toBe(
      'accepted',
    );
    expect((await waiting).parts[0]!.outcome).toMatchObject({ kind: 'accepted', attempts: 1 });
    // b's renewal was adopted from the store: one login, one refresh, no send refused.
    expect((await requests('/token')).map((t) => [t.grant, t.status])).toEqual([
      ['password', 200],
      ['refresh_token', 200],
    ]);
    expect((await requests('/mtmessage/massive')).map((r) => r.status)).toEqual([200, 200, 200]);
  });
});
