// Issue 4 "Tests", acting on a file while it is sent: a 403 pauses it with the service's reason
// and `resume` finishes it; `pause`, `resume` and `cancel` act between chunks; chunks that failed
// for good leave the file `partial` and `retry` resends exactly those; a part a 403 held back
// beside a part in doubt still goes out once a report proves the other. Every recipient reaches
// the sandbox ledger at most once (exactly once when the file completes).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { changeFileState } from '../../src/pipeline/actions.ts';
import { type Manifest, reportFileName } from '../../src/pipeline/reports.ts';
import {
  csvRecords,
  expectedMessageId,
  type HarnessOptions,
  PipelineHarness,
  personalizedFile,
  waitFor,
} from '../helpers/pipeline-harness.ts';
import { campaign, Workers } from '../helpers/pipeline-workers.ts';

let h: PipelineHarness | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
});

/** The ledger holds every valid recipient of `m` exactly once. */
async function exactlyOnce(
  harness: PipelineHarness,
  m: Manifest,
  gen: ReturnType<typeof personalizedFile>,
): Promise<void> {
  const ledger = await harness.ledger(m.fileId);
  const got = ledger.entries.map((e) => `${e.messageId} ${e.to} ${e.count}`).sort();
  const want = gen.valid.map((r) => `${expectedMessageId(gen, m.fileId, r)} ${r.to} 1`).sort();
  expect(got).toEqual(want);
}

/** Waits until nothing of the file is in flight, then checks the ledger agrees with it. */
async function settled(harness: PipelineHarness, fileId: string): Promise<Manifest> {
  const m = await harness.waitIdle(fileId);
  const ledger = await harness.ledger(fileId);
  expect(ledger.entries.length).toBe(m.counts.submitted);
  expect(ledger.duplicates).toBe(0);
  return m;
}

