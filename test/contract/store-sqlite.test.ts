import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { DroplineError } from '../../src/errors.ts';
import { createStore } from '../../src/store/index.ts';
import { loadMigrations } from '../../src/store/migrations.ts';
import { SqliteStore } from '../../src/store/sqlite-store.ts';
import { newFile, type StoreHarness, storeContract, T0, validRows } from './store.contract.ts';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'dropline-store-'));
}

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
    await expect(older.migrate()).rejects.toMatchObject({ code: 'DROPLINE_ERR_STORE' });
  });

  it('a failing migration leaves nothing behind', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'state.db');
    const bad = {
      version: 2,
      name: 'bad',
      sql: 'CREATE TABLE half (x INTEGER); INSERT INTO nope VALUES (1);',
    };
    const store = new SqliteStore({ path, migrations: [...loadMigrations(), bad] });
    stores.push(store);
    await expect(store.migrate()).rejects.toBeInstanceOf(DroplineError);
    const db = new DatabaseSync(path);
    try {
      expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'half'").get()).toBeUndefined();
      expect(db.prepare('SELECT max(version) AS v FROM schema_migrations').get()).toEqual({ v: 1 });
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

describe('createStore', () => {
  it('sqlite:<path> creates the parent directory', async () => {
    const dir = tempDir();
    try {
      const store = createStore('sqlite:./deep/er/state.db', { cwd: dir });
      await store.migrate();
      await store.registerFile(newFile());
      await store.close();
      const again = createStore(`sqlite://${join(dir, 'deep/er/state.db')}`);
      expect((await again.getFile('f1'))?.fileId).toBe('f1');
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it(':memory: and sqlite::memory: for tests, with an injectable clock', async () => {
    for (const url of [':memory:', 'sqlite::memory:']) {
      const store = createStore(url, { now: () => T0 });
      await store.migrate();
      expect((await store.registerFile(newFile())).file.createdAt).toBe(T0.toISOString());
      await store.close();
    }
  });

  it('postgres and unknown schemes are configuration errors', () => {
    expect(() => createStore('postgres://u:secret@host/db')).toThrow(
      expect.objectContaining({
        code: 'DROPLINE_ERR_CONFIG',
        message: expect.stringMatching(/PostgreSQL store/),
      }),
    );
    try {
      createStore('mysql://u:secret@host/db');
      expect.unreachable();
    } catch (err) {
      expect(err).toMatchObject({ code: 'DROPLINE_ERR_CONFIG' });
      expect((err as Error).message).not.toContain('secret');
    }
    expect(() => createStore('sqlite:')).toThrow(expect.objectContaining({ code: 'DROPLINE_ERR_CONFIG' }));
  });
});
