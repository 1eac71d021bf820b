// The settlement rules both store backends apply (src/store/outcomes.ts), as pure functions.
import { describe, expect, it } from 'vitest';
import { assembleCounts } from '../../src/store/counts.ts';
import { planChunkResult, resultParts } from '../../src/store/outcomes.ts';
import type { ChunkResult, PartOutcome } from '../../src/store/store.ts';

const plan = (result: ChunkResult, reported: (p: PartOutcome) => boolean) =>
  planChunkResult(result, resultParts(result), reported);

describe('a chunk result, settled by the delivery reports already in', () => {
  const accepted: PartOutcome = { messageIds: ['a1', 'a2'], outcome: 'sent', transactionNumber: 'T1' };
  const doubt: PartOutcome = {
    messageIds: ['b1', 'b2'],
    outcome: 'in_doubt',
    code: 'TIMEOUT',
    detail: 'no answer',
  };
  const mixed: ChunkResult = {
    state: 'in_doubt',
    attempts: 1,
    errorCode: 'TIMEOUT',
    parts: [accepted, doubt],
  };

  it('an in-doubt part with a report is sent and the chunk accepted, its code cleared', () => {
    const p = plan(mixed, (part) => part === doubt);
    expect(p.state).toBe('accepted');
    expect([p.code, p.message]).toEqual([null, null]);
    // Both parts now read as the accepted chunk (sent, no code): one write, each row its own
    // transaction number, and the rows follow the chunk rather than keeping an outcome.
    expect(p.byIds).toEqual([
      {
        messageIds: ['a1', 'a2', 'b1', 'b2'],
        transactionNumbers: ['T1', 'T1', null, null],
        write: { outcome: 'pending', code: null, detail: null },
      },
    ]);
  });

  it('reports of the accepted part prove nothing about the in-doubt one', () => {
    const asked: PartOutcome[] = [];
    const p = plan(mixed, (part) => {
      asked.push(part);
      return part === accepted;
    });
    // Only in-doubt parts are asked about, and this one has no report.
    expect(asked).toEqual([doubt]);
    expect(p.state).toBe('in_doubt');
    expect(p.byIds[1]?.write).toMatchObject({ outcome: 'in_doubt', code: 'TIMEOUT' });
  });

  it('a chunk in doubt with no parts in doubt gets one for its unanswered rest', () => {
    const result: ChunkResult = { state: 'in_doubt', attempts: 1, errorCode: 'TIMEOUT', parts: [accepted] };
    const parts = resultParts(result);
    expect(parts).toHaveLength(2);
    expect(parts[1]).toMatchObject({ messageIds: [], outcome: 'in_doubt' });
    expect(planChunkResult(result, parts, (part) => part === parts[1]).state).toBe('accepted');
    expect(planChunkResult(result, parts, () => false).state).toBe('in_doubt');
  });

  it('a whole-request part with the chunk’s own result follows the chunk: no row is written', () => {
    const whole: PartOutcome = {
      messageIds: ['c1'],
      wholeChunk: true,
      outcome: 'sent',
      transactionNumber: 'T9',
    };
    const p = plan({ state: 'accepted', attempts: 1, transactionNumber: 'T9', parts: [whole] }, () => false);
    expect(p.whole).toMatchObject({ follows: true });
    expect(p.byIds).toEqual([]);
    const other = plan(
      { state: 'accepted', attempts: 1, transactionNumber: 'T8', parts: [whole] },
      () => false,
    );
    expect(other.whole).toMatchObject({ follows: false, write: { transactionNumber: 'T9' } });
  });
});

describe('rows that follow an accepted chunk', () => {
  const sent = (ids: string[], tn: string): PartOutcome => ({
    messageIds: ids,
    outcome: 'sent',
    transactionNumber: tn,
  });

  it('an email chunk answered in full (each recipient its own number): its rows follow the chunk, their numbers kept', () => {
    const result: ChunkResult = {
      state: 'accepted',
      attempts: 1,
      parts: [sent(['e1'], 'M1'), sent(['e2'], 'M2')],
    };
    expect(plan(result, () => false).byIds).toEqual([
      {
        messageIds: ['e1', 'e2'],
        transactionNumbers: ['M1', 'M2'],
        write: { outcome: 'pending', code: null, detail: null },
      },
    ]);
  });

  it('not when the chunk says something else: a rejection beside them (the chunk has its code), or its own other number', () => {
    const mixed: ChunkResult = {
      state: 'accepted',
      attempts: 1,
      errorCode: 'INVALID_RECIPIENT',
      parts: [sent(['e1'], 'M1'), { messageIds: ['e2'], outcome: 'rejected', code: 'INVALID_RECIPIENT' }],
    };
    expect(plan(mixed, () => false).byIds.map((g) => g.write.outcome)).toEqual(['sent', 'rejected']);
    const split: ChunkResult = {
      state: 'accepted',
      attempts: 2,
      transactionNumber: 'T1',
      parts: [sent(['a1'], 'T1'), sent(['a2'], 'T2')],
    };
    expect(plan(split, () => false).byIds.map((g) => g.write.outcome)).toEqual(['sent']);
  });
});

describe('counts assembled from chunk groups and rows with an outcome of their own', () => {
  it('rows held back or proven are moved out of their chunk’s state; pending delivery is sent less reported', () => {
    const ingest = { records: 12, valid: 10, invalid: 1, duplicates: 1, suppressed: 0, segments: 10 };
    const counts = assembleCounts(
      ingest,
      [
        {
          state: 'accepted',
          chunks: 1,
          size: 5,
          reported: 3,
          delivered: 2,
          unknown: 0,
          accepted: 0,
          reportedFollow: 3,
          reportedSent: 0,
        },
        {
          state: 'in_doubt',
          chunks: 1,
          size: 5,
          reported: 1,
          delivered: 1,
          unknown: 0,
          accepted: 0,
          reportedFollow: 0,
          reportedSent: 1,
        },
      ],
      // Two rows of the in-doubt chunk were proven sent by a report.
      [{ outcome: 'sent', chunkState: 'in_doubt', count: 2 }],
    );
    expect(counts).toMatchObject({
      ...ingest,
      chunks: 2,
      chunksAccepted: 1,
      chunksInDoubt: 1,
      submitted: 7,
      inDoubt: 3,
      delivered: 3,
      undelivered: 1,
      pendingDelivery: 3,
    });
  });
});
