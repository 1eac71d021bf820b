// Opening a SQLite database the way the store needs it: WAL (readers beside the one writer),
// a busy timeout (a writer waits for another connection's lock instead of failing), and
// optionally a checkpointer thread. Open failures say why, with a stable code.

import { accessSync, constants } from 'node:fs';
import { dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { DroplineError } from '../../errors.ts';
import { moduleUrl } from '../../module-url.ts';
import { foldName } from '../mapping.ts';
import { loadMigrations, type Migration } from '../migrations.ts';

/** Every this often the checkpointer copies the WAL back into the database file. */
const CHECKPOINT_EVERY_MS = 250;
/** With a checkpointer, a commit checkpoints only past this many WAL pages (it fell behind). */
const CHECKPOINT_BACKSTOP_PAGES = 10_000;

/** SQLite's own migration lineage (src/store/sqlite/migrations). */
export function sqliteMigrations(): Migration[] {
  return loadMigrations(join(import.meta.dirname, 'migrations'));
}

export interface Connection {
  db: DatabaseSync;
  /** The checkpointer thread (unref'd), when asked for. */
  checkpointer: Worker | null;
}

export function connect(path: string, options: { busyTimeoutMs: number; checkpointer: boolean }): Connection {
  try {
    const db = new DatabaseSync(path, { timeout: options.busyTimeoutMs, enableForeignKeyConstraints: true });
    db.exec(`PRAGMA busy_timeout = ${Math.trunc(options.busyTimeoutMs)}`);
    db.exec('PRAGMA journal_mode = WAL');
    // NORMAL in WAL mode: a power loss may lose the last commits, never corrupt the file;
    // an application crash loses nothing.
    db.exec('PRAGMA synchronous = NORMAL');
    db.exec('PRAGMA foreign_keys = ON');
    // The store's fold of a file name (mapping.ts), for listFiles' search.
    db.function('dropline_fold', { deterministic: true }, (v) => (typeof v === 'string' ? foldName(v) : v));
    let checkpointer: Worker | null = null;
    if (options.checkpointer && path !== ':memory:') {
      db.exec(`PRAGMA wal_autocheckpoint = ${CHECKPOINT_BACKSTOP_PAGES}`);
      checkpointer = new Worker(moduleUrl('./checkpointer.ts', import.meta.url), {
        workerData: { path, everyMs: CHECKPOINT_EVERY_MS },
      });
      checkpointer.unref();
    }
    return { db, checkpointer };
  } catch (err) {
    const denied = path === ':memory:' ? null : unwritable(path);
    if (denied)
      throw new DroplineError('DROPLINE_ERR_STORE_READONLY', `cannot open ${path}: ${denied}`, {
        cause: err,
      });
    throw new DroplineError('DROPLINE_ERR_STORE', `cannot open ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/** Why the database file (or its directory, for a new one) cannot be written; null when it can. */
function unwritable(path: string): string | null {
  for (const p of [path, dirname(path)]) {
    try {
      accessSync(p, constants.W_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') continue;
      return `${p} is not writable (${code}${code === 'EROFS' ? ': a read-only file system' : code === 'EPERM' ? ': immutable, chattr +i?' : ''})`;
    }
  }
  return null;
}
