// The daemon's step queue (src/app/step-queue.ts): steps one after the other, a failed step
// logged and passed, a step quiet for workStallMs left to run on its own while the queue goes on.
import { describe, expect, it } from 'vitest';
import { StepQueue } from '../../src/app/step-queue.ts';
import { RepeatGate, silentLogger } from '../../src/log.ts';

/** A step that ends when `finish` is called. */
function held(): { promise: Promise<void>; finish: () => void } {
  let finish = () => {};
  const promise = new Promise<void>((r) => {
    finish = r;
  });
  return { promise, finish };
}

function queueAt(clock: { now: number }, lastProgress = () => 0) {
  return new StepQueue({
    log: silentLogger,
    gate: new RepeatGate(),
    stallMs: 1000,
    lastProgress,
    now: () => clock.now,
  });
}

describe('StepQueue', () => {
  it('runs the steps one after the other, and a failed step does not stop the next', async () => {
    const queue = queueAt({ now: 0 });
    const order: string[] = [];
    const first = held();
    const a = queue.enqueue('a', async () => {
      order.push('a starts');
      await first.promise;
      order.push('a ends');
    });
    void queue.enqueue('b', async () => {
      throw new Error('b broke');
    });
    const c = queue.enqueue('c', async () => {
      order.push('c');
    });
    await Promise.resolve();
    expect(order).toEqual(['a starts']);
    first.finish();
    await a;
    await c;
    expect(order).toEqual(['a starts', 'a ends', 'c']);
  });

  it('leaves a step quiet for the stall time to run on its own and names it until it ends', async () => {
    const clock = { now: 0 };
    const queue = queueAt(clock);
    const slow = held();
    const stalledStep = queue.enqueue('claim 3 file(s)', () => slow.promise);
    let nextRan = false;
    const next = queue.enqueue('progress', async () => {
      nextRan = true;
    });
    await new Promise((r) => setImmediate(r));
    clock.now = 999;
    queue.watch();
    expect(queue.stalled()).toEqual([]);
    clock.now = 1000;
    queue.watch();
    await stalledStep;
    await next;
    expect(nextRan).toBe(true);
    expect(queue.stalled()).toEqual([{ what: 'claim 3 file(s)', startedAt: 0 }]);
    let ended = false;
    const allEnded = queue.ended().then(() => {
      ended = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(ended).toBe(false);
    slow.finish();
    await allEnded;
    expect(queue.stalled()).toEqual([]);
  });

  it('counts quiet time from the last progress the pipeline made, not from the start', async () => {
    const clock = { now: 0 };
    let progress = 0;
    const queue = queueAt(clock, () => progress);
    const slow = held();
    void queue.enqueue('progress', () => slow.promise);
    await new Promise((r) => setImmediate(r));
    progress = 900;
    clock.now = 1500;
    queue.watch();
    expect(queue.stalled()).toEqual([]);
    clock.now = 1900;
    queue.watch();
    expect(queue.stalled().map((s) => s.what)).toEqual(['progress']);
    slow.finish();
  });

  it('starts no step once stopped', async () => {
    const queue = queueAt({ now: 0 });
    queue.stop();
    let ran = false;
    await queue.enqueue('claim 1 file(s)', async () => {
      ran = true;
    });
    await queue.ended();
    expect(ran).toBe(false);
  });
});
