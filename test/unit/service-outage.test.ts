// Issue 32 item 7: the watcher of the service's requests (src/ops/service-outage.ts), fed the
// client's diagnostics events directly, on a real SQLite store. The end-to-end case (the
// sandbox stopped and started again) is test/e2e/service-outage.test.ts.
import diagnosticsChannel from 'node:diagnostics_channel';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { watchService } from '../../src/ops/service-outage.ts';
import { FILE_STATE_CHANNEL, type FileStateEvent } from '../../src/pipeline/pipeline.ts';
import {
  ATTEMPT_CHANNEL,
  type AttemptEvent,
  TOKEN_CHANNEL,
  type TokenEvent,
} from '../../src/service/client.ts';
import { openStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/store.ts';
import { newFile } from '../contract/store/helpers.ts';

let dir: string;
let store: Store;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-outage-'));
  store = await openStore(`sqlite:${join(dir, 'state.db')}`);
  await store.migrate();
  for (const fileId of ['fa', 'fb', 'fc']) {
    await store.registerFile(newFile({ fileId }));
    await store.transition(fileId, 'sending');
  }
});

afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const REFUSED = 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9';

function attempt(fileId: string, status: number, written = false): void {
  const e: AttemptEvent = {
    chunkId: `${fileId}/1`,
    partId: `${fileId}/1`,
    attempt: 1,
    destinations: 5,
    status,
    latencyMs: 1,
    result: status === 0 ? (written ? 'in_doubt' : 'retry') : 'accepted',
    written,
    ...(status === 0 ? { error: REFUSED } : {}),
  };
  diagnosticsChannel.channel(ATTEMPT_CHANNEL).publish(e);
}

function token(status: number): void {
  const e: TokenEvent = {
    grant: 'password',
    attempt: 1,
    status,
    latencyMs: 1,
    ...(status ? {} : { error: REFUSED }),
  };
  diagnosticsChannel.channel(TOKEN_CHANNEL).publish(e);
}

it('one outage from many refused requests: each file marked once, one alert each way, details cleared at the end', async () => {
  const told: { since: string; upAt: string | null }[] = [];
  const watch = watchService({
    store,
    logger: pino({ level: 'silent' }),
    alerts: { serviceOutage: (o, upAt) => told.push({ since: o.since, upAt }) },
  });
  try {
    for (let i = 0; i < 20; i++) attempt(i % 2 ? 'fa' : 'fb', 0);
    // Sent and unanswered is in doubt, not an outage of its own.
    attempt('fc', 0, true);
    const outage = watch.current();
    expect(outage?.error).toBe(REFUSED);
    await watch.close();
    expect((await store.getFile('fa'))?.detail).toEqual({
      code: 'SERVICE_UNREACHABLE',
      since: outage!.since,
      error: REFUSED,
    });
    expect((await store.getFile('fb'))?.detail?.since).toBe(outage!.since);
    expect((await store.getFile('fc'))?.detail).toBeNull();
    expect(told).toEqual([{ since: outage!.since, upAt: null }]);
  } finally {
    await watch.close();
  }
  // Answered again (any status: a 503 is an answer): the outage ends, said once.
  const again = watchService({
    store,
    logger: pino({ level: 'silent' }),
    alerts: { serviceOutage: (o, upAt) => told.push({ since: o.since, upAt }) },
  });
  attempt('fa', 0);
  attempt('fa', 503);
  attempt('fb', 202);
  expect(again.current()).toBeNull();
  await again.close();
  expect((await store.getFile('fa'))?.detail).toBeNull();
  expect((await store.getFile('fb'))?.detail).toBeNull();
  expect(told.map((t) => t.upAt === null)).toEqual([true, true, false]);
});

it('a token request that finds no service marks the files this worker drives; its answer clears them', async () => {
  const watch = watchService({ store, logger: pino({ level: 'silent' }), driven: () => ['fa', 'fc'] });
  token(0);
  token(0);
  expect(watch.current()?.error).toBe(REFUSED);
  await vi.waitFor(async () => {
    expect((await store.getFile('fa'))?.detail?.code).toBe('SERVICE_UNREACHABLE');
    expect((await store.getFile('fc'))?.detail?.code).toBe('SERVICE_UNREACHABLE');
  });
  expect((await store.getFile('fb'))?.detail).toBeNull();
  token(200);
  expect(watch.current()).toBeNull();
  await watch.close();
  expect((await store.getFile('fa'))?.detail).toBeNull();
  expect((await store.getFile('fc'))?.detail).toBeNull();
});

it('a detail left by a stopped process is cleared at the file’s first answered request', async () => {
  await store.updateFile('fa', {
    detail: { code: 'SERVICE_UNREACHABLE', since: new Date(0).toISOString(), error: REFUSED },
  });
  const watch = watchService({ store, logger: pino({ level: 'silent' }) });
  attempt('fa', 202);
  await watch.close();
  expect((await store.getFile('fa'))?.detail).toBeNull();
});

function stateOf(fileId: string, state: string, from = 'sending'): void {
  const e = { file: { fileId, state }, from } as unknown as FileStateEvent;
  diagnosticsChannel.channel(FILE_STATE_CHANNEL).publish(e);
}

it('a file that stops sending during an outage loses its detail then, and the watcher forgets it', async () => {
  const watch = watchService({ store, logger: pino({ level: 'silent' }) });
  try {
    attempt('fa', 0);
    attempt('fb', 0);
    // fa's chunks failed for good while the service was down: partial, and nothing retried.
    await store.transition('fa', 'partial');
    stateOf('fa', 'partial');
    await vi.waitFor(async () => {
      expect((await store.getFile('fb'))?.detail?.code).toBe('SERVICE_UNREACHABLE');
      expect((await store.getFile('fa'))?.detail).toBeNull();
    });
    expect(watch.current()).not.toBeNull();
    // Nothing of fa is kept; fb, still sending, is.
    expect(watch.tracked()).toBe(1);
    // Sent again (a retry) in the same outage: marked again.
    stateOf('fa', 'sending', 'partial');
    attempt('fa', 0);
    await vi.waitFor(async () =>
      expect((await store.getFile('fa'))?.detail?.code).toBe('SERVICE_UNREACHABLE'),
    );
    expect(watch.tracked()).toBe(2);
  } finally {
    await watch.close();
  }
});

it('files followed for ever are not kept for ever: the watcher forgets what it checked past a bound', async () => {
  const watch = watchService({ store, logger: pino({ level: 'silent' }) });
  try {
    for (let i = 0; i < 25_000; i++) attempt(`f${i}`, 202);
    expect(watch.tracked()).toBeLessThanOrEqual(10_000);
  } finally {
    await watch.close();
  }
});
