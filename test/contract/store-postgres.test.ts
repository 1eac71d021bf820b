// The store contract on PostgreSQL (a schema of its own per test, on the run's shared cluster),
// then what only a shared database shows: migrations by several workers at once, a schema
// newer than the code, PostgreSQL going away and coming back, and true races between store
// instances with pools of their own (separate connections, as separate workers have).

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DroplineError } from '../../src/errors.ts';
import { openStore } from '../../src/store/index.ts';
import { createPool, storeError, transaction } from '../../src/store/postgres/connection.ts';
import { loadPostgresMigrations } from '../../src/store/postgres/migrations.ts';
import { PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/postgres-store.ts';
import * as S from '../../src/store/postgres/sql.ts';
import type { ChunkResult, ReadyFile, Store } from '../../src/store/store.ts';
import {
  admin,
  type PostgresCluster,
  startPostgres,
  type TestSchema,
  testSchema,
} from '../helpers/postgres.ts';
import {
  event,
  ley2300,
  newFile,
  numberOf,
  type StoreHarness,
  storeContract,
  T0,
  testClock,
  validRows,
} from './store.contract.ts';

const run = promisify(execFile);

/** validRows(3, 3) whose messageIds are the generated `<fileId>-<line>` (lines 2..4). */
function generatedRows(fileId: string) {
  return validRows(3, 3).map((r) => ({ ...r, messageId: `${fileId}-${r.line}`, generatedMessageId: true }));
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

async function rejection(p: Promise<unknown>): Promise<DroplineError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(DroplineError);
    return err as DroplineError;
  }
  throw new Error('expected a rejection');
}

/**
 * Each file's in-doubt chunk result (by `a`) and a delivery report of one of its recipients (by
 * `b`) issued at once, in both orders: whichever commits first, each chunk ends accepted with
 * the reported recipient delivered.
 */
async function raceResultAndReport(
  a: Store,
  b: Store,
  files: readonly string[],
  doubtOf: (fileId: string) => ChunkResult,
  reported: (fileId: string) => string,
): Promise<void> {
  await Promise.all(
    files.flatMap((fileId, i) => {
      const result = () => a.recordChunkResult(fileId, 1, doubtOf(fileId));
      const report = () =>
        b.recordDeliveries([
          event(fileId, reported(fileId), { transactionNumber: `T-${fileId}`, to: numberOf('m2') }),
        ]);
      return i % 2 === 0 ? [result(), report()] : [report(), result()];
    }),
  );
  for (const fileId of files) {
    expect(
      (await a.listChunks(fileId)).map((c) => [c.state, c.errorCode]),
      fileId,
    ).toEqual([['accepted', null]]);
    expect(await a.counts(fileId), fileId).toMatchObject({
      chunksAccepted: 1,
      chunksInDoubt: 0,
      submitted: 3,
      inDoubt: 0,
      delivered: 1,
      pendingDelivery: 2,
    });
  }
}

