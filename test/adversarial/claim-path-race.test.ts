// A claim records its batch, moves each file to processing/ and then records where they went
// (one store write for the batch). A worker that takes one of those files in between (it is
// `validating`, its lease free) finds its original gone from inbox/ while the record still says
// inbox/: it must wait for the claim's record, not fail the drive (mixed-day.test.ts met it).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { localPipeline } from '../helpers/local-pipeline.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

it("a file driven between the claim's move and its recorded path is read from processing/, once recorded", async () => {
  const { dir, source, store, pipeline, close } = await localPipeline('claim-path', {
    source: { readiness: 'stable', stableMs: 0 },
    // Scheduled far ahead: the drive ends once the file is read, before anything is sent.
    config: {
      sendWindow: { timezone: 'America/Bogota', rules: [{ days: ['sun'], from: '00:00', to: '00:01' }] },
    },
  });
  cleanup.push(close);
  await writeFile(join(dir, 'drop', 'inbox', 'recordatorios.txt'), '3001234567;hola\n3001234568;hola\n');
  const [claimed] = await pipeline.claimReady(source, await source.list());
  expect(claimed?.path).toBe('processing/recordatorios.txt');
  // The moment between the claim's move and its record: the file is in processing/, the
  // record still says inbox/; the claim records the path a little later.
  await store.setPaths([{ fileId: claimed!.fileId, path: 'inbox/recordatorios.txt' }]);
  const recorded = setTimeout(
    () => void store.setPaths([{ fileId: claimed!.fileId, path: 'processing/recordatorios.txt' }]),
    300,
  );
  cleanup.push(async () => clearTimeout(recorded));
  const driven = await pipeline.drive(claimed!.fileId);
  expect(driven?.state).toBe('scheduled');
  expect(driven?.counts?.valid).toBe(2);
});
