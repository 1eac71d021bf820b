import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { DroplineError } from '../errors.ts';
import { SqliteStore } from './sqlite/sqlite-store.ts';
import type { Store } from './store.ts';
import { parseStoreUrl } from './url.ts';

export { SqliteStore } from './sqlite/sqlite-store.ts';
export type * from './store.ts';
export { DELIVERED, FINAL_FILE_STATES, PENDING_DELIVERY, UNKNOWN_DELIVERY } from './store.ts';

export interface OpenStoreOptions {
  /** The store's clock (tests). */
  now?: () => Date;
  /** Relative sqlite paths resolve against this directory (default: the working directory). */
  cwd?: string;
  /** A long-running process: WAL checkpoints on a worker thread (SqliteStoreOptions). */
  backgroundCheckpoints?: boolean;
  /** PostgreSQL: connections in the pool at most (default 10). */
  connections?: number;
}

/**
 * The store named by the `store` setting (url.ts), not migrated: call migrate(). A SQLite
 * database's directory is created; the PostgreSQL backend (and pg) is loaded only when asked for.
 */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  const parsed = parseStoreUrl(url, options.cwd);
  if (parsed.kind === 'postgres') {
    // pg is loaded only by a process whose store is PostgreSQL.
    const { PostgresStore } = await import('./postgres/postgres-store.ts');
    return new PostgresStore({
      connectionString: parsed.connectionString,
      ...(parsed.schema === null ? {} : { schema: parsed.schema }),
      ...(options.connections === undefined ? {} : { poolSize: options.connections }),
      ...clock(options),
    });
  }
  if (parsed.path === ':memory:') return new SqliteStore({ path: ':memory:', ...clock(options) });
  const file = parsed.path;
  try {
    mkdirSync(dirname(file), { recursive: true });
  } catch (err) {
    throw new DroplineError(
      'DROPLINE_ERR_STORE',
      `cannot create ${dirname(file)}: ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  ownerOnly(file);
  return new SqliteStore({
    path: file,
    ...clock(options),
    ...(options.backgroundCheckpoints ? { backgroundCheckpoints: true } : {}),
  });
}

/**
 * The store holds phone numbers and texts: 0600 whatever the umask. SQLite creates a new
 * database 0644 and gives its -wal and -shm the database's own mode, so the database is made
 * (or tightened) first. Best effort: a store SQLite cannot open says so itself.
 */
function ownerOnly(file: string): void {
  try {
    const fd = openSync(file, 'wx', 0o600);
    try {
      fchmodSync(fd, 0o600);
    } finally {
      closeSync(fd);
    }
    return;
  } catch {
    // It exists (or cannot be made): tightened below where allowed.
  }
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      chmodSync(f, 0o600);
    } catch {
      // Missing (-wal, -shm), or a read-only store: nothing to tighten.
    }
  }
}

function clock(options: OpenStoreOptions): { now?: () => Date } {
  return options.now ? { now: options.now } : {};
}
