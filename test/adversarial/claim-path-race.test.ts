// A claim records its batch, moves each file to processing/ and then records where they went
// (one store write for the batch). A worker that takes one of those files in between (it is
// `validating`, its lease free) finds its original gone from inbox/ while the record still says
// inbox/: it must wait for the claim's record, not fail the drive (mixed-day.test.ts met it).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { silentLogger } from '../../src/log.ts';
import { Pipeline } from '../../src/pipeline/pipeline.ts';
import type { ServiceClient } from '../../src/service/client.ts';
import { LocalSource } from '../../src/sources/local-source.ts';
import { openStore } from '../../src/store/index.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

it("a file driven between the claim's move and its recorded path is read from processing/, once recorded", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'dropline-claim-path-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  const source = new LocalSource({ name: 'local', path: join(dir, 'drop') });
  await source.start();
  cleanup.push(() => source.close());
  const store = await openStore(`sqlite:${join(dir, 'state.db')}`);
  await store.migrate();
  cleanup.push(() => store.close());
  const config = parseConfig({
    store: `sqlite:${join(dir, 'state.db')}`,
    sources: [{ name: 'local', type: 'local', path: join(dir, 'drop'), readiness: 'stable', stableMs: 0 }],
    // Scheduled far ahead: the drive ends once the file is read, before anything is sent.
    sendWindow: { timezone: 'America/Bogota', rules: [{ days: ['sun'], from: '00:00', to: '00:01' }] },
  });
  const pipeline = new Pipeline({
    config,
    store,
    client: null as unknown as ServiceClient,
    sources: new Map([['local', source]]),
    logger: silentLogger,
    owner: 'test',
  });
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
