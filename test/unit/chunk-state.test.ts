// The one chunk-state rule every channel's result goes through (src/core/chunk-state.ts).
import { expect, it } from 'vitest';
import { chunkStateOf } from '../../src/core/chunk-state.ts';

const none = { accepted: 0, rejected: 0, failed: 0, inDoubt: 0, held: 0 };

it('in doubt wins, then failed, then put back, then rejected only when nothing was taken', () => {
  expect(chunkStateOf({ ...none, accepted: 3, failed: 1, inDoubt: 1, held: 1 })).toBe('in_doubt');
  expect(chunkStateOf({ ...none, accepted: 3, failed: 1, held: 1 })).toBe('failed');
  expect(chunkStateOf({ ...none, accepted: 3, held: 1 })).toBe('pending');
  expect(chunkStateOf({ ...none, rejected: 2 })).toBe('rejected');
  expect(chunkStateOf({ ...none, accepted: 1, rejected: 2 })).toBe('accepted');
  expect(chunkStateOf(none)).toBe('accepted');
});
