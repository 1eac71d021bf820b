// Progress a user can watch (issue 10 item 24): `dropline status` shows the records read
// while a big file is still validating, and `send` on a terminal draws one line of at most
// 80 columns that keeps moving while delivery reports arrive.
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import { BIN, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

describe('progress', () => {
  let h: PipelineHarness | null = null;
  afterEach(async () => {
    await h?.close();
    h = null;
  });

  it('status shows records read while a big file is validating', async () => {
    h = await PipelineHarness.create();
    await h.start();
    // 1,000,000 lines, none of them a number: read and recorded, then rejected (nothing sent).
    await h.dropFile('enorme.txt', `Hola\n${'12345\n'.repeat(1_000_000)}`);
    // The store as status reads it, polled until the read has shown its first records.
    const store = await openStore(String(h.config.store));
    let held: { release(): Promise<void> } | null = null;
    try {
      const reading = async () =>
        (await store.listFiles()).find(
          (f) => f.name === 'enorme.txt' && f.state === 'validating' && f.counts.records > 0,
        );
      await waitFor('enorme.txt validating with records read', reading, {
        timeoutMs: 90_000,
        intervalMs: 10,
      });
      // The daemon's writes held (another writer, as far as it knows): the read cannot end while
      // status runs, however slow this machine is. Checked again under the hold.
      held = await h.testStore.holdWrites();
      expect(await reading(), 'still validating once its writes are held').toBeDefined();
      const shown = (await h.statusJson()).find((f) => f.name === 'enorme.txt');
      expect(shown?.state).toBe('validating');
      expect(shown?.counts.records).toBeGreaterThan(0);
    } finally {
      await held?.release();
      await store.close();
    }
    await h.waitForState('enorme.txt', 'rejected', { timeoutMs: 120_000 });
  }, 240_000);

  it('send on a terminal: lines of at most 80 columns that move during delivery', async () => {
    // 40 chunks, 500 recipients a second, each chunk delivered 1.5 s after it was accepted: reports arrive
    // over about two seconds after the last chunk went out.
    h = await PipelineHarness.create({
      sandbox: { timeScale: 1, deliveryDelayMs: 1500 },
      api: { chunkSize: 25, concurrency: 1, ratePerSecond: 500 },
    });
    const numbers = Array.from({ length: 1000 }, (_, i) => `3001${String(i).padStart(6, '0')}`);
    const file = join(h.dir, 'campaña-de-fin-de-año-para-todos-los-clientes-premium-del-país.txt');
    await writeFile(file, `Hola\n${numbers.join('\n')}\n`);
    // util-linux script(1) gives the command a real terminal of 200 columns.
    const command = `stty cols 200; exec '${process.execPath}' '${BIN}' --config '${h.configPath}' send --wait '${file}'`;
    const output = await new Promise<string>((done, fail) => {
      const child = spawn('script', ['-qfec', command, '/dev/null'], {
        cwd: h!.dir,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (b: Buffer) => {
        out += b;
      });
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        fail(new Error(`send --wait did not end:\n${out.slice(-2000)}`));
      }, 60_000);
      child.once('close', (code) => {
        clearTimeout(timer);
        if (code === 0) done(out);
        else fail(new Error(`send exited ${code}:\n${out.slice(-2000)}`));
      });
    });
    // Frames are drawn as \r ESC[2K <line>; the last one is cleared before the summary.
    const frames = output.split('\r\x1b[2K').slice(1, -1);
    expect(frames.length).toBeGreaterThan(3);
    for (const f of frames) {
      expect(f).not.toContain('\n');
      expect([...f].length, f).toBeLessThanOrEqual(80);
    }
    const delivery = frames.filter((f) => /delivery \d+%/.test(f)).map((f) => /delivery (\d+)%/.exec(f)![1]);
    expect(new Set(delivery).size, frames.join('\n')).toBeGreaterThan(1);
    expect(frames.some((f) => /ETA/.test(f))).toBe(true);
  });
});
