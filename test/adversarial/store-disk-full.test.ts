// The store on a full disk (issue 10, item 1). A write that fails with SQLITE_FULL rolls back;
// nothing it did may survive in memory. Before the fix the rolled-back file number stayed
// cached, the next file was given the same number, and the first file's retry deleted the
// second file's recipients (and wrote its own in their place).
//
// Runs as root on a small tmpfs of its own: the disk really fills (no fault injection).

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { RecipientInsert, Store } from '../../src/store/store.ts';

const CHUNK = 500;

/** Valid recipients of file `f` (its numbers say which file they belong to), chunks of CHUNK. */
function rowsOf(f: number, n: number): RecipientInsert[] {
  const rows: RecipientInsert[] = [];
  for (let idx = 1; idx <= n; idx++) {
    rows.push({
      idx,
      line: idx,
      k: 0,
      number: `57${String(f).padStart(3, '0')}${String(idx).padStart(7, '0')}`,
      value: null,
      messageId: null,
      generatedMessageId: true,
      text: `file ${f} recipient ${idx} ${'x'.repeat(120)}`,
      chunkSeq: Math.floor((idx - 1) / CHUNK) + 1,
      outcome: 'pending',
      code: null,
      detail: null,
      smsCount: 1,
    });
  }
  return rows;
}

async function register(store: Store, f: number): Promise<string> {
  const fileId = `file-${f}`;
  await store.registerFile({
    fileId,
    source: 'local',
    name: `${fileId}.txt`,
    path: `processing/${fileId}.txt`,
    sha256: `sha-${f}`,
    bytes: 1000,
    state: 'validating',
  });
  return fileId;
}

/** The pipeline's ingest of one file: clear what an earlier attempt left, rows, chunks. */
async function ingest(store: Store, f: number, n: number): Promise<void> {
  const fileId = `file-${f}`;
  await store.clearRecipients(fileId);
  const rows = rowsOf(f, n);
  for (let i = 0; i < rows.length; i += 2000) await store.insertRecipients(fileId, rows.slice(i, i + 2000));
  const chunks = [];
  for (let seq = 1; (seq - 1) * CHUNK < n; seq++)
    chunks.push({ seq, size: Math.min(CHUNK, n - (seq - 1) * CHUNK) });
  await store.insertChunks(fileId, chunks);
}

/** Every number of the file's report, in order. */
async function reportNumbers(store: Store, fileId: string): Promise<string[]> {
  const out: string[] = [];
  for await (const page of store.reportPages(fileId)) for (const r of page) out.push(r.number ?? '');
  return out;
}

function expected(f: number, n: number): string[] {
  return rowsOf(f, n).map((r) => r.number ?? '');
}

/** Writes `path` until the file system says ENOSPC. */
function fill(path: string): void {
  execFileSync('sh', ['-c', `dd if=/dev/zero of="${path}" bs=64k 2>/dev/null || true`]);
}

describe('store on a full disk', () => {
  let dir = '';
  let mounted = false;
  const open: SqliteStore[] = [];
  const openStore = (path: string): SqliteStore => {
    const s = new SqliteStore({ path });
    open.push(s);
    return s;
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dropline-full-'));
    mkdirSync(dir, { recursive: true });
    // Fails loudly when the mount is impossible: this test is not skipped.
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', dir]);
    mounted = true;
  });

  afterAll(async () => {
    for (const s of open) await s.close();
    if (mounted) execFileSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('SQLITE_FULL mid-ingest, then freed: every file keeps exactly its own recipients, across a restart', async () => {
    const path = join(dir, 'state.db');
    const filler = join(dir, 'filler');
    const store = openStore(path);
    await store.migrate();
    const N = 6000;

    // File 1 is claimed, then the disk fills before its first recipients are recorded.
    await register(store, 1);
    fill(filler);
    await expect(ingest(store, 1, N)).rejects.toThrow(/full|disk/i);
    rmSync(filler);

    // Space again: three more files are ingested, then file 1 is retried.
    for (const f of [2, 3, 4]) {
      await register(store, f);
      await ingest(store, f, N);
    }
    await ingest(store, 1, N);

    for (const f of [1, 2, 3, 4]) {
      expect(await reportNumbers(store, `file-${f}`), `file-${f}`).toEqual(expected(f, N));
      const counts = await store.counts(`file-${f}`);
      expect(counts.chunksPending, `file-${f}`).toBe(N / CHUNK);
      const seq1 = await store.chunkDestinations(`file-${f}`, 1);
      expect(seq1.map((d) => d.number)).toEqual(expected(f, CHUNK));
    }

    // A new process sees the same: nothing lived only in memory.
    const again = openStore(path);
    await again.migrate();
    for (const f of [1, 2, 3, 4]) {
      expect(await reportNumbers(again, `file-${f}`), `file-${f}`).toEqual(expected(f, N));
    }
    // The same disk-full failure, now on a file that already had rows: its retry replaces
    // exactly its own rows.
    await register(again, 5);
    await ingest(again, 5, 100);
    // An empty WAL, so the next write needs new space (a WAL keeps its size once grown).
    const db = new DatabaseSync(path);
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    db.close();
    fill(filler);
    await expect(ingest(again, 5, N)).rejects.toThrow(/full|disk/i);
    rmSync(filler);
    await ingest(again, 5, N);
    for (const f of [1, 2, 3, 4, 5]) {
      expect(await reportNumbers(again, `file-${f}`), `file-${f}`).toEqual(expected(f, N));
    }
  });
  it('a single write whose commit finds the disk full is an error, never a success the disk does not hold', async () => {
    // node:sqlite's get() on UPDATE … RETURNING hands back the row and drops the commit's
    // error: the daemon logged "submitted → completed" every tick while the file stayed
    // submitted. Each single-statement write must fail loudly instead.
    const path = join(dir, 'single.db');
    const filler = join(dir, 'filler');
    const store = openStore(path);
    await store.migrate();
    await register(store, 7);
    const emptyWal = (): void => {
      const db = new DatabaseSync(path);
      db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      db.close();
    };
    const attempts: [string, () => Promise<unknown>][] = [
      ['transition', () => store.transition('file-7', 'sending', { from: ['validating'] })],
      ['updateFile', () => store.updateFile('file-7', { reason: 'a reason' })],
      ['acquireFile', () => store.acquireFile('worker-a', ['validating', 'sending'], 60_000)],
      [
        'registerFile',
        () =>
          store.registerFile({
            fileId: 'file-8',
            source: 'local',
            name: 'file-8.txt',
            path: 'processing/file-8.txt',
            sha256: 'sha-8',
            bytes: 1000,
            state: 'validating',
          }),
      ],
    ];
    for (const [name, attempt] of attempts) {
      emptyWal();
      fill(filler);
      await expect(attempt(), name).rejects.toThrow(/full|disk/i);
      rmSync(filler);
    }
    // Nothing of those writes is in the store, and with space each of them works.
    const file = await store.getFile('file-7');
    expect(file?.state).toBe('validating');
    expect(file?.reason ?? null).toBeNull();
    expect(file?.leaseOwner ?? null).toBeNull();
    expect(await store.getFile('file-8')).toBeNull();
    for (const [, attempt] of attempts) await attempt();
    const after = await store.getFile('file-7');
    expect([after?.state, after?.reason, after?.leaseOwner]).toEqual(['sending', 'a reason', 'worker-a']);
    expect((await store.getFile('file-8'))?.state).toBe('validating');
  });
});
