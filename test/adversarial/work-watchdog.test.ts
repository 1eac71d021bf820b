// Issue 10 item 9 (daemon side): one file whose work stops making progress must neither stall
// the other files' claims nor stay invisible. Here the service takes one request and never
// answers it (a hung connection, until api.timeoutMs): the watchdog sees the file make no
// progress for `workStallMs`, `/readyz` names it, and the next file is claimed, sent and
// completed meanwhile.
import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness, personalizedFile, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
});

describe('a file that stops making progress', () => {
  it('shows in /readyz and does not hold back the next file', async () => {
    h = await PipelineHarness.create({
      api: { chunkSize: 100, concurrency: 2, timeoutMs: 120_000 },
      config: { workStallMs: 1500 },
    });
    await h.start();
    // The next request to the service is taken and never answered.
    await h.faults({ massive: { timeout: { probability: 1, times: 1 } } });
    const stuck = personalizedFile(300, 111);
    await h.dropFile('colgado.txt', stuck.content);
    const a = await h.waitForState('colgado.txt', 'sending');

    const ready = await waitFor(
      '/readyz to name the stalled work',
      async () => {
        const r = (await h!.opsGet('/readyz')) as {
          status: number;
          body: { checks: Record<string, string> };
        };
        return r.status === 503 && r.body.checks.work !== 'ok' ? r : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(ready.body.checks.work).toContain('no progress');
    expect(ready.body.checks.store).toBe('ok');

    const next = personalizedFile(200, 112);
    await h.dropFile('siguiente.txt', next.content);
    const b = await h.waitForState('siguiente.txt', 'completed', { timeoutMs: 30_000 });
    expect(b.counts.submitted).toBe(next.valid.length);
    // The hung file is still where it was: nothing of it was given up or resent.
    const stillA = (await h.opsGet(`/api/files/${a.fileId}`)).body as { state: string };
    expect(stillA.state).toBe('sending');
    expect((await h.ledger(a.fileId)).duplicates).toBe(0);
  });
});
