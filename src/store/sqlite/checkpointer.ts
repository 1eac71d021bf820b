// The WAL checkpointer, run on a worker thread by a long-running process: its own connection,
// a PASSIVE checkpoint (it never waits for, nor blocks, the writer) every `everyMs`. The
// writer's commits then never copy pages back into the database file, nor wait for that
// copy's fsync.

import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const { path, everyMs } = workerData as { path: string; everyMs: number };
const db = new DatabaseSync(path);
const timer = setInterval(() => {
  try {
    db.exec('PRAGMA wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or a transient error: the next tick tries again, and the writer's own
    // wal_autocheckpoint is the backstop.
  }
}, everyMs);
parentPort?.once('message', () => {
  clearInterval(timer);
  db.close();
  parentPort?.close();
});
