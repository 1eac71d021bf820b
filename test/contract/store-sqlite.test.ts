import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { DroplineError } from '../../src/errors.ts';
import { openStore } from '../../src/store/index.ts';
import { sqliteMigrations as loadMigrations } from '../../src/store/sqlite/connection.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { RecipientRecord } from '../../src/store/store.ts';
import { parseStoreUrl, redactStoreUrl } from '../../src/store/url.ts';
import {
  generatedReport,
  generatedRows,
  ley2300,
  newFile,
  type StoreHarness,
  storeContract,
  T0,
  testClock,
  validRows,
} from './store.contract.ts';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'dropline-store-'));
}

storeContract('sqlite (temp file)', async (): Promise<StoreHarness> => {
  const dir = tempDir();
  const path = join(dir, 'state.db');
  const clock = testClock();
  const store = new SqliteStore({ path, now: clock.now });
  await store.migrate();
  const others: SqliteStore[] = [];
  return {
    store,
    clock,
    reopen: async () => {
      const other = new SqliteStore({ path, now: clock.now });
      others.push(other);
      return other;
    },
    cleanup: async () => {
      for (const o of others) await o.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('SqliteStore', () => {
  const dirs: string[] = [];
  const stores: SqliteStore[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  function open(path?: string): SqliteStore {
    const dir = tempDir();
    dirs.push(dir);
    const s = new SqliteStore({ path: path ?? join(dir, 'state.db') });
    stores.push(s);
    return s;
  }

  it('writes 100,000 recipients in batches of 10,000 as 10 transactions', async () => {
    const store = open();
    await store.migrate();
    await store.registerFile(newFile());
    const rows = validRows(100_000, 1000);
    const before = store.transactions;
    for (let i = 0; i < rows.length; i += 10_000)
      await store.insertRecipients('f1', rows.slice(i, i + 10_000));
    expect(store.transactions - before).toBe(10);
    expect((await store.counts('f1')).pendingDelivery).toBe(0);
    let n = 0;
    for await (const _ of store.recipients('f1')) n++;
    expect(n).toBe(100_000);
  });

  it('four connections in four threads claim 200 files: each file exactly once', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const store = open(path);
    await store.migrate();
    for (let i = 0; i < 200; i++) await store.registerFile(newFile({ fileId: `f${i}`, state: 'sending' }));
    const results = await Promise.all(
      ['w1', 'w2', 'w3', 'w4'].map(
        (owner) =>
          new Promise<string[]>((resolve, reject) => {
            const worker = new Worker(new URL('./sqlite-acquire-worker.ts', import.meta.url), {
              workerData: { path, owner },
            });
            worker.once('message', resolve);
            worker.once('error', reject);
          }),
      ),
    );
    const all = results.flat();
    expect(all).toHaveLength(200);
    expect(new Set(all).size).toBe(200);
    for (const [i, owner] of ['w1', 'w2', 'w3', 'w4'].entries()) {
      for (const id of results[i]!) expect((await store.getFile(id))?.leaseOwner).toBe(owner);
    }
  });

  it('one delivery batch and one chunk result are one transaction each', async () => {
    const store = open();
    await store.migrate();
    await store.registerFile(newFile());
    await store.insertRecipients('f1', validRows(2000, 2000));
    await store.insertChunks('f1', [{ seq: 1, size: 2000 }]);
    const before = store.transactions;
    await store.recordChunkResult('f1', 1, {
      state: 'accepted',
      attempts: 1,
      parts: [
        {
          messageIds: validRows(2000, 2000).map((r) => r.messageId!),
          outcome: 'sent',
          transactionNumber: 'T',
        },
      ],
    });
    const events = validRows(2000, 2000).map((r) => ({
      transactionNumber: 'T',
      to: r.number!,
      messageId: r.messageId!,
      bulkId: 'f1',
      callbackData: null,
      smsCount: 1,
      status: 'DELIVERED_TO_HANDSET',
      receivedAt: T0.toISOString(),
    }));
    expect((await store.recordDeliveries(events)).recorded).toBe(2000);
    expect(store.transactions - before).toBe(2);
    expect((await store.counts('f1')).delivered).toBe(2000);
  });

  it('migration 0005 numbers files recorded without a number, and the database numbers new ones', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const v4 = new SqliteStore({ path, migrations: loadMigrations().slice(0, 4) });
    stores.push(v4);
    await v4.migrate();
    await v4.registerFile(newFile({ fileId: 'f1' }));
    await v4.registerFile(newFile({ fileId: 'f2' }));
    await v4.registerFile(newFile({ fileId: 'f3' }));
    await v4.close();
    // version 4 numbered a file when its first recipients were recorded
    const v4db = new DatabaseSync(path);
    v4db.exec("UPDATE files SET file_no = 1 WHERE file_id = 'f1'");
    v4db.close();
    const store = open(path);
    await store.migrate();
    await store.registerFile(newFile({ fileId: 'f4' }));
    await store.insertRecipients('f3', validRows(2, 2));
    expect(await store.counts('f3')).toMatchObject({ chunks: 0 });
    const db = new DatabaseSync(path);
    try {
      const nos = db.prepare('SELECT file_id, file_no FROM files ORDER BY file_id').all();
      expect(nos).toEqual([
        { file_id: 'f1', file_no: 1 },
        { file_id: 'f2', file_no: 2 },
        { file_id: 'f3', file_no: 3 },
        { file_id: 'f4', file_no: 4 },
      ]);
    } finally {
      db.close();
    }
  });

  it('migration 0006 counts the delivery reports recorded before it', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const v5 = new SqliteStore({ path, migrations: loadMigrations().slice(0, 5) });
    stores.push(v5);
    await v5.migrate();
    await v5.registerFile(newFile());
    await v5.insertRecipients('f1', validRows(6, 3));
    await v5.insertChunks('f1', [
      { seq: 1, size: 3 },
      { seq: 2, size: 3 },
    ]);
    for (const seq of [1, 2]) await v5.setChunkState('f1', seq, 'inflight', ['pending']);
    await v5.recordChunkResult('f1', 1, {
      state: 'accepted',
      attempts: 1,
      transactionNumber: 'T1',
      parts: [{ messageIds: ['m1', 'm2', 'm3'], wholeChunk: true, outcome: 'sent', transactionNumber: 'T1' }],
    });
    await v5.close();
    // Chunk 2's result and the reports as version 5 recorded them, on the rows (this code
    // also gives back contacts and keeps the delivery minutes of later versions, which
    // version 5 has no tables for). f1 is file 1: its rows' ids are 2^32 + idx.
    const v5db = new DatabaseSync(path);
    v5db.exec(`UPDATE recipients SET outcome = 'sent', transaction_number = 'T2' WHERE id = 4294967296 + 4;
      UPDATE recipients SET outcome = 'rejected', code = 'BAD' WHERE id IN (4294967296 + 5, 4294967296 + 6);
      UPDATE chunks SET state = 'accepted' WHERE seq = 2`);
    const report = v5db.prepare('UPDATE recipients SET status = ?, updated_at = ? WHERE id = 4294967296 + ?');
    report.run('DELIVERED_TO_HANDSET', '2026-03-01T12:00:10.000Z', 1);
    report.run('NO_SUCCESS', '2026-03-01T12:00:50.000Z', 2);
    report.run('UNKNOWN', '2026-03-01T12:03:00.000Z', 4);
    v5db.close();
    const store = open(path);
    await store.migrate();
    expect(await store.counts('f1')).toMatchObject({
      submitted: 4,
      rejected: 2,
      delivered: 1,
      undelivered: 2,
      unknown: 1,
      pendingDelivery: 1,
    });
    // ... and migration 0011 puts them in the minutes of their rows' last update
    expect(await store.deliveryTimeline('f1')).toEqual([
      { minute: '2026-03-01T12:00:00.000Z', delivered: 1, undelivered: 1, unknown: 0, accepted: 0 },
      { minute: '2026-03-01T12:03:00.000Z', delivered: 0, undelivered: 0, unknown: 1, accepted: 0 },
    ]);
  });

  it('migration 0011 gives files recorded before it a timeline: each state at its first entry', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const v10 = new SqliteStore({ path, migrations: loadMigrations().slice(0, 10) });
    stores.push(v10);
    await v10.migrate();
    await v10.registerFile(newFile({ fileId: 'f1' }));
    await v10.registerFile(newFile({ fileId: 'f2' }));
    await v10.close();
    const v10db = new DatabaseSync(path);
    v10db
      .prepare(
        "UPDATE files SET state = 'paused', reason = 'held by an operator', timestamps = ? WHERE file_id = 'f1'",
      )
      .run(
        JSON.stringify({
          sending: '2026-03-01T12:02:00.000Z',
          validating: '2026-03-01T12:00:00.000Z',
          paused: '2026-03-01T12:05:00.000Z',
          scheduled: '2026-03-01T12:01:00.000Z',
        }),
      );
    v10db.close();
    const store = open(path);
    await store.migrate();
    expect(await store.fileEvents('f1')).toEqual([
      { at: '2026-03-01T12:00:00.000Z', state: 'validating', reason: null },
      { at: '2026-03-01T12:01:00.000Z', state: 'scheduled', reason: null },
      { at: '2026-03-01T12:02:00.000Z', state: 'sending', reason: null },
      { at: '2026-03-01T12:05:00.000Z', state: 'paused', reason: 'held by an operator' },
    ]);
    expect((await store.fileEvents('f2')).map((e) => e.state)).toEqual(['validating']);
    // and the database records the next change itself
    await store.transition('f1', 'sending', { patch: { reason: null } });
    expect((await store.fileEvents('f1')).at(-1)).toMatchObject({ state: 'sending', reason: null });
  });

  it('migration 0021 gives the opt-outs recorded before it their history and their replies an intent', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const before = new SqliteStore({ path, migrations: loadMigrations().filter((m) => m.version < 21) });
    stores.push(before);
    await before.migrate();
    await before.close();
    const db = new DatabaseSync(path);
    db.exec(`INSERT INTO replies (id, received_at, from_number, to_number, text, opt_out, message_id) VALUES
      (1, '2026-03-01T12:00:00.000Z', '573001112233', '85000', 'SALIR', 1, 'mo-1'),
      (2, '2026-03-01T12:01:00.000Z', '573001112233', '85000', 'gracias', 0, NULL);
      INSERT INTO opt_outs (number, at, reply) VALUES ('573001112233', '2026-03-01T12:00:00.000Z', 1)`);
    db.close();
    const store = open(path);
    await store.migrate();
    expect((await store.replies({ limit: 10 })).map((r) => [r.intent, r.optOut])).toEqual([
      ['opt_out', true],
      [null, false],
    ]);
    expect(await store.standing('573001112233')).toEqual({
      number: '573001112233',
      optedOut: { at: '2026-03-01T12:00:00.000Z', reply: 1 },
      history: [
        {
          id: 1,
          number: '573001112233',
          at: '2026-03-01T12:00:00.000Z',
          change: 'opted_out',
          source: 'reply',
          reply: 1,
          keyword: null,
          detail: null,
        },
      ],
    });
  });

  it("migration 0022 carries the day's per-account slots over into the default entity's ledger", async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const clock = testClock();
    const before = loadMigrations().filter((m) => m.version < 22);
    const old = new SqliteStore({ path, migrations: before, now: clock.now });
    stores.push(old);
    await old.migrate();
    await old.close();
    // Two accounts reached one number on 2026-03-01 (T0), from files 99 and 100.
    const db = new DatabaseSync(path);
    db.exec(`INSERT INTO contacts (account, day, number, slot, recipient) VALUES
      ('default', '2026-03-01', '573000000001', 1, 425201762305),
      ('second', '2026-03-01', '573000000001', 1, 429496729601)`);
    db.close();
    const store = new SqliteStore({ path, now: clock.now });
    stores.push(store);
    await store.migrate();
    const carried = await store.contacts({
      from: '2026-03-01',
      to: '2026-03-01',
      entity: null,
      after: null,
      limit: 10,
    });
    // Both contacts stay in the ledger (they were made); the number counts two that day.
    expect(carried.map((c) => [c.entity, c.day, c.key, c.slot, c.at])).toEqual([
      ['default', '2026-03-01', '573000000001', 1, '2026-03-01T05:00:00.000Z'],
      ['default', '2026-03-01', '573000000001', 1, '2026-03-01T05:00:00.000Z'],
    ]);
    // The number stays reached that day for the whole configuration.
    await store.registerFile(newFile({ fileId: 'later' }));
    await store.insertRecipients('later', validRows(1, 1));
    await store.insertChunks('later', [{ seq: 1, size: 1 }]);
    await store.transition('later', 'sending');
    const limit = {
      entity: 'default',
      channel: 'sms',
      timezone: 'America/Bogota',
      perDay: 1,
      channelsPerWeek: null,
    };
    expect((await store.holdBack('later', 1, { optOuts: false, contactLimit: limit })).contactLimited).toBe(
      1,
    );
  });

  it('migration 0027 keeps the contacts recorded a row each before it: printed, kept by their recipients, pruned', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const clock = testClock();
    const old = new SqliteStore({
      path,
      migrations: loadMigrations().filter((m) => m.version < 27),
      now: clock.now,
    });
    stores.push(old);
    await old.migrate();
    const sending = async (s: SqliteStore, fileId: string, rows = validRows(2, 2)) => {
      await s.registerFile(newFile({ fileId }));
      await s.insertRecipients(fileId, rows);
      await s.insertChunks(fileId, [{ seq: 1, size: rows.length }]);
      await s.transition(fileId, 'sending');
    };
    await sending(old, 'a');
    await old.close();
    // File a's chunk took its two contacts at T0 (07:00 in Bogotá) as the store before 0027
    // did: an upsert of each key, whose trigger wrote the contact's row.
    const db = new DatabaseSync(path);
    const ids = db
      .prepare('SELECT id FROM recipients ORDER BY id')
      .all()
      .map((r) => Number(r.id));
    for (const [i, id] of ids.entries())
      db.prepare(`INSERT INTO contact_keys (entity, key, day, day_count, week, channels, at, channel, recipient)
        VALUES ('default', ?, '2026-03-01', 1, '2026-02-23', ',sms,', ?, 'sms', ?)`).run(
        `57300000000${i + 1}`,
        T0.toISOString(),
        id,
      );
    db.exec(`INSERT INTO contact_keys (entity, key, day, day_count, week, channels, at, channel, recipient)
      VALUES ('default', '573000000009', '2026-02-28', 1, '2026-02-23', ',sms,', '2026-02-28T13:00:00.000Z', 'sms', 99)`);
    db.close();
    const store = new SqliteStore({ path, now: clock.now });
    stores.push(store);
    await store.migrate();
    const limit = ley2300('sms');
    const day = { from: '2026-03-01', to: '2026-03-01', entity: null, after: null, limit: 10 };
    const ledger = async (query = day) =>
      (await store.contacts(query)).map((c) => [c.fileId, c.key, c.slot, c.weekSlot, c.recipient]);
    const before = [
      ['a', '573000000001', 1, 1, ids[0]],
      ['a', '573000000002', 1, 1, ids[1]],
    ];
    expect(await ledger()).toEqual(before);
    // Its chunk sent again that day takes no second contact; the keys stay reached.
    expect(await store.holdBack('a', 1, limit)).toEqual({ suppressed: 0, contactLimited: 0 });
    expect(await ledger()).toEqual(before);
    await sending(store, 'b');
    expect((await store.holdBack('b', 1, limit)).contactLimited).toBe(2);
    const details = async (fileId: string) => {
      const rows = [];
      for await (const r of store.recipients(fileId, ['contact_limit'])) rows.push(r.detail);
      return rows;
    };
    const day1 = 'already contacted this day: by sms at 2026-03-01 07:00:00 -05:00 (contactLimit 1 a day)';
    expect(await details('b')).toEqual([day1, day1]);
    // The keys' days and weeks carried over: a number reached by SMS on Saturday is held
    // back from WhatsApp on Sunday by the week, with the time of its contact.
    await sending(
      store,
      'wa',
      validRows(1, 1).map((r) => ({ ...r, number: '573000000009' })),
    );
    expect((await store.holdBack('wa', 1, ley2300('whatsapp'))).contactLimited).toBe(1);
    expect(await details('wa')).toEqual([
      'already contacted by another channel this week: by sms at 2026-02-28 08:00:00 -05:00 (contactLimit 1 channel a week)',
    ]);
    // A contact recorded by its chunk prints beside them, page by page, in the recipients' order.
    const third = validRows(1, 1).map((r) => ({ ...r, number: '573000000003' }));
    await sending(store, 'c', third);
    expect((await store.holdBack('c', 1, limit)).contactLimited).toBe(0);
    const all = await ledger();
    expect(all.map((c) => c[1])).toEqual(['573000000001', '573000000002', '573000000003']);
    const first = await store.contacts({ ...day, limit: 2 });
    const rest = await store.contacts({ ...day, after: first.at(-1)!, limit: 2 });
    expect([...first, ...rest].map((c) => c.key)).toEqual(all.map((c) => c[1]));
    // Pruned with their days: the four contacts and the four keys.
    clock.set(new Date('2026-03-03T05:00:00.000Z'));
    expect(await store.pruneContacts({ timezone: 'America/Bogota', keepDays: 1 })).toBe(8);
    expect(await ledger()).toEqual([]);
  });

  it("migration 0030 keeps a number's key as an integer, an address's as text, and keys taken before it hold", async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const clock = testClock();
    const limit = ley2300('sms');
    const sending = async (s: SqliteStore, fileId: string, address: string) => {
      await s.registerFile(newFile({ fileId }));
      await s.insertRecipients(fileId, [...validRows(1, 2), { ...validRows(1, 2, 2)[0]!, number: address }]);
      await s.insertChunks(fileId, [{ seq: 1, size: 2 }]);
      await s.transition(fileId, 'sending');
      return s.holdBack(fileId, 1, limit);
    };
    const old = new SqliteStore({
      path,
      migrations: loadMigrations().filter((m) => m.version < 30),
      now: clock.now,
    });
    stores.push(old);
    await old.migrate();
    expect(await sending(old, 'a', 'Ana@Example.com')).toEqual({ suppressed: 0, contactLimited: 0 });
    await old.close();
    const store = new SqliteStore({ path, now: clock.now });
    stores.push(store);
    await store.migrate();
    const keys = () => {
      const db = new DatabaseSync(path);
      try {
        return db
          .prepare('SELECT typeof(key) AS type, key FROM contact_keys ORDER BY type')
          .all()
          .map((k) => [k.type, k.key]);
      } finally {
        db.close();
      }
    };
    const converted = [
      ['integer', 573000000001],
      ['text', 'ana@example.com'],
    ];
    expect(keys()).toEqual(converted);
    // The keys taken before it still hold the day (the same number, the address in other
    // case), and no second row was made for either.
    expect(await sending(store, 'b', 'ANA@example.COM')).toEqual({ suppressed: 0, contactLimited: 2 });
    expect(keys()).toEqual(converted);
  });

  it('migration 0002 carries recipients recorded at version 1 over', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const v1 = new SqliteStore({ path, migrations: loadMigrations().slice(0, 1) });
    stores.push(v1);
    await v1.migrate();
    await v1.registerFile(newFile());
    await v1.registerFile(newFile({ fileId: 'f2' }));
    await v1.close();
    const rows = generatedRows('f1');
    const db = new DatabaseSync(path);
    try {
      const insert = db.prepare(
        `INSERT INTO recipients (file_id, idx, line, k, number, value, message_id, text, chunk_seq, outcome, code,
           detail, sms_count, status, transaction_number, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const [fileId, list] of [
        ['f1', rows],
        ['f2', validRows(3, 3)],
      ] as const) {
        for (const r of list) {
          insert.run(
            fileId,
            r.idx,
            r.line,
            r.k,
            r.number,
            r.value,
            r.messageId,
            r.text,
            r.chunkSeq,
            r.outcome,
            r.code,
            r.detail,
            r.smsCount,
            r.idx === 2 ? 'DELIVERED_TO_HANDSET' : 'pending',
            r.idx === 2 ? 'TX' : null,
            T0.toISOString(),
          );
        }
      }
    } finally {
      db.close();
    }
    const store = open(path);
    await store.migrate();
    const back: RecipientRecord[] = [];
    for await (const r of store.recipients('f1')) back.push(r);
    expect(back.map(({ fileId, status, transactionNumber, updatedAt, ...insert }) => insert)).toEqual(rows);
    expect(back[1]).toMatchObject({ status: 'DELIVERED_TO_HANDSET', transactionNumber: 'TX' });
    const f2: RecipientRecord[] = [];
    for await (const r of store.recipients('f2')) f2.push(r);
    expect(f2.map((r) => r.messageId)).toEqual(['m1', 'm2', 'm3']);
    // a generated id and an own id still find their recipient after the migration
    await store.insertChunks('f1', [{ seq: 1, size: 4 }]);
    const d = await store.recordDeliveries([
      generatedReport('f1', 'f1-2-1'),
      generatedReport('f1', 'own-5'),
      generatedReport('f2', 'm3'),
    ]);
    expect(d).toMatchObject({ recorded: 3, orphans: 0 });
    // a file registered after the migration gets its own id range
    await store.registerFile(newFile({ fileId: 'f3' }));
    await store.insertRecipients('f3', validRows(2, 2));
    expect((await store.chunkRecipients('f3', 1)).map((r) => r.idx)).toEqual([1, 2]);
    expect((await store.chunkRecipients('f1', 1)).map((r) => r.idx)).toEqual([1, 2, 3, 4]);
  });

  it('opens the database in WAL mode with the schema recorded in schema_migrations', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const store = open(path);
    await store.migrate();
    const db = new DatabaseSync(path);
    try {
      expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
      const versions = db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all();
      expect(versions.map((v) => v.version)).toEqual(loadMigrations().map((m) => m.version));
      expect(versions[0]).toEqual({ version: 1, name: 'init' });
    } finally {
      db.close();
    }
  });

  it('an up-to-date database opens and reads while another connection holds the write lock (status beside a busy writer)', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const first = open(path);
    await first.migrate();
    await first.registerFile(newFile());
    const writer = new DatabaseSync(path);
    writer.exec('BEGIN IMMEDIATE');
    try {
      const reader = new SqliteStore({ path, busyTimeoutMs: 200 });
      try {
        await reader.migrate();
        expect((await reader.getFile('f1'))?.state).toBe('validating');
      } finally {
        await reader.close();
      }
    } finally {
      writer.exec('ROLLBACK');
      writer.close();
    }
  });

  it('backgroundCheckpoints: a worker thread copies the WAL into the database file on its own', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const store = new SqliteStore({ path, backgroundCheckpoints: true });
    stores.push(store);
    await store.migrate();
    await store.registerFile(newFile());
    const before = statSync(path).size;
    // ~20,000 rows: a few hundred WAL pages, far below the writer's own checkpoint threshold.
    const rows = validRows(20_000, 1000);
    for (let i = 0; i < rows.length; i += 5000) await store.insertRecipients('f1', rows.slice(i, i + 5000));
    const deadline = Date.now() + 10_000;
    while (statSync(path).size < before + 1_000_000 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(statSync(path).size).toBeGreaterThan(before + 1_000_000);
    // Still one database: everything reads back, and after close (the worker stopped with it) too.
    let n = 0;
    for await (const _ of store.recipients('f1')) n++;
    expect(n).toBe(20_000);
    await store.close();
    const again = open(path);
    let m = 0;
    for await (const _ of again.recipients('f1')) m++;
    expect(m).toBe(20_000);
  });

  it('applies only new migrations, each once', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const base = loadMigrations();
    await open(path).migrate();
    const extra = { version: 999, name: 'extra', sql: 'CREATE TABLE extra (x INTEGER)' };
    const upgraded = new SqliteStore({ path, migrations: [...base, extra] });
    stores.push(upgraded);
    await upgraded.migrate();
    await upgraded.migrate();
    // an older dropline refuses a schema newer than it knows
    const older = new SqliteStore({ path });
    stores.push(older);
    await expect(older.migrate()).rejects.toMatchObject({ code: 'DROPLINE_ERR_STORE_SCHEMA' });
  });

  it('a failing migration leaves nothing behind', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const base = loadMigrations();
    const newest = base.at(-1)!.version;
    const bad = {
      version: newest + 1,
      name: 'bad',
      sql: 'CREATE TABLE half (x INTEGER); INSERT INTO nope VALUES (1);',
    };
    const store = new SqliteStore({ path, migrations: [...base, bad] });
    stores.push(store);
    await expect(store.migrate()).rejects.toBeInstanceOf(DroplineError);
    const db = new DatabaseSync(path);
    try {
      expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'half'").get()).toBeUndefined();
      expect(db.prepare('SELECT max(version) AS v FROM schema_migrations').get()).toEqual({ v: newest });
    } finally {
      db.close();
    }
  });

  it('ping fails with DROPLINE_ERR_STORE on a closed or unmigrated store', async () => {
    const store = open();
    await expect(store.ping()).rejects.toMatchObject({ code: 'DROPLINE_ERR_STORE' });
    await store.migrate();
    await store.ping();
    await store.close();
    await expect(store.ping()).rejects.toMatchObject({ code: 'DROPLINE_ERR_STORE' });
  });

  it('a file that is not a database is DROPLINE_ERR_STORE', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'junk.db');
    writeFileSync(path, 'this is not a database, only text long enough to have a header '.repeat(10));
    await expect(async () => {
      const s = new SqliteStore({ path });
      stores.push(s);
      await s.migrate();
    }).rejects.toMatchObject({ code: 'DROPLINE_ERR_STORE' });
  });
});

describe('openStore', () => {
  it('sqlite:<path> creates the parent directory', async () => {
    const dir = tempDir();
    try {
      const store = await openStore('sqlite:./deep/er/state.db', { cwd: dir });
      await store.migrate();
      await store.registerFile(newFile());
      await store.close();
      const again = await openStore(`sqlite://${join(dir, 'deep/er/state.db')}`);
      expect((await again.getFile('f1'))?.fileId).toBe('f1');
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it(':memory: and sqlite::memory: for tests, with an injectable clock', async () => {
    for (const url of [':memory:', 'sqlite::memory:']) {
      const store = await openStore(url, { now: () => T0 });
      await store.migrate();
      expect((await store.registerFile(newFile())).file.createdAt).toBe(T0.toISOString());
      await store.close();
    }
  });

  it('unknown schemes, an empty sqlite path and a bad schema name are configuration errors that never show a password', async () => {
    for (const url of [
      'mysql://u:secret@host/db',
      'sqlite:',
      'postgres://u:secret@host/db?schema=Bad-Name',
      // Not URLs: a port that is no number, a password with an unencoded space, the password
      // given as a query parameter (libpq takes one).
      'postgres://u@127.0.0.1:notaport/db?password=secret',
      'postgres://u:sec ret@db:notaport/db',
    ]) {
      const err = await openStore(url).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, url).toMatchObject({ code: 'DROPLINE_ERR_CONFIG' });
      expect((err as Error).message, url).not.toMatch(/secret|sec\/ret|sec ret/);
    }
    for (const [url, said] of [
      ['foo', /store: "foo" names no kind of store; use sqlite:<path>/],
      ['', /store: is empty; use sqlite:<path>/],
      ['mysql://u:secret@host/db', /store: "mysql:…" is not a store/],
    ] as const)
      expect(() => parseStoreUrl(url)).toThrow(said);
    // The query string goes too: libpq takes `?password=`.
    expect(redactStoreUrl('postgres://app:s3cret@db.example:5432/x?schema=y')).toBe(
      'postgres://app:***@db.example:5432/x?***',
    );
    expect(redactStoreUrl('at postgres://app@db/x?password=s3cret (refused)')).toBe(
      'at postgres://app@db/x?*** (refused)',
    );
    expect(redactStoreUrl('connect to postgres://app:p@ss:w/rd@db/x failed; postgres://app@db/y')).toBe(
      'connect to postgres://app:***@db/x failed; postgres://app@db/y',
    );
    expect(parseStoreUrl('postgresql://app:pw@h/db?schema=campaigns&sslmode=require')).toMatchObject({
      kind: 'postgres',
      schema: 'campaigns',
      connectionString: 'postgresql://app:pw@h/db?sslmode=require',
    });
  });
});
