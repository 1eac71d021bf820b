// Issue 32: workers on one PostgreSQL without notify.token, each in its own folder as on its own
// machine, behind one notify.publicUrl. A report of one worker's chunk may reach the other; the
// token they generate is kept in the store, so every receiver takes every report (a 401 is
// never retried by the service: the report would be lost).
import { mkdir } from 'node:fs/promises';
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
