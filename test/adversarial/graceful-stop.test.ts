// Issue 10 item 13: SIGTERM during a service outage stops between chunks, within a bound,
// instead of retrying every chunk of the file first. Chunks never tried stay pending (the
// file is `sending`, not `partial`), the next start resumes it, and the sandbox ledger
// holds every recipient exactly once.
import { afterEach, describe, expect, it } from 'vitest';
import { expectedMessageId, PipelineHarness, personalizedFile } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
});

describe('SIGTERM during a service outage', () => {
  it('exits on its own between chunks; the file resumes at the next start, every recipient once', async () => {
    h = await PipelineHarness.create({
      // Every 5xx is retried for ~60 s before a chunk fails for good: far past the stop bound.
      api: {
        chunkSize: 100,
        concurrency: 1,
        ratePerSecond: 400,
        timeoutMs: 1000, // the stop bound is this + 5 s: well inside the harness's 10 s before SIGKILL
        retry: { baseMs: 2000, maxMs: 10_000, maxAttempts: 8 },
      },
    });
    await h.start();
    const gen = personalizedFile(1500, 101);
    await h.dropFile('apagado.txt', gen.content);
    const sending = await h.waitForState('apagado.txt', 'sending', {
      where: (m) => m.name === 'apagado.txt' && m.counts.chunksAccepted >= 2,
    });
    await h.faults({ massive: { '503': 1 } });
    // The outage has begun: a request answered 503 since.
    const before = h.sandbox.requests.length;
    await new Promise<void>((done) => {
      const t = setInterval(() => {
        if (h!.sandbox.requests.length > before) {
          clearInterval(t);
          done();
        }
      }, 20);
    });

    // The harness's stop sends SIGTERM and SIGKILLs after 10 s: null means it had to.
    const code = await h.stop();
    expect(code, h.daemonOutput.slice(-2000)).toBe(0);

    const { file, chunks } = await h.stored(sending.fileId);
    expect(file?.state).toBe('sending');
    expect(
      chunks.filter((c) => c.state === 'failed' || c.state === 'in_doubt' || c.state === 'inflight'),
    ).toEqual([]);
    const pending = chunks.filter((c) => c.state === 'pending').length;
    expect(pending).toBeGreaterThan(0);
    expect(pending + chunks.filter((c) => c.state === 'accepted').length).toBe(chunks.length);

    // The service is back: the next start resumes the file and sends each recipient once.
    await h.faults({});
    await h.start();
    const done = await h.waitForFile(sending.fileId, 'completed', { timeoutMs: 60_000 });
    expect(done.counts.submitted).toBe(gen.valid.length);
    const ledger = await h.ledger(done.fileId);
    const got = ledger.entries.map((e) => `${e.messageId} ${e.to} ${e.count}`).sort();
    const want = gen.valid.map((r) => `${expectedMessageId(gen, done.fileId, r)} ${r.to} 1`).sort();
    expect(got).toEqual(want);
  });
});