describe('403 from the service', () => {
  it('pauses the file with the service reason; resume completes it, every recipient once', async () => {
    h = await PipelineHarness.create({ api: { chunkSize: 100, concurrency: 1, ratePerSecond: 800 } });
    await h.start();
    const gen = personalizedFile(1200, 11);
    await h.dropFile('pausa403.txt', gen.content);
    const sending = await h.waitForState('pausa403.txt', 'sending', {
      where: (m) => m.name === 'pausa403.txt' && m.counts.chunksAccepted >= 2,
    });
    await h.faults({ massive: { '403': { probability: 1, times: 1 } } });
    const paused = await h.waitForFile(sending.fileId, 'paused');
    expect(paused.reason).toContain('injected fault 403');

    const status = await h.cli(['status', paused.fileId]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('paused');
    expect(status.stdout).toContain('injected fault 403');
    const list = await h.cli(['status']);
    expect(list.stdout).toContain('injected fault 403');

    const before = await settled(h, paused.fileId);
    expect(before.state).toBe('paused');
    expect(before.counts.submitted).toBeLessThan(gen.valid.length);
    expect(before.counts.chunksPending).toBe(before.counts.chunks - before.counts.chunksAccepted);

    const resumed = await h.cli(['resume', paused.fileId]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const done = await h.waitForFile(paused.fileId, 'completed');
    expect(done.counts.submitted).toBe(gen.valid.length);
    expect(done.counts.chunksAccepted).toBe(done.counts.chunks);
    await exactlyOnce(h, done, gen);
  });
});

describe('403 during a bisection, beside a part in doubt', () => {
  /**
   * A daemon whose first chunk (of one) the service answers 400, so it is split in halves; one
   * half is refused with 403 (held back, never sent), the other is taken by the service and its
   * connection reset (in doubt).
   */
  async function heldBesideInDoubt(sandbox: HarnessOptions['sandbox'] = {}): Promise<PipelineHarness> {
    const harness = await PipelineHarness.create({
      sandbox,
      api: { chunkSize: 100, concurrency: 1, ratePerSecond: 800 },
    });
    await harness.start();
    await harness.faults({
      massive: {
        '400': { probability: 1, times: 1 },
        '403': { probability: 1, times: 1 },
        reset: { probability: 1, times: 1 },
      },
    });
    return harness;
  }

  it('the held part still goes out once a delivery report proves the other part', async () => {
    h = await heldBesideInDoubt();
    const gen = personalizedFile(100, 13);
    await h.dropFile('held403.txt', gen.content);
    const paused = await h.waitForState('held403.txt', 'paused', { where: (m) => m.name === 'held403.txt' });
    // The in-doubt half's delivery reports prove it: the chunk is pending again, for the held half.
    const proven = await h.waitForState('held403.txt', 'paused', {
      where: (m) => m.name === 'held403.txt' && m.counts.chunksPending === 1 && m.counts.inDoubt === 0,
    });
    expect(proven.counts.submitted).toBeGreaterThan(0);
    expect(proven.counts.submitted).toBeLessThan(gen.valid.length);

    const resumed = await h.cli(['resume', paused.fileId]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const done = await h.waitForFile(paused.fileId, 'completed');
    expect(done.counts.submitted).toBe(gen.valid.length);
    expect(done.counts.possibleDuplicates).toBe(0);
    await exactlyOnce(h, done, gen);
  });

  it('resumed before the reports came: partial, then sending again for the held part once they prove the other', async () => {
    // The reports are held until the file was resumed: it is partial (a chunk in doubt) first.
    h = await heldBesideInDoubt();
    h.sandbox.notifier.hold();
    const gen = personalizedFile(100, 14);
    await h.dropFile('held403b.txt', gen.content);
    const paused = await h.waitForState('held403b.txt', 'paused', {
      where: (m) => m.name === 'held403b.txt',
    });
    expect(paused.counts.chunksInDoubt).toBe(1);
    const resumed = await h.cli(['resume', paused.fileId]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const partial = await h.waitForFile(paused.fileId, 'partial');
    expect(partial.counts.chunksInDoubt).toBe(1);
    h.sandbox.notifier.release();
    const done = await h.waitForFile(paused.fileId, 'completed');
    expect(done.counts.submitted).toBe(gen.valid.length);
    expect(done.counts.possibleDuplicates).toBe(0);
    await exactlyOnce(h, done, gen);
  });
});

/**
 * A cancelled file as a user finds it: its original in done/, its report.csv saying `cancelled`
 * for every recipient never sent (none pending), and its reports/ manifest counting them.
 */
async function cancelledEverywhere(harness: PipelineHarness, m: Manifest): Promise<void> {
  await harness.waitForFile(m.fileId, 'cancelled');
  // The cancel is recorded first; its close (the original moved, the reports) follows under
  // the lease: waited for, not assumed done at the same instant.
  const file = await waitFor(`${m.name} moved to done/`, async () => {
    const now = (await harness.statusJson()).find((f) => f.fileId === m.fileId);
    return now?.path === `done/${m.name}` && now;
  });
  expect(file.state).toBe('cancelled');
  expect(await harness.readDrop(`done/${m.name}`)).not.toBe('');
  const reported = await waitFor(`the reports of ${m.name} counting its cancelled recipients`, async () => {
    const written = JSON.parse(await harness.readReport(m, 'manifest.json')) as Manifest;
    return written.counts.cancelled === m.counts.cancelled && written;
  });
  expect(reported).toMatchObject({ state: 'cancelled', path: `done/${m.name}` });
  const rows = csvRecords(await harness.readReport(m));
  expect(rows.filter((r) => r.outcome === 'cancelled')).toHaveLength(m.counts.cancelled);
  expect(rows.filter((r) => r.outcome === 'pending')).toHaveLength(0);
  expect(rows.filter((r) => r.outcome === 'sent')).toHaveLength(m.counts.submitted);
}

describe('pause, resume, cancel and retry by command', () => {
  it('pause stops between chunks, resume sends the rest once', async () => {
    h = await PipelineHarness.create({ api: { chunkSize: 100, concurrency: 2, ratePerSecond: 600 } });
    await h.start();
    const gen = personalizedFile(1500, 12);
    await h.dropFile('pausa.txt', gen.content);
    const sending = await h.waitForState('pausa.txt', 'sending', {
      where: (m) => m.name === 'pausa.txt' && m.counts.chunksAccepted >= 1,
    });
    // The service answers 429 until the command is done: the file cannot finish meanwhile,
    // however long a busy machine takes to start the command.
    await h.faults({ massive: { '429': 1 } });
    const pause = await h.cli(['pause', sending.fileId]);
    expect(pause.code, pause.stderr).toBe(0);
    await h.faults({});
    expect(pause.stdout).toContain('paused');
    const paused = await settled(h, sending.fileId);
    expect(paused.state).toBe('paused');
    expect(paused.counts.submitted).toBeLessThan(gen.valid.length);
    // Pausing twice is a state error, not a success.
    const again = await h.cli(['pause', sending.fileId]);
    expect(again.code).toBe(1);

    const resume = await h.cli(['resume', sending.fileId]);
    expect(resume.code, resume.stderr).toBe(0);
    const done = await h.waitForFile(sending.fileId, 'completed');
    expect(done.counts.submitted).toBe(gen.valid.length);
    await exactlyOnce(h, done, gen);
  });

  it('cancel stops between chunks for good: what was sent stays sent once, the rest never goes', async () => {
    h = await PipelineHarness.create({ api: { chunkSize: 100, concurrency: 2, ratePerSecond: 600 } });
    await h.start();
    const gen = personalizedFile(1500, 13);
    await h.dropFile('cancela.txt', gen.content);
    const sending = await h.waitForState('cancela.txt', 'sending', {
      where: (m) => m.name === 'cancela.txt' && m.counts.chunksAccepted >= 1,
    });
    // The service answers 429 until the command is done: the file cannot finish meanwhile,
    // however long a busy machine takes to start the command.
    await h.faults({ massive: { '429': 1 } });
    const cancel = await h.cli(['cancel', sending.fileId]);
    expect(cancel.code, cancel.stderr).toBe(0);
    await h.faults({});
    const m = await settled(h, sending.fileId);
    expect(m.state).toBe('cancelled');
    expect(m.counts.submitted).toBeLessThan(gen.valid.length);
    // The chunks and recipients never sent are cancelled, not "to send" nor pending.
    expect(m.counts.chunksPending).toBe(0);
    expect(m.counts.chunksCancelled).toBe(m.counts.chunks - m.counts.chunksAccepted);
    expect(m.counts.cancelled).toBe(gen.valid.length - m.counts.submitted);
    await cancelledEverywhere(h, m);
    // A cancelled file is not resumed, and the daemon does not take it over.
    const resume = await h.cli(['resume', sending.fileId]);
    expect(resume.code).toBe(1);
    const later = await h.cli(['status', sending.fileId, '--json']);
    const after = JSON.parse(later.stdout) as Manifest;
    expect(after.state).toBe('cancelled');
    expect(after.counts.submitted).toBe(m.counts.submitted);
    const ledger = await h.ledger(sending.fileId);
    expect(ledger.entries.length).toBe(m.counts.submitted);
    expect(ledger.duplicates).toBe(0);
  });

  it('a scheduled file cancelled from the dashboard: nothing sent, every recipient cancelled, the original in done/', async () => {
    h = await PipelineHarness.create({ api: { chunkSize: 100 } });
    await h.start();
    const gen = personalizedFile(300, 15);
    await h.dropFile('luego.txt', `#! sendAt: 2099-01-01T08:00:00-05:00\n${gen.content}`);
    const scheduled = await h.waitForState('luego.txt', 'scheduled');
    expect(scheduled.counts.chunksPending).toBe(3);
    const res = await fetch(`${h.opsUrl}/api/files/${scheduled.fileId}/cancel`, { method: 'POST' });
    expect(res.status).toBe(200);
    // The state changes at once; the chunks not sent are closed right after, under its lease.
    const m = await waitFor('its chunks cancelled', async () => {
      const now = await h!.waitForFile(scheduled.fileId, 'cancelled');
      return now.counts.chunksCancelled === 3 && now;
    });
    expect(m.counts).toMatchObject({
      submitted: 0,
      cancelled: gen.valid.length,
      chunksPending: 0,
      chunksCancelled: 3,
    });
    await cancelledEverywhere(h, m);
    expect((await h.ledger(m.fileId)).entries).toHaveLength(0);
  });

  it('chunks failed for good leave the file partial; retry resends exactly those', async () => {
    h = await PipelineHarness.create({
      api: {
        chunkSize: 100,
        concurrency: 1,
        ratePerSecond: 800,
        retry: { baseMs: 20, maxMs: 200, maxAttempts: 2 },
      },
    });
    await h.start();
    const gen = personalizedFile(1000, 14);
    await h.dropFile('reintento.txt', gen.content);
    const sending = await h.waitForState('reintento.txt', 'sending', {
      where: (m) => m.name === 'reintento.txt' && m.counts.chunksAccepted >= 2,
    });
    await h.faults({ massive: { '500': 1 } });
    const partial = await h.waitForFile(sending.fileId, 'partial');
    expect(partial.counts.chunksFailed).toBeGreaterThan(0);
    expect(partial.counts.chunksAccepted + partial.counts.chunksFailed).toBe(partial.counts.chunks);
    expect(partial.counts.failed).toBe(gen.valid.length - partial.counts.submitted);
    expect(partial.reason).toContain('dropline retry');
    const ledgerBefore = await h.ledger(sending.fileId);
    expect(ledgerBefore.entries.length).toBe(partial.counts.submitted);
    const report = await h.readReport(partial);
    expect(report.split('\n').filter((l) => l.includes(',failed,')).length).toBe(partial.counts.failed);

    await h.faults({});
    const massiveBefore = h.sandbox.requests.filter((r) => r.endpoint === '/mtmessage/massive').length;
    const retry = await h.cli(['retry', sending.fileId]);
    expect(retry.code, retry.stderr).toBe(0);
    const done = await h.waitForFile(sending.fileId, 'completed');
    expect(done.counts).toMatchObject({
      submitted: gen.valid.length,
      failed: 0,
      chunksFailed: 0,
      chunksAccepted: done.counts.chunks,
      possibleDuplicates: 0,
    });
    // Exactly the failed chunks were sent again: one request each, none for accepted chunks.
    const resent = h.sandbox.requests.filter((r) => r.endpoint === '/mtmessage/massive').slice(massiveBefore);
    expect(resent.length).toBe(partial.counts.chunksFailed);
    expect(resent.reduce((n, r) => n + (r.destinations ?? 0), 0)).toBe(partial.counts.failed);
    await exactlyOnce(h, done, gen);
    expect(done.path).toBe('done/reintento.txt');
  });
});

describe('a cancel no worker could close at once', () => {
  it('is owed in the store and closed by the next worker: chunks cancelled, original in done/, report', async () => {
    const w = await Workers.create();
    try {
      const a = await w.worker('a');
      const entry = await w.dropFile(
        'huerfano.txt',
        `#! sendAt: 2099-01-01T08:00:00-05:00\n${campaign(120)}`,
      );
      const claimed = await a.pipeline.claim(a.source, entry);
      const fileId = claimed!.fileId;
      expect((await a.pipeline.drive(fileId))?.state).toBe('scheduled');
      // A worker that died holding the file: nobody can close the cancel until its lease lapses.
      expect(await w.store.takeLease(fileId, 'worker-dead', 500)).toBe(true);
      await changeFileState(w.store, silentLogger, fileId, 'cancel', 'USER');
      expect(await a.pipeline.rewriteReports(fileId, { waitMs: 0 })).toBe(false);
      expect((await w.store.getFile(fileId))?.reportPending).not.toBeNull();
      // What the daemon does every round: the files whose reports are due, written under the lease.
      await waitFor('the cancel closed by a worker', async () => {
        for (const id of await w.store.reportsDue(10)) await a.pipeline.writeOwedReports(id);
        return (await w.store.getFile(fileId))?.reportPending === null;
      });
      const file = await w.store.getFile(fileId);
      expect(file?.path).toBe('done/huerfano.txt');
      expect(await w.store.counts(fileId)).toMatchObject({
        chunksCancelled: 3,
        chunksPending: 0,
        cancelled: 120,
      });
      const report = await readFile(
        join(w.drop, 'reports', reportFileName('huerfano.txt', fileId, 'report.csv')),
        'utf8',
      );
      expect(csvRecords(report).filter((r) => r.outcome === 'cancelled')).toHaveLength(120);
    } finally {
      await w.close();
    }
  });
});
