// The receiver against reports a clumsy or hostile sender (or a misbehaving service) could
// post with the right token: over real HTTP, on the test's store (SQLite, or PostgreSQL with
// DROPLINE_TEST_STORE=postgres). Bad input gets a clear, final answer (never a crash, never a
// 503 the service would retry for nothing), and never costs the good reports around it.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Agent, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Receiver, type ReceiverOptions, startReceiver } from '../../src/notify/receiver.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { openStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/store.ts';
import { registerSentFile } from '../helpers/sent-file.ts';
import { type TestStore, testStore } from '../helpers/test-store.ts';

const TOKEN = 'h0stile-t0ken';
const FILE = 'f-hostile';
const N = 20;

let dir: string;
let ts: TestStore;
let store: Store;
const agent = new Agent({ connections: 64 });

const numberOf = (i: number) => `5730020${String(i).padStart(5, '0')}`;

function report(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    bulkId: FILE,
    messageId: 'm-1',
    to: numberOf(1),
    transactionNumber: '2000000000000000000000000001',
    callbackData: '',
    smsCount: 1,
    status: { name: 'DELIVERED_TO_HANDSET' },
    ...over,
  };
}

async function post(url: string, text: string) {
  const u = new URL(url);
  u.searchParams.set('token', TOKEN);
  const res = await request(u, {
    method: 'POST',
    body: text,
    headers: { 'content-type': 'application/json' },
    dispatcher: agent,
    // A receiver that never answers fails the test instead of hanging it.
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  return { status: res.statusCode, text: await res.body.text() };
}

const postReport = (url: string, over: Record<string, unknown> = {}) =>
  post(url, JSON.stringify({ results: [report(over)] }));

async function statusOf(messageId: string): Promise<string | undefined> {
  const rows = await store.chunkRecipients(FILE, 1);
  return rows.find((r) => r.messageId === messageId)?.status;
}

/** A file in `sending` with N recipients m-1…m-N, all sent in chunk 1. */
function registerFile(): Promise<void> {
  return registerSentFile(store, FILE, N, numberOf, '2000000000000000000000000000');
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-notify-hostile-'));
  ts = await testStore(dir);
  store = await openStore(ts.url);
  await store.migrate();
  await registerFile();
});

afterAll(async () => {
  await store?.close();
  await ts?.close();
  await agent.close();
  await rm(dir, { recursive: true, force: true });
});

describe('notify: hostile reports', () => {
  let receiver: Receiver | undefined;
  const start = async (over: Partial<ReceiverOptions> = {}) => {
    receiver = await startReceiver({ listen: '127.0.0.1:0', path: '/notify', token: TOKEN, store, ...over });
    return receiver;
  };
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });

  it('a callbackData nested too deep to re-serialize is answered, not a crash; the report is recorded', async () => {
    const r = await start();
    // 40 KB, under the 64 KiB limit: JSON.parse reads it, JSON.stringify overflows the stack.
    const depth = 20_000;
    const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const text = JSON.stringify({
      results: [
        report({ messageId: 'm-2', to: numberOf(2), transactionNumber: '2000000000000000000000000002' }),
      ],
    }).replace('"callbackData":""', `"callbackData":${deep}`);
    expect(text.length).toBeLessThan(64 * 1024);
    const res = await post(r.url, text);
    // An optional field of an odd shape is no reason to lose the report (a 400 is final).
    expect(res.status).toBe(200);
    expect(await statusOf('m-2')).toBe('DELIVERED_TO_HANDSET');
    // And the receiver still serves.
    const next = await postReport(r.url, {
      messageId: 'm-3',
      to: numberOf(3),
      transactionNumber: '2000000000000000000000000003',
    });
    expect(next.status).toBe(200);
    expect(await statusOf('m-3')).toBe('DELIVERED_TO_HANDSET');
  });

  it('an identifier too long to be one is refused 400 (final), and never fails the good reports batched with it', async () => {
    // A wide batch window: the bad report and the good ones share one commit.
    const r = await start({ batchMs: 200 });
    // Random text does not compress: past PostgreSQL's index row limit (2704 bytes).
    const long = randomBytes(3000).toString('base64');
    const good = [4, 5, 6].map((i) =>
      postReport(r.url, {
        messageId: `m-${i}`,
        to: numberOf(i),
        transactionNumber: `200000000000000000000000000${i}`,
      }),
    );
    const badTn = postReport(r.url, { messageId: 'm-7', to: numberOf(7), transactionNumber: long });
    const badTo = postReport(r.url, {
      messageId: 'm-8',
      to: long,
      transactionNumber: '2000000000000000000000000008',
    });
    const answers = await Promise.all([...good, badTn, badTo]);
    expect(answers.slice(0, 3).map((a) => a.status)).toEqual([200, 200, 200]);
    for (const a of answers.slice(3)) {
      // Not 503: retrying it could never help, and the service would retry it five times.
      expect(a.status).toBe(400);
      expect(JSON.parse(a.text).reason).toMatch(/^results\[0\]\.(transactionNumber|to) is longer than/);
      expect(a.text).not.toContain(long.slice(0, 40));
    }
    for (const i of [4, 5, 6]) expect(await statusOf(`m-${i}`)).toBe('DELIVERED_TO_HANDSET');
    expect(await statusOf('m-7')).toBe('pending');
    expect(await statusOf('m-8')).toBe('pending');
  });

  it('a report named `pending` (dropline\'s "no report yet") is refused 400 and never un-reports a delivered recipient', async () => {
    const r = await start();
    const first = await postReport(r.url, {
      messageId: 'm-9',
      to: numberOf(9),
      transactionNumber: '2000000000000000000000000009',
    });
    expect(first.status).toBe(200);
    const before = await store.counts(FILE);
    expect(await statusOf('m-9')).toBe('DELIVERED_TO_HANDSET');
    // Another transaction for the same recipient (a resend after doubt), or a forged one.
    const res = await postReport(r.url, {
      messageId: 'm-9',
      to: numberOf(9),
      transactionNumber: '2000000000000000000000000019',
      status: { name: 'pending' },
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text).reason).toMatch(/^results\[0\]\.status\.name/);
    expect(await statusOf('m-9')).toBe('DELIVERED_TO_HANDSET');
    const after = await store.counts(FILE);
    expect(after.delivered).toBe(before.delivered);
    expect(after.pendingDelivery).toBe(before.pendingDelivery);
  });

  it('a flood of requests with a wrong token does not write a log line each (the port is public)', async () => {
    const lines: { msg: string; reason?: string }[] = [];
    const logger = pino(
      { level: 'info', timestamp: false },
      { write: (line: string) => lines.push(JSON.parse(line)) },
    );
    const r = await start({ logger });
    const wrong = async (token: string | null) => {
      const u = new URL(r.url);
      if (token !== null) u.searchParams.set('token', token);
      const res = await request(u, { method: 'POST', body: '{}', dispatcher: agent });
      await res.body.text();
      return res.statusCode;
    };
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++)
      statuses.push(
        ...(await Promise.all(
          Array.from({ length: 20 }, (_, j) => wrong(j === 0 ? null : `guess-${i}-${j}`)),
        )),
      );
    expect(statuses.every((s) => s === 401)).toBe(true);
    expect(r.stats().answered[401]).toBe(500);
    const refused = lines.filter((l) => l.msg.startsWith('notify: refused'));
    // Said (an operator with a wrong token must see it), but not 500 times.
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.length).toBeLessThanOrEqual(2);
    expect(refused[0]).toMatchObject({ reason: expect.stringMatching(/token/) });
    for (const l of lines) expect(JSON.stringify(l)).not.toContain('guess-');
    // A real report still goes through.
    const ok = await postReport(r.url, {
      messageId: 'm-10',
      to: numberOf(10),
      transactionNumber: '2000000000000000000000000010',
    });
    expect(ok.status).toBe(200);
    await r.close();
    // The count is not lost: the receiver's closing line has every answer.
    expect(lines.find((l) => l.msg === 'notify: receiver closed')).toMatchObject({ answered: { 401: 500 } });
  });

  it('status names a sender makes up do not grow /metrics without bound, nor put a number in it', async () => {
    const metrics = createMetrics(store);
    try {
      const r = await start();
      // One body, many made-up names: one with a phone number in it, one per report after.
      const results = Array.from({ length: 300 }, (_, i) =>
        report({
          bulkId: 'f-someone-else',
          messageId: `x-${i}`,
          to: numberOf(1000 + i),
          transactionNumber: `30000000000000000000000${String(i).padStart(5, '0')}`,
          status: { name: i === 0 ? 'NO_SUCCESS 573009998877' : `MADE_UP_${i}` },
        }),
      );
      results.push(
        report({
          bulkId: 'f-someone-else',
          to: numberOf(2000),
          transactionNumber: '3',
          status: { name: 'NO_SUCCESS' },
        }),
      );
      const res = await post(r.url, JSON.stringify({ results }));
      expect(res.status).toBe(200);
      const text = await metrics.registry.metrics();
      const series = text.split('\n').filter((l) => l.startsWith('dropline_delivery_reports_total{'));
      // Every report counted, under few labels.
      const total = series.reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
      expect(total).toBe(301);
      expect(series.length).toBeLessThanOrEqual(40);
      expect(series.some((l) => l.includes('status="NO_SUCCESS"'))).toBe(true);
      expect(text).not.toMatch(/573009998877/);
    } finally {
      metrics.close();
    }
  });
});
