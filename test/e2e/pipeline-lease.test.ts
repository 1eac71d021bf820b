// Issue 11: progress, completion and report writing under the file's lease, and fencing of a
// worker whose lease was taken over. Two or three workers (separate SQLite connections on one
// database file, their own folders' instances and service clients) on one file, the test
// deciding when one of them stalls: the stall of a process frozen or paused by the kernel,
// made here at an exact point of its work.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { DroplineError } from '../../src/errors.ts';
import { reportFileName } from '../../src/pipeline/reports.ts';
import type { LedgerEntry } from '../../src/sandbox/ledger.ts';
import type { SendOptions, SendResult, ServiceClient } from '../../src/service/client.ts';
import type { PlannedChunk } from '../../src/service/wire.ts';
import type { Store } from '../../src/store/store.ts';
import { csvRecords, waitFor } from '../helpers/pipeline-harness.ts';
import { campaign, gate, type Worker, Workers } from '../helpers/pipeline-workers.ts';
import { TEST_STORE } from '../helpers/test-store.ts';

let w: Workers | null = null;
afterEach(async () => {
  await w?.close();
  w = null;
});

async function ledger(workers: Workers, bulkId: string): Promise<LedgerEntry[]> {
  const res = await fetch(`${workers.sandbox.url}/_sandbox/ledger?bulkId=${encodeURIComponent(bulkId)}`);
  return ((await res.json()) as { entries: LedgerEntry[] }).entries;
}

/** Sent and claimed by `a`, driven until submitted (no report can arrive before openReceiver). */
async function submitted(workers: Workers, a: Worker, n: number): Promise<string> {
  const entry = await workers.dropFile('campaign.txt', campaign(n));
  const file = await a.pipeline.claim(a.source, entry);
  expect(file?.state).toBe('validating');
  await a.pipeline.drive(file!.fileId);
  expect((await workers.store.getFile(file!.fileId))?.state).toBe('submitted');
  return file!.fileId;
}

async function delivered(workers: Workers, fileId: string, n: number): Promise<void> {
  await workers.openReceiver();
  await waitFor(
    `${n} delivery reports of ${fileId}`,
    async () => {
      const c = await workers.store.counts(fileId);
      return c.delivered === n && c.pendingDelivery === 0;
    },
    { timeoutMs: 60_000 },
  );
}

const reportCsvOf = (fileId: string) => `reports/${reportFileName('campaign.txt', fileId, 'report.csv')}`;
const transitionsBy = (worker: Worker) =>
  worker.logs.filter((l) => typeof l.msg === 'string' && / → /.test(l.msg)).map((l) => l.msg as string);

/** Every recipient of the file delivered, once each, and a report that says so row by row. */
async function exact(workers: Workers, fileId: string, n: number): Promise<void> {
  const sent = await ledger(workers, fileId);
  expect(sent).toHaveLength(n);
  expect(new Set(sent.map((e) => e.to)).size).toBe(n);
  const rows = csvRecords(await readFile(join(workers.drop, reportCsvOf(fileId)), 'utf8'));
  expect(rows).toHaveLength(n);
  expect(rows.filter((r) => r.outcome === 'sent' && r.status === 'DELIVERED_TO_HANDSET')).toHaveLength(n);
}

