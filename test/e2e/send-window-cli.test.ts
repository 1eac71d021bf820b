// Issue 14, schedules through the CLI as a process: `dropline send` of a file outside the send
// window answers `scheduled` with its start (exit 0: nothing is wrong with the file), and
// `send --wait` of a file whose `#! sendAt:` is a few seconds ahead waits, then sends it.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { PipelineHarness, personalizedFile } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;
const DAY = 86_400_000;
const date = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const today = Date.now();

beforeAll(async () => {
  h = await PipelineHarness.create({
    source: {
      // Open all day in UTC, except today and tomorrow: the file waits for the day after.
      sendWindow: {
        timezone: 'UTC',
        rules: [{ days: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'], from: '00:00', to: '24:00' }],
        closed: [date(today), date(today + DAY)],
      },
    },
  });
});

afterAll(async () => {
  await h?.close();
});

it('send outside the window: scheduled with its start, nothing sent, exit 0', async () => {
  const gen = personalizedFile(20, 41);
  const path = join(h.dir, 'cerrado.txt');
  await writeFile(path, gen.content);
  const r = await h.cli(['send', path, '--json']);
  expect(r.code, r.stderr).toBe(0);
  const m = JSON.parse(r.stdout) as Manifest;
  expect(m.state).toBe('scheduled');
  // Run near midnight, "today" may have become yesterday: the start is the day after either.
  expect([`${date(today + 2 * DAY)}T00:00:00.000Z`, `${date(today + 3 * DAY)}T00:00:00.000Z`]).toContain(
    m.scheduledUntil,
  );
  expect(r.stderr).toContain('cerrado.txt is scheduled (outside the send window: starts');
  expect((await h.ledger(m.fileId)).entries).toEqual([]);
  const status = await h.cli(['status']);
  expect(status.stdout).toMatch(new RegExp(`${m.fileId}\\s+scheduled .*outside the send window: starts`));
});

it('send --wait of a file with #! sendAt: a few seconds ahead waits for it, then sends every recipient once', async () => {
  const h2 = await PipelineHarness.create();
  try {
    const gen = personalizedFile(30, 42);
    const at = new Date(Date.now() + 4000);
    const path = join(h2.dir, 'pronto.txt');
    await writeFile(path, `#! sendAt: ${at.toISOString()}\n${gen.content}`);
    const r = await h2.cli(['send', path, '--wait', '--json'], { timeoutMs: 90_000 });
    expect(r.code, r.stderr).toBe(0);
    const m = JSON.parse(r.stdout) as Manifest;
    expect(m.state).toBe('completed');
    expect(m.sendAt).toBe(at.toISOString());
    // It did not start before its time.
    expect(Date.parse(m.timestamps.sending!)).toBeGreaterThanOrEqual(at.getTime());
    const sent = (await h2.ledger(m.fileId)).entries;
    expect(sent).toHaveLength(gen.valid.length);
    expect(sent.every((e) => e.count === 1)).toBe(true);
  } finally {
    await h2.close();
  }
});
