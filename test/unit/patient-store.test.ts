// The pipeline's patient store (src/pipeline/patient-store.ts) over a real in-memory SQLite
// store, with the one fault a network store has and SQLite cannot show: the connection lost
// after the commit, so the change is made and its answer never comes. Repeated, the
// compare-and-set finds its own change; it must say "done", never "refused" (a chunk left
// inflight, a transition taken for a lost lease).
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { DroplineError } from '../../src/errors.ts';
import { silentLogger } from '../../src/log.ts';
import { patientStore, storeUnavailable } from '../../src/pipeline/patient-store.ts';
import { SqliteStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/store.ts';
import { newFile, validRows } from '../contract/store.contract.ts';

let real: SqliteStore | null = null;
afterEach(async () => {
  await real?.close();
  real = null;
});

/** `methods` commit, then fail as if the connection dropped before the answer (once each). */
function answerLost(store: Store, methods: string[]): Store {
  const pending = new Set(methods);
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const fn = (value as (...args: unknown[]) => Promise<unknown>).bind(target);
      return async (...args: unknown[]) => {
        const result = await fn(...args);
        if (pending.delete(String(key)))
          throw new DroplineError('DROPLINE_ERR_STORE_UNAVAILABLE', 'connection terminated unexpectedly');
        return result;
      };
    },
  });
}

async function sending(): Promise<SqliteStore> {
  const store = new SqliteStore({ path: ':memory:' });
  await store.migrate();
  await store.registerFile(newFile());
  await store.transition('f1', 'sending');
  await store.insertRecipients('f1', validRows(4, 2));
  await store.insertChunks('f1', [
    { seq: 1, size: 2 },
    { seq: 2, size: 2 },
  ]);
  await store.takeLease('f1', 'w1', 60_000);
  return store;
}

it('a chunk start whose answer was lost is found done when repeated', async () => {
  real = await sending();
  const store = patientStore(answerLost(real, ['setChunkState']), {
    logger: silentLogger,
    signal: new AbortController().signal,
  });
  expect(await store.setChunkState('f1', 1, 'inflight', ['pending'], { owner: 'w1' })).toBe(true);
  expect((await real.listChunks('f1')).map((c) => [c.seq, c.state, c.attempts])).toEqual([
    [1, 'inflight', 1],
    [2, 'pending', 0],
  ]);
  // A refusal that is one (another chunk state) stays a refusal.
  expect(await store.setChunkState('f1', 1, 'inflight', ['pending'], { owner: 'w1' })).toBe(false);
});

it('a transition whose answer was lost returns the record, not "refused"', async () => {
  real = await sending();
  const store = patientStore(answerLost(real, ['transition']), {
    logger: silentLogger,
    signal: new AbortController().signal,
  });
  const moved = await store.transition('f1', 'submitted', { from: ['sending'], owner: 'w1' });
  expect(moved?.state).toBe('submitted');
  expect(await store.transition('f1', 'submitted', { from: ['sending'], owner: 'w1' })).toBeNull();
});

it('a store away for a while is waited for; an error of another kind is not', async () => {
  real = await sending();
  let away = 3;
  const flaky = new Proxy(real, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (key !== 'getFile' || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        if (away-- > 0) throw new DroplineError('DROPLINE_ERR_STORE_UNAVAILABLE', 'connection refused');
        return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  });
  const store = patientStore(flaky, { logger: silentLogger, signal: new AbortController().signal });
  expect((await store.getFile('f1'))?.state).toBe('sending');
  expect(away).toBe(-1);
  await expect(store.insertChunks('missing', [{ seq: 1, size: 1 }])).rejects.toThrow();
});

it('each outage is said once and its end once, also when the call that waited ends with another error', async () => {
  real = await sending();
  // getFile: unavailable, then (the retry) an error of another kind; later calls answer.
  const faults: string[] = ['DROPLINE_ERR_STORE_UNAVAILABLE', 'DROPLINE_ERR_STORE'];
  const { store, said } = faulty(real, (key) => (key === 'getFile' ? faults.shift() : undefined));
  // The store answered the call that waited (with an error): the outage is over.
  await expect(store.getFile('f1')).rejects.toThrow('fault');
  expect((await store.getFile('f1'))?.state).toBe('sending');
  // The next outage is said again.
  faults.push('DROPLINE_ERR_STORE_UNAVAILABLE');
  expect((await store.getFile('f1'))?.state).toBe('sending');
  expect(said.map((m) => m.split(':')[0])).toEqual([
    'the store is unavailable',
    'the store answers again',
    'the store is unavailable',
    'the store answers again',
  ]);
});

it('a call that did not wait does not end the outage while another still waits (a read beside a held write lock)', async () => {
  real = await sending();
  // Writes (setChunkState) are refused three times; reads (getFile) answer throughout.
  let refusals = 3;
  const { store, said } = faulty(real, (key) =>
    key === 'setChunkState' && refusals-- > 0 ? 'DROPLINE_ERR_STORE_UNAVAILABLE' : undefined,
  );
  const write = store.setChunkState('f1', 1, 'inflight', ['pending']);
  await new Promise((r) => setTimeout(r, 20));
  expect((await store.getFile('f1'))?.state).toBe('sending');
  expect(said).toHaveLength(1);
  await write;
  expect(said.map((m) => m.split(':')[0])).toEqual(['the store is unavailable', 'the store answers again']);
});

/** The store with the faults `fault(method)` names thrown, and what the patient store logs. */
function faulty(
  target: Store,
  fault: (key: PropertyKey) => string | undefined,
): { store: Store; said: string[] } {
  const flaky = new Proxy(target, {
    get(t, key, receiver) {
      const value = Reflect.get(t, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const code = fault(key);
        if (code) throw new DroplineError(code as 'DROPLINE_ERR_STORE', 'fault');
        return (value as (...a: unknown[]) => Promise<unknown>).apply(t, args);
      };
    },
  });
  const said: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => said.push(JSON.parse(line).msg) });
  return { store: patientStore(flaky, { logger, signal: new AbortController().signal }), said };
}

it('says which errors are "unavailable"', () => {
  expect(storeUnavailable(new DroplineError('DROPLINE_ERR_STORE_UNAVAILABLE'))).toBe(true);
  expect(storeUnavailable(new DroplineError('DROPLINE_ERR_STORE'))).toBe(false);
  expect(
    storeUnavailable(
      Object.assign(new Error('database is locked'), { code: 'ERR_SQLITE_ERROR', errcode: 5 }),
    ),
  ).toBe(true);
  expect(
    storeUnavailable(Object.assign(new Error('busy recovery'), { code: 'ERR_SQLITE_ERROR', errcode: 261 })),
  ).toBe(true);
  expect(
    storeUnavailable(Object.assign(new Error('constraint'), { code: 'ERR_SQLITE_ERROR', errcode: 19 })),
  ).toBe(false);
  expect(storeUnavailable(null)).toBe(false);
});
