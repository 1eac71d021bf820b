// /readyz is open to anyone who reaches the port (probes carry no token), and each of its
// checks is real work: a write to the store, a HEAD of the S3 bucket, a stat on the SFTP
// server. A flood of probes must not become a flood of store writes and partner requests:
// probes at the same moment share one check, and a check's answer serves for a second.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { type OpsServer, startOpsServer } from '../../src/ops/server.ts';
import type { Source } from '../../src/sources/source.ts';
import { openStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/store.ts';
import { type TestStore, testStore } from '../helpers/test-store.ts';

let dir = '';
let ops: OpsServer | null = null;
let store: Store | null = null;
let backing: TestStore | null = null;
afterEach(async () => {
  await ops?.close();
  await store?.close();
  await backing?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  ops = null;
  store = null;
  backing = null;
});

it('a flood of unauthenticated /readyz probes costs the store and the partner a check a second, not one a probe', async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-ops-readyz-'));
  backing = await testStore(dir);
  store = await openStore(backing.url);
  await store.migrate();
  const real = store;
  const calls = { store: 0, source: 0 };
  const counted = new Proxy(real, {
    get(target, key, receiver) {
      if (key === 'ping')
        return async () => {
          calls.store++;
          await target.ping();
        };
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  // A partner's bucket: every ping is a request to it (S3 HeadBucket, billed and rate-limited).
  const partner = {
    ping: async () => {
      calls.source++;
      await new Promise((r) => setTimeout(r, 20));
    },
  } as unknown as Source;
  ops = await startOpsServer({
    listen: '127.0.0.1:0',
    token: 'ops-readyz-flood-token-0123456789',
    store: counted,
    sources: new Map([['partner', partner]]),
    logger: silentLogger,
  });
  const probe = async () => {
    const res = await fetch(`${ops!.url}/readyz`);
    return { status: res.status, body: (await res.json()) as unknown };
  };
  const started = Date.now();
  // 200 at once, then 200 more one after another: well within a second.
  const answers = await Promise.all(Array.from({ length: 200 }, probe));
  for (let i = 0; i < 200; i++) answers.push(await probe());
  const elapsed = Date.now() - started;
  for (const a of answers) expect(a).toEqual({ status: 200, body: { ready: true } });
  const seconds = Math.ceil(elapsed / 1000) + 1;
  expect(calls.source).toBeLessThanOrEqual(seconds);
  expect(calls.store).toBeLessThanOrEqual(seconds);
  // Still a live answer: a check of more than a second ago is not served again.
  await new Promise((r) => setTimeout(r, 1100));
  const before = calls.source;
  expect((await probe()).status).toBe(200);
  expect(calls.source).toBe(before + 1);
}, 60_000);
