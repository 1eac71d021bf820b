// Issue 32: workers on one PostgreSQL without notify.token, each in its own folder as on its own
// machine, behind one notify.publicUrl. A report of one worker's chunk may reach the other; the
// token they generate is kept in the store, so every receiver takes every report (a 401 is
// never retried by the service: the report would be lost).
import { mkdir, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { PipelineHarness, personalizedFile, waitFor } from '../helpers/pipeline-harness.ts';
import { balancer, isUp, type RunWorker, runWorker } from '../helpers/run-workers.ts';

let h: PipelineHarness | null = null;
let front: Server | null = null;
const workers: RunWorker[] = [];

afterAll(async () => {
  for (const w of workers.splice(0)) await w.kill('SIGKILL');
  await new Promise((r) => (front ? front.close(r) : r(null)));
  await h?.close();
});

it('two workers without notify.token behind one URL: every report is taken, whichever worker sent its chunk', async () => {
  h = await PipelineHarness.create({ store: 'postgres', api: { chunkSize: 5, concurrency: 2 } });
  const harness = h;
  const lb = await balancer(() => workers.filter(isUp).map((w) => w.notifyPort));
  front = lb.server;
  // Both start at once: the first start of each generates a token; the store keeps one.
  const started = await Promise.all(
    ['a', 'b'].map(async (name) => {
      const cwd = join(harness.dir, `host-${name}`);
      await mkdir(cwd);
      return runWorker(harness, name, lb.port, harness.config, { token: null, cwd });
    }),
  );
  workers.push(...started);

  const gen = personalizedFile(60, 33);
  await h.dropFile('sin-token.txt', gen.content);
  const fileId = await waitFor('sin-token.txt in the store', async () => {
    const m = (await harness.statusJson()).find((f) => f.name === 'sin-token.txt');
    return m?.fileId;
  });
  // Every recipient's report has had its final attempt.
  let seen = '';
  const attempts = await waitFor(
    () => `every report attempted (${seen})\n${workers.map((w) => w.output.slice(-1500)).join('\n')}`,
    async () => {
      const n = await harness.notifications();
      const mine = n.attempts.filter((a) => a.bulkId === fileId);
      seen = `${mine.length} attempts, ${n.pending} pending, codes ${[...new Set(mine.map((a) => a.code))]}`;
      return mine.filter((a) => !a.willRetry).length >= gen.valid.length && n.pending === 0 && mine;
    },
  );
  expect(attempts.filter((a) => a.code !== 200).map((a) => a.code)).toEqual([]);
  const done = await waitFor('sin-token.txt completed', async () => {
    const m = (await harness.statusJson()).find((f) => f.fileId === fileId);
    return m?.state === 'completed' && m;
  });
  expect(done.counts).toMatchObject({ submitted: gen.valid.length, pendingDelivery: 0, unknown: 0 });
  // Never logged.
  for (const w of workers) expect(w.output).not.toMatch(/token=[^&\s"]{8,}/);
});

it("upgrading hosts that each had their own notify-token file: every receiver takes each host's older token", async () => {
  // Before the token lived in the store, each host generated its own file; reports of chunks
  // sent before the upgrade still carry that host's token, and may reach any receiver.
  const harness = await PipelineHarness.create({ store: 'postgres' });
  const started: RunWorker[] = [];
  try {
    const olds = { a: `old-a-${'x'.repeat(24)}`, b: `old-b-${'y'.repeat(24)}` };
    for (const [name, token] of Object.entries(olds)) {
      await mkdir(join(harness.dir, `host-${name}`, '.dropline'), { recursive: true });
      await writeFile(join(harness.dir, `host-${name}`, '.dropline', 'notify-token'), `${token}\n`);
    }
    for (const name of ['a', 'b'])
      started.push(
        await runWorker(harness, name, 1, harness.config, {
          token: null,
          cwd: join(harness.dir, `host-${name}`),
        }),
      );
    const [a, b] = started as [RunWorker, RunWorker];
    const report = JSON.stringify({
      results: [
        {
          bulkId: 'f-before-upgrade',
          messageId: 'm-1',
          to: '573001000001',
          transactionNumber: '1000000000000000000000000001',
          callbackData: '',
          smsCount: 1,
          status: { name: 'DELIVERED_TO_HANDSET' },
        },
      ],
    });
    const post = async (w: RunWorker, token: string) =>
      (
        await fetch(`http://127.0.0.1:${w.notifyPort}/notify?token=${token}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: report,
        })
      ).status;
    // Each host's older token, at the other host's receiver (and its own).
    expect([
      await post(a, olds.b),
      await post(b, olds.a),
      await post(a, olds.a),
      await post(b, olds.b),
    ]).toEqual([200, 200, 200, 200]);
    expect(await post(a, 'not-a-token-of-anyone')).toBe(401);
    for (const w of started) expect(w.output).not.toContain('old-a-xxxx');
  } finally {
    for (const w of started) await w.kill('SIGKILL');
    await harness.close();
  }
});
