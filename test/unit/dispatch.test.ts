// The account's dispatcher (src/service/dispatch.ts) and budget rules (src/core/budget.ts):
// pure units over the in-memory budget. The store's budget is checked by the store contract
// tests, the whole by the fairness and workers end-to-end tests.
import diagnosticsChannel from 'node:diagnostics_channel';
import { expect, it, vi } from 'vitest';
import {
  capacityAt,
  decidePermit,
  NEW_BUDGET,
  PACE_FLOOR,
  PACE_RECOVERY_MS,
  paceAt,
  slowedDown,
} from '../../src/core/budget.ts';
import {
  Dispatcher,
  GRANT_CHANNEL,
  type GrantEvent,
  MemoryBudget,
  type Permit,
} from '../../src/service/dispatch.ts';

const req = (destinations: number, extra: Partial<{ ratePerSecond: number; concurrency: number }> = {}) => ({
  permitId: `p${Math.random()}`,
  owner: 'w',
  destinations,
  ratePerSecond: extra.ratePerSecond ?? 0,
  concurrency: extra.concurrency ?? 4,
  leaseMs: 60_000,
});

it('the rate: each grant starts where the previous one ends, n / rate later', () => {
  const a = decidePermit(NEW_BUDGET, 1000, 0, req(500, { ratePerSecond: 1000 }));
  expect(a.answer).toEqual({ granted: true, waitMs: 0 });
  const b = decidePermit(a.state!, 1000, 1, req(500, { ratePerSecond: 1000 }));
  expect(b.answer).toEqual({ granted: true, waitMs: 500 });
  // Idle since: no burst beyond one request.
  const c = decidePermit(b.state!, 10_000, 0, req(1000, { ratePerSecond: 1000 }));
  expect(c.answer).toEqual({ granted: true, waitMs: 0 });
  expect(c.state!.nextAt).toBe(11_000);
});

it('the concurrency: no permit while the account has as many requests in flight', () => {
  expect(decidePermit(NEW_BUDGET, 0, 4, req(1)).answer.granted).toBe(false);
  expect(decidePermit(NEW_BUDGET, 0, 3, req(1)).answer.granted).toBe(true);
});

it('a 429 halves the pace once per burst, holds for its Retry-After, and the pace recovers', () => {
  const slow = slowedDown(NEW_BUDGET, 10_000, { reason: 'HTTP 429', retryAfterMs: 2000 });
  expect(slow.pace).toBe(0.5);
  expect(slow.blockedUntil).toBe(12_000);
  // The same burst (within a second): no second halving.
  expect(slowedDown(slow, 10_500, { reason: 'HTTP 429' }).pace).toBe(0.5);
  expect(slowedDown(slow, 11_000, { reason: 'HTTP 503' }).pace).toBeCloseTo(
    (0.5 + 1000 / PACE_RECOVERY_MS) / 2,
  );
  // Held: the next grant starts at the end of the Retry-After, at half the rate.
  const g = decidePermit(slow, 10_000, 0, req(500, { ratePerSecond: 1000 }));
  expect(g.answer).toEqual({ granted: true, waitMs: 2000 });
  expect(g.state!.nextAt).toBe(13_000);
  // Half the concurrency meanwhile; full again after the recovery.
  expect(capacityAt(4, paceAt(slow, 10_000))).toBe(2);
  expect(paceAt(slow, 10_000 + PACE_RECOVERY_MS / 2)).toBe(1);
  // Never below the floor, and always one request.
  let s = NEW_BUDGET;
  for (let t = 0; t < 20; t++) s = slowedDown(s, t * 2000, { reason: 'HTTP 500' });
  expect(paceAt(s, 38_000)).toBeGreaterThanOrEqual(PACE_FLOOR);
  expect(capacityAt(4, PACE_FLOOR)).toBe(1);
});

/** A dispatcher over memory, and the order in which flows got their permits. */
function dispatcher(concurrency: number) {
  const d = new Dispatcher({
    budget: new MemoryBudget(),
    owner: 'w',
    concurrency,
    ratePerSecond: 0,
    leaseMs: 60_000,
  });
  const order: string[] = [];
  const held: Permit[] = [];
  const ask = (flow: string, weight = 1, destinations = 1000) =>
    d.acquire({ id: flow, weight }, destinations, new AbortController().signal).then((p) => {
      order.push(flow);
      held.push(p);
    });
  /** Releases `n` permits, one at a time, each once it is granted (the next grant follows it). */
  const drain = async (n: number) => {
    for (let i = 0; i < n; i++) {
      await vi.waitFor(() => expect(held.length).toBeGreaterThan(0));
      held.shift()!.release();
    }
  };
  return { d, order, ask, drain };
}

it('a file that starts waiting behind another is served in turn, not after the whole queue', async () => {
  const { order, ask, drain } = dispatcher(1);
  // The large file queues ten requests (and takes the only slot with its first).
  for (let i = 0; i < 10; i++) void ask('large');
  await vi.waitFor(() => expect(order).toEqual(['large']));
  // The small one arrives with two.
  void ask('small');
  void ask('small');
  await drain(12);
  expect(order.slice(0, 5)).toEqual(['large', 'small', 'large', 'small', 'large']);
  expect(order).toHaveLength(12);
});

