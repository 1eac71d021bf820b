import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { testSchema } from '../helpers/postgres.ts';
import { type StoreHarness, storeContract, T0 } from './store.contract.ts';

function testClock() {
  let t = T0.getTime();
  return {
    now: () => new Date(t),
    set: (d: Date) => {
      t = d.getTime();
    },
    advance: (ms: number) => {
      t += ms;
    },
  };
}

storeContract('postgres (a schema of its own)', async (): Promise<StoreHarness> => {
  const db = await testSchema();
  const clock = testClock();
  const open = () =>
    new PostgresStore({ connectionString: db.url, schema: db.schema, now: clock.now, poolSize: 4 });
  const store = open();
  await store.migrate();
  const others: PostgresStore[] = [];
  return {
    store,
    clock,
    reopen: async () => {
      const other = open();
      others.push(other);
      return other;
    },
    cleanup: async () => {
      for (const o of others) await o.close();
      await store.close();
      await db.drop();
    },
  };
});
