// A worker that runs for months drives many bulk files: the message text it caches for a
// file's sends (Pipeline.bulkText) goes with the file's lease, not kept for good (one text,
// up to 64 KiB, per bulk file ever sent was a slow leak).
import { afterEach, describe, expect, it } from 'vitest';
import { Workers } from '../helpers/pipeline-workers.ts';

let w: Workers | null = null;
afterEach(async () => {
  await w?.close();
  w = null;
});

describe('the bulk message cache', () => {
  it('holds no text once the files are driven', async () => {
    w = await Workers.create({ api: { chunkSize: 5, concurrency: 1 } });
    const a = await w.worker('a');
    for (let f = 0; f < 3; f++) {
      const numbers = Array.from({ length: 12 }, (_, i) => `3${String(100_000_000 + f * 1000 + i)}`);
      const entry = await w.dropFile(
        `aviso-${f}.txt`,
        `Aviso ${f}: su factura vence el viernes.\n${numbers.join('\n')}\n`,
      );
      const file = await a.pipeline.claim(a.source, entry);
      await a.pipeline.drive(file!.fileId);
      expect((await w.store.getFile(file!.fileId))?.state).toBe('submitted');
    }
    expect((a.pipeline as unknown as { bulkTexts: Map<string, string> }).bulkTexts.size).toBe(0);
  });
});
