// Issue 4 "Tests", chunks in doubt that no delivery report settles: the sandbox accepts the
// request, then resets the connection (the body was read: the service may have it), and sends
// no status notification at all. With api.inDoubt "hold" the file stays `partial` until
// `dropline retry`; with "resend" it goes again after inDoubtGraceMs. Either way the recipients
// sent twice are exactly the ones the manifest counts as possible duplicates, and the file
// completes at deliveryTimeout with the unreported recipients UNKNOWN.
import { afterEach, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { expectedMessageId, PipelineHarness, personalizedFile } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
});

async function ledgerMatches(
  harness: PipelineHarness,
  m: Manifest,
  gen: ReturnType<typeof personalizedFile>,
) {
  const ledger = await harness.ledger(m.fileId);
  expect(ledger.entries.length).toBe(gen.valid.length);
  const ids = new Set(ledger.entries.map((e) => e.messageId));
  for (const r of gen.valid) expect(ids.has(expectedMessageId(gen, m.fileId, r))).toBe(true);
  const twice = ledger.entries.filter((e) => e.count === 2).length;
  expect(ledger.entries.filter((e) => e.count > 2)).toEqual([]);
  // Sent twice only where the manifest says so.
  expect(twice).toBe(m.counts.possibleDuplicates);
  return twice;
}

it('hold: the file stays partial with the chunk in doubt; retry resends it, counted as possible duplicates', async () => {
  h = await PipelineHarness.create({
    sandbox: { notify: false },
    api: { chunkSize: 100, concurrency: 1, inDoubt: 'hold' },
    config: { deliveryTimeoutMs: 1500 },
  });
  await h.start();
  await h.faults({ massive: { reset: { probability: 1, times: 1 } } });
  const gen = personalizedFile(500, 41);
  await h.dropFile('duda.txt', gen.content);
  const partial = await h.waitForState('duda.txt', 'partial');
  expect(partial.counts).toMatchObject({ chunksInDoubt: 1, inDoubt: 100, chunksFailed: 0 });
  expect(partial.reason).toContain('in doubt');
  // Held: the daemon does not resend it by itself (it is still partial once idle).
  const idle = await h.waitIdle(partial.fileId);
  expect(idle.state).toBe('partial');
  expect((await h.ledger(partial.fileId)).duplicates).toBe(0);

  const retry = await h.cli(['retry', partial.fileId]);
  expect(retry.code, retry.stderr).toBe(0);
  const done = await h.waitForFile(partial.fileId, 'completed');
  expect(done.counts).toMatchObject({
    submitted: gen.valid.length,
    chunksInDoubt: 0,
    inDoubt: 0,
    possibleDuplicates: 100,
    unknown: gen.valid.length,
    pendingDelivery: 0,
  });
  expect(await ledgerMatches(h, done, gen)).toBe(100);
});

it('resend: the in-doubt chunk goes again after inDoubtGraceMs, counted as possible duplicates', async () => {
  h = await PipelineHarness.create({
    sandbox: { notify: false },
    api: { chunkSize: 100, concurrency: 1, inDoubt: 'resend', inDoubtGraceMs: 300 },
    config: { deliveryTimeoutMs: 1500 },
  });
  await h.start();
  await h.faults({ massive: { reset: { probability: 1, times: 1 } } });
  const gen = personalizedFile(500, 42);
  await h.dropFile('reenvio.txt', gen.content);
  const done = await h.waitForState('reenvio.txt', 'completed');
  expect(done.timestamps.partial).toBeDefined();
  expect(done.counts).toMatchObject({
    submitted: gen.valid.length,
    chunksInDoubt: 0,
    possibleDuplicates: 100,
    unknown: gen.valid.length,
  });
  expect(await ledgerMatches(h, done, gen)).toBe(100);
});
