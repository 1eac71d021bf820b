// Issue 14, legal hours and schedules: a file ready outside the send window is `scheduled`
// with its start, a file sending at closing time stops between chunks and goes back to
// `scheduled`, and it resumes by itself at the next opening, on the store's clock. The clock
// is injected (worker, store and pipeline share it); the host runs in UTC, as servers do,
// while the window is Bogotá's: nothing may depend on the host's zone.
process.env.TZ = 'UTC';

import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../../src/sandbox/ledger.ts';
import type { SendOptions, ServiceClient } from '../../src/service/client.ts';
import type { PlannedChunk } from '../../src/service/wire.ts';
import { BIN, waitFor } from '../helpers/pipeline-harness.ts';
import { campaign, type Worker, Workers } from '../helpers/pipeline-workers.ts';

let w: Workers | null = null;
afterEach(async () => {
  await w?.close();
  w = null;
});

/** A Bogotá wall-clock time (UTC−5 all year) as an instant. */
const bogota = (local: string) => new Date(`${local}:00-05:00`);

function testClock(start: Date) {
  let t = start.getTime();
  return {
    now: () => new Date(t),
    set: (d: Date) => {
      t = d.getTime();
    },
  };
}

async function ledger(workers: Workers, bulkId: string): Promise<LedgerEntry[]> {
  const res = await fetch(`${workers.sandbox.url}/_sandbox/ledger?bulkId=${encodeURIComponent(bulkId)}`);
  return ((await res.json()) as { entries: LedgerEntry[] }).entries;
}

/** The client, with `after(n)` called once its n-th chunk has been answered. */
function counting(after: (n: number) => void): (client: ServiceClient) => ServiceClient {
  return (client) => {
    const send = client.sendChunk.bind(client);
    let n = 0;
    client.sendChunk = (async (chunk: PlannedChunk, options: SendOptions = {}) => {
      const result = await send(chunk, options);
      if (result) after(++n);
      return result;
    }) as ServiceClient['sendChunk'];
    return client;
  };
}

async function claim(workers: Workers, worker: Worker, name: string, content: string): Promise<string> {
  const file = await worker.pipeline.claim(worker.source, await workers.dropFile(name, content));
  expect(file?.state).toBe('validating');
  return file!.fileId;
}

/** The file's lease taken by whoever asks when it is due, and driven. */
async function driveDue(worker: Worker): Promise<string | null> {
  const file = await worker.pipeline.acquireNext();
  if (!file) return null;
  await worker.pipeline.driveAcquired(file);
  return file.fileId;
}

const manifestOf = async (workers: Workers, fileId: string) => {
  const file = await workers.store.getFile(fileId);
  return { state: file?.state, scheduledUntil: file?.scheduledUntil, reason: file?.reason };
};

describe('colombia-commercial window', () => {
  it('Friday 18:59: stops between chunks at 19:00, back to scheduled; resumes Saturday 08:00, every recipient once', async () => {
    const clock = testClock(bogota('2026-11-27T18:59'));
    w = await Workers.create({ sendWindow: 'colombia-commercial' });
    // 300 recipients, 6 chunks of 50: the clock reaches 19:00 once the second is answered.
    const a = await w.worker('a', {
      now: clock.now,
      wrapClient: counting((n) => {
        if (n === 2) clock.set(bogota('2026-11-27T19:00'));
      }),
    });
    const fileId = await claim(w, a, 'friday.txt', campaign(300));
    await a.pipeline.drive(fileId);
    expect(await manifestOf(w, fileId)).toEqual({
      state: 'scheduled',
      scheduledUntil: bogota('2026-11-28T08:00').toISOString(),
      reason: 'outside the send window: starts 2026-11-28 08:00 (America/Bogota)',
    });
    expect(await ledger(w, fileId)).toHaveLength(100);
    const chunks = await w.store.listChunks(fileId);
    expect(chunks.map((c) => c.state)).toEqual([
      'accepted',
      'accepted',
      'pending',
      'pending',
      'pending',
      'pending',
    ]);

    // Delivery reports are received at any hour.
    await w.openReceiver();
    await waitFor(
      'the 100 reports, at night',
      async () => (await w!.store.counts(fileId)).delivered === 100,
      {
        timeoutMs: 60_000,
      },
    );
    expect((await w.store.getFile(fileId))?.state).toBe('scheduled');

    // Saturday 07:59: not due yet; 08:00: taken and sent, the rest only, each recipient once.
    clock.set(bogota('2026-11-28T07:59'));
    expect(await driveDue(a)).toBeNull();
    clock.set(bogota('2026-11-28T08:00'));
    expect(await driveDue(a)).toBe(fileId);
    expect((await w.store.getFile(fileId))?.state).toBe('submitted');
    const sent = await ledger(w, fileId);
    expect(sent).toHaveLength(300);
    expect(sent.every((e) => e.count === 1)).toBe(true);
    expect(new Set(sent.map((e) => e.to)).size).toBe(300);
    // The timeline shows the night.
    const states = (await w.store.fileEvents(fileId)).map((e) => e.state);
    expect(states).toEqual(['validating', 'sending', 'scheduled', 'sending', 'submitted']);
  });

  it('ready on Saturday after 15:00: scheduled past Sunday and the holiday Monday (Reyes, 12 January) to Tuesday 07:00', async () => {
    const clock = testClock(bogota('2026-01-10T16:00'));
    w = await Workers.create({ sendWindow: 'colombia-commercial' });
    const a = await w.worker('a', { now: clock.now });
    const fileId = await claim(w, a, 'reyes.txt', campaign(10));
    await a.pipeline.drive(fileId);
    expect(await manifestOf(w, fileId)).toMatchObject({
      state: 'scheduled',
      scheduledUntil: bogota('2026-01-13T07:00').toISOString(),
    });
    expect(await ledger(w, fileId)).toEqual([]);
    // Monday the 12th at 10:00, a working hour on any other Monday: still not due.
    clock.set(bogota('2026-01-12T10:00'));
    expect(await driveDue(a)).toBeNull();
    clock.set(bogota('2026-01-13T07:00'));
    expect(await driveDue(a)).toBe(fileId);
    expect(await ledger(w, fileId)).toHaveLength(10);
  });

  it('a pause while scheduled holds the file; resumed outside the window it is scheduled again', async () => {
    const clock = testClock(bogota('2026-11-29T10:00')); // a Sunday
    w = await Workers.create({ sendWindow: 'colombia-commercial' });
    const a = await w.worker('a', { now: clock.now });
    const fileId = await claim(w, a, 'sunday.txt', campaign(10));
    await a.pipeline.drive(fileId);
    expect((await w.store.getFile(fileId))?.state).toBe('scheduled');
    await w.store.transition(fileId, 'paused', {
      from: ['scheduled'],
      patch: { reason: 'paused by a user' },
    });
    clock.set(bogota('2026-11-30T07:00'));
    expect(await driveDue(a)).toBeNull(); // paused: not taken at the opening
    clock.set(bogota('2026-11-30T19:30'));
    await w.store.transition(fileId, 'sending', { from: ['paused'], patch: { reason: 'resumed by a user' } });
    expect(await driveDue(a)).toBe(fileId);
    expect(await manifestOf(w, fileId)).toMatchObject({
      state: 'scheduled',
      scheduledUntil: bogota('2026-12-01T07:00').toISOString(),
    });
    expect(await ledger(w, fileId)).toEqual([]);
  });
});

