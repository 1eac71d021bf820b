// A bulk file's message is kept on the file (FileRecord.bulkText), not on a recipient row
// (issue 34), so nothing of it stays in a worker that runs for months: no per-file cache of
// texts (one text, up to 64 KiB, per bulk file ever sent was a slow leak when there was one).
// A store written before the upgrade kept the message on the file's first valid recipient:
// the migration copies it onto the file, and a bulk file caught mid-send sends the rest with it.
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServiceClient } from '../../src/service/client.ts';
import { loadPostgresMigrations } from '../../src/store/postgres/migrations.ts';
import { sqliteMigrations } from '../../src/store/sqlite/connection.ts';
import { Workers } from '../helpers/pipeline-workers.ts';
import { admin, sharedPostgresUrl } from '../helpers/postgres.ts';
import { TEST_STORE } from '../helpers/test-store.ts';

let w: Workers | null = null;
afterEach(async () => {
  await w?.close();
  w = null;
});

const numbersOf = (f: number) =>
  Array.from({ length: 12 }, (_, i) => `3${String(100_000_000 + f * 1000 + i)}`);

/** The ledger's texts of a file: one entry a recipient, each sent once. */
function sentTexts(workers: Workers, fileId: string): { to: string; text: string; count: number }[] {
  return [...workers.sandbox.ledger.entries({ bulkId: fileId })].map((e) => ({
    to: e.to,
    text: e.text,
    count: e.count,
  }));
}

/** The client of a worker that stops (between chunks) once its first request is answered. */
function stopsAfterFirst(client: ServiceClient, stop: { now: () => void }): ServiceClient {
  return new Proxy(client, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (key !== 'sendChunk' || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        stop.now();
        return result;
      };
    },
  });
}

/** The triggers of file_events as they were before reasons had codes (SQLite 0011, PostgreSQL 0004). */
const OLD_EVENT_TRIGGERS = {
  sqlite: `DROP TRIGGER files_event_recorded;
    CREATE TRIGGER files_event_recorded AFTER INSERT ON files
    BEGIN
      INSERT INTO file_events (file_id, at, state, reason) VALUES (NEW.file_id, NEW.updated_at, NEW.state, NEW.reason);
    END;
    DROP TRIGGER files_event_moved;
    CREATE TRIGGER files_event_moved AFTER UPDATE OF state ON files WHEN NEW.state IS NOT OLD.state
    BEGIN
      INSERT INTO file_events (file_id, at, state, reason)
      VALUES (NEW.file_id, NEW.updated_at, NEW.state, CASE WHEN NEW.reason IS NOT OLD.reason THEN NEW.reason END);
    END;`,
  postgres: `CREATE OR REPLACE FUNCTION files_recorded_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO file_events (file_id, at, state, reason)
      SELECT file_id, updated_at, state, reason FROM new_files ORDER BY file_no;
      RETURN NULL;
    END $$;
    CREATE OR REPLACE FUNCTION files_moved_event() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO file_events (file_id, at, state, reason) VALUES (NEW.file_id, NEW.updated_at, NEW.state,
        CASE WHEN NEW.reason IS DISTINCT FROM OLD.reason THEN NEW.reason END);
      RETURN NULL;
    END $$;`,
};

/**
 * The store as the version before this one left it (the migration that added files.bulk_text
 * undone): the message on the file's first valid recipient, no bulk_text, no reason codes.
 */
