// A second `dropline run` on the same store while one runs (a supervisor restarting too
// early, an operator typing it twice) fails on the ports the first holds. Nothing it
// writes on the way may change what the healthy daemon advertises: `send` must keep
// using the daemon's sandbox, whose delivery reports reach the daemon.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

const BULK = 'Hola, su pedido está listo\n3001234567\n3001234568\n3001234569\n';

describe('a failed second start', () => {
  let h: PipelineHarness | null = null;
  afterEach(async () => {
    await h?.close();
    h = null;
  });

  it('exits non-zero at once and leaves the running daemon and its sandbox.url alone', async () => {
    h = await PipelineHarness.create({ api: { baseUrl: 'sandbox' } });
    await h.start();
    const advertised = join(h.dir, 'sandbox.url');
    const before = await waitFor('sandbox.url', () => readFile(advertised, 'utf8').catch(() => undefined));

    // Same config: notify.listen and ops.listen are the first daemon's. The harness kills the
    // process and fails when it does not end within the bound.
    const second = await h.cli(['run'], { timeoutMs: 10_000 }).catch((err: Error) => err);
    expect.soft(second).not.toBeInstanceOf(Error);
    if (!(second instanceof Error)) {
      expect.soft(second.code).not.toBe(0);
      expect.soft(second.stderr).toMatch(/DROPLINE_ERR_NOTIFY_LISTEN/);
    }
    expect(await readFile(advertised, 'utf8')).toBe(before);

    // `send` uses the daemon's sandbox: its reports reach the daemon and the file completes.
    await writeFile(join(h.dir, 'campaign.txt'), BULK);
    const sent = await h.cli(['send', join(h.dir, 'campaign.txt'), '--json']);
    expect(sent.code, sent.stderr).toBe(0);
    const fileId = (JSON.parse(sent.stdout) as { fileId: string }).fileId;
    const done = await h.waitForFile(fileId, 'completed', { timeoutMs: 20_000 });
    expect(done.counts.delivered).toBe(3);
  });
});
