// src/plan/kept-destinations.ts: a bulk file's chunks kept for their first send give back
// what chunkDestinations would (test/e2e/bulk-first-send.test.ts compares the requests);
// here, what it refuses to keep, so that such a file is read back from the store instead.
import { describe, expect, it } from 'vitest';
import { messageIdFor } from '../../src/plan/ids.ts';
import { KeptDestinations } from '../../src/plan/kept-destinations.ts';

describe('KeptDestinations', () => {
  it('gives back each chunk: numbers, generated messageIds, the file message (text null)', () => {
    const kept = new KeptDestinations('f1', 100);
    expect(kept.add('573001234567', 2, 1, null, 1)).toBe(true);
    expect(kept.add('525512345678', 2, 2, null, 1)).toBe(true);
    expect(kept.add('573009999999', 3, 1, null, 2)).toBe(true);
    expect(kept.destinations(1)).toEqual([
      { number: '573001234567', messageId: messageIdFor('f1', 2, 1), text: null },
      { number: '525512345678', messageId: messageIdFor('f1', 2, 2), text: null },
    ]);
    expect(kept.destinations(2)).toEqual([{ number: '573009999999', messageId: 'f1-3-1', text: null }]);
    expect(kept.destinations(3)).toBeNull();
    expect(kept.destinations(0)).toBeNull();
  });

  it('refuses what the store would not give back as kept: a messageId, a personalized record, a number String() would change', () => {
    const kept = new KeptDestinations('f1', 100);
    expect(kept.add('573001234567', 2, 1, 'id-7', 1)).toBe(false);
    expect(kept.add('573001234567', 2, 0, null, 1)).toBe(false);
    expect(kept.add('0573001234567', 2, 1, null, 1)).toBe(false);
    expect(kept.add('5730012345678901', 2, 1, null, 1)).toBe(false);
    expect(kept.add('57300123456x', 2, 1, null, 1)).toBe(false);
    // A chunk seq out of the planner's order.
    expect(kept.add('573001234567', 2, 1, null, 2)).toBe(false);
  });

  it('past its limit, the chunks not wholly kept are not given', () => {
    const kept = new KeptDestinations('f1', 3);
    for (let i = 0; i < 6; i++)
      expect(kept.add(`57300123456${i}`, 2 + i, 1, null, 1 + Math.floor(i / 2))).toBe(true);
    expect(kept.destinations(1)).toHaveLength(2);
    expect(kept.destinations(2)).toBeNull();
    expect(kept.destinations(3)).toBeNull();
  });
});