describe('progress and completion under the lease', () => {
  it('a progress check leaves a file another worker holds; of two racing, one completes it and writes its report', async () => {
    w = await Workers.create();
    const a = await w.worker('a');
    const b = await w.worker('b');
    const fileId = await submitted(w, a, 120);
    await delivered(w, fileId, 120);
    a.reportWrites.length = 0;

    // b is in the middle of its own check of the file (it holds the lease).
    expect(await b.store.takeLease(fileId, 'worker-b', 60_000)).toBe(true);
    await a.pipeline.checkProgress((await w.store.getFile(fileId))!);
    expect((await w.store.getFile(fileId))?.state).toBe('submitted');
    expect(a.reportWrites).toEqual([]);
    await b.store.releaseLease(fileId, 'worker-b');

    // Both at once, as the daemon's progress loop beside `send --wait`.
    const file = (await w.store.getFile(fileId))!;
    await Promise.all([a.pipeline.checkProgress(file), b.pipeline.checkProgress(file)]);
    expect((await w.store.getFile(fileId))?.state).toBe('completed');
    const reportWrites = [...a.reportWrites, ...b.reportWrites].filter((p) => p === reportCsvOf(fileId));
    expect(reportWrites).toHaveLength(1);
    expect([...transitionsBy(a), ...transitionsBy(b)].filter((m) => m.includes('→ completed'))).toHaveLength(
      1,
    );
    await exact(w, fileId, 120);
    // Nobody holds the file once the checks are over.
    expect((await w.store.getFile(fileId))?.leaseOwner).toBeNull();
  }, 60_000);

  it('a worker stalled in a progress check whose lease was taken over writes nothing when it wakes', async () => {
    const stall = gate();
    let armed = false;
    w = await Workers.create();
    const a = await w.worker('a', {
      wrapStore: (store) =>
        wrap(store, {
          // a stalls in its first count of the file made while it holds the lease.
          counts: async (real, ...args) => {
            if (armed && (await store.getFile(args[0] as string))?.leaseOwner === 'worker-a') {
              armed = false;
              stall.reached = true;
              await stall.wait;
            }
            return real(...args);
          },
        }),
    });
    const b = await w.worker('b');
    const fileId = await submitted(w, a, 80);
    await delivered(w, fileId, 80);
    a.reportWrites.length = 0;
    const transitionsBefore = transitionsBy(a).length;

    armed = true;
    const late = a.pipeline.checkProgress((await w.store.getFile(fileId))!);
    await waitFor('a stalled in its progress check', () => stall.reached);
    // b's clock is past a's lease: a stalled for longer than leaseMs.
    b.clockAheadMs = 10_000;
    await b.pipeline.checkProgress((await w.store.getFile(fileId))!);
    const done = await w.store.getFile(fileId);
    expect(done?.state).toBe('completed');
    expect(b.reportWrites).toContain(reportCsvOf(fileId));

    stall.open();
    await late;
    expect(a.reportWrites).toEqual([]);
    expect(transitionsBy(a).slice(transitionsBefore)).toEqual([]);
    expect(a.logs.some((l) => String(l.msg).includes('lease'))).toBe(true);
    expect(await w.store.getFile(fileId)).toMatchObject({ state: 'completed', updatedAt: done?.updatedAt });
    await exact(w, fileId, 80);
  }, 60_000);
});

describe('fencing a worker whose lease was taken over while it sent', () => {
  it('the old owner records its stalled answer, then stops; the new owner finishes; every recipient once', async () => {
    const stall = gate();
    let requests = 0;
    w = await Workers.create();
    const a = await w.worker('a', {
      wrapClient: (client) =>
        wrapClient(client, async (send) => {
          // The second request stalls before it leaves (its chunk is inflight in the store).
          if (++requests === 2) {
            stall.reached = true;
            await stall.wait;
          }
          return send();
        }),
    });
    const b = await w.worker('b');
    const entry = await w.dropFile('campaign.txt', campaign(200));
    const file = await a.pipeline.claim(a.source, entry);
    const fileId = file!.fileId;
    const driving = a.pipeline.drive(fileId);
    await waitFor('a stalled on its second request', () => stall.reached);
    const transitionsBefore = transitionsBy(a).length;
    a.reportWrites.length = 0;

    // b sees a's lease expired and takes the file over, as `dropline run` does.
    b.clockAheadMs = 10_000;
    expect((await b.store.acquireFile('worker-b', ['validating', 'sending'], 1500))?.fileId).toBe(fileId);
    await b.pipeline.drive(fileId);
    // a's chunk was inflight when b took over: in doubt for b, which sent the others.
    expect((await w.store.getFile(fileId))?.state).toBe('partial');

    stall.open();
    await driving;
    // a recorded what the service answered (a fact) and wrote nothing else.
    expect(a.reportWrites).toEqual([]);
    expect(transitionsBy(a).slice(transitionsBefore)).toEqual([]);
    expect(a.logs.some((l) => String(l.msg).includes('lease'))).toBe(true);
    expect((await w.store.getFile(fileId))?.state).toBe('partial');

    // b's progress: the chunk is proven, the file submitted, then completed.
    await w.openReceiver();
    await waitFor('the file completed by b', async () => {
      await b.pipeline.checkProgress((await w!.store.getFile(fileId))!);
      return (await w!.store.getFile(fileId))?.state === 'completed';
    });
    await exact(w, fileId, 200);
  }, 60_000);
});

