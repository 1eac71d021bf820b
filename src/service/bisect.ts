// A part the service refused as a whole (400) or as too large (413) is cut in two halves, each
// sent as a part of its own, until the offending destinations stand alone (docs/service.md
// "Retry schedule"): about 2·log2(n) extra requests per bad destination.
import type { PartResult } from './send-result.ts';
import { type ChunkPart, subPart } from './wire.ts';

/** The part's two halves, the first one destination longer when it has an odd count. */
export function halves(part: ChunkPart): [ChunkPart, ChunkPart] {
  const mid = part.start + Math.ceil((part.end - part.start) / 2);
  return [subPart(part, part.start, mid), subPart(part, mid, part.end)];
}

/** Both halves sent at once by `send`; their results, the first half's first. */
export async function sendHalves(
  part: ChunkPart,
  send: (half: ChunkPart) => Promise<PartResult[]>,
): Promise<PartResult[]> {
  const [left, right] = halves(part);
  const [first, second] = await Promise.all([send(left), send(right)]);
  return [...first, ...second];
}