async function backToOldShape(workers: Workers, fileId: string, message: string): Promise<void> {
  const quoted = `'${message.replaceAll("'", "''")}'`;
  const range = `(SELECT file_no FROM files WHERE file_id = '${fileId}') * 4294967296`;
  const firstRow = `(SELECT min(id) FROM recipients WHERE id BETWEEN ${range} AND ${range} + 4294967295 AND chunk_seq IS NOT NULL)`;
  const added = (sql: string) => sql.includes('ADD COLUMN bulk_text');
  const undo = (version: number) => `UPDATE recipients SET text = ${quoted} WHERE id = ${firstRow};
    ${OLD_EVENT_TRIGGERS[TEST_STORE]}
    ALTER TABLE files DROP COLUMN bulk_text;
    ALTER TABLE files DROP COLUMN reason_code;
    ALTER TABLE files DROP COLUMN reason_params;
    ALTER TABLE file_events DROP COLUMN reason_code;
    ALTER TABLE file_events DROP COLUMN reason_params;
    DELETE FROM schema_migrations WHERE version = ${version};`;
  if (TEST_STORE === 'sqlite') {
    const db = new DatabaseSync(workers.dbPath, { timeout: 10_000 });
    try {
      db.exec(`BEGIN IMMEDIATE; ${undo(sqliteMigrations().find((m) => added(m.sql))!.version)} COMMIT;`);
    } finally {
      db.close();
    }
    return;
  }
  const schema = new URL(workers.storeUrl).searchParams.get('schema')!;
  await admin(
    sharedPostgresUrl(),
    `BEGIN; SET LOCAL search_path TO ${schema};
     ${undo(loadPostgresMigrations().find((m) => added(m.sql))!.version)}
     COMMIT;`,
  );
}

describe("a bulk file's message", () => {
  it('is kept on the file, not on its rows, and every recipient is sent it', async () => {
    w = await Workers.create({ api: { chunkSize: 5, concurrency: 1 } });
    const a = await w.worker('a');
    for (let f = 0; f < 3; f++) {
      const message = `Aviso ${f}: su factura vence el viernes.`;
      const entry = await w.dropFile(`aviso-${f}.txt`, `${message}\n${numbersOf(f).join('\n')}\n`);
      const file = await a.pipeline.claim(a.source, entry);
      await a.pipeline.drive(file!.fileId);
      const stored = await w.store.getFile(file!.fileId);
      expect(stored?.state).toBe('submitted');
      expect(stored?.bulkText).toBe(message);
      for (const seq of [1, 2, 3])
        expect((await w.store.chunkRecipients(file!.fileId, seq)).map((r) => r.text)).toEqual(
          Array.from({ length: seq === 3 ? 2 : 5 }, () => null),
        );
      const sent = sentTexts(w, file!.fileId);
      expect(sent).toHaveLength(12);
      expect(sent.every((e) => e.text === message && e.count === 1)).toBe(true);
    }
  });

  it('a file mid-send in a store of before the upgrade sends the rest with its message', async () => {
    w = await Workers.create({ api: { chunkSize: 5, concurrency: 1 } });
    const stop = { now: () => {} };
    const a = await w.worker('a', { wrapClient: (client) => stopsAfterFirst(client, stop) });
    stop.now = () => a.pipeline.stop();
    const message = 'Recordatorio: su cita es el lunes. Responda SALIR para no recibir mas.';
    const entry = await w.dropFile('cita.txt', `${message}\n${numbersOf(7).join('\n')}\n`);
    const fileId = (await a.pipeline.claim(a.source, entry))!.fileId;
    await a.pipeline.drive(fileId);
    // Stopped between chunks: the first sent, the others pending.
    expect((await a.store.getFile(fileId))?.state).toBe('sending');
    expect((await a.store.listChunks(fileId)).map((c) => c.state)).toEqual([
      'accepted',
      'pending',
      'pending',
    ]);
    expect(sentTexts(w, fileId)).toHaveLength(5);

    await backToOldShape(w, fileId, message);
    // The upgrade: a worker of this version migrates the store and takes the file on (its own
    // connections: the others prepared their statements on the old columns).
    const b = await w.worker('b');
    await b.store.migrate();
    expect((await b.store.getFile(fileId))?.bulkText).toBe(message);
    await b.pipeline.drive(fileId);
    expect((await b.store.getFile(fileId))?.state).toBe('submitted');
    const sent = sentTexts(w, fileId);
    expect(sent).toHaveLength(12);
    expect(sent.every((e) => e.text === message && e.count === 1)).toBe(true);
  });
});
