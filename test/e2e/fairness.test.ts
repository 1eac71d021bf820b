// Issue 12: several files in flight, chunks granted fairly across them. A 2,000-recipient
// file dropped while a 200,000-recipient file sends, with the account's ratePerSecond set, is
// sent beside it, not after it: in the order the service took the requests, its chunks are
// interleaved with the large file's (one of the large file's for each of its own, beyond the
// requests already granted when it came), and the large file still had requests to make once
// the small one was sent (one file after the other, it waited for the whole campaign). The
// account's rate holds meanwhile, as the sandbox measures it.
//
// Shares are read from the service's request order, not from clocks: how long a file takes
// from its drop includes its intake and the scheduling of two processes on a busy machine,
// which measured the machine's load, not the fairness. "Sent" is `submitted`, every recipient
// handed to the service: delivery reports come when the operators deliver, so the sandbox
// sends none here (test/e2e/workers and notify-receiver cover reports).
import { afterEach, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import type { AccountRate } from '../../src/sandbox/meter.ts';
import { PipelineHarness, personalizedFile } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
});

const RATE = 20_000;
const CHUNK = 1000;
const CONCURRENCY = 4;

/** The fileId of each request the service accepted, in the order it took them. */
function acceptedOrder(harness: PipelineHarness): string[] {
  return harness.sandbox.requests
    .filter((r) => r.endpoint === '/mtmessage/massive' && r.status === 200)
    .map((r) => r.bulkId ?? '');
}

/** Requests of `fileId` in `order` from the first of `of`'s to its last, and after its last. */
function around(order: string[], of: string, fileId: string): { during: number; after: number } {
  const first = order.indexOf(of);
  const last = order.lastIndexOf(of);
  const count = (ids: string[]) => ids.filter((id) => id === fileId).length;
  return { during: count(order.slice(first, last + 1)), after: count(order.slice(last + 1)) };
}

it('a small file dropped behind a large one is sent interleaved with it, not after it; the rate holds', async () => {
  h = await PipelineHarness.create({
    api: { chunkSize: CHUNK, concurrency: CONCURRENCY, ratePerSecond: RATE },
    sandbox: { notify: false },
  });
  await h.start();
  const large = personalizedFile(200_000, 122);
  await h.dropFile('campana.txt', large.content);
  // The small file comes once the large one sends.
  const sending = await h.waitForState('campana.txt', 'sending', {
    timeoutMs: 60_000,
    where: (m) => m.name === 'campana.txt' && m.counts.chunksAccepted >= 1,
  });
  const small = personalizedFile(2000, 123);
  await h.dropFile('urgente.txt', small.content);
  const behind = await h.waitForState('urgente.txt', 'submitted', { timeoutMs: 60_000 });
  expect(behind.counts.submitted).toBe(small.valid.length);
  const done = await h.waitForState('campana.txt', 'submitted', { timeoutMs: 60_000 });
  expect(done.counts.submitted).toBe(large.valid.length);

  const order = acceptedOrder(h);
  const own = order.filter((id) => id === behind.fileId).length;
  expect(own).toBe(Math.ceil(small.valid.length / CHUNK));
  const largeOnes = around(order, behind.fileId, sending.fileId);
  // Interleaved: from its first request to its last, one of the large file's for each of its
  // own after the first, plus the large file's requests in flight when its turn came.
  expect(largeOnes.during, order.join(' ')).toBeLessThanOrEqual(own - 1 + CONCURRENCY);
  // Sent while the large file sent (not after it): the large file had most of its requests left.
  expect(largeOnes.after).toBeGreaterThan(0);
  const smallDone = (await h.fileNamed('urgente.txt'))!.timestamps.submitted!;
  expect(Date.parse(smallDone)).toBeLessThan(Date.parse(done.timestamps.submitted!));

  const rates = (await (await fetch(`${h.sandbox.url}/_sandbox/rates`)).json()) as {
    accounts: Record<string, AccountRate>;
  };
  const demo = rates.accounts.demo!;
  // Within any one second: what the rate schedules (plus one chunk where a window's edges cut
  // two requests), and at most the account's requests in flight scheduled before it: a busy
  // machine may hold those (in the daemon or in the sandbox) and deliver them together, but
  // each holds a permit until its answer, so no more than CONCURRENCY can pile up.
  expect(demo.peakPerSecond).toBeLessThanOrEqual(RATE + CHUNK + CONCURRENCY * CHUNK);
  expect(demo.meanPerSecond).toBeLessThanOrEqual(RATE * 1.05);
  // And it was used: the large file went at about the rate.
  expect(demo.meanPerSecond).toBeGreaterThan(RATE * 0.5);
}, 120_000);

it("a file's `#! priority: high` gets twice a normal file's share of the account while both send", async () => {
  h = await PipelineHarness.create({
    api: { chunkSize: CHUNK, concurrency: 4, ratePerSecond: 10_000 },
    sandbox: { notify: false },
  });
  await h.start();
  const normal = personalizedFile(30_000, 131);
  const high = personalizedFile(30_000, 132);
  // The normal file first: it starts sending no later than the high one.
  await h.dropFile('mensual.txt', normal.content);
  await h.dropFile('urgente.txt', `#! priority: high\n${high.content}`);
  const urgent = await h.waitForState('urgente.txt', 'submitted', { timeoutMs: 60_000 });
  const other = (await h.fileNamed('mensual.txt')) as Manifest;
  expect(urgent.priority).toBe('high');
  expect(other.priority).toBeNull();
  expect(urgent.counts.submitted).toBe(high.valid.length);
  const done = await h.waitForState('mensual.txt', 'submitted', { timeoutMs: 60_000 });
  expect(done.counts.submitted).toBe(normal.valid.length);
  // High 4 against normal 2: from the high file's first request to its last, the normal file
  // had about half as many (a third of the rate against two thirds), and was not starved
  // either; it still had requests to make once the high one was sent.
  const order = acceptedOrder(h);
  const highOnes = order.filter((id) => id === urgent.fileId).length;
  expect(highOnes).toBe(Math.ceil(high.valid.length / CHUNK));
  const normalOnes = around(order, urgent.fileId, other.fileId);
  expect(normalOnes.after, order.join(' ')).toBeGreaterThan(0);
  expect(normalOnes.during, order.join(' ')).toBeLessThan(0.75 * highOnes);
  expect(normalOnes.during, order.join(' ')).toBeGreaterThan(0.25 * highOnes);
}, 120_000);
