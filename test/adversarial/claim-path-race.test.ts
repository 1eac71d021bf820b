// A claim records its batch, moves each file to processing/ and then records where they went
// (one store write for the batch). A worker that takes one of those files in between (it is
// `validating`, its lease free) finds its original gone from inbox/ while the record still says
// inbox/ (mixed-day.test.ts met it): it must find the file where the claim moved it and read it
// from there at once, not fail the drive; nor may the claim's record, coming late, undo the path
// the worker recorded (test/e2e/pipeline-claim-crash.test.ts: the claim killed in between).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { localPipeline } from '../helpers/local-pipeline.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

it("a file driven between the claim's move and its recorded path is read from processing/, and keeps that path", async () => {
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
  // record still says inbox/.
  await store.setPaths([{ fileId: claimed!.fileId, path: 'inbox/recordatorios.txt' }]);
  const driven = await pipeline.drive(claimed!.fileId);
  expect(driven?.state).toBe('scheduled');
  expect(driven?.counts?.valid).toBe(2);
  expect(driven?.path).toBe('processing/recordatorios.txt');
  // The claim's record comes after the worker's (a claim stalled, or the file moved on since):
  // it changes only a path still in inbox/, so the worker's stays.
  await store.setPaths([
    { fileId: claimed!.fileId, path: 'processing/x.txt', from: 'inbox/recordatorios.txt' },
  ]);
  expect((await store.getFile(claimed!.fileId))?.path).toBe('processing/recordatorios.txt');
});

it('the name taken in processing/ by another file of the same size: the one the claim moved is found by its content', async () => {
  const { dir, source, store, pipeline, close } = await localPipeline('claim-path-own-name', {
    source: { readiness: 'stable', stableMs: 0 },
    config: {
      sendWindow: { timezone: 'America/Bogota', rules: [{ days: ['sun'], from: '00:00', to: '00:01' }] },
    },
  });
  cleanup.push(close);
  // Another file of that name being sent, as many bytes, other numbers.
  await writeFile(join(dir, 'drop', 'processing', 'recordatorios.txt'), '3009999999;hola\n3009999998;hola\n');
  await writeFile(join(dir, 'drop', 'inbox', 'recordatorios.txt'), '3001234567;hola\n3001234568;hola\n');
  const [claimed] = await pipeline.claimReady(source, await source.list());
  const moved = `processing/${claimed!.fileId}-recordatorios.txt`;
  expect(claimed?.path).toBe(moved);
  await store.setPaths([{ fileId: claimed!.fileId, path: 'inbox/recordatorios.txt' }]);
  const driven = await pipeline.drive(claimed!.fileId);
  expect([driven?.state, driven?.counts?.valid, driven?.path]).toEqual(['scheduled', 2, moved]);
  const numbers: (string | null)[] = [];
  for await (const r of store.recipients(claimed!.fileId)) numbers.push(r.number);
  expect(numbers).toEqual(['573001234567', '573001234568']);
});
