// The PostgreSQL store's own migration lineage (./migrations/NNNN_name.sql): a schema designed
// for PostgreSQL from its first version, not a replay of the SQLite history.
import { join } from 'node:path';
import { loadMigrations, type Migration } from '../migrations.ts';

export const POSTGRES_MIGRATIONS_DIR = join(import.meta.dirname, 'migrations');

export function loadPostgresMigrations(dir: string = POSTGRES_MIGRATIONS_DIR): Migration[] {
  return loadMigrations(dir);
}
