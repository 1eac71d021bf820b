// Numbered migrations: `NNNN_name.sql` files applied in order, each recorded in
// schema_migrations. Each backend has its own lineage (src/store/<backend>/migrations): the
// PostgreSQL schema starts from what SQLite's became, not from its history.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const FILE = /^(\d{4})_([a-z0-9_-]+)\.sql$/;

export function loadMigrations(dir: string): Migration[] {
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
