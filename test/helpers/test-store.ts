// The store an end-to-end test runs on: SQLite in the test's directory, or, with
// DROPLINE_TEST_STORE=postgres (the `postgres` vitest project), a schema of its own in the
// run's PostgreSQL cluster. The same pipeline tests then prove both backends.
import { join } from 'node:path';
import { testSchema } from './postgres.ts';

export const TEST_STORE: 'sqlite' | 'postgres' =
  process.env.DROPLINE_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

export interface TestStore {
  /** The `store` setting. */
  readonly url: string;
  /** Drops the PostgreSQL schema (the SQLite file goes with the test's directory). */
  close(): Promise<void>;
}

export async function testStore(dir: string): Promise<TestStore> {
  if (TEST_STORE === 'sqlite') return { url: `sqlite:${join(dir, 'state.db')}`, close: async () => {} };
  const schema = await testSchema();
  const url = new URL(schema.url);
  url.searchParams.set('schema', schema.schema);
  return { url: url.toString(), close: schema.drop };
}