it('weights: a high-priority file (4) gets four grants for each of a low one (1)', async () => {
  const { order, ask, drain } = dispatcher(1);
  void ask('warm'); // holds the slot while both queue
  for (let i = 0; i < 10; i++) void ask('low', 1);
  for (let i = 0; i < 10; i++) void ask('high', 4);
  await drain(21);
  const first10 = order.slice(1, 11);
  expect(first10.filter((f) => f === 'high')).toHaveLength(8);
  expect(first10.filter((f) => f === 'low')).toHaveLength(2);
});

it('never more requests in flight than the concurrency; a waiter stopped is never granted', async () => {
  const { d, order, ask, drain } = dispatcher(2);
  for (let i = 0; i < 4; i++) void ask('a');
  await vi.waitFor(() => expect(d.inFlight).toBe(2));
  // b would go next (its file has had nothing yet) but stops while it waits.
  const stop = new AbortController();
  const stopped = d.acquire({ id: 'b', weight: 1 }, 1, stop.signal);
  await new Promise((r) => setTimeout(r, 5));
  expect(d.inFlight).toBe(2);
  stop.abort(new Error('stopped'));
  await expect(stopped).rejects.toThrow('stopped');
  await drain(4);
  expect(order).toEqual(['a', 'a', 'a', 'a']);
});

it("two accounts' dispatchers in one worker never name two permits alike (the store keys permits by id alone)", async () => {
  const ids: string[] = [];
  const recording = (): MemoryBudget => {
    const budget = new MemoryBudget();
    const take = budget.take.bind(budget);
    budget.take = (r) => {
      ids.push(r.permitId);
      return take(r);
    };
    return budget;
  };
  const options = { owner: 'host:1:abc', concurrency: 2, ratePerSecond: 0, leaseMs: 60_000 };
  const sms = new Dispatcher({ ...options, budget: recording() });
  const email = new Dispatcher({ ...options, budget: recording() });
  const signal = new AbortController().signal;
  const held = await Promise.all([
    sms.acquire({ id: 'a', weight: 1 }, 1, signal),
    email.acquire({ id: 'b', weight: 1 }, 1, signal),
    sms.acquire({ id: 'a', weight: 1 }, 1, signal),
    email.acquire({ id: 'b', weight: 1 }, 1, signal),
  ]);
  expect(ids).toHaveLength(4);
  expect(new Set(ids).size).toBe(4);
  for (const p of held) p.release();
});

/**
 * Two files of ten requests of 100 on one slot: `queued` asks for all ten at once, `oneByOne`
 * for its next as soon as its previous one's permit is released (between its turns it has
 * nothing waiting). The order of their grants.
 */
async function queuedBesideOneByOne(first: 'queued' | 'oneByOne'): Promise<string> {
  const d = new Dispatcher({
    budget: new MemoryBudget(),
    owner: 'w',
    concurrency: 1,
    ratePerSecond: 0,
    leaseMs: 60_000,
  });
  const order: string[] = [];
  const signal = new AbortController().signal;
  /** One request of `flow`: its turn, a tick in flight, its permit released. */
  const request = async (flow: string): Promise<void> => {
    const permit = await d.acquire({ id: flow, weight: 1 }, 100, signal);
    order.push(flow);
    await new Promise((r) => setImmediate(r));
    permit.release();
  };
  const oneByOne = async (): Promise<void> => {
    for (let i = 0; i < 10; i++) await request('oneByOne');
  };
  const queued = () => Array.from({ length: 10 }, () => request('queued'));
  await Promise.all(first === 'queued' ? [...queued(), oneByOne()] : [oneByOne(), ...queued()]);
  return order.join(' ');
}

it('a file with one request waiting at a time, asking again as its permit ends, gets every other turn, not every turn', async () => {
  expect(await queuedBesideOneByOne('queued')).toBe(
    Array.from({ length: 10 }, () => 'queued oneByOne').join(' '),
  );
});

it('among files at the same virtual time the one served least recently goes first: no file twice in a row while another waits', async () => {
  // oneByOne's first grant and queued's first are at the same virtual time; oneByOne comes
  // back behind queued in the order the files started waiting, and is still next.
  expect(await queuedBesideOneByOne('oneByOne')).toBe(
    Array.from({ length: 10 }, () => 'oneByOne queued').join(' '),
  );
});

it('each grant is published with the files waiting when it was decided', async () => {
  const grants: GrantEvent[] = [];
  const onGrant = (e: unknown) => grants.push(e as GrantEvent);
  diagnosticsChannel.subscribe(GRANT_CHANNEL, onGrant);
  let order: string;
  try {
    order = await queuedBesideOneByOne('queued');
  } finally {
    diagnosticsChannel.unsubscribe(GRANT_CHANNEL, onGrant);
  }
  expect(grants.map((g) => g.flow).join(' ')).toBe(order);
  expect(grants.every((g) => g.destinations === 100 && g.waiting.includes(g.flow))).toBe(true);
  // queued alone at the first decision (oneByOne had not asked yet); oneByOne asks again as its
  // permit is released, before the next decision, so both wait at every later decision until
  // queued's last request is granted.
  expect(grants.map((g) => [...g.waiting].sort())).toEqual([
    ['queued'],
    ...Array.from({ length: 18 }, () => ['oneByOne', 'queued']),
    ['oneByOne'],
  ]);
});
