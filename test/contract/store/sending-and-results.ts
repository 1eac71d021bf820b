// The store contract, sending and results: chunk results, parts, in-doubt chunks, requeues.
import { beforeEach, describe, expect, it } from 'vitest';
import {
  ACCEPTED_DELIVERY,
  type ChunkResult,
  DELIVERED,
  PENDING_DELIVERY,
  type RecipientInsert,
  type Store,
  UNKNOWN_DELIVERY,
} from '../../../src/store/store.ts';
import { type ContractContext, collect, event, type StoreHarness } from './helpers.ts';

export function sendingAndResults(t: ContractContext): void {
  let h: StoreHarness;
  let store: Store;
  const at = (ms: number) => t.at(ms);
  const sendingFile = (fileId: string, n: number, chunkSize: number, rows?: RecipientInsert[]) =>
    t.sendingFile(fileId, n, chunkSize, rows);
  beforeEach(() => {
    h = t.h;
    store = t.store;
  });

  describe('chunk results', () => {
    it("a whole-chunk part records the chunk's unsettled recipients, not the ones settled before", async () => {
      await sendingFile('f1', 4, 4);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      await store.recordChunkResult('f1', 1, {
        state: 'failed',
        attempts: 1,
        parts: [
          { messageIds: ['m1'], outcome: 'sent', transactionNumber: 'T1' },
          { messageIds: ['m2'], outcome: 'rejected', code: 'DROPLINE_ERR_SERVICE_REJECTED' },
          { messageIds: ['m3', 'm4'], outcome: 'failed', code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE' },
        ],
      });
      await store.requeueChunks('f1', ['failed']);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      h.clock.advance(500);
      expect(
        await store.recordChunkResult('f1', 1, {
          state: 'accepted',
          attempts: 2,
          transactionNumber: 'T2',
          parts: [{ messageIds: ['m3', 'm4'], wholeChunk: true, outcome: 'sent', transactionNumber: 'T2' }],
        }),
      ).toBe('accepted');
      const rs = await store.chunkRecipients('f1', 1);
      expect(rs.map((r) => [r.messageId, r.outcome, r.code, r.transactionNumber])).toEqual([
        ['m1', 'sent', null, 'T1'],
        ['m2', 'rejected', 'DROPLINE_ERR_SERVICE_REJECTED', null],
        ['m3', 'sent', null, 'T2'],
        ['m4', 'sent', null, 'T2'],
      ]);
      expect(rs.map((r) => r.updatedAt)).toEqual([at(0), at(0), at(500), at(500)]);
      expect(await store.counts('f1')).toMatchObject({ chunksAccepted: 1, submitted: 3, rejected: 1 });
    });

    it('finalStatus ACCEPTED (email, WhatsApp): the sent rows are final at once, counted accepted, the rest untouched', async () => {
      await sendingFile('f1', 4, 2);
      // chunk 1: the whole request accepted
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      h.clock.advance(60_000);
      expect(
        await store.recordChunkResult('f1', 1, {
          state: 'accepted',
          attempts: 1,
          finalStatus: ACCEPTED_DELIVERY,
          parts: [{ messageIds: ['m1', 'm2'], wholeChunk: true, outcome: 'sent' }],
        }),
      ).toBe('accepted');
      // chunk 2: one recipient accepted, one rejected
      await store.setChunkState('f1', 2, 'inflight', ['pending']);
      expect(
        await store.recordChunkResult('f1', 2, {
          state: 'accepted',
          attempts: 1,
          finalStatus: ACCEPTED_DELIVERY,
          parts: [
            { messageIds: ['m3'], outcome: 'sent', transactionNumber: 'E3' },
            { messageIds: ['m4'], outcome: 'rejected', code: 'FROM_NOT_VERIFIED', detail: 'not verified' },
          ],
        }),
      ).toBe('accepted');
      const rows = [...(await store.chunkRecipients('f1', 1)), ...(await store.chunkRecipients('f1', 2))];
      expect(rows.map((r) => [r.messageId, r.outcome, r.status, r.transactionNumber])).toEqual([
        ['m1', 'sent', ACCEPTED_DELIVERY, null],
        ['m2', 'sent', ACCEPTED_DELIVERY, null],
        ['m3', 'sent', ACCEPTED_DELIVERY, 'E3'],
        ['m4', 'rejected', PENDING_DELIVERY, null],
      ]);
      expect(await store.counts('f1')).toMatchObject({
        submitted: 3,
        rejected: 1,
        accepted: 3,
        delivered: 0,
        undelivered: 0,
        pendingDelivery: 0,
      });
      expect(await store.deliveryTimeline('f1')).toEqual([
        { minute: at(60_000), delivered: 0, undelivered: 0, unknown: 0, accepted: 3 },
      ]);
      // Nothing is left for the delivery deadline.
      expect(await store.expireDeliveries('f1')).toBe(0);
    });

    it('a whole-chunk part also settles recipients another worker marked in doubt meanwhile', async () => {
      await sendingFile('f1', 2, 2);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      // the lease expired mid-request: the next worker found the chunk inflight
      await store.markInflightInDoubt('f1');
      expect(
        await store.recordChunkResult('f1', 1, {
          state: 'accepted',
          attempts: 1,
          transactionNumber: 'T1',
          parts: [{ messageIds: ['m1', 'm2'], wholeChunk: true, outcome: 'sent', transactionNumber: 'T1' }],
        }),
      ).toBe('accepted');
      expect((await store.chunkRecipients('f1', 1)).map((r) => [r.outcome, r.transactionNumber])).toEqual([
        ['sent', 'T1'],
        ['sent', 'T1'],
      ]);
      expect(await store.counts('f1')).toMatchObject({ chunksAccepted: 1, inDoubt: 0, submitted: 2 });
    });

    it('a whole-chunk in-doubt part: a report proves it accepted, none leaves it in doubt', async () => {
      await sendingFile('f1', 4, 2);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      await store.setChunkState('f1', 2, 'inflight', ['pending']);
      await store.recordDeliveries([event('f1', 'm2', { status: 'NO_SUCCESS' })]);
      const doubt = (ids: string[]) => ({
        state: 'in_doubt' as const,
        attempts: 1,
        errorCode: 'DROPLINE_ERR_SERVICE_IN_DOUBT',
        errorMessage: 'no answer',
        parts: [
          {
            messageIds: ids,
            wholeChunk: true,
            outcome: 'in_doubt' as const,
            code: 'DROPLINE_ERR_SERVICE_IN_DOUBT',
            detail: 'no answer',
          },
        ],
      });
      expect(await store.recordChunkResult('f1', 1, doubt(['m1', 'm2']))).toBe('accepted');
      expect(await store.recordChunkResult('f1', 2, doubt(['m3', 'm4']))).toBe('in_doubt');
      expect((await store.listChunks('f1')).map((c) => [c.state, c.errorCode])).toEqual([
        ['accepted', null],
        ['in_doubt', 'DROPLINE_ERR_SERVICE_IN_DOUBT'],
      ]);
      expect((await collect(store.recipients('f1'))).map((r) => [r.outcome, r.code, r.status])).toEqual([
        ['sent', null, PENDING_DELIVERY],
        ['sent', null, 'NO_SUCCESS'],
        ['in_doubt', 'DROPLINE_ERR_SERVICE_IN_DOUBT', PENDING_DELIVERY],
        ['in_doubt', 'DROPLINE_ERR_SERVICE_IN_DOUBT', PENDING_DELIVERY],
      ]);
      expect(await store.counts('f1')).toMatchObject({ chunksInDoubt: 1, inDoubt: 2, submitted: 2 });
    });

    it('records mixed parts: sent with a transactionNumber, rejected with a code, failed', async () => {
      await sendingFile('f1', 6, 6);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      h.clock.advance(500);
      const state = await store.recordChunkResult('f1', 1, {
        state: 'accepted',
        attempts: 2,
        transactionNumber: 'T1',
        parts: [
          { messageIds: ['m1', 'm2', 'm3'], outcome: 'sent', transactionNumber: 'T1' },
          {
            messageIds: ['m4'],
            outcome: 'rejected',
            code: 'DROPLINE_ERR_SERVICE_REJECTED',
            detail: 'bad destination',
          },
          { messageIds: ['m5', 'm6'], outcome: 'sent', transactionNumber: 'T2' },
        ],
      });
      expect(state).toBe('accepted');
      const chunk = (await store.listChunks('f1'))[0];
      expect(chunk).toMatchObject({
        state: 'accepted',
        attempts: 2,
        transactionNumber: 'T1',
        updatedAt: at(500),
      });
      const rs = await store.chunkRecipients('f1', 1);
      expect(rs.map((r) => [r.messageId, r.outcome, r.code, r.transactionNumber])).toEqual([
        ['m1', 'sent', null, 'T1'],
        ['m2', 'sent', null, 'T1'],
        ['m3', 'sent', null, 'T1'],
        ['m4', 'rejected', 'DROPLINE_ERR_SERVICE_REJECTED', null],
        ['m5', 'sent', null, 'T2'],
        ['m6', 'sent', null, 'T2'],
      ]);
      expect(rs[3]?.detail).toBe('bad destination');
      expect(rs.every((r) => r.status === PENDING_DELIVERY)).toBe(true);
      expect(await store.counts('f1')).toMatchObject({
        chunks: 1,
        chunksAccepted: 1,
        submitted: 5,
        rejected: 1,
        failed: 0,
        inDoubt: 0,
        pendingDelivery: 5,
        delivered: 0,
      });
    });

    it('records a failed chunk and a pending (put back) chunk', async () => {
      await sendingFile('f1', 4, 2);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      await store.setChunkState('f1', 2, 'inflight', ['pending']);
      expect(
        await store.recordChunkResult('f1', 1, {
          state: 'failed',
          attempts: 5,
          errorCode: 'DROPLINE_ERR_SERVICE_UNAVAILABLE',
          errorMessage: '503 five times',
          parts: [{ messageIds: ['m1', 'm2'], outcome: 'failed', code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE' }],
        }),
      ).toBe('failed');
      expect(
        await store.recordChunkResult('f1', 2, {
          state: 'pending',
          attempts: 1,
          errorCode: 'DROPLINE_ERR_SERVICE_FORBIDDEN',
          parts: [{ messageIds: ['m3', 'm4'], outcome: 'pending' }],
        }),
      ).toBe('pending');
      expect((await store.listChunks('f1')).map((c) => [c.state, c.errorCode, c.errorMessage])).toEqual([
        ['failed', 'DROPLINE_ERR_SERVICE_UNAVAILABLE', '503 five times'],
        ['pending', 'DROPLINE_ERR_SERVICE_FORBIDDEN', null],
      ]);
      expect(await store.counts('f1')).toMatchObject({
        chunksFailed: 1,
        chunksPending: 1,
        failed: 2,
        submitted: 0,
      });
      expect((await store.chunkRecipients('f1', 1, ['failed'])).map((r) => r.messageId)).toEqual([
        'm1',
        'm2',
      ]);
      expect((await store.chunkRecipients('f1', 2, ['pending'])).map((r) => r.messageId)).toEqual([
        'm3',
        'm4',
      ]);
    });

    it("cancelUnsent: a cancelled file's pending chunks and their unsent recipients read cancelled, the rest as they were", async () => {
      await sendingFile('f1', 8, 2);
      for (const seq of [1, 2]) await store.setChunkState('f1', seq, 'inflight', ['pending']);
      await store.recordChunkResult('f1', 1, {
        state: 'accepted',
        attempts: 1,
        parts: [{ messageIds: ['m1', 'm2'], outcome: 'sent', transactionNumber: 'T1' }],
      });
      // Chunk 2: one part sent, the other held back by a 403 (pending with a code).
      await store.recordChunkResult('f1', 2, {
        state: 'pending',
        attempts: 1,
        errorCode: 'DROPLINE_ERR_SERVICE_FORBIDDEN',
        parts: [
          { messageIds: ['m3'], outcome: 'sent', transactionNumber: 'T2' },
          { messageIds: ['m4'], outcome: 'pending', code: 'DROPLINE_ERR_SERVICE_FORBIDDEN' },
        ],
      });
      await store.setChunkState('f1', 3, 'inflight', ['pending']);
      // Not while the file is sending.
      expect(await store.cancelUnsent('f1')).toBe(0);
      await store.transition('f1', 'cancelled');
      expect(await store.cancelUnsent('f1')).toBe(2);
      expect(await store.cancelUnsent('f1')).toBe(0);
      expect((await store.listChunks('f1')).map((c) => c.state)).toEqual([
        'accepted',
        'cancelled',
        'inflight',
        'cancelled',
      ]);
      expect(await store.chunkDestinations('f1', 4)).toEqual([]);
      const rows = await collect(store.recipients('f1'));
      expect(rows.map((r) => [r.messageId, r.outcome])).toEqual([
        ['m1', 'sent'],
        ['m2', 'sent'],
        ['m3', 'sent'],
        ['m4', 'cancelled'],
        ['m5', 'pending'],
        ['m6', 'pending'],
        ['m7', 'cancelled'],
        ['m8', 'cancelled'],
      ]);
      expect(rows[3]?.code).toBeNull();
      expect(await store.counts('f1')).toMatchObject({
        chunksAccepted: 1,
        chunksCancelled: 2,
        chunksPending: 0,
        chunksInflight: 1,
        submitted: 3,
        cancelled: 3,
        valid: 8,
      });
      // The chunk in flight at the cancel is put back pending by its result: the next call catches it.
      await store.recordChunkResult('f1', 3, {
        state: 'pending',
        attempts: 1,
        errorCode: 'DROPLINE_ERR_SERVICE_FORBIDDEN',
        parts: [{ messageIds: ['m5', 'm6'], outcome: 'pending' }],
      });
      expect(await store.cancelUnsent('f1')).toBe(1);
      expect(await store.counts('f1')).toMatchObject({ chunksCancelled: 3, cancelled: 5 });
      const report = [];
      for await (const page of store.reportPages('f1')) report.push(...page.map((r) => r.outcome));
      expect(report).toEqual([
        'sent',
        'sent',
        'sent',
        'cancelled',
        'cancelled',
        'cancelled',
        'cancelled',
        'cancelled',
      ]);
    });

    it('markInflightInDoubt turns inflight chunks and their pending recipients in doubt', async () => {
      await sendingFile('f1', 6, 2);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      await store.recordChunkResult('f1', 1, {
        state: 'accepted',
        attempts: 1,
        parts: [{ messageIds: ['m1', 'm2'], outcome: 'sent', transactionNumber: 'T1' }],
      });
      await store.setChunkState('f1', 2, 'inflight', ['pending']);
      await store.setChunkState('f1', 3, 'inflight', ['pending']);
      expect(await store.markInflightInDoubt('f1')).toBe(2);
      expect(await store.markInflightInDoubt('f1')).toBe(0);
      expect((await store.listChunks('f1')).map((c) => c.state)).toEqual([
        'accepted',
        'in_doubt',
        'in_doubt',
      ]);
      expect((await collect(store.recipients('f1'))).map((r) => r.outcome)).toEqual([
        'sent',
        'sent',
        'in_doubt',
        'in_doubt',
        'in_doubt',
        'in_doubt',
      ]);
      expect(await store.counts('f1')).toMatchObject({ chunksInDoubt: 2, inDoubt: 4, submitted: 2 });
    });

    it('requeueChunks puts failed (and in-doubt) chunks back, with only their unsent recipients', async () => {
      await sendingFile('f1', 8, 2);
      for (const seq of [1, 2, 3, 4]) await store.setChunkState('f1', seq, 'inflight', ['pending']);
      await store.recordChunkResult('f1', 1, {
        state: 'accepted',
        attempts: 1,
        parts: [{ messageIds: ['m1', 'm2'], outcome: 'sent', transactionNumber: 'T1' }],
      });
      await store.recordChunkResult('f1', 2, {
        state: 'failed',
        attempts: 5,
        errorCode: 'DROPLINE_ERR_SERVICE_UNAVAILABLE',
        parts: [
          { messageIds: ['m3'], outcome: 'sent', transactionNumber: 'T2' },
          { messageIds: ['m4'], outcome: 'failed', code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE' },
        ],
      });
      await store.recordChunkResult('f1', 3, {
        state: 'rejected',
        attempts: 1,
        parts: [{ messageIds: ['m5', 'm6'], outcome: 'rejected', code: 'DROPLINE_ERR_SERVICE_REJECTED' }],
      });
      expect(await store.markInflightInDoubt('f1')).toBe(1); // chunk 4

      expect(await store.requeueChunks('f1', ['failed'])).toBe(1);
      expect((await store.listChunks('f1')).map((c) => [c.state, c.errorCode])).toEqual([
        ['accepted', null],
        ['pending', null],
        ['rejected', null],
        ['in_doubt', null],
      ]);
      expect((await store.chunkRecipients('f1', 2)).map((r) => [r.outcome, r.code])).toEqual([
        ['sent', null],
        ['pending', null],
      ]);
      expect(await store.requeueChunks('f1', ['failed', 'in_doubt'])).toBe(1);
      expect((await store.chunkRecipients('f1', 4)).map((r) => r.outcome)).toEqual(['pending', 'pending']);
      expect((await store.chunkRecipients('f1', 3)).map((r) => r.outcome)).toEqual(['rejected', 'rejected']);
      expect(await store.requeueChunks('f1', ['failed', 'in_doubt'])).toBe(0);
      // attempts are kept: they count every request ever made for the chunk
      expect((await store.listChunks('f1'))[1]?.attempts).toBe(5);
    });

    it('requeueChunks counts possible duplicates with the requeue: a repeat of it after a lost commit counts nothing more', async () => {
      await sendingFile('f1', 4, 2);
      for (const seq of [1, 2]) await store.setChunkState('f1', seq, 'inflight', ['pending']);
      expect(await store.markInflightInDoubt('f1')).toBe(2);
      expect((await store.counts('f1')).inDoubt).toBe(4);
      expect(await store.requeueChunks('f1', ['in_doubt'], { addPossibleDuplicates: 4 })).toBe(2);
      expect((await store.getFile('f1'))?.possibleDuplicates).toBe(4);
      // The same call again, as the pipeline's patient store makes it when the first one's
      // commit was lost with its connection: nothing moves, nothing is counted twice.
      expect(await store.requeueChunks('f1', ['in_doubt'], { addPossibleDuplicates: 4 })).toBe(0);
      expect((await store.getFile('f1'))?.possibleDuplicates).toBe(4);
      expect((await store.listChunks('f1')).map((c) => c.state)).toEqual(['pending', 'pending']);
    });
    it('a part held back (403) beside a part in doubt goes out once a report proves the other part', async () => {
      await sendingFile('f1', 4, 4);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      expect(
        await store.recordChunkResult('f1', 1, {
          state: 'in_doubt',
          attempts: 2,
          errorCode: 'DROPLINE_ERR_SERVICE_IN_DOUBT',
          parts: [
            { messageIds: ['m1', 'm2'], outcome: 'in_doubt', code: 'DROPLINE_ERR_SERVICE_IN_DOUBT' },
            { messageIds: ['m3', 'm4'], outcome: 'pending', code: 'DROPLINE_ERR_SERVICE_FORBIDDEN' },
          ],
        }),
      ).toBe('in_doubt');
      const read = async () => (await store.chunkRecipients('f1', 1)).map((r) => [r.messageId, r.outcome]);
      expect(await read()).toEqual([
        ['m1', 'in_doubt'],
        ['m2', 'in_doubt'],
        ['m3', 'pending'],
        ['m4', 'pending'],
      ]);
      expect(await store.counts('f1')).toMatchObject({ inDoubt: 2, submitted: 0, failed: 0 });
      // a report for m1: its part reached the service; m3 and m4 were never sent
      await store.recordDeliveries([event('f1', 'm1')]);
      expect(await read()).toEqual([
        ['m1', 'sent'],
        ['m2', 'sent'],
        ['m3', 'pending'],
        ['m4', 'pending'],
      ]);
      // m3 and m4 were never sent: the chunk is pending again, for them alone
      expect((await store.listChunks('f1')).map((c) => c.state)).toEqual(['pending']);
      expect(await store.counts('f1')).toMatchObject({
        submitted: 2,
        inDoubt: 0,
        chunksPending: 1,
        chunksInDoubt: 0,
        pendingDelivery: 1,
      });
      expect(await store.expireDeliveries('f1')).toBe(1); // m2 only: m3 and m4 were not sent
      expect((await store.chunkDestinations('f1', 1)).map((d) => d.messageId)).toEqual(['m3', 'm4']);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      await store.recordChunkResult('f1', 1, {
        state: 'accepted',
        attempts: 3,
        transactionNumber: 'T9',
        parts: [{ messageIds: ['m3', 'm4'], wholeChunk: true, outcome: 'sent', transactionNumber: 'T9' }],
      });
      expect(await read()).toEqual([
        ['m1', 'sent'],
        ['m2', 'sent'],
        ['m3', 'sent'],
        ['m4', 'sent'],
      ]);
      expect(await store.counts('f1')).toMatchObject({ submitted: 4, inDoubt: 0, failed: 0 });
    });

    it('whole-chunk results through failed, retried and accepted: each row reads its own outcome, code and transactionNumber', async () => {
      await sendingFile('f1', 3, 3);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      // first request: m1 accepted, m2 and m3 failed
      await store.recordChunkResult('f1', 1, {
        state: 'failed',
        attempts: 3,
        transactionNumber: 'T1',
        errorCode: 'DROPLINE_ERR_SERVICE_UNAVAILABLE',
        errorMessage: 'busy',
        parts: [
          { messageIds: ['m1'], outcome: 'sent', transactionNumber: 'T1' },
          {
            messageIds: ['m2', 'm3'],
            outcome: 'failed',
            code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE',
            detail: 'busy',
          },
        ],
      });
      await store.requeueChunks('f1', ['failed']);
      const read = async () =>
        (await store.chunkRecipients('f1', 1)).map((r) => [
          r.messageId,
          r.outcome,
          r.code,
          r.transactionNumber,
        ]);
      // second request (m2, m3 only): failed as a whole; they must not show m1's transaction
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      const failedWhole: ChunkResult = {
        state: 'failed',
        attempts: 4,
        errorCode: 'DROPLINE_ERR_SERVICE_TIMEOUT',
        errorMessage: 'timeout',
        parts: [
          {
            messageIds: ['m2', 'm3'],
            wholeChunk: true,
            outcome: 'failed',
            code: 'DROPLINE_ERR_SERVICE_TIMEOUT',
            detail: 'timeout',
          },
        ],
      };
      expect(await store.recordChunkResult('f1', 1, failedWhole)).toBe('failed');
      expect(await read()).toEqual([
        ['m1', 'sent', null, 'T1'],
        ['m2', 'failed', 'DROPLINE_ERR_SERVICE_TIMEOUT', null],
        ['m3', 'failed', 'DROPLINE_ERR_SERVICE_TIMEOUT', null],
      ]);
      expect(await store.counts('f1')).toMatchObject({ submitted: 1, failed: 2, pendingDelivery: 1 });
      expect((await store.chunkDestinations('f1', 1)).map((d) => d.messageId)).toEqual([]);
      // third request: accepted as a whole with its own transaction
      await store.requeueChunks('f1', ['failed']);
      expect((await store.chunkDestinations('f1', 1)).map((d) => d.messageId)).toEqual(['m2', 'm3']);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      const accepted: ChunkResult = {
        state: 'accepted',
        attempts: 5,
        transactionNumber: 'T3',
        parts: [{ messageIds: ['m2', 'm3'], wholeChunk: true, outcome: 'sent', transactionNumber: 'T3' }],
      };
      expect(await store.recordChunkResult('f1', 1, accepted)).toBe('accepted');
      expect(await read()).toEqual([
        ['m1', 'sent', null, 'T1'],
        ['m2', 'sent', null, 'T3'],
        ['m3', 'sent', null, 'T3'],
      ]);
      expect(await store.counts('f1')).toMatchObject({ submitted: 3, failed: 0, pendingDelivery: 3 });
      // one report, then the deadline: the rest become UNKNOWN, the reported one stays
      await store.recordDeliveries([event('f1', 'm3')]);
      expect(await store.expireDeliveries('f1')).toBe(2);
      expect(await store.counts('f1')).toMatchObject({
        submitted: 3,
        delivered: 1,
        undelivered: 2,
        unknown: 2,
        pendingDelivery: 0,
      });
      const report = (await collect(store.reportPages('f1'))).flat();
      expect(report.map((r) => [r.messageId, r.outcome, r.status, r.transactionNumber])).toEqual([
        ['m1', 'sent', UNKNOWN_DELIVERY, 'T1'],
        ['m2', 'sent', UNKNOWN_DELIVERY, 'T3'],
        ['m3', 'sent', DELIVERED, 'T3'],
      ]);
    });
  });
}