describe('a worker of the send failing', () => {
  it("the drive ends only once the file's other requests are answered and recorded: none is left inflight under a lease let go", async () => {
    const second = gate();
    const secondOut = gate();
    let requests = 0;
    w = await Workers.create({ api: { concurrency: 2 } });
    const a = await w.worker('a', {
      wrapClient: (client) =>
        wrapClient(client, async (send) => {
          if (++requests === 1) {
            // The first request fails in a way nothing expects, while the second is out.
            await secondOut.wait;
            setTimeout(() => second.open(), 200);
            throw new Error('an unexpected failure');
          }
          secondOut.open();
          await second.wait;
          return send();
        }),
    });
    const entry = await w.dropFile('campaign.txt', campaign(100));
    const file = await a.pipeline.claim(a.source, entry);
    const fileId = file!.fileId;
    await expect(a.pipeline.drive(fileId)).rejects.toThrow('an unexpected failure');
    // The failed request's chunk is left inflight (in doubt at the next start); the other's
    // answer was recorded before the drive ended.
    const states = (await w.store.listChunks(fileId)).map((c) => c.state);
    expect(states.sort()).toEqual(['accepted', 'inflight']);
  }, 60_000);
});

describe('the store unavailable in the middle of a send', () => {
  it('the worker waits, goes on where it was, and never marks a chunk failed or in doubt for it', async () => {
    let down = false;
    let refused = 0;
    let requests = 0;
    w = await Workers.create();
    const a = await w.worker('a', {
      wrapStore: (store) =>
        wrap(store, {}, () => {
          if (!down) return;
          refused++;
          throw new DroplineError('DROPLINE_ERR_STORE_UNAVAILABLE', 'connection refused');
        }),
      wrapClient: (client) =>
        wrapClient(client, async (send) => {
          const result = await send();
          // The store goes away while the answer of the second request is in hand.
          if (++requests === 2) down = true;
          return result;
        }),
    });
    const entry = await w.dropFile('campaign.txt', campaign(200));
    const file = await a.pipeline.claim(a.source, entry);
    const fileId = file!.fileId;
    const driving = a.pipeline.drive(fileId);
    // Read below; a rejection must not go unhandled while the test waits.
    driving.catch(() => {});
    await waitFor('the store refused a few calls', () => refused >= 3);
    down = false;
    await driving;

    expect((await w.store.getFile(fileId))?.state).toBe('submitted');
    const chunks = await w.store.listChunks(fileId);
    expect(chunks.map((c) => c.state)).toEqual(['accepted', 'accepted', 'accepted', 'accepted']);
    expect(a.logs.filter((l) => /^chunk \d+ (in_doubt|failed)/.test(String(l.msg)))).toEqual([]);
    expect(a.logs.filter((l) => String(l.msg).startsWith('the store is unavailable'))).toHaveLength(1);
    expect(a.logs.filter((l) => String(l.msg).startsWith('the store answers again'))).toHaveLength(1);
    await w.openReceiver();
    await waitFor('the file completed', async () => {
      await a.pipeline.checkProgress((await w!.store.getFile(fileId))!);
      return (await w!.store.getFile(fileId))?.state === 'completed';
    });
    await exact(w, fileId, 200);
  }, 60_000);
});

describe('a batch of recipients the store refuses mid-ingest', () => {
  it('ends the read with that error: no chunk planned, nothing sent, the file still validating', async () => {
    let inserts = 0;
    w = await Workers.create();
    const a = await w.worker('a', {
      wrapStore: (store) =>
        wrap(store, {
          // The second batch of 2,000 fails while the third is read (batches are inserted
          // while the next is read: the failure must still end the ingest).
          insertRecipients: async (real, ...args) => {
            if (++inserts === 2) throw new DroplineError('DROPLINE_ERR_STORE', 'constraint violated');
            return real(...args);
          },
        }),
    });
    const entry = await w.dropFile('campaign.txt', campaign(7000));
    const file = await a.pipeline.claim(a.source, entry);
    const fileId = file!.fileId;
    await expect(a.pipeline.drive(fileId)).rejects.toThrow('constraint violated');
    expect((await w.store.getFile(fileId))?.state).toBe('validating');
    expect(await w.store.listChunks(fileId)).toEqual([]);
    expect(await ledger(w, fileId)).toEqual([]);
  });
});

