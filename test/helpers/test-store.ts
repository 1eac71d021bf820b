// The store an end-to-end test runs on: SQLite in the test's directory, or, with
// DROPLINE_TEST_STORE=postgres (the `postgres` vitest project), a schema of its own in the
// run's PostgreSQL cluster. The same pipeline tests then prove both backends.
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { testSchema } from './postgres.ts';

export const TEST_STORE: 'sqlite' | 'postgres' =
  process.env.DROPLINE_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

export interface TestStore {
  /** The `store` setting. */
  readonly url: string;
  /** Drops the PostgreSQL schema (the SQLite file goes with the test's directory). */
  close(): Promise<void>;
  /**
   * Holds every write to the store's files and recipients, as another writer would (SQLite:
   * its write lock; PostgreSQL: a SHARE lock on both tables); reads go on. A test freezes a
   * daemon's progress with it at a point it chose, instead of racing it.
   */
  holdWrites(): Promise<{ release(): Promise<void> }>;
}

/** `kind`: this backend whatever the project (a test of several workers is PostgreSQL's). */
export async function testStore(dir: string, kind: 'sqlite' | 'postgres' = TEST_STORE): Promise<TestStore> {
  if (kind === 'sqlite') {
    const path = join(dir, 'state.db');
    return {
      url: `sqlite:${path}`,
      close: async () => {},
      holdWrites: async () => {
        const db = new DatabaseSync(path, { timeout: 10_000 });
        db.exec('BEGIN IMMEDIATE');
        return {
          release: async () => {
            db.exec('COMMIT');
            db.close();
          },
        };
      },
    };
  }
  const schema = await testSchema();
  const url = new URL(schema.url);
  url.searchParams.set('schema', schema.schema);
  return {
    url: url.toString(),
    close: schema.drop,
    holdWrites: async () => {
      const client = new pg.Client({ connectionString: schema.url, connectionTimeoutMillis: 10_000 });
      client.on('error', () => {});
      await client.connect();
      await client.query('BEGIN');
      await client.query(`LOCK TABLE ${schema.schema}.files, ${schema.schema}.recipients IN SHARE MODE`);
      return {
        release: async () => {
          await client.query('COMMIT');
          await client.end();
        },
      };
    },
  };
}
