// A real PostgreSQL 15 for the tests, started by bench/postgres-cluster.ts (initdb and pg_ctl
// as the `postgres` user, a free port on 127.0.0.1, trust authentication for `app`).
// One cluster serves the whole vitest run (postgres-global-setup.ts provides its URL); a test
// that stops and restarts PostgreSQL starts a private one (startPostgres). Each test works in
// a schema of its own (pg-boss's habit): testSchema() creates it and drops it afterwards.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import {
  type ClusterOptions,
  type PostgresCluster,
  postgresUnavailable,
  startCluster,
} from '../../bench/postgres-cluster.ts';

export { type PostgresCluster, postgresUnavailable };

declare module 'vitest' {
  export interface ProvidedContext {
    /** The shared cluster's URL, or '' when it could not start (then postgresError says why). */
    postgresUrl: string;
    postgresError: string;
  }
}

/**
 * A private cluster for tests (bench/postgres-cluster.ts, the one start code of the repo):
 * fsync off, as tests check correctness, not what a commit costs on disk.
 */
export function startPostgres(options: Omit<ClusterOptions, 'fsync'> = {}): Promise<PostgresCluster> {
  return startCluster({ ...options, fsync: false });
}

/** The shared cluster of this vitest run (postgres-global-setup.ts); throws when it did not start. */
export function sharedPostgresUrl(): string {
  const url = inject('postgresUrl');
  if (!url) throw new Error(`PostgreSQL tests cannot run: ${inject('postgresError') || 'no cluster'}`);
  return url;
}

export interface TestSchema {
  readonly url: string;
  readonly schema: string;
  drop(): Promise<void>;
}

/** A schema of its own (`test_<random>`) in the cluster at `url`, dropped by drop(). */
export async function testSchema(url: string = sharedPostgresUrl()): Promise<TestSchema> {
  const schema = `test_${randomBytes(6).toString('hex')}`;
  await admin(url, `CREATE SCHEMA ${schema}`);
  return {
    url,
    schema,
    drop: async () => {
      await admin(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    },
  };
}

/** One statement on a connection of its own, closed after. */
export async function admin(url: string, sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}