// A SQLite lock: only where the store is SQLite (the postgres project runs this file too).
if (TEST_STORE === 'sqlite')
  describe('the SQLite file locked by another connection beyond busy_timeout', () => {
    it('the worker waits for the lock, goes on where it was, and marks nothing failed or in doubt', async () => {
      let requests = 0;
      let locked = false;
      w = await Workers.create();
      // Another process holding the database's write lock (a long transaction, a backup tool).
      const holder = new DatabaseSync(w.dbPath, { timeout: 5000 });
      const a = await w.worker('a', {
        busyTimeoutMs: 100,
        wrapClient: (client) =>
          wrapClient(client, async (send) => {
            const result = await send();
            if (++requests === 2) {
              holder.exec('BEGIN IMMEDIATE');
              locked = true;
            }
            return result;
          }),
      });
      try {
        const entry = await w.dropFile('campaign.txt', campaign(200));
        const file = await a.pipeline.claim(a.source, entry);
        const fileId = file!.fileId;
        const driving = a.pipeline.drive(fileId);
        driving.catch(() => {});
        await waitFor('the worker waiting for the store', () =>
          a.logs.some((l) => String(l.msg).startsWith('the store is unavailable')),
        );
        expect(locked).toBe(true);
        holder.exec('COMMIT');
        await driving;

        expect((await w.store.getFile(fileId))?.state).toBe('submitted');
        const chunks = await w.store.listChunks(fileId);
        expect(chunks.map((c) => c.state)).toEqual(['accepted', 'accepted', 'accepted', 'accepted']);
        expect(a.logs.filter((l) => /^chunk \d+ (in_doubt|failed)/.test(String(l.msg)))).toEqual([]);
        expect(a.logs.filter((l) => String(l.msg).startsWith('the store answers again'))).toHaveLength(1);
        await w.openReceiver();
        await waitFor('the file completed', async () => {
          await a.pipeline.checkProgress((await w!.store.getFile(fileId))!);
          return (await w!.store.getFile(fileId))?.state === 'completed';
        });
        await exact(w, fileId, 200);
      } finally {
        if (holder.isTransaction) holder.exec('ROLLBACK');
        holder.close();
      }
    }, 60_000);
  });

type Method = (...args: unknown[]) => unknown;

/**
 * The store with some methods replaced (each gets the real one first) and `before` run ahead
 * of every call: a real store the test can stall or take away.
 */
function wrap(
  store: Store,
  replaced: Partial<Record<keyof Store, (real: Method, ...args: unknown[]) => unknown>>,
  before: () => void = () => {},
): Store {
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const real = (value as Method).bind(target);
      const replacement = replaced[key as keyof Store];
      // Async iterables (reports) are read through the real store.
      if (key === 'reportPages' || key === 'recipients' || key === 'recipientPages') return real;
      return async (...args: unknown[]) => {
        before();
        return replacement ? replacement(real, ...args) : real(...args);
      };
    },
  });
}

/**
 * `around` runs each chunk's send once the chunk has started (it is inflight in the store):
 * what happens before it is what happens before the request leaves.
 */
function wrapClient(
  client: ServiceClient,
  around: (send: () => Promise<SendResult>) => Promise<SendResult>,
): ServiceClient {
  return new Proxy(client, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (key !== 'sendChunk' || typeof value !== 'function') return value;
      return async (chunk: PlannedChunk, options: SendOptions = {}) => {
        const start = options.start;
        let release: () => void = () => {};
        const go = new Promise<void>((r) => {
          release = r;
        });
        let result: Promise<SendResult | null> | undefined;
        // The real send, held at the chunk's start; `around` decides when it goes on.
        const started = new Promise<boolean>((resolveStarted) => {
          result = (value as Method).apply(target, [
            chunk,
            {
              ...options,
              start: async () => {
                const ok = start ? await start() : true;
                resolveStarted(ok);
                if (ok) await go;
                return ok;
              },
            },
          ]) as Promise<SendResult | null>;
          result.then(
            () => resolveStarted(false),
            () => resolveStarted(false),
          );
        });
        if (!(await started)) return result;
        return around(() => {
          release();
          return result as Promise<SendResult>;
        });
      };
    },
  });
}
