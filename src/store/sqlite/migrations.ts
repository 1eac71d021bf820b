// The SQLite store's migrations: what is applied is read without the write lock, each missing
// migration applied in its own transaction (another process may be migrating the same file).

import { DroplineError } from '../../errors.ts';
import { num, numOrNull } from '../mapping.ts';
import type { Migration } from '../migrations.ts';
import { type SqliteDb, sqliteMigrations } from './connection.ts';

export async function migrate(db: SqliteDb, migrations: Migration[] = sqliteMigrations()): Promise<void> {
  try {
    // What is applied already is read without the write lock: a command opening an
    // up-to-date database (status beside a busy daemon) never waits for another writer.
    const applied = new Set(appliedVersions(db));
    const missing = migrations.filter((m) => !applied.has(m.version));
    if (missing.length > 0)
      db.tx(() =>
        db.db.exec(
          'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
        ),
      );
    const newest = migrations.at(-1)?.version ?? 0;
    for (const m of missing) {
      // Checked again inside the transaction: another process may be migrating the same file.
      db.tx(() => {
        const done = db.db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version);
        if (done) return;
        db.db.exec(m.sql);
        db.db
          .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
          .run(m.version, m.name, db.now());
      });
    }
    const top = db.db.prepare('SELECT max(version) AS v FROM schema_migrations').get();
    const version = numOrNull(top?.v) ?? 0;
    if (version > newest) {
      throw new DroplineError(
        'DROPLINE_ERR_STORE_SCHEMA',
        `${db.path} is at schema version ${version}, newer than this dropline knows (${newest})`,
      );
    }
  } catch (err) {
    if (err instanceof DroplineError) throw err;
    throw new DroplineError('DROPLINE_ERR_STORE', `migrating ${db.path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/** The versions recorded in schema_migrations (none when the table does not exist yet). */
function appliedVersions(db: SqliteDb): number[] {
  const table = db.db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
    .get();
  if (!table) return [];
  return db.db
    .prepare('SELECT version FROM schema_migrations WHERE version > 0')
    .all()
    .map((r) => num(r.version));
}
