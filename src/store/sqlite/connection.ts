// Opening a SQLite database the way the store needs it: WAL (readers beside the one writer),
// a busy timeout (a writer waits for another connection's lock instead of failing), and
// optionally a checkpointer thread. Open failures say why, with a stable code.

import { accessSync, constants } from 'node:fs';
import { dirname, join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { DroplineError } from '../../errors.ts';
import { moduleUrl } from '../../module-url.ts';
import { foldName, num, numOrNull } from '../mapping.ts';
import { idRange, MAX_FILE_NO } from '../message-ids.ts';
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

/** Rows per multi-row statement (pending recipients, delivery reports): one call into SQLite for 64 rows instead of one per row. */
export const ROWS_PER_STATEMENT = 64;

/** [from, to) pieces of n items, ROWS_PER_STATEMENT each but the last. */
export function pieces(n: number): [number, number][] {
  const out: [number, number][] = [];
  for (let from = 0; from < n; from += ROWS_PER_STATEMENT)
    out.push([from, Math.min(n, from + ROWS_PER_STATEMENT)]);
  return out;
}

export function changes(r: { changes: number | bigint }): number {
  return Number(r.changes);
}

/** Lists travel as one JSON parameter (`IN (SELECT value FROM json_each(?))`): one cached statement for any length. */
export function list(values: readonly string[] | undefined): string | null {
  return values === undefined ? null : JSON.stringify(values);
}

/**
 * What every area of the SQLite store works with (the store's areas are functions of it):
 * the connection, its cached statements, the clock, transactions, and the file numbers
 * that make a file's recipient ids one range (../message-ids.ts).
 */
export class SqliteDb {
  /** Explicit transactions committed (batching is observable in tests). */
  transactions = 0;
  private readonly statements = new Map<string, StatementSync>();
  /** File numbers read from committed state: a file's number never changes once given. */
  private readonly fileNos = new Map<string, number>();
  /** File numbers read inside the open transaction (tx), cached when it commits. */
  private learnt: Map<string, number> | null = null;

  readonly db: DatabaseSync;
  readonly path: string;
  readonly clock: () => Date;
  /** Rows per page when iterating recipients. */
  readonly pageSize: number;

  constructor(db: DatabaseSync, path: string, clock: () => Date, pageSize: number) {
    this.db = db;
    this.path = path;
    this.clock = clock;
    this.pageSize = pageSize;
  }

  now(): string {
    return this.clock().toISOString();
  }

  stmt(sql: string): StatementSync {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  /** A cached statement whose rows come back as arrays (no per-row object with 16 keys). */
  arrays(sql: string): StatementSync {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      s.setReturnArrays(true);
      this.statements.set(sql, s);
    }
    return s;
  }

  /**
   * A statement over `rows` rows of values (`row` each), cached by its kind and row count, not
   * looked up by a 40 KB SQL text: at most ROWS_PER_STATEMENT statements of each kind. A group
   * of reports is one statement of its own size rather than pieces (~15% less a report).
   */
  rowsStatement(kind: string, rows: number, row: string, sql: (values: string) => string): StatementSync {
    const key = `${kind}:${rows}`;
    let s = this.statements.get(key);
    if (!s) {
      s = this.db.prepare(sql(Array.from({ length: rows }, () => row).join(', ')));
      s.setReturnArrays(true);
      this.statements.set(key, s);
    }
    return s;
  }

  tx<T>(fn: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    // What the transaction learns is remembered only once it commits: nothing cached may
    // outlive a rollback (a file number read inside it may be gone after one).
    const learnt = new Map<string, number>();
    this.learnt = learnt;
    try {
      const result = fn();
      this.db.exec('COMMIT');
      this.transactions++;
      for (const [fileId, n] of learnt) this.fileNos.set(fileId, n);
      return result;
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw err;
    } finally {
      this.learnt = null;
    }
  }

  /** The statements are dropped and the connection closed. */
  close(): void {
    if (!this.db.isOpen) return;
    this.statements.clear();
    this.db.close();
  }

  /** The file's file_no (null: unknown file, or a row from before migration 0005 that has none). */
  fileNo(fileId: string): number | null {
    const cached = this.fileNos.get(fileId) ?? this.learnt?.get(fileId);
    if (cached !== undefined) return cached;
    return this.readFileNo(fileId);
  }

  /** The file's file_no as the database has it now (inside a write: what this write may touch). */
  readFileNo(fileId: string): number | null {
    const n = numOrNull(this.stmt('SELECT file_no FROM files WHERE file_id = ?').get(fileId)?.file_no);
    if (n !== null) (this.learnt ?? this.fileNos).set(fileId, n);
    return n;
  }

  /** The file's id range [lo, hi], or null when it has no file_no (so no recipients). */
  range(fileId: string): { lo: number; hi: number } | null {
    const n = this.fileNo(fileId);
    return n === null ? null : idRange(n);
  }

  /** The id range holding a chunk's recipients ([1, 0]: none). */
  span(fileId: string, seq: number): { lo: number; hi: number } {
    const n = this.fileNo(fileId);
    const r =
      n === null
        ? undefined
        : this.stmt('SELECT first_id, last_id FROM chunk_spans WHERE file_no = ? AND seq = ?').get(n, seq);
    return r ? { lo: num(r.first_id), hi: num(r.last_id) } : { lo: 1, hi: 0 };
  }

  /**
   * Inside a write transaction: the file's number, read from the database (never from a
   * cache), so the rows written or deleted are the file's own.
   */
  ownFileNo(fileId: string): number {
    const n = this.readFileNo(fileId);
    if (n === null) throw new DroplineError('DROPLINE_ERR_STORE', `recipients of unknown file ${fileId}`);
    if (n >= MAX_FILE_NO) throw new DroplineError('DROPLINE_ERR_STORE', `file number ${n} out of range`);
    return n;
  }
}
