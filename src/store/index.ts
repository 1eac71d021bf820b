import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DroplineError } from '../errors.ts';
import { SqliteStore } from './sqlite/sqlite-store.ts';
import type { Store } from './store.ts';

export { SqliteStore } from './sqlite/sqlite-store.ts';
export type * from './store.ts';
export { DELIVERED, FINAL_FILE_STATES, PENDING_DELIVERY, UNKNOWN_DELIVERY } from './store.ts';

export interface CreateStoreOptions {
  /** The store's clock (tests). */
  now?: () => Date;
  /** Relative sqlite paths resolve against this directory (default: the working directory). */
  cwd?: string;
  /** A long-running process: WAL checkpoints on a worker thread (SqliteStoreOptions). */
  backgroundCheckpoints?: boolean;
}

/**
 * The store named by the `store` setting: `sqlite:<path>` (the parent directory is created),
 * `sqlite::memory:` or `:memory:` for tests, `postgres://…` later. Not migrated: call migrate().
 */
export function createStore(url: string, options: CreateStoreOptions = {}): Store {
  if (url === ':memory:' || url === 'sqlite::memory:')
    return new SqliteStore({ path: ':memory:', ...clock(options) });
  if (url.startsWith('sqlite:')) {
    // sqlite:./x.db, sqlite:/abs/x.db and the URL form sqlite:///abs/x.db
    let path = url.slice('sqlite:'.length);
    if (path.startsWith('//')) path = path.slice(2);
    if (path === '')
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        'store: sqlite: needs a file path, as in sqlite:./.dropline/state.db',
      );
    const file = resolve(options.cwd ?? process.cwd(), path);
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
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    throw new DroplineError('DROPLINE_ERR_CONFIG', 'PostgreSQL store arrives with the multi-worker issue');
  }
  throw new DroplineError(
    'DROPLINE_ERR_CONFIG',
    `store: "${url.split(':')[0]}:…" is not a store; use sqlite:<path> or postgres://…`,
  );
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

function clock(options: CreateStoreOptions): { now?: () => Date } {
  return options.now ? { now: options.now } : {};
}
