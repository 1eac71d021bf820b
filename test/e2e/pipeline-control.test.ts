// Issue 4 "Tests", acting on a file while it is sent: a 403 pauses it with the service's reason
// and `resume` finishes it; `pause`, `resume` and `cancel` act between chunks; chunks that failed
// for good leave the file `partial` and `retry` resends exactly those; a part a 403 held back
// beside a part in doubt still goes out once a report proves the other. Every recipient reaches
// the sandbox ledger at most once (exactly once when the file completes).
import { afterEach, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import {
  expectedMessageId,
  type HarnessOptions,
  PipelineHarness,
  personalizedFile,
} from '../helpers/pipeline-harness.ts';

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
    expect(m.counts.chunksPending).toBe(m.counts.chunks - m.counts.chunksAccepted);
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