describe('PostgresStore', () => {
  let db: TestSchema;
  const stores: PostgresStore[] = [];
  const clock = testClock();
  function open(options: Partial<PostgresStoreOptions> = {}): PostgresStore {
    const s = new PostgresStore({
      connectionString: db.url,
      schema: db.schema,
      now: clock.now,
      poolSize: 4,
      ...options,
    });
    stores.push(s);
    return s;
  }
  beforeAll(async () => {
    db = await testSchema();
  });
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    await admin(db.url, `DROP SCHEMA IF EXISTS ${db.schema} CASCADE`);
    clock.set(T0);
  });
  afterAll(async () => {
    await db.drop();
  });

  describe('send permits', () => {
    it('are committed without waiting for the WAL flush, the connection left durable for everything else', async () => {
      const store = open({ poolSize: 1 });
      await store.migrate();
      const pool = (store as unknown as { pool: pg.Pool }).pool;
      const mode = async (c: pg.Pool | pg.PoolClient = pool) =>
        (await c.query('SHOW synchronous_commit')).rows[0].synchronous_commit as string;
      const account = { key: 'k', name: 'default' };
      const asked = {
        permitId: 'p1',
        owner: 'w',
        destinations: 10,
        ratePerSecond: 0,
        concurrency: 4,
        leaseMs: 10_000,
      };
      expect((await store.takeSendPermit(account, asked)).granted).toBe(true);
      await store.releaseSendPermit('k', 'p1');
      // The pool's one connection, after both: durable again for the recipients' writes.
      expect(await mode()).toBe('on');
      // While the permit statements run, their transaction is not.
      const c = await pool.connect();
      try {
        for (const [statement, params] of [
          [S.LOCK_BUDGET, { key: 'k' }],
          [S.RELEASE_PERMIT, { key: 'k', permit_id: 'p1' }],
        ] as const) {
          await c.query('BEGIN');
          await c.query({ text: statement.text, values: S.values(statement, params) });
          expect(await mode(c)).toBe('off');
          await c.query('COMMIT');
          expect(await mode(c)).toBe('on');
        }
      } finally {
        c.release();
      }
    });
  });

  describe('deadlocks', () => {
    it('a deadlock inside a transaction is run again, though the statement that met it was already made a store error', async () => {
      await admin(db.url, `CREATE SCHEMA IF NOT EXISTS ${db.schema}`);
      await admin(db.url, `CREATE TABLE ${db.schema}.t (id int PRIMARY KEY, v int NOT NULL)`);
      await admin(db.url, `INSERT INTO ${db.schema}.t VALUES (1, 0), (2, 0)`);
      const pool = createPool({ connectionString: db.url, schema: db.schema, poolSize: 4 });
      try {
        const attempts = { a: 0, b: 0 };
        let arrived = 0;
        let meet: () => void = () => {};
        const met = new Promise<void>((resolve) => {
          meet = resolve;
        });
        // Two writers taking two rows in opposite orders, both holding their first when they
        // ask for the second: PostgreSQL ends one with 40P01. Statements are wrapped the way
        // the store wraps them (storeError), as PostgresStore's own transactions do.
        const writer = (name: 'a' | 'b', first: number, second: number) =>
          transaction(pool, name, async (c) => {
            attempts[name]++;
            const q = async (sql: string) => {
              try {
                return await c.query(sql);
              } catch (err) {
                throw storeError(err, name);
              }
            };
            await q(`UPDATE t SET v = v + 1 WHERE id = ${first}`);
            if (attempts[name] === 1) {
              if (++arrived === 2) meet();
              await met;
            }
            await q(`UPDATE t SET v = v + 1 WHERE id = ${second}`);
          });
        await Promise.all([writer('a', 1, 2), writer('b', 2, 1)]);
        const { rows } = await admin(db.url, `SELECT id, v FROM ${db.schema}.t ORDER BY id`);
        expect(rows).toEqual([
          { id: 1, v: 2 },
          { id: 2, v: 2 },
        ]);
        expect(attempts.a + attempts.b).toBe(3);
      } finally {
        await pool.end();
      }
    });
  });

  describe('migrations', () => {
    it('four stores migrating a new schema at once: it is created and migrated once', async () => {
      const four = [open(), open(), open(), open()];
      await Promise.all(four.map((s) => s.migrate()));
      // exactly one instance applied every version; the others found them applied
      const versions = loadPostgresMigrations().map((m) => m.version);
      expect(versions.length).toBeGreaterThan(1);
      expect(four.map((s) => s.migrated.length).sort()).toEqual([0, 0, 0, versions.length]);
      const { rows } = await admin(
        db.url,
        `SELECT version FROM ${db.schema}.schema_migrations ORDER BY version`,
      );
      expect(rows.map((r) => r.version)).toEqual(versions);
      for (const [i, s] of four.entries()) {
        expect((await s.registerFile(newFile({ fileId: `f${i}` }))).created).toBe(true);
      }
      expect(await four[0]!.listFiles()).toHaveLength(4);
    });

    it('a database whose schema is newer than the code: DROPLINE_ERR_STORE_SCHEMA, nothing applied', async () => {
      await open().migrate();
      await admin(
        db.url,
        `INSERT INTO ${db.schema}.schema_migrations (version, name, applied_at) VALUES (9999, 'future', now())`,
      );
      const later = open();
      const err = await rejection(later.migrate());
      expect(err.code).toBe('DROPLINE_ERR_STORE_SCHEMA');
      expect(err.retryable).toBe(false);
      expect(err.message).toContain('9999');
      expect(later.migrated).toEqual([]);
    });

    it('migration 0004 gives files recorded before it a timeline, their reports minutes, their names a fold', async () => {
      // The schema at version 3, as a store of that version left it.
      const earlier = loadPostgresMigrations().filter((m) => m.version <= 3);
      await admin(
        db.url,
        `CREATE SCHEMA IF NOT EXISTS ${db.schema}; SET search_path TO ${db.schema};
         ${earlier.map((m) => m.sql).join(';\n')};
         ${S.CREATE_MIGRATIONS};
         INSERT INTO schema_migrations (version, name, applied_at)
           SELECT v, 'earlier', now() FROM unnest(ARRAY[${earlier.map((m) => m.version).join(', ')}]) AS v;
         INSERT INTO files (file_id, source, name, path, sha256, bytes, state, reason, created_at, updated_at, timestamps)
         VALUES ('f1', 'local', 'Campaign.TXT', 'inbox/f1', 's1', 1, 'paused', 'held by an operator',
           '2026-03-01T12:00:00Z', '2026-03-01T12:05:00Z',
           '{"sending": "2026-03-01T12:02:00.000Z", "validating": "2026-03-01T12:00:00.000Z",
             "paused": "2026-03-01T12:05:00.000Z", "scheduled": "2026-03-01T12:01:00.000Z"}');
         INSERT INTO recipients (id, line, k, number, chunk_seq, outcome, status, updated_at)
         SELECT (SELECT file_no FROM files WHERE file_id = 'f1') * 4294967296 + i, i + 1, 0, '57300' || i, 1, 'sent',
           (ARRAY['DELIVERED_TO_HANDSET', 'NO_SUCCESS', 'UNKNOWN', 'pending'])[i],
           '2026-03-01T12:00:00Z'::timestamptz + (i - 1) * interval '50 seconds'
         FROM generate_series(1, 4) AS i;`,
      );
      const store = open();
      await store.migrate();
      expect(store.migrated).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 20, 21, 22, 23]);
      expect(await store.fileEvents('f1')).toEqual([
        { at: '2026-03-01T12:00:00.000Z', state: 'validating', reason: null },
        { at: '2026-03-01T12:01:00.000Z', state: 'scheduled', reason: null },
        { at: '2026-03-01T12:02:00.000Z', state: 'sending', reason: null },
        { at: '2026-03-01T12:05:00.000Z', state: 'paused', reason: 'held by an operator' },
      ]);
      expect(await store.deliveryTimeline('f1')).toEqual([
        { minute: '2026-03-01T12:00:00.000Z', delivered: 1, undelivered: 1, unknown: 0, accepted: 0 },
        { minute: '2026-03-01T12:01:00.000Z', delivered: 0, undelivered: 0, unknown: 1, accepted: 0 },
      ]);
      expect((await store.listFiles({ search: 'campaign.t' })).map((f) => f.fileId)).toEqual(['f1']);
      expect((await store.getFile('f1'))?.errorCounts).toEqual({});
    });

    it('migration 0014 gives the opt-outs recorded before it their history and their replies an intent', async () => {
      const earlier = loadPostgresMigrations().filter((m) => m.version < 14);
      await admin(
        db.url,
        `CREATE SCHEMA IF NOT EXISTS ${db.schema}; SET search_path TO ${db.schema};
         ${earlier.map((m) => m.sql).join(';\n')};
         ${S.CREATE_MIGRATIONS};
         INSERT INTO schema_migrations (version, name, applied_at)
           SELECT v, 'earlier', now() FROM unnest(ARRAY[${earlier.map((m) => m.version).join(', ')}]) AS v;
         INSERT INTO replies (id, received_at, from_number, to_number, text, opt_out, message_id) VALUES
           (1, '2026-03-01T12:00:00Z', '573001112233', '85000', 'SALIR', true, 'mo-1'),
           (2, '2026-03-01T12:01:00Z', '573001112233', '85000', 'gracias', false, NULL);
         INSERT INTO opt_outs (number, at, reply) VALUES ('573001112233', '2026-03-01T12:00:00Z', 1);`,
      );
      const store = open();
      await store.migrate();
      // 0014 and the migrations after it; none of the earlier ones again.
      expect(store.migrated[0]).toBe(14);
      expect((await store.replies({ limit: 10 })).map((r) => [r.intent, r.optOut])).toEqual([
        ['opt_out', true],
        [null, false],
      ]);
      const s = await store.standing('573001112233');
      expect(s.optedOut).toEqual({ at: '2026-03-01T12:00:00.000Z', reply: 1 });
      expect(s.history.map((c) => [c.change, c.source, c.reply, c.at])).toEqual([
        ['opted_out', 'reply', 1, '2026-03-01T12:00:00.000Z'],
      ]);
    });

    it('migration 0020 keeps the contacts recorded a row each before it: printed, kept by their recipients, pruned', async () => {
      const store = open();
      await store.migrate();
      const sending = async (fileId: string, rows = validRows(2, 2)) => {
        await store.registerFile(newFile({ fileId }));
        await store.insertRecipients(fileId, rows);
        await store.insertChunks(fileId, [{ seq: 1, size: rows.length }]);
        await store.transition(fileId, 'sending');
      };
      await sending('a');
      // The schema before 0020, file a's chunk having taken its two contacts at T0 (07:00 in
      // Bogotá) as the store did then: each key's row and a row of the ledger each.
      await admin(
        db.url,
        `SET search_path TO ${db.schema};
         DROP TABLE contact_chunks, contact_slots; DELETE FROM schema_migrations WHERE version = 20;
         INSERT INTO contact_keys (entity, key, day, day_count, week, channels, at, channel, recipient)
           SELECT 'default', number, '2026-03-01', 1, '2026-02-23', ',sms,', '${T0.toISOString()}', 'sms', id FROM recipients;
         INSERT INTO contact_ledger (day, recipient, entity, key, slot, week_slot, channel, at)
           SELECT '2026-03-01', id, 'default', number, 1, 1, 'sms', '${T0.toISOString()}' FROM recipients;`,
      );
      const ids = (await admin(db.url, `SELECT id FROM ${db.schema}.recipients ORDER BY id`)).rows.map((r) =>
        Number(r.id),
      );
      const upgraded = open();
      await upgraded.migrate();
      expect(upgraded.migrated).toEqual([20]);
      const limit = ley2300('sms');
      const day = { from: '2026-03-01', to: '2026-03-01', entity: null, after: null, limit: 10 };
      const ledger = async (query = day) =>
        (await upgraded.contacts(query)).map((c) => [c.fileId, c.key, c.slot, c.weekSlot, c.recipient]);
      const before = [
        ['a', '573000000001', 1, 1, ids[0]],
        ['a', '573000000002', 1, 1, ids[1]],
      ];
      expect(await ledger()).toEqual(before);
      // Its chunk sent again that day takes no second contact; the keys stay reached.
      expect(await upgraded.holdBack('a', 1, limit)).toEqual({ suppressed: 0, contactLimited: 0 });
      expect(await ledger()).toEqual(before);
      await sending('b');
      expect((await upgraded.holdBack('b', 1, limit)).contactLimited).toBe(2);
      // A contact recorded by its chunk prints beside them, page by page, in the recipients' order.
      await sending(
        'c',
        validRows(1, 1).map((r) => ({ ...r, number: '573000000003' })),
      );
      expect((await upgraded.holdBack('c', 1, limit)).contactLimited).toBe(0);
      const all = await ledger();
      expect(all.map((c) => c[1])).toEqual(['573000000001', '573000000002', '573000000003']);
      const first = await upgraded.contacts({ ...day, limit: 2 });
      const rest = await upgraded.contacts({ ...day, after: first.at(-1)!, limit: 2 });
      expect([...first, ...rest].map((c) => c.key)).toEqual(all.map((c) => c[1]));
      // Pruned with their day: the three contacts and the three keys.
      clock.set(new Date('2026-03-03T05:00:00.000Z'));
      expect(await upgraded.pruneContacts({ timezone: 'America/Bogota', keepDays: 1 })).toBe(6);
      expect(await ledger()).toEqual([]);
    });

    it('the schema option keeps every table out of public', async () => {
      await open().migrate();
      // In this schema or in public: the cluster is shared, other test files' schemas have these tables too.
      const { rows } = await admin(
        db.url,
        `SELECT table_schema, table_name FROM information_schema.tables
         WHERE table_name IN ('files', 'chunks', 'recipients', 'chunk_spans', 'delivery_events', 'schema_migrations')
           AND table_schema IN ('public', '${db.schema}')`,
      );
      expect(rows.length).toBe(6);
      expect(new Set(rows.map((r) => r.table_schema))).toEqual(new Set([db.schema]));
    });
  });

  describe('openStore', () => {
    it('postgres://…?schema=name opens a PostgresStore whose tables live in that schema', async () => {
      const url = new URL(db.url);
      url.searchParams.set('schema', db.schema);
      const s = await openStore(url.toString(), { now: clock.now });
      try {
        expect(s).toBeInstanceOf(PostgresStore);
        await s.migrate();
        expect((await s.registerFile(newFile())).file.createdAt).toBe(T0.toISOString());
        const { rows } = await admin(db.url, `SELECT file_id FROM ${db.schema}.files`);
        expect(rows.map((r) => r.file_id)).toEqual(['f1']);
      } finally {
        await s.close();
      }
    });
  });

  describe('connections', () => {
    it('a process using the store prints no pg warning (session settings need no query of their own)', async () => {
      const script = `
        const { PostgresStore } = await import(${JSON.stringify(new URL('../../src/store/postgres/postgres-store.ts', import.meta.url).pathname)});
        const s = new PostgresStore({ connectionString: process.env.URL, schema: process.env.SCHEMA, poolSize: 2 });
        await s.migrate();
        await Promise.all([s.registerFile(${JSON.stringify(newFile())}), s.listFiles(), s.getFile('f1')]);
        console.log(JSON.stringify(await s.listFiles()));
        await s.close();`;
      const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', script], {
        env: { ...process.env, URL: db.url, SCHEMA: db.schema },
        timeout: 30_000,
      });
      expect(JSON.parse(stdout).map((f: { fileId: string }) => f.fileId)).toEqual(['f1']);
      expect(stderr).not.toMatch(/already executing a query|DeprecationWarning/);
    });

    it("settings in the URL's options keep the store's schema and UTC readings", async () => {
      const url = new URL(db.url);
      url.searchParams.set('options', '-c search_path=public -c TimeZone=Asia/Tokyo -c DateStyle=SQL');
      const s = open({ connectionString: url.toString(), now: undefined });
      await s.migrate();
      const { file } = await s.registerFile(newFile());
      expect(file.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      // the row went into the store's schema, and reads back as the same instant in UTC
      const { rows } = await admin(db.url, `SELECT created_at FROM ${db.schema}.files`);
      expect(rows.map((r) => new Date(r.created_at).toISOString())).toEqual([file.createdAt]);
    });
  });

  describe('time from the database', () => {
    it("without a clock option, timestamps and leases are the database's now()", async () => {
      const a = open({ now: undefined });
      await a.migrate();
      const b = open({ now: undefined });
      const { file } = await a.registerFile(newFile());
      const { rows } = await admin(db.url, `SELECT now() AS now`);
      const dbNow = new Date(String(rows[0].now)).getTime();
      expect(file.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(Math.abs(Date.parse(file.createdAt) - dbNow)).toBeLessThan(60_000);
      expect(file.timestamps.validating).toBe(file.createdAt);
      expect(await a.takeLease('f1', 'a', 60_000)).toBe(true);
      const leased = await b.getFile('f1');
      expect(Date.parse(leased!.leaseUntil!) - Date.parse(file.createdAt)).toBeGreaterThanOrEqual(60_000);
      expect(await b.takeLease('f1', 'b', 60_000)).toBe(false);
    });
  });

  describe('PostgreSQL unavailable', () => {
    let cluster: PostgresCluster;
    beforeAll(async () => {
      cluster = await startPostgres({ maxConnections: 30 });
    });
    afterAll(async () => {
      await cluster.close();
    });

    it('a store whose server refuses connections fails with DROPLINE_ERR_STORE_UNAVAILABLE, without the password', async () => {
      const url = new URL(cluster.url);
      url.password = 's3cret-pw';
      url.port = String(cluster.port === 1 ? 2 : 1); // nothing listens on port 1
      const s = new PostgresStore({ connectionString: url.toString() });
      stores.push(s);
      const err = await rejection(s.getFile('f1'));
      expect(err.code).toBe('DROPLINE_ERR_STORE_UNAVAILABLE');
      expect(err.retryable).toBe(true);
      expect(`${err.message}\n${err.stack}`).not.toContain('s3cret-pw');
      expect((await rejection(s.migrate())).code).toBe('DROPLINE_ERR_STORE_UNAVAILABLE');
    });

    it('PostgreSQL stopped and started again: the store fails UNAVAILABLE meanwhile, then goes on (idle connections dropped, no crash)', async () => {
      const s = new PostgresStore({ connectionString: cluster.url, schema: 'restart', now: clock.now });
      stores.push(s);
      await s.migrate();
      await s.registerFile(newFile());
      // idle connections in the pool when the server goes away
      await Promise.all([s.getFile('f1'), s.getFile('f1'), s.counts('f1')]);
      await cluster.stop();
      expect((await rejection(s.getFile('f1'))).code).toBe('DROPLINE_ERR_STORE_UNAVAILABLE');
      expect((await rejection(s.ping())).code).toBe('DROPLINE_ERR_STORE_UNAVAILABLE');
      await cluster.start();
      expect((await s.getFile('f1'))?.fileId).toBe('f1');
      expect((await s.registerFile(newFile({ fileId: 'f2' }))).created).toBe(true);
      await s.ping();
    });

    it('PostgreSQL stopped under a transaction that holds a connection: the transaction fails UNAVAILABLE, the process does not crash', async () => {
      // A checked-out client has no pool listener for its 'error' event: a connection lost
      // between two statements of a transaction, or during one, emitted it unheard, which
      // ends the process (the daemon died this way mid-send when PostgreSQL restarted).
      const uncaught: unknown[] = [];
      const onUncaught = (err: unknown) => uncaught.push(err);
      process.on('uncaughtException', onUncaught);
      const pool = createPool({ connectionString: cluster.url });
      try {
        const between = transaction(pool, 'a transaction between its statements', async (c) => {
          await c.query('SELECT 1');
          await cluster.stop();
          // Let the socket's end reach the client before the next statement.
          await new Promise((r) => setTimeout(r, 200));
          await c.query('SELECT 1');
        });
        expect((await rejection(between)).code).toBe('DROPLINE_ERR_STORE_UNAVAILABLE');
        await cluster.start();
        const during = transaction(pool, 'a transaction during a statement', async (c) => {
          const sleeping = c.query('SELECT pg_sleep(30)');
          // Its rejection is awaited below; until then it is not an unhandled one.
          sleeping.catch(() => {});
          await new Promise((r) => setTimeout(r, 200));
          await cluster.stop();
          await sleeping;
        });
        expect((await rejection(during)).code).toBe('DROPLINE_ERR_STORE_UNAVAILABLE');
        await new Promise((r) => setTimeout(r, 200));
        expect(uncaught).toEqual([]);
        await cluster.start();
        // The broken clients were not handed out again.
        await transaction(pool, 'after the restart', async (c) => {
          expect((await c.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
        });
      } finally {
        process.off('uncaughtException', onUncaught);
        if (!cluster.running()) await cluster.start();
        await pool.end();
      }
    });
  });

  describe('lease renewal', () => {
    it('renewLease writes only once less than 2/3 of the lease is left, and answers false once taken over', async () => {
      const a = open();
      await a.migrate();
      await a.registerFile(newFile());
      const lease = 60_000;
      expect((await a.acquireFile('a', ['validating'], lease))?.fileId).toBe('f1');
      const first = new Date(T0.getTime() + lease).toISOString();
      expect((await a.getFile('f1'))?.leaseUntil).toBe(first);
      // 50 s of 60 left: held, nothing written
      clock.advance(10_000);
      expect(await a.renewLease('f1', 'a', lease)).toBe(true);
      expect((await a.getFile('f1'))?.leaseUntil).toBe(first);
      // 35 s left: pushed out to a full lease from now
      clock.advance(15_000);
      expect(await a.renewLease('f1', 'a', lease)).toBe(true);
      expect((await a.getFile('f1'))?.leaseUntil).toBe(new Date(T0.getTime() + 25_000 + lease).toISOString());
      // expired and taken over by b: a learns it, early or late in b's lease
      clock.advance(lease + 1);
      const b = open();
      expect((await b.acquireFile('b', ['validating'], lease))?.leaseOwner).toBe('b');
      expect(await a.renewLease('f1', 'a', lease)).toBe(false);
      clock.advance(50_000);
      expect(await a.renewLease('f1', 'a', lease)).toBe(false);
      expect((await a.getFile('f1'))?.leaseOwner).toBe('b');
      // an expired lease nobody took is renewed by its owner
      clock.advance(lease);
      expect(await b.renewLease('f1', 'b', lease)).toBe(true);
      expect((await b.getFile('f1'))?.leaseUntil).toBe(new Date(clock.now().getTime() + lease).toISOString());
    });
  });

  describe('true races: concurrent renewals', () => {
    it('renewals of one owner at once (chunks in flight) all answer held, also when the lease needs pushing out', async () => {
      const first = open();
      await first.migrate();
      await first.registerFile(newFile());
      const lease = 60_000;
      await first.acquireFile('a', ['validating'], lease);
      const eight = Array.from({ length: 8 }, () => open({ poolSize: 1 }));
      for (let round = 0; round < 5; round++) {
        // 21 s of the lease left: every one of them wants to push it out
        clock.advance(39_000);
        expect(await Promise.all(eight.map((s) => s.renewLease('f1', 'a', lease)))).toEqual(
          eight.map(() => true),
        );
        expect((await first.getFile('f1'))?.leaseUntil).toBe(
          new Date(clock.now().getTime() + lease).toISOString(),
        );
      }
    });
  });

  describe('true races: store instances with pools of their own', () => {
    async function four(): Promise<PostgresStore[]> {
      const first = open();
      await first.migrate();
      return [first, open(), open(), open()];
    }

    it('four instances claim the same inbox batch: each file created once, the others get created:false', async () => {
      const stores = await four();
      // 40 files, 8 of them copies of another's content (generation 2, duplicates of the first)
      const ready: ReadyFile[] = Array.from({ length: 40 }, (_, i) => ({
        name: `${i}.txt`,
        path: `inbox/${i}.txt`,
        sha256: `sha-${i % 32}`,
        bytes: 10,
      }));
      const idFor = (sha: string, n: number) => (n > 1 ? `${sha}-r${n}` : sha);
      const options = { idFor, duplicateSince: T0.toISOString() };
      // two instances in the inbox's order, two in reverse: no lock cycle may stop them
      const claimed = await Promise.all(
        stores.map((s, i) => s.claimFiles('local', i % 2 === 0 ? ready : [...ready].reverse(), options)),
      );
      const byPath = new Map<string, { fileId: string; created: number }>();
      for (const batch of claimed) {
        expect(batch).toHaveLength(40);
        for (const c of batch) {
          const seen = byPath.get(c.file.path) ?? { fileId: c.file.fileId, created: 0 };
          expect(c.file.fileId).toBe(seen.fileId);
          if (c.created) seen.created++;
          byPath.set(c.file.path, seen);
        }
      }
      expect(byPath.size).toBe(40);
      expect([...byPath.values()].every((v) => v.created === 1)).toBe(true);
      const files = await stores[0]!.listFiles();
      expect(files).toHaveLength(40);
      // each repeated content: one original, one copy numbered 2 and a duplicate of it
      for (let i = 0; i < 8; i++) {
        const pair = files.filter((f) => f.sha256 === `sha-${i}`);
        expect(pair.map((f) => f.fileId).sort()).toEqual([`sha-${i}`, `sha-${i}-r2`]);
        expect(pair.find((f) => f.fileId === `sha-${i}-r2`)?.state).toBe('duplicate');
        expect(pair.find((f) => f.fileId === `sha-${i}`)?.state).toBe('validating');
      }
    });

    it('four instances register the same file at once: one creates it, the others get its row', async () => {
      const stores = await four();
      for (let round = 0; round < 10; round++) {
        const file = newFile({ fileId: `r${round}` });
        const results = await Promise.all(stores.map((s) => s.registerFile(file)));
        expect(results.filter((r) => r.created)).toHaveLength(1);
        const winner = results.find((r) => r.created)!.file;
        for (const r of results) expect(r.file).toEqual(winner);
      }
      expect(await stores[0]!.listFiles()).toHaveLength(10);
    });

    it('four instances acquire 200 files at once: every call gets a file, each file exactly once', async () => {
      const stores = await four();
      for (let i = 0; i < 200; i++)
        await stores[0]!.registerFile(newFile({ fileId: `f${i}`, state: 'sending' }));
      // 200 calls for 200 files: a caller that came back empty while a file was free would
      // leave one untaken (SKIP LOCKED: a caller never waits behind another's pick).
      const got = await Promise.all(
        stores.map(async (s, i) => {
          const mine: (string | null)[] = [];
          for (let n = 0; n < 50; n++)
            mine.push((await s.acquireFile(`w${i}`, ['sending'], 60_000))?.fileId ?? null);
          return mine;
        }),
      );
      const all = got.flat();
      expect(all.filter((id) => id === null)).toEqual([]);
      expect(new Set(all).size).toBe(200);
      for (const [i, ids] of got.entries()) {
        for (const id of ids) expect((await stores[0]!.getFile(id!))?.leaseOwner).toBe(`w${i}`);
      }
      expect(await stores[1]!.acquireFile('late', ['sending'], 60_000)).toBeNull();
    });

    it('file numbers from the sequence: files recorded at once by four instances never share one', async () => {
      const stores = await four();
      await Promise.all(
        stores.map(async (s, i) => {
          for (let n = 0; n < 25; n++) {
            const fileId = `w${i}-${n}`;
            await s.registerFile(newFile({ fileId }));
            await s.insertRecipients(
              fileId,
              validRows(2, 2).map((r) => ({ ...r, number: `${fileId}-${r.idx}` })),
            );
          }
        }),
      );
      const { rows } = await admin(db.url, `SELECT count(DISTINCT file_no) AS n FROM ${db.schema}.files`);
      expect(Number(rows[0].n)).toBe(100);
      for (let i = 0; i < 4; i++) {
        const numbers: string[] = [];
        for await (const r of stores[0]!.recipients(`w${i}-7`)) numbers.push(r.number!);
        expect(numbers).toEqual([`w${i}-7-1`, `w${i}-7-2`]);
      }
    });

    it('a chunk result in doubt racing a delivery report for the chunk: accepted whichever commits first', async () => {
      const [a, b] = await four();
      const files = Array.from({ length: 30 }, (_, i) => `f${i}`);
      for (const fileId of files) {
        await a!.registerFile(newFile({ fileId, state: 'sending' }));
        await a!.insertRecipients(fileId, validRows(3, 3));
        await a!.insertChunks(fileId, [{ seq: 1, size: 3 }]);
        await a!.setChunkState(fileId, 1, 'inflight', ['pending']);
      }
      const doubt: ChunkResult = {
        state: 'in_doubt',
        attempts: 1,
        errorCode: 'DROPLINE_ERR_SERVICE_IN_DOUBT',
        parts: [
          {
            messageIds: ['m1', 'm2', 'm3'],
            wholeChunk: true,
            outcome: 'in_doubt',
            code: 'DROPLINE_ERR_SERVICE_IN_DOUBT',
          },
        ],
      };
      await raceResultAndReport(
        a!,
        b!,
        files,
        () => doubt,
        () => 'm2',
      );
    });

    it('the same race with generated messageIds, the file known to the reporting instance (one statement records, delivers and locks)', async () => {
      const [a, b] = await four();
      const files = Array.from({ length: 30 }, (_, i) => `f${i}`);
      for (const fileId of files) {
        await a!.registerFile(newFile({ fileId, state: 'sending' }));
        await a!.insertRecipients(fileId, generatedRows(fileId));
        await a!.insertChunks(fileId, [{ seq: 1, size: 3 }]);
        await a!.setChunkState(fileId, 1, 'inflight', ['pending']);
        // b has read the file before (its number known: a report batch takes the one-statement path)
        for await (const page of b!.recipientPages(fileId)) expect(page).toHaveLength(3);
      }
      const doubtOf = (fileId: string): ChunkResult => ({
        state: 'in_doubt',
        attempts: 1,
        errorCode: 'DROPLINE_ERR_SERVICE_IN_DOUBT',
        parts: [
          {
            messageIds: [2, 3, 4].map((line) => `${fileId}-${line}`),
            wholeChunk: true,
            outcome: 'in_doubt',
            code: 'DROPLINE_ERR_SERVICE_IN_DOUBT',
          },
        ],
      });
      await raceResultAndReport(a!, b!, files, doubtOf, (fileId) => `${fileId}-3`);
    });

    it('a lease taken over: the old owner’s late writes are refused, the new owner’s go through', async () => {
      const [a, b] = await four();
      await a!.registerFile(newFile({ state: 'sending' }));
      expect((await a!.acquireFile('old', ['sending'], 10_000))?.fileId).toBe('f1');
      clock.advance(10_000);
      // the old owner, late, writes while the new one takes over: after the takeover, never
      const [taken] = await Promise.all([
        b!.acquireFile('new', ['sending'], 10_000),
        a!.renewLease('f1', 'old', 10_000),
      ]);
      if (taken === null) {
        // the renewal came first: the old owner still held it, so take it once it expires again
        clock.advance(10_000);
        expect((await b!.acquireFile('new', ['sending'], 10_000))?.fileId).toBe('f1');
      }
      expect((await b!.getFile('f1'))?.leaseOwner).toBe('new');
      const late = await Promise.all([
        a!.transition('f1', 'paused', { owner: 'old', from: ['sending'] }),
        a!.renewLease('f1', 'old', 10_000),
        a!.takeLease('f1', 'old', 10_000),
        a!.transition('f1', 'completed', { owner: 'old' }),
      ]);
      expect(late).toEqual([null, false, false, null]);
      expect((await b!.transition('f1', 'submitted', { owner: 'new', from: ['sending'] }))?.state).toBe(
        'submitted',
      );
      expect(await a!.getFile('f1')).toMatchObject({ state: 'submitted', leaseOwner: 'new' });
    });
  });
});
