// Numbered migrations shared by every store implementation: `NNNN_name.sql` files applied
// in order, each recorded in schema_migrations. The PostgreSQL store reads the same list
// (with its dialect's variant of a file when one exists).

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS_DIR = join(import.meta.dirname, 'migrations');

const FILE = /^(\d{4})_([a-z0-9_-]+)\.sql$/;

export function loadMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const migrations: Migration[] = [];
  for (const file of readdirSync(dir)) {
    const m = FILE.exec(file);
    if (!m) continue;
    migrations.push({ version: Number(m[1]), name: m[2]!, sql: readFileSync(join(dir, file), 'utf8') });
  }
  migrations.sort((a, b) => a.version - b.version);
  for (let i = 1; i < migrations.length; i++) {
    // Two files with one number would apply in an order that depends on the file system.
    if (migrations[i]!.version === migrations[i - 1]!.version) {
      throw new Error(`two migrations numbered ${migrations[i]!.version} in ${dir}`);
    }
  }
  return migrations;
}
