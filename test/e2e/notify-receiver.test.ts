// The delivery-report receiver over real HTTP on a real SQLite store (docs/contract.md "Notification
// receiver", docs/notify.md "What the receiver answers" and "Group commit"), and with the sandbox
// delivering to it through its 503-only retries.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Agent, Client, request } from 'undici';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DroplineError } from '../../src/errors.ts';
import { type Receiver, type ReceiverOptions, startReceiver } from '../../src/notify/receiver.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { openStore } from '../../src/store/index.ts';
import type { DeliveryEvent, DeliveryResult, RecipientInsert, Store } from '../../src/store/store.ts';
import { registerSentFile } from '../helpers/sent-file.ts';
import { type TestStore, testStore } from '../helpers/test-store.ts';

const TOKEN = 'r3ceiver-t0ken';
const FILE = 'f-notify';

let dir: string;
let store: Store;
const agent = new Agent({ connections: 256 });

/** The real store with recordDeliveries counted, and failing or held while the test says so. */
interface Wrapped {
  store: Store;
  calls: number;
  results: DeliveryResult[];
  /** Keys (transactionNumber|to) of events whose commit has resolved. */
  committed: Set<string>;
  /** Calls left that throw. */
  failNext: number;
  /** What they throw (default: SQLite's busy error). */
  failure: () => Error;
  /** While set, commits wait for it. */
  gate: Promise<void> | null;
  /** chunkMessageIds calls (reports of POST /mtmessage), in order. */
  lookups: { fileId: string; seq: number; numbers: string[] }[];
  /** Lookups left that throw (what `failure` makes). */
  failLookups: number;
}

