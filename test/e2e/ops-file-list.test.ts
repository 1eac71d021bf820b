// Issue 11: the ops API's file list costs a fixed number of store calls per page, never one
// or two per file (at 20,000 files, and with PostgreSQL's round trips, that was the page).
// A real SQLite store with a counter of the calls made through it; a real ops server.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { type OpsServer, startOpsServer } from '../../src/ops/server.ts';
import { wordedManifest } from '../../src/ops/wording.ts';
import { manifestOf } from '../../src/pipeline/reports.ts';
import { openStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/store.ts';
import { newFile, validRows } from '../contract/store.contract.ts';
import { type TestStore, testStore } from '../helpers/test-store.ts';

let dir = '';
let ops: OpsServer | null = null;
let store: Store | null = null;
let backing: TestStore | null = null;
afterEach(async () => {
  await ops?.close();
  await store?.close();
  await backing?.close();
  backing = null;
  if (dir) await rm(dir, { recursive: true, force: true });
  ops = null;
  store = null;
});

/** The store, with every call through it counted by method name. */
function counting(real: Store, calls: string[]): Store {
  return new Proxy(real, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const fn = (value as (...args: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        calls.push(String(key));
        return fn(...args);
      };
    },
  });
}

it('pages of 500 manifests out of 1,500 files cost two store calls a page, with every count right', async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-ops-list-'));
  backing = await testStore(dir);
  store = await openStore(backing.url);
  await store.migrate();
  const ready = Array.from({ length: 1500 }, (_, i) => ({
    name: `f${i}.txt`,
    path: `inbox/f${i}.txt`,
    sha256: `sha-${i}`,
    bytes: 10,
  }));
  await store.claimFiles('local', ready, { idFor: (sha) => sha, duplicateSince: new Date(0).toISOString() });
  // A few with recipients, chunks and results, so the counts say something.
  const busy = ['sha-10', 'sha-700', 'sha-1400'];
  for (const [i, fileId] of busy.entries()) {
    await store.registerFile(newFile({ fileId: `x-${fileId}` }));
    await store.transition(fileId, 'sending', {
      patch: { counts: { records: 30, valid: 30, invalid: 0, duplicates: 0, suppressed: 0, segments: 30 } },
    });
    await store.insertRecipients(fileId, validRows(30, 10));
    await store.insertChunks(fileId, [
      { seq: 1, size: 10 },
      { seq: 2, size: 10 },
      { seq: 3, size: 10 },
    ]);
    await store.setChunkState(fileId, 1, 'inflight', ['pending']);
    await store.recordChunkResult(fileId, 1, {
      state: i === 1 ? 'failed' : 'accepted',
      attempts: 1,
      parts: [{ messageIds: [], outcome: i === 1 ? 'failed' : 'sent', wholeChunk: true }],
    });
  }
  const calls: string[] = [];
  ops = await startOpsServer({
    listen: '127.0.0.1:0',
    store: counting(store, calls),
    sources: new Map(),
    logger: silentLogger,
  });

  const seen: { fileId: string; counts: unknown }[] = [];
  let next: string | null = '/api/files?limit=500';
  let pages = 0;
  while (next) {
    const res = await fetch(`${ops.url}${next}`);
    expect(res.status).toBe(200);
    seen.push(...((await res.json()) as { fileId: string; counts: unknown }[]));
    pages++;
    next = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1] ?? null;
  }
  expect(seen).toHaveLength(1503);
  expect(new Set(seen.map((m) => m.fileId)).size).toBe(1503);
  expect(pages).toBe(4);
  expect(calls.length).toBeLessThanOrEqual(2 * pages);
  for (const fileId of busy) {
    const expected = await manifestOf(store, fileId);
    // The manifest as the API answers it: with its reason's code (issue 33, wording.ts).
    expect(seen.find((m) => m.fileId === fileId)).toEqual(
      JSON.parse(JSON.stringify(wordedManifest(expected!))),
    );
  }
  const idle = await manifestOf(store, 'sha-3');
  expect(seen.find((m) => m.fileId === 'sha-3')).toEqual(JSON.parse(JSON.stringify(wordedManifest(idle!))));
}, 60_000);
