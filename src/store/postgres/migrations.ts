// The PostgreSQL store's own migration lineage (./migrations/NNNN_name.sql): a schema designed
// for PostgreSQL from its first version, not a replay of the SQLite history.
import { join } from 'node:path';
import type pg from 'pg';
import { DroplineError } from '../../errors.ts';
import { num, type Row } from '../mapping.ts';
import { loadMigrations, type Migration } from '../migrations.ts';
import { type PgDb, storeError } from './connection.ts';
import * as S from './sql.ts';

export const POSTGRES_MIGRATIONS_DIR = join(import.meta.dirname, 'migrations');

export function loadPostgresMigrations(dir: string = POSTGRES_MIGRATIONS_DIR): Migration[] {
  return loadMigrations(dir);
}

/**
 * Applies the missing migrations, one migrator at a time per schema (an advisory lock); the
 * versions this call applied are pushed to `migrated`.
 */
export async function migrate(db: PgDb, schema: string | null, migrated: number[]): Promise<void> {
  const migrations = loadPostgresMigrations();
  const newest = migrations.at(-1)?.version ?? 0;
  let client: pg.PoolClient;
  try {
    client = await db.pool.connect();
  } catch (err) {
    throw storeError(err, 'migrating');
  }
  const lock = { schema: schema };
  let locked = false;
  let failed = false;
  try {
    // One migrator at a time per schema: N workers starting together migrate once.
    await client.query({ text: S.MIGRATE_LOCK.text, values: S.values(S.MIGRATE_LOCK, lock) });
    locked = true;
    if (schema) await client.query(S.createSchema(schema));
    await client.query(S.CREATE_MIGRATIONS);
    const applied = new Set(
      (await client.query({ text: S.APPLIED.text })).rows.map((r: Row) => num(r.version)),
    );
    const newer = [...applied].filter((v) => v > newest);
    if (newer.length > 0)
      throw new DroplineError(
        'DROPLINE_ERR_STORE_SCHEMA',
        `the database is at schema version ${Math.max(...newer)}, newer than this dropline knows (${newest}): upgrade dropline`,
      );
    for (const m of migrations) {
      if (applied.has(m.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query({
          text: S.RECORD_MIGRATION.text,
          values: S.values(S.RECORD_MIGRATION, { version: m.version, name: m.name, now: db.now() }),
        });
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      }
      migrated.push(m.version);
    }
  } catch (err) {
    failed = true;
    throw storeError(err, 'migrating');
  } finally {
    if (locked)
      await client
        .query({ text: S.MIGRATE_UNLOCK.text, values: S.values(S.MIGRATE_UNLOCK, lock) })
        .catch(() => {});
    // After a failure the connection may be broken: destroyed, never handed out again.
    client.release(failed ? true : undefined);
  }
}
