import { expect, it } from 'vitest';
import { ChunkPlanner } from '../../src/plan/chunks.ts';

it('ChunkPlanner fills chunks up to their size, in file order', () => {
  const p = new ChunkPlanner(3);
  expect(['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((n) => p.place(n))).toEqual([1, 1, 1, 2, 2, 2, 3]);
  expect(p.chunks()).toEqual([
    { seq: 1, size: 3 },
    { seq: 2, size: 3 },
    { seq: 3, size: 1 },
  ]);
});

it('ChunkPlanner never puts one number twice in a chunk: a repeat starts the next chunk', () => {
  const p = new ChunkPlanner(4);
  expect(['a', 'b', 'a', 'c', 'd', 'e', 'e', 'e'].map((n) => p.place(n))).toEqual([1, 1, 2, 2, 2, 2, 3, 4]);
  expect(p.chunks().map((c) => c.size)).toEqual([2, 4, 1, 1]);
  expect(new ChunkPlanner(5).chunks()).toEqual([]);
});