describe('#! sendAt:', () => {
  it('in the past: sent now; later: scheduled until then; at a closed hour: the next opening, never earlier', async () => {
    const clock = testClock(bogota('2026-11-25T10:00')); // a Wednesday, open
    w = await Workers.create({ sendWindow: 'colombia-commercial' });
    const a = await w.worker('a', { now: clock.now });
    const past = await claim(w, a, 'past.txt', `#! sendAt: 2026-11-20 09:00\n${campaign(5, 1)}`);
    const later = await claim(w, a, 'later.txt', `#! sendAt: 2026-11-25T14:30:00-05:00\n${campaign(5, 2)}`);
    const sunday = await claim(w, a, 'sunday.txt', `#! sendAt: 2026-11-29 10:00\n${campaign(5, 3)}`);
    for (const id of [past, later, sunday]) await a.pipeline.drive(id);
    expect((await w.store.getFile(past))?.state).toBe('submitted');
    expect(await ledger(w, past)).toHaveLength(5);
    expect(await manifestOf(w, later)).toEqual({
      state: 'scheduled',
      scheduledUntil: bogota('2026-11-25T14:30').toISOString(),
      reason: '#! sendAt: starts 2026-11-25 14:30 (America/Bogota)',
    });
    expect(await manifestOf(w, sunday)).toMatchObject({
      state: 'scheduled',
      scheduledUntil: bogota('2026-11-30T07:00').toISOString(),
    });
    clock.set(bogota('2026-11-25T14:29'));
    expect(await driveDue(a)).toBeNull();
    clock.set(bogota('2026-11-25T14:30'));
    expect(await driveDue(a)).toBe(later);
    expect(await ledger(w, later)).toHaveLength(5);
    expect(await ledger(w, sunday)).toEqual([]);
  });

  it('without a window, sendAt alone schedules the file; `dropline status` says when it starts', async () => {
    w = await Workers.create();
    const a = await w.worker('a');
    const start = new Date(Date.now() + 3 * 86_400_000);
    const fileId = await claim(w, a, 'later.txt', `#! sendAt: ${start.toISOString()}\n${campaign(5)}`);
    await a.pipeline.drive(fileId);
    expect((await w.store.getFile(fileId))?.scheduledUntil).toBe(new Date(start.toISOString()).toISOString());
    // The CLI as a process, on the same store.
    const configPath = join(w.dir, 'dropline.config.json');
    await writeFile(
      configPath,
      JSON.stringify({ store: w.storeUrl, sources: [{ name: 'local', type: 'local', path: w.drop }] }),
    );
    const { stdout } = await promisify(execFile)(process.execPath, [BIN, '--config', configPath, 'status'], {
      env: { ...process.env, NO_COLOR: '1' },
    });
    const line = stdout.split('\n').find((l) => l.startsWith(fileId)) ?? '';
    expect(line).toContain('scheduled');
    expect(line).toContain('#! sendAt: starts');
    const json = await promisify(execFile)(process.execPath, [
      BIN,
      '--config',
      configPath,
      'status',
      fileId,
      '--json',
    ]);
    const manifest = JSON.parse(json.stdout) as { state: string; scheduledUntil: string; sendAt: string };
    expect(manifest).toMatchObject({
      state: 'scheduled',
      scheduledUntil: start.toISOString(),
      sendAt: start.toISOString(),
    });
  });
});
