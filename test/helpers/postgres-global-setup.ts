// vitest globalSetup: one PostgreSQL cluster for the whole run, its URL provided to the tests
// (inject('postgresUrl')), stopped and removed at teardown. When it cannot start, the reason
// is provided instead: the PostgreSQL tests then fail with it (never skipped), and the other
// tests still run.
import type { TestProject } from 'vitest/node';
import { type PostgresCluster, startPostgres } from './postgres.ts';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let cluster: PostgresCluster | null = null;
  try {
    cluster = await startPostgres();
    project.provide('postgresUrl', cluster.url);
    project.provide('postgresError', '');
  } catch (err) {
    project.provide('postgresUrl', '');
    project.provide('postgresError', (err as Error).message);
  }
  return async () => {
    await cluster?.close();
  };
}
