// A second process's view of the database for store-sqlite.test.ts: claims files in a
// loop on its own connection until none is left, then reports what it won.
import { parentPort, workerData } from 'node:worker_threads';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';

const { path, owner } = workerData as { path: string; owner: string };
const store = new SqliteStore({ path });
const won: string[] = [];
for (;;) {
  const file = await store.acquireFile(owner, ['sending'], 600_000);
  if (!file) break;
  won.push(file.fileId);
  // a write per claim, as a worker records progress: contends for the lock with the others
  await store.updateFile(file.fileId, { reason: owner });
}
await store.close();
parentPort?.postMessage(won);