function wrap(real: Store): Wrapped {
  const w: Wrapped = {
    store: real,
    calls: 0,
    results: [],
    committed: new Set(),
    failNext: 0,
    failure: () => new Error('SQLITE_BUSY: database is locked'),
    gate: null,
    lookups: [],
    failLookups: 0,
  };
  const chunkMessageIds = async (fileId: string, seq: number, numbers: readonly string[]) => {
    w.lookups.push({ fileId, seq, numbers: [...numbers] });
    if (w.failLookups > 0) {
      w.failLookups--;
      throw w.failure();
    }
    return real.chunkMessageIds(fileId, seq, numbers);
  };
  const recordDeliveries = async (events: readonly DeliveryEvent[]): Promise<DeliveryResult> => {
    w.calls++;
    if (w.gate) await w.gate;
    if (w.failNext > 0) {
      w.failNext--;
      throw w.failure();
    }
    const result = await real.recordDeliveries(events);
    w.results.push(result);
    for (const e of events) w.committed.add(`${e.transactionNumber}|${e.to}`);
    return result;
  };
  w.store = new Proxy(real, {
    get(target, prop, receiver) {
      if (prop === 'recordDeliveries') return recordDeliveries;
      if (prop === 'chunkMessageIds') return chunkMessageIds;
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return w;
}

const sum = (w: Wrapped, k: 'recorded' | 'duplicates' | 'orphans') => w.results.reduce((n, r) => n + r[k], 0);

function body(over: Record<string, unknown> = {}): string {
  return JSON.stringify({
    results: [
      {
        bulkId: FILE,
        messageId: 'm-1',
        to: '573001000001',
        transactionNumber: '1000000000000000000000000001',
        callbackData: '',
        smsCount: 1,
        status: { name: 'DELIVERED_TO_HANDSET' },
        ...over,
      },
    ],
  });
}

/** A sandbox account's access token (POST /token, grant password). */
async function login(sandboxUrl: string, username: string, password: string): Promise<string> {
  const auth = await request(`${sandboxUrl}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ grant_type: 'password' }),
    dispatcher: agent,
  });
  return ((await auth.body.json()) as { access_token: string }).access_token;
}

async function post(url: string, text: string, token: string | null = TOKEN) {
  const u = new URL(url);
  if (token !== null) u.searchParams.set('token', token);
  const res = await request(u, {
    method: 'POST',
    body: text,
    headers: { 'content-type': 'application/json' },
    dispatcher: agent,
  });
  return { status: res.statusCode, text: await res.body.text() };
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A file in `sending` with `n` recipients m-1…m-n, all sent in chunk 1. */
function registerFile(fileId: string, n: number): Promise<void> {
  return registerSentFile(
    store,
    fileId,
    n,
    (i) => `5730010${String(i).padStart(5, '0')}`,
    '1000000000000000000000000001',
  );
}

const statusOf = async (fileId: string) =>
  new Map((await store.chunkRecipients(fileId, 1)).map((r) => [r.messageId, r]));

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-notify-'));
  store = await await openStore(`sqlite:${join(dir, 'state.db')}`);
  await store.migrate();
  await registerFile(FILE, 300);
});

afterAll(async () => {
  await store.close();
  await agent.close();
  await rm(dir, { recursive: true, force: true });
});

describe('notification receiver', () => {
  let w: Wrapped;
  let receiver: Receiver;
  const start = async (over: Partial<ReceiverOptions> = {}) => {
    receiver = await startReceiver({
      listen: '127.0.0.1:0',
      path: '/notify',
      token: TOKEN,
      store: w.store,
      ...over,
    });
    return receiver;
  };
  beforeEach(() => {
    w = wrap(store);
  });
  afterEach(async () => {
    w.gate = null;
    await receiver?.close();
  });

  it('the token is read wherever it is in the query, percent-encoded or not', async () => {
    const r = await start();
    const raw = async (query: string, n: number) => {
      const res = await request(`${r.url}?${query}`, {
        method: 'POST',
        body: body({
          messageId: `m-${n}`,
          to: `5730010${String(n).padStart(5, '0')}`,
          transactionNumber: `4${String(n).padStart(27, '0')}`,
        }),
        headers: { 'content-type': 'application/json' },
        dispatcher: agent,
      });
      await res.body.dump();
      return res.statusCode;
    };
    const encoded = [...TOKEN].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
    expect(await raw(`token=${TOKEN}`, 270)).toBe(200);
    expect(await raw(`a=1&token=${TOKEN}`, 271)).toBe(200);
    expect(await raw(`token=${encoded}`, 272)).toBe(200);
    expect(await raw(`token=${TOKEN}&b=2`, 273)).toBe(200);
    expect(await raw(`token=${TOKEN}x`, 274)).toBe(401);
    expect(await raw(`token=${TOKEN}%00`, 275)).toBe(401);
    expect(await raw(`tokens=${TOKEN}`, 276)).toBe(401);
    expect(sum(w, 'recorded')).toBe(4);
  });

  it('401 for a missing or wrong token, before reading the report', async () => {
    const r = await start();
    expect((await post(r.url, body(), null)).status).toBe(401);
    expect((await post(r.url, body(), 'x')).status).toBe(401);
    expect((await post(r.url, body(), `${TOKEN.slice(0, -1)}X`)).status).toBe(401);
    expect((await post(r.url, body(), `${TOKEN}${TOKEN}`)).status).toBe(401);
    expect(w.calls).toBe(0);
    expect(r.url).not.toContain(TOKEN);
  });

  it('400 with a reason for a malformed body; 404 elsewhere; 413 above the size limit', async () => {
    const r = await start({ maxBodyBytes: 1024 });
    const bad = await post(r.url, '{"results":[]}');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text)).toMatchObject({ reason: 'results must not be empty' });
    expect((await post(r.url, 'not json')).status).toBe(400);
    expect((await post(r.url, body({ status: undefined }))).status).toBe(400);
    expect((await post(r.url.replace('/notify', '/other'), body())).status).toBe(404);
    expect((await post(r.url, JSON.stringify({ results: [{ pad: 'x'.repeat(2000) }] }))).status).toBe(413);
    expect(w.calls).toBe(0);
    expect(r.stats().answered).toMatchObject({ 400: 3, 404: 1, 413: 1 });
  });

  it('a valid report: 200 once it is in the store, recipient status updated', async () => {
    const r = await start();
    const res = await post(
      r.url,
      body({
        messageId: 'm-1',
        to: '573001000001',
        smsCount: '2',
        transactionNumber: '1000000000000000000000000011',
      }),
    );
    expect(res.status).toBe(200);
    expect(w.committed.has('1000000000000000000000000011|573001000001')).toBe(true);
    const m1 = (await statusOf(FILE)).get('m-1');
    expect(m1).toMatchObject({ status: 'DELIVERED_TO_HANDSET', smsCount: 2 });
    expect(sum(w, 'recorded')).toBe(1);
  });

  it('a duplicate (same transactionNumber + to) is answered 200 and recorded once', async () => {
    const r = await start();
    const b = body({
      messageId: 'm-2',
      to: '573001000002',
      transactionNumber: '1000000000000000000000000012',
    });
    expect((await post(r.url, b)).status).toBe(200);
    const again = body({
      messageId: 'm-2',
      to: '573001000002',
      transactionNumber: '1000000000000000000000000012',
      status: { name: 'NO_SUCCESS' },
    });
    expect((await post(r.url, again)).status).toBe(200);
    expect(sum(w, 'recorded')).toBe(1);
    expect(sum(w, 'duplicates')).toBe(1);
    // The duplicate changed nothing.
    expect((await statusOf(FILE)).get('m-2')?.status).toBe('DELIVERED_TO_HANDSET');
  });

  it('a report for an unknown messageId is answered 200 and kept as an orphan', async () => {
    const r = await start();
    const res = await post(
      r.url,
      body({ bulkId: 'someone-else', messageId: 'zz', transactionNumber: '1000000000000000000000000013' }),
    );
    expect(res.status).toBe(200);
    expect(sum(w, 'orphans')).toBe(1);
    expect(r.stats()).toMatchObject({ orphans: 1, recorded: 1 });
  });

  it('200 concurrent reports: far fewer transactions than requests, each answered after its commit', async () => {
    // A wide window: the client shares this thread and this busy machine, so its 200 requests
    // trickle in over several ms; the point is that those arriving together commit together.
    const r = await start({ batchMs: 20 });
    const n = 200;
    const seen: boolean[] = [];
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const to = `5730010${String(i + 50).padStart(5, '0')}`;
        const txn = `2000000000000000000000000${String(i).padStart(3, '0')}`;
        const res = await post(r.url, body({ messageId: `m-${i + 50}`, to, transactionNumber: txn }));
        expect(res.status).toBe(200);
        seen.push(w.committed.has(`${txn}|${to}`));
      }),
    );
    expect(seen).toHaveLength(n);
    expect(seen.every(Boolean)).toBe(true);
    expect(sum(w, 'recorded')).toBe(n);
    expect(w.calls).toBeLessThan(n / 4);
    expect(r.stats().largestBatch).toBeGreaterThan(1);
  });

  it('a report on the only open connection commits at once: no other can arrive before its answer', async () => {
    // A batch window of a minute: waiting it out would time the test out.
    const r = await start({ batchMs: 60_000 });
    const url = new URL(r.url);
    const one = new Client(url.origin); // one connection, one request at a time
    try {
      for (let i = 0; i < 3; i++) {
        const to = `5730010${String(i + 260).padStart(5, '0')}`;
        const res = await one.request({
          path: `${url.pathname}?token=${TOKEN}`,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: body({ messageId: `m-${i + 260}`, to, transactionNumber: `30000000000000000000000000${i}` }),
        });
        await res.body.dump();
        expect(res.statusCode).toBe(200);
      }
    } finally {
      await one.close();
    }
    expect(r.stats()).toMatchObject({ commits: 3, recorded: 3, orphans: 0 });
    expect((await statusOf(FILE)).get('m-262')?.status).toBe('DELIVERED_TO_HANDSET');
  });

  it('503 while the store fails, 200 once it recovers', async () => {
    const r = await start();
    const b = body({
      messageId: 'm-3',
      to: '573001000003',
      transactionNumber: '1000000000000000000000000014',
    });
    w.failNext = 2;
    expect((await post(r.url, b)).status).toBe(503);
    expect((await post(r.url, b)).status).toBe(503);
    expect((await post(r.url, b)).status).toBe(200);
    expect(sum(w, 'recorded')).toBe(1);
    expect((await statusOf(FILE)).get('m-3')?.status).toBe('DELIVERED_TO_HANDSET');
  });

  it('a store away for many commits is logged once when it goes and once when it is back, not once per commit', async () => {
    // PostgreSQL restarting under a stream of reports fails every commit for as long as it is
    // down: a line per commit flooded the log (thousands in a 20 s outage).
    const lines: { level: number; msg: string; failedCommits?: number }[] = [];
    const logger = pino(
      { level: 'info' },
      { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) },
    );
    const r = await start({ logger });
    w.failNext = 25;
    w.failure = () =>
      new DroplineError(
        'DROPLINE_ERR_STORE_UNAVAILABLE',
        `recording delivery reports: connect ECONNREFUSED 127.0.0.1:5432 (call ${w.calls})`,
      );
    const b = body({
      messageId: 'm-4',
      to: '573001000004',
      transactionNumber: '1000000000000000000000000015',
    });
    for (let i = 0; i < 25; i++) expect((await post(r.url, b)).status).toBe(503);
    expect((await post(r.url, b)).status).toBe(200);
    const said = lines.filter((l) => l.msg.startsWith('notify:') && !l.msg.includes('listening'));
    expect(said.map((l) => l.msg)).toEqual([
      'notify: the store is unavailable; answering 503 until it answers (the service retries)',
      'notify: the store answers again; reports are recorded',
    ]);
    expect(said[0]!.level).toBe(40);
    expect(said[1]!.failedCommits).toBe(25);
    // Any other failure is still said every time it differs.
    w.failNext = 2;
    w.failure = () => new Error(`SQLITE_CORRUPT: database disk image is malformed (call ${w.calls})`);
    expect((await post(r.url, b)).status).toBe(503);
    expect((await post(r.url, b)).status).toBe(503);
    expect(lines.filter((l) => l.msg.startsWith('notify: commit failed')).length).toBe(2);
  });

  it('a full queue answers 503 at once; the queued ones still get 200 after the commit', async () => {
    let open!: () => void;
    w.gate = new Promise((resolve) => (open = resolve));
    const r = await start({ maxBatch: 1, maxQueue: 1, batchMs: 0 });
    const first = post(
      r.url,
      body({ messageId: 'm-4', to: '573001000004', transactionNumber: '1000000000000000000000000015' }),
    );
    await waitFor('the first commit to start', () => w.calls === 1);
    const second = post(
      r.url,
      body({ messageId: 'm-5', to: '573001000005', transactionNumber: '1000000000000000000000000016' }),
    );
    await waitFor('the second report to queue', () => r.stats().queued === 1);
    const third = await post(
      r.url,
      body({ messageId: 'm-6', to: '573001000006', transactionNumber: '1000000000000000000000000017' }),
    );
    expect(third.status).toBe(503);
    open();
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
  });

  it('a commit that hangs is answered 503 rather than left to time out', async () => {
    w.gate = new Promise(() => {});
    const r = await start({ commitTimeoutMs: 100 });
    const res = await post(
      r.url,
      body({ messageId: 'm-7', to: '573001000007', transactionNumber: '1000000000000000000000000018' }),
    );
    expect(res.status).toBe(503);
    // Still stuck: new reports are refused at once.
    expect((await post(r.url, body({ transactionNumber: '1000000000000000000000000019' }))).status).toBe(503);
  });
});

describe('with the sandbox delivering (503-only retries)', () => {
  it('reports are retried through store failures and each recorded exactly once', async () => {
    const fileId = 'f-sandbox';
    const n = 40;
    await registerFile(fileId, n);
    const w = wrap(store);
    w.failNext = 2;
    const receiver = await startReceiver({
      listen: '127.0.0.1:0',
      path: '/notify',
      token: TOKEN,
      store: w.store,
    });
    // 10/20/30/40/50 s × 0.001: the retry schedule in tens of milliseconds.
    const sandbox = await startSandbox({ timeScale: 0.001, deliveryDelayMs: 1000 });
    try {
      const access_token = await login(sandbox.url, 'demo', 'demo');
      const notifyUrl = `${receiver.url}?token=${encodeURIComponent(TOKEN)}`;
      const sent = await request(`${sandbox.url}/mtmessage/massive`, {
        method: 'POST',
        headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          bulkId: fileId,
          messages: [
            {
              text: 'hola',
              notifyUrl,
              notifyContentType: 'application/json',
              destinations: Array.from({ length: n }, (_, i) => ({
                to: `5730010${String(i + 1).padStart(5, '0')}`,
                messageId: `m-${i + 1}`,
              })),
            },
          ],
        }),
        dispatcher: agent,
      });
      expect(sent.statusCode).toBe(200);
      await sent.body.dump();

      await waitFor(
        'every notification to be settled',
        () => sandbox.notifier.pending === 0 && w.committed.size >= n,
      );

      const res = await request(`${sandbox.url}/_sandbox/notifications`, { dispatcher: agent });
      const { attempts } = (await res.body.json()) as {
        attempts: { transactionNumber: string; to: string; attempt: number; code: number; url: string }[];
      };
      const byKey = new Map<string, number[]>();
      for (const a of [...attempts].sort((x, y) => x.attempt - y.attempt)) {
        const k = `${a.transactionNumber}|${a.to}`;
        byKey.set(k, [...(byKey.get(k) ?? []), a.code]);
      }
      expect(byKey.size).toBe(n);
      for (const codes of byKey.values()) {
        expect(codes.at(-1)).toBe(200);
        expect(codes.slice(0, -1).every((c) => c === 503)).toBe(true);
      }
      // The failing commits did make the service retry.
      expect(attempts.some((a) => a.code === 503)).toBe(true);
      expect(attempts.every((a) => !a.url.includes(TOKEN))).toBe(true);
      expect(sum(w, 'recorded')).toBe(n);
      expect(sum(w, 'duplicates')).toBe(0);
      const recipients = await statusOf(fileId);
      expect([...recipients.values()].filter((r) => r.status === 'DELIVERED_TO_HANDSET')).toHaveLength(n);
      expect(await store.counts(fileId)).toMatchObject({ delivered: n, pendingDelivery: 0 });
    } finally {
      await sandbox.close();
      await receiver.close();
    }
  });
});

// POST /mtmessage (RCS, flash SMS) carries a chunk's recipients under one CustomMessageId
// `<fileId>:<seq>` and CallbackData {"f": "<fileId>", "c": <seq>}; the account webhook's
// reports come back with an empty bulkId, that messageId for every recipient, and the
// CallbackData as JSON text (docs/notify.md "Reports of POST /mtmessage"). The receiver finds each
// recipient by the chunk and its number. On both stores: the lookup is a store read of its own.
describe.each(['sqlite', 'postgres'] as const)(
  'reports of POST /mtmessage (account webhook), %s store',
  (kind) => {
    const RCS = 'f-rcs';
    const num = (i: number) => `5730020${String(i).padStart(5, '0')}`;
    const tnOf = (seq: number) => `${seq}`.padEnd(28, '0');
    let caseDir: string;
    let backend: TestStore;
    let db: Store;
    let w: Wrapped;
    let receiver: Receiver | null = null;

    /**
     * A bulk file sent as three chunks, every chunk accepted. Chunk 1: line 1's numbers 1-3;
     * chunk 2: line 2's numbers 4-6; chunk 3: line 3 with number 1 again (a number may repeat
     * in another chunk, never in one) and number 7, and line 4 with its own messageId.
     */
    const rows: RecipientInsert[] = [
      [1, 1, 1, 1],
      [2, 1, 2, 2],
      [3, 1, 3, 3],
      [4, 2, 1, 4],
      [5, 2, 2, 5],
      [6, 2, 3, 6],
      [7, 3, 1, 1],
      [8, 3, 2, 7],
      [9, 4, 1, 8],
    ].map(([idx, line, k, n]) => ({
      idx: idx!,
      line: line!,
      k: k!,
      number: num(n!),
      value: num(n!),
      messageId: idx === 9 ? 'own-9' : `${RCS}-${line}-${k}`,
      generatedMessageId: idx !== 9,
      text: null,
      chunkSeq: Math.ceil(idx! / 3),
      outcome: 'pending',
      code: null,
      detail: null,
      smsCount: null,
    }));

    beforeEach(async () => {
      caseDir = await mkdtemp(join(tmpdir(), 'dropline-notify-mt-'));
      backend = await testStore(caseDir, kind);
      db = await openStore(backend.url);
      await db.migrate();
      await db.registerFile({
        fileId: RCS,
        source: 'local',
        name: `${RCS}.txt`,
        path: `processing/${RCS}.txt`,
        sha256: RCS,
        bytes: 100,
        state: 'sending',
      });
      await db.insertRecipients(RCS, rows);
      await db.insertChunks(
        RCS,
        [1, 2, 3].map((seq) => ({ seq, size: 3 })),
      );
      for (const seq of [1, 2, 3]) {
        await db.setChunkState(RCS, seq, 'inflight', ['pending']);
        await db.recordChunkResult(RCS, seq, {
          state: 'accepted',
          attempts: 1,
          transactionNumber: tnOf(seq),
          parts: [{ messageIds: [], wholeChunk: true, outcome: 'sent', transactionNumber: tnOf(seq) }],
        });
      }
      w = wrap(db);
    });

    afterEach(async () => {
      await receiver?.close();
      receiver = null;
      await db.close();
      await backend.close();
      await rm(caseDir, { recursive: true, force: true });
    });

    const start = async (over: Partial<ReceiverOptions> = {}) => {
      receiver = await startReceiver({
        listen: '127.0.0.1:0',
        path: '/notify',
        token: TOKEN,
        store: w.store,
        ...over,
      });
      return receiver;
    };

    /** One element as the sandbox's account webhook sends it for chunk `seq` of `fileId`. */
    const webhookResult = (seq: number, to: string, over: Record<string, unknown> = {}) => ({
      bulkId: '',
      messageId: `${RCS}:${seq}`,
      callbackData: JSON.stringify({ f: RCS, c: seq }),
      to,
      transactionNumber: tnOf(seq),
      smsCount: 1,
      status: { name: 'DELIVERED_TO_HANDSET' },
      ...over,
    });
    const results = (...elements: Record<string, unknown>[]) => JSON.stringify({ results: elements });

    /** Every recipient's [messageId, status, transactionNumber] from the report's rows. */
    const reportRows = async () => {
      const out = new Map<string, [string, string | null]>();
      for await (const page of db.reportPages(RCS))
        for (const r of page) out.set(r.messageId!, [r.status, r.transactionNumber]);
      return out;
    };

    it("each report reaches its recipient in the chunk named, not the same number's in another chunk", async () => {
      const r = await start();
      const res = await post(
        r.url,
        results(webhookResult(3, num(1)), webhookResult(3, num(7), { status: { name: 'NO_SUCCESS' } })),
      );
      expect(res.status).toBe(200);
      // A `to` written with a + is the same number (as for every report).
      expect((await post(r.url, results(webhookResult(3, `+${num(8)}`, { smsCount: 2 })))).status).toBe(200);
      expect(r.stats()).toMatchObject({ recorded: 3, orphans: 0, duplicates: 0 });
      const rows = await reportRows();
      expect(rows.get(`${RCS}-3-1`)).toEqual(['DELIVERED_TO_HANDSET', tnOf(3)]);
      expect(rows.get(`${RCS}-3-2`)).toEqual(['NO_SUCCESS', tnOf(3)]);
      expect(rows.get('own-9')).toEqual(['DELIVERED_TO_HANDSET', tnOf(3)]);
      // Number 1 of chunk 1 is another recipient: untouched.
      expect(rows.get(`${RCS}-1-1`)?.[0]).toBe('pending');
      expect((await db.chunkRecipients(RCS, 3)).find((x) => x.messageId === 'own-9')?.smsCount).toBe(2);
      expect(await db.counts(RCS)).toMatchObject({ delivered: 2, undelivered: 1, pendingDelivery: 6 });
      // The same report again (the service's resend): a duplicate, nothing changes.
      expect((await post(r.url, results(webhookResult(3, num(7))))).status).toBe(200);
      expect(r.stats()).toMatchObject({ recorded: 3, duplicates: 1 });
      expect((await reportRows()).get(`${RCS}-3-2`)?.[0]).toBe('NO_SUCCESS');
    });

    it('one store read per chunk in a batch, not one per report', async () => {
      const r = await start();
      const body = results(
        webhookResult(2, num(4)),
        webhookResult(1, num(1)),
        webhookResult(2, num(6)),
        webhookResult(2, num(5)),
        webhookResult(1, num(3)),
      );
      expect((await post(r.url, body)).status).toBe(200);
      expect(w.calls).toBe(1);
      expect(w.lookups.map((l) => [l.fileId, l.seq, [...l.numbers].sort()]).sort()).toEqual([
        [RCS, 1, [num(1), num(3)]],
        [RCS, 2, [num(4), num(5), num(6)]],
      ]);
      expect(r.stats()).toMatchObject({ recorded: 5, orphans: 0 });
      expect(await db.counts(RCS)).toMatchObject({ delivered: 5, pendingDelivery: 4 });
      const rows = await reportRows();
      for (const id of ['1-1', '1-3', '2-1', '2-2', '2-3'])
        expect(rows.get(`${RCS}-${id}`)?.[0]).toBe('DELIVERED_TO_HANDSET');
      expect(rows.get(`${RCS}-1-2`)?.[0]).toBe('pending');
    });

    it('a number not in the chunk named, an unknown chunk or file: orphans, recipients untouched', async () => {
      const r = await start();
      const body = results(
        // number 4 is chunk 2's, not chunk 3's
        webhookResult(3, num(4)),
        // number 9 is nobody's
        webhookResult(3, num(9), { transactionNumber: tnOf(9) }),
        webhookResult(7, num(1), { callbackData: JSON.stringify({ f: RCS, c: 7 }), messageId: `${RCS}:7` }),
        webhookResult(1, num(1), {
          callbackData: JSON.stringify({ f: 'f-other', c: 1 }),
          messageId: 'f-other:1',
        }),
      );
      expect((await post(r.url, body)).status).toBe(200);
      expect(r.stats()).toMatchObject({ recorded: 4, orphans: 4 });
      expect(await db.counts(RCS)).toMatchObject({ delivered: 0, pendingDelivery: 9 });
      expect(w.lookups).toHaveLength(3);
    });

    it('a callbackData that does not name a chunk is left alone (an orphan), without a store read', async () => {
      const r = await start();
      const odd = [
        'not json',
        '{"f":"f-rcs","c":"3"}',
        '{"f":"","c":3}',
        '{"f":"f-rcs","c":-1}',
        '{"f":"f-rcs","c":3.5}',
        '{"f":"f-rcs","c":2147483648}',
        '{"f":3,"c":3}',
        '{"c":3}',
        '[{"f":"f-rcs","c":3}]',
        '"{\\"f\\":\\"f-rcs\\",\\"c\\":3}"',
        '{"f":"f-rcs\\u0000","c":3}',
        '',
      ];
      const body = results(
        ...odd.map((callbackData, i) =>
          webhookResult(3, num(1), {
            callbackData,
            transactionNumber: `9${String(i).padStart(2, '0')}`.padEnd(28, '0'),
          }),
        ),
        // no callbackData at all
        webhookResult(3, num(7), { callbackData: undefined }),
      );
      expect((await post(r.url, body)).status).toBe(200);
      expect(w.lookups).toEqual([]);
      expect(r.stats()).toMatchObject({ recorded: odd.length + 1, orphans: odd.length + 1 });
      expect(await db.counts(RCS)).toMatchObject({ delivered: 0, pendingDelivery: 9 });
    });

    it('massive-style reports (a bulkId) work as before and read nothing more, whatever their callbackData', async () => {
      const r = await start();
      const massive = (to: string, messageId: string, callbackData: string) =>
        results({
          bulkId: RCS,
          messageId,
          callbackData,
          to,
          transactionNumber: '5'.padEnd(28, '1'),
          smsCount: 1,
          status: { name: 'DELIVERED_TO_HANDSET' },
        });
      expect((await post(r.url, massive(num(2), `${RCS}-1-2`, ''))).status).toBe(200);
      // A bulkId wins: the callbackData is not even parsed.
      expect(
        (await post(r.url, massive(num(5), `${RCS}-2-2`, JSON.stringify({ f: RCS, c: 3 })))).status,
      ).toBe(200);
      expect(w.lookups).toEqual([]);
      expect(r.stats()).toMatchObject({ recorded: 2, orphans: 0 });
      const rows = await reportRows();
      expect(rows.get(`${RCS}-1-2`)?.[0]).toBe('DELIVERED_TO_HANDSET');
      expect(rows.get(`${RCS}-2-2`)?.[0]).toBe('DELIVERED_TO_HANDSET');
      expect(rows.get(`${RCS}-3-1`)?.[0]).toBe('pending');
    });

    it('a store that fails the lookup: 503 as for a failed commit, nothing recorded; the retry is recorded once', async () => {
      const lines: { level: number; msg: string }[] = [];
      const logger = pino(
        { level: 'info' },
        { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) },
      );
      const r = await start({ logger });
      const body = results(webhookResult(3, num(7)));
      w.failLookups = 1;
      w.failure = () =>
        new DroplineError('DROPLINE_ERR_STORE_UNAVAILABLE', 'reading chunk 3: connect ECONNREFUSED');
      expect((await post(r.url, body)).status).toBe(503);
      w.failLookups = 1;
      w.failure = () => new Error('SQLITE_CORRUPT: database disk image is malformed');
      expect((await post(r.url, body)).status).toBe(503);
      // Nothing went to recordDeliveries, nothing was recorded.
      expect(w.calls).toBe(0);
      expect((await reportRows()).get(`${RCS}-3-2`)?.[0]).toBe('pending');
      expect((await post(r.url, body)).status).toBe(200);
      expect(r.stats()).toMatchObject({ failedCommits: 2, recorded: 1, orphans: 0, duplicates: 0 });
      expect((await reportRows()).get(`${RCS}-3-2`)).toEqual(['DELIVERED_TO_HANDSET', tnOf(3)]);
      // Said as a failed commit is: the store away once, then back; another failure as a failed commit.
      const said = lines
        .filter((l) => l.msg.startsWith('notify:') && !l.msg.includes('listening'))
        .map((l) => l.msg);
      expect(said).toEqual([
        'notify: the store is unavailable; answering 503 until it answers (the service retries)',
        'notify: commit failed; answering 503 (the service retries)',
        'notify: the store answers again; reports are recorded',
      ]);
    });

    it('a lookup that hangs is answered 503 by the commit watchdog', async () => {
      const never = new Promise<Map<string, string>>(() => {});
      const hanging = new Proxy(db, {
        get(target, prop, receiver) {
          if (prop === 'chunkMessageIds') return () => never;
          const v: unknown = Reflect.get(target, prop, receiver);
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
      const r = await start({ commitTimeoutMs: 100, store: hanging });
      expect((await post(r.url, results(webhookResult(3, num(7))))).status).toBe(503);
      // Still stuck: the next report is refused at once, as behind a hung commit.
      expect((await post(r.url, results(webhookResult(3, num(8))))).status).toBe(503);
      expect(r.stats()).toMatchObject({ recorded: 0, commits: 1 });
    });

    it('the sandbox: POST /mtmessage (RCS) with CustomMessageId and CallbackData, reports through the account webhook', async () => {
      const r = await start();
      const sandbox = await startSandbox({
        timeScale: 0.001,
        deliveryDelayMs: 1000,
        accounts: [{ username: 'rcs', password: 'rcs', webhook: { url: `${r.url}?token=${TOKEN}` } }],
      });
      try {
        const access_token = await login(sandbox.url, 'rcs', 'rcs');
        const sent = await request(`${sandbox.url}/mtmessage`, {
          method: 'POST',
          headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            Type: 1,
            Channel: 'RCS',
            Devices: [num(1), num(7), num(8)].join('-'),
            MessageText: 'hola',
            CustomMessageId: `${RCS}:3`,
            CallbackData: { f: RCS, c: 3 },
          }),
          dispatcher: agent,
        });
        expect(sent.statusCode).toBe(200);
        const answer = (await sent.body.json()) as { TransactionNumber: string; Status: number };
        expect(answer.Status).toBe(0);
        await waitFor('the three reports', () => sandbox.notifier.pending === 0 && r.stats().recorded >= 3);
        expect(r.stats()).toMatchObject({ recorded: 3, orphans: 0 });
        const rows = await reportRows();
        // (the chunk's own transaction number, from its send, is what a row shows)
        for (const id of [`${RCS}-3-1`, `${RCS}-3-2`, 'own-9'])
          expect(rows.get(id)?.[0]).toBe('DELIVERED_TO_HANDSET');
        expect(rows.get(`${RCS}-1-1`)?.[0]).toBe('pending');
        expect(w.lookups.every((l) => l.fileId === RCS && l.seq === 3)).toBe(true);
        const log = await request(`${sandbox.url}/_sandbox/notifications`, { dispatcher: agent });
        const { attempts } = (await log.body.json()) as { attempts: { to: string; code: number }[] };
        expect(attempts.map((x) => [x.to, x.code]).sort()).toEqual([
          [num(1), 200],
          [num(7), 200],
          [num(8), 200],
        ]);
      } finally {
        await sandbox.close();
      }
    });
  },
);
