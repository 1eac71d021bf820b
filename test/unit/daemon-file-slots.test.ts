// The daemon's file slots (src/app/file-slots.ts): up to `size` files driven at once, a
// finished file's slot given to the next, a stalled file's slot freed for another.
import { describe, expect, it } from 'vitest';
import { FileSlots } from '../../src/app/file-slots.ts';
import { RepeatGate, silentLogger } from '../../src/log.ts';
import type { FileRecord } from '../../src/store/store.ts';

function file(fileId: string): FileRecord {
  return { fileId, name: `${fileId}.txt` } as FileRecord;
}

/** Files waiting in order, each driven until its `finish` is called. */
function harness(ids: string[], size: number, clock = { now: 0 }) {
  const waiting = ids.map(file);
  const finish = new Map<string, () => void>();
  const progressAt = new Map<string, number>();
  const endedIds: string[] = [];
  const slots = new FileSlots({
    size,
    stallMs: 1000,
    acquire: async () => waiting.shift() ?? null,
    drive: (f) =>
      new Promise<void>((resolve, reject) => {
        finish.set(f.fileId, () => (f.fileId.startsWith('bad') ? reject(new Error('broke')) : resolve()));
      }),
    progressAt: (id) => progressAt.get(id),
    ended: (id) => endedIds.push(id),
    log: silentLogger,
    gate: new RepeatGate(),
    now: () => clock.now,
  });
  return { slots, finish, progressAt, endedIds, clock };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('FileSlots', () => {
  it('drives at most `size` files, the next one starting when one ends', async () => {
    const h = harness(['a', 'bad-b', 'c', 'd'], 2);
    await h.slots.fill();
    expect([...h.slots.driven()]).toEqual(['a', 'bad-b']);
    h.finish.get('bad-b')!();
    await settle();
    expect([...h.slots.driven()]).toEqual(['a', 'c']);
    expect(h.endedIds).toEqual(['bad-b']);
    h.finish.get('a')!();
    await settle();
    expect([...h.slots.driven()]).toEqual(['c', 'd']);
    expect(h.slots.busy()).toBe(2);
  });

  it('frees the slot of a file quiet for the stall time, and names it until it ends', async () => {
    const h = harness(['a', 'b'], 1);
    await h.slots.fill();
    h.progressAt.set('a', 500);
    h.clock.now = 1499;
    h.slots.watch();
    expect(h.slots.stalled()).toEqual([]);
    h.clock.now = 1500;
    h.slots.watch();
    await settle();
    expect(h.slots.stalled().map((d) => d.what)).toEqual(['a.txt (a)']);
    expect(h.slots.busy()).toBe(1);
    expect([...h.slots.driven()]).toEqual(['a', 'b']);
    h.finish.get('a')!();
    await settle();
    expect(h.slots.stalled()).toEqual([]);
  });

  it('starts nothing once stopped, and ended() waits for the files in hand', async () => {
    const h = harness(['a', 'b'], 1);
    await h.slots.fill();
    h.slots.stop();
    let ended = false;
    const all = h.slots.ended().then(() => {
      ended = true;
    });
    await settle();
    expect(ended).toBe(false);
    h.finish.get('a')!();
    await all;
    await settle();
    expect([...h.slots.driven()]).toEqual([]);
  });
});
