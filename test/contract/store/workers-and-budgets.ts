// The store contract, several workers: each account's send budget (permits, rate, pace) and the
// workers' heartbeats, with the file each holds and whom it was taken over from.
import { beforeEach, describe, expect, it } from 'vitest';
import type { PermitRequest } from '../../../src/core/budget.ts';
import { type Store, WORKER_SILENT_MS } from '../../../src/store/store.ts';
import { type ContractContext, newFile, T0 } from './helpers.ts';

const ACCOUNT = { key: 'k-default', name: 'default' };
let ids = 0;
const permit = (over: Partial<PermitRequest> = {}): PermitRequest => ({
  permitId: `p${++ids}`,
  owner: 'w1',
  destinations: 1000,
  ratePerSecond: 0,
  concurrency: 2,
  leaseMs: 10_000,
  ...over,
});

export function workersAndBudgets(t: ContractContext): void {
  let store: Store;
  beforeEach(() => {
    store = t.store;
  });

  describe('send budgets', () => {
    it("the account's concurrency counts every worker's permits; a released or expired one frees its place", async () => {
      const a = permit({ owner: 'w1' });
      const b = permit({ owner: 'w2' });
      expect(await store.takeSendPermit(ACCOUNT, a)).toEqual({ granted: true, waitMs: 0 });
      expect(await store.takeSendPermit(ACCOUNT, b)).toEqual({ granted: true, waitMs: 0 });
      expect((await store.takeSendPermit(ACCOUNT, permit({ owner: 'w3' }))).granted).toBe(false);
      // Another account has its own.
      expect((await store.takeSendPermit({ key: 'k-other', name: 'other' }, permit())).granted).toBe(true);
      await store.releaseSendPermit(ACCOUNT.key, a.permitId);
      t.h.clock.advance(5000);
      expect((await store.takeSendPermit(ACCOUNT, permit({ owner: 'w3' }))).granted).toBe(true);
      expect((await store.takeSendPermit(ACCOUNT, permit())).granted).toBe(false);
      // w2 died holding b: its permit stops counting at its lease's end (w3's still counts).
      t.h.clock.advance(5001);
      expect((await store.takeSendPermit(ACCOUNT, permit())).granted).toBe(true);
      expect((await store.takeSendPermit(ACCOUNT, permit())).granted).toBe(false);
      const views = await store.sendBudgets();
      expect(views.find((v) => v.account === 'default')).toMatchObject({ pace: 1, inFlight: 2 });
    });

    it('a worker silent past WORKER_SILENT_MS (killed) frees its permits before their lease ends; a process without heartbeats keeps its own', async () => {
      const worker = (workerId: string) => ({ workerId, host: 'h', pid: 1, version: 'test' });
      await store.heartbeat(worker('w1'));
      await store.heartbeat(worker('w2'));
      const long = { concurrency: 2, leaseMs: 120_000 };
      expect((await store.takeSendPermit(ACCOUNT, permit({ ...long, owner: 'w1' }))).granted).toBe(true);
      // `dropline send`: no heartbeat, its permit counts until its lease ends.
      expect((await store.takeSendPermit(ACCOUNT, permit({ ...long, owner: 'send-process' }))).granted).toBe(
        true,
      );
      expect((await store.takeSendPermit(ACCOUNT, permit({ ...long, owner: 'w2' }))).granted).toBe(false);
      // w1 is killed: its heartbeat stops; w2 goes on beating.
      t.h.clock.advance(WORKER_SILENT_MS - 1000);
      await store.heartbeat(worker('w2'));
      expect((await store.takeSendPermit(ACCOUNT, permit({ ...long, owner: 'w2' }))).granted).toBe(false);
      t.h.clock.advance(2000);
      await store.heartbeat(worker('w2'));
      expect((await store.takeSendPermit(ACCOUNT, permit({ ...long, owner: 'w2' }))).granted).toBe(true);
      expect((await store.sendBudgets()).find((v) => v.account === 'default')).toMatchObject({ inFlight: 2 });
      // w2's own permit, its heartbeat fresh, still counts.
      expect((await store.takeSendPermit(ACCOUNT, permit({ ...long, owner: 'w3' }))).granted).toBe(false);
    });

    it('the rate: grants spaced by destinations / rate on the store clock, across workers', async () => {
      const rate = { ratePerSecond: 2000, concurrency: 10 };
      expect(await store.takeSendPermit(ACCOUNT, permit({ ...rate, owner: 'w1' }))).toEqual({
        granted: true,
        waitMs: 0,
      });
      expect(await store.takeSendPermit(ACCOUNT, permit({ ...rate, owner: 'w2' }))).toEqual({
        granted: true,
        waitMs: 500,
      });
      t.h.clock.advance(200);
      expect(await store.takeSendPermit(ACCOUNT, permit({ ...rate, owner: 'w1' }))).toEqual({
        granted: true,
        waitMs: 800,
      });
    });

    it('a slow-down: half the pace for every worker, a Retry-After holds the account; status shows why', async () => {
      await store.slowSends(ACCOUNT, { reason: 'HTTP 429: too many', retryAfterMs: 3000 });
      const [view] = await store.sendBudgets();
      expect(view).toMatchObject({
        account: 'default',
        pace: 0.5,
        reason: 'HTTP 429: too many',
        slowedAt: T0.toISOString(),
        blockedUntil: new Date(T0.getTime() + 3000).toISOString(),
        inFlight: 0,
      });
      // Concurrency 2 at half pace: one request; it waits for the Retry-After.
      expect(await store.takeSendPermit(ACCOUNT, permit({ owner: 'w2' }))).toEqual({
        granted: true,
        waitMs: 3000,
      });
      expect((await store.takeSendPermit(ACCOUNT, permit({ owner: 'w1' }))).granted).toBe(false);
      // Recovered after a while without trouble.
      t.h.clock.advance(60_000);
      expect((await store.sendBudgets())[0]).toMatchObject({ pace: 1, blockedUntil: null });
    });
  });

  describe('workers', () => {
    it('heartbeats, stops and the files each holds; a takeover names the worker it took the file from', async () => {
      const w = (id: string) => ({ workerId: id, host: 'h', pid: 1, version: '1.0.0' });
      await store.heartbeat(w('w1'));
      t.h.clock.advance(1000);
      await store.heartbeat(w('w2'));
      await store.registerFile(newFile({ fileId: 'f1' }));
      expect((await store.acquireFile('w1', ['validating'], 5000))?.takenOverFrom).toBeNull();
      t.h.clock.advance(4000);
      await store.heartbeat(w('w2'));
      let workers = await store.listWorkers();
      expect(workers.map((x) => [x.workerId, x.heartbeatAgeMs, x.files.map((f) => f.fileId)])).toEqual([
        ['w2', 0, []],
        ['w1', 5000, ['f1']],
      ]);
      // w1 went silent; its lease expires and w2 takes the file over.
      t.h.clock.advance(1001);
      const taken = await store.acquireFile('w2', ['validating'], 5000);
      expect(taken).toMatchObject({ fileId: 'f1', leaseOwner: 'w2', takenOverFrom: 'w1' });
      workers = await store.listWorkers();
      expect(workers[0]!.files).toEqual([
        { fileId: 'f1', name: 'f1.txt', state: 'validating', takenOverFrom: 'w1' },
      ]);
      expect(workers[1]!.files).toEqual([]);
      // Released and acquired again normally: not a takeover.
      await store.releaseLease('f1', 'w2');
      expect((await store.acquireFile('w2', ['validating'], 5000))?.takenOverFrom).toBeNull();
      await store.workerStopped('w2');
      expect((await store.listWorkers())[0]?.stoppedAt).toBe(new Date(T0.getTime() + 6001).toISOString());
      // A stopped worker beating again (same id) is alive again; a day later it is no longer listed.
      t.h.clock.advance(25 * 3600_000);
      expect(await store.listWorkers()).toEqual([]);
    });
  });
}
