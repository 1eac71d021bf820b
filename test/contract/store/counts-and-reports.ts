// The store contract, counts and reports: retention, counts, the report read back in pages.
import { beforeEach, describe, expect, it } from 'vitest';
import {
  DELIVERED,
  PENDING_DELIVERY,
  type RecipientInsert,
  type Store,
  UNKNOWN_DELIVERY,
} from '../../../src/store/store.ts';
import {
  type ContractContext,
  chunksFor,
  collect,
  event,
  newFile,
  type StoreHarness,
  T0,
  validRows,
} from './helpers.ts';

export function countsAndReports(t: ContractContext): void {
  let h: StoreHarness;
  let store: Store;
  const at = (ms: number) => t.at(ms);
  const sendingFile = (fileId: string, n: number, chunkSize: number, rows?: RecipientInsert[]) =>
    t.sendingFile(fileId, n, chunkSize, rows);
  beforeEach(() => {
    h = t.h;
    store = t.store;
  });

  describe('retention (prune)', () => {
    /** A file sent, its first recipient reported, then moved to `state`. */
    async function finished(fileId: string, state: 'completed' | 'partial' | 'cancelled', n = 5) {
      await t.submittedFile(fileId, n, 2);
      await store.recordDeliveries([
        event(fileId, 'm1', { transactionNumber: `${fileId}-T1` }),
        event(fileId, 'm3', { transactionNumber: `${fileId}-T2`, status: 'NO_SUCCESS' }),
      ]);
      await store.transition(fileId, state);
    }
    async function pruneAll(before: string, maxRows = 2) {
      const steps = [];
      for (let i = 0; i < 100; i++) {
        const step = await store.prune({ finishedBefore: before, maxRows });
        steps.push(step);
        if (step.idle) return steps;
      }
      throw new Error('prune never became idle');
    }

    it("removes exactly the old finished files' rows and reports, keeping their files row and counts", async () => {
      await finished('old', 'completed');
      const attachment = { name: 'a.pdf', contentType: 'application/pdf', content: 'JVBERg==' };
      await store.setAttachments('old', [attachment]);
      await finished('old-cancelled', 'cancelled', 3);
      await finished('old-partial', 'partial', 3); // not finished: partial may be retried
      await store.recordDeliveries([event('nobody', 'x', { transactionNumber: 'orphan-old' })]);
      h.clock.advance(10 * 86_400_000);
      await finished('new', 'completed');
      await store.recordDeliveries([event('nobody', 'y', { transactionNumber: 'orphan-new' })]);
      const before = await store.counts('old');
      const cutoff = new Date(T0.getTime() + 5 * 86_400_000).toISOString();

      const steps = await pruneAll(cutoff);
      expect(
        steps
          .filter((s) => s.marked)
          .map((s) => s.fileId)
          .sort(),
      ).toEqual(['old', 'old-cancelled']);
      expect(steps.reduce((n, s) => n + s.recipients, 0)).toBe(8);
      // 2 reports of each pruned file, and the old orphan
      expect(steps.reduce((n, s) => n + s.events, 0)).toBe(5);

      // pruned: no rows, the files row and its counts stay, marked pruned
      const old = await store.getFile('old');
      expect(old).toMatchObject({ state: 'completed', prunedAt: expect.any(String) });
      expect(await collect(store.recipients('old'))).toEqual([]);
      expect(await store.listChunks('old')).toEqual([]);
      expect(await store.attachments('old')).toEqual([]);
      expect(await store.counts('old')).toEqual(before);
      expect(before).toMatchObject({ submitted: 5, delivered: 1, undelivered: 1, pendingDelivery: 3 });
      // a report for a pruned file is an orphan, never an error
      expect(
        (await store.recordDeliveries([event('old', 'm2', { transactionNumber: 'late' })])).orphans,
      ).toBe(1);

      // untouched: the partial file and the new one, their reports (seen again: duplicates)
      for (const id of ['old-partial', 'new']) {
        expect((await store.getFile(id))?.prunedAt, id).toBeNull();
        expect(await collect(store.recipients(id)), id).toHaveLength(id === 'new' ? 5 : 3);
        expect(
          (await store.recordDeliveries([event(id, 'm1', { transactionNumber: `${id}-T1` })])).duplicates,
        ).toBe(1);
      }
      expect(
        (await store.recordDeliveries([event('nobody', 'y', { transactionNumber: 'orphan-new' })]))
          .duplicates,
      ).toBe(1);
      // the pruned files' reports are gone: the same report again is new (an orphan now)
      expect(
        (await store.recordDeliveries([event('old', 'm1', { transactionNumber: 'old-T1' })])).recorded,
      ).toBe(1);
      // nothing more to do
      expect(await store.prune({ finishedBefore: cutoff, maxRows: 2 })).toMatchObject({
        idle: true,
        recipients: 0,
      });
    });
  });

  describe('counts and reading back', () => {
    it("countsOf gives several files' counts at once, as counts() gives each; unknown files are absent", async () => {
      await sendingFile('f1', 6, 2);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      await store.recordChunkResult('f1', 1, {
        state: 'accepted',
        attempts: 1,
        parts: [{ messageIds: [], outcome: 'sent', wholeChunk: true }],
      });
      await sendingFile('f2', 4, 4);
      await store.setChunkState('f2', 1, 'inflight', ['pending']);
      await store.recordChunkResult('f2', 1, {
        state: 'failed',
        attempts: 3,
        parts: [{ messageIds: [], outcome: 'failed', wholeChunk: true }],
      });
      await store.registerFile(newFile({ fileId: 'f3' }));
      const all = await store.countsOf(['f1', 'f2', 'f3', 'missing']);
      expect([...all.keys()].sort()).toEqual(['f1', 'f2', 'f3']);
      for (const id of ['f1', 'f2', 'f3']) expect(all.get(id)).toEqual(await store.counts(id));
      expect(all.get('f1')).toMatchObject({ submitted: 2, chunksAccepted: 1, chunksPending: 2 });
      expect(all.get('f2')).toMatchObject({ failed: 4, chunksFailed: 1 });
      expect((await store.countsOf([])).size).toBe(0);
    });

    it('counts after a full cycle', async () => {
      await store.registerFile(newFile());
      const rows = validRows(10, 4);
      const skipped: RecipientInsert[] = [
        {
          ...rows[0]!,
          idx: 11,
          messageId: null,
          chunkSeq: null,
          outcome: 'invalid',
          code: 'INVALID_NUMBER',
        },
        { ...rows[0]!, idx: 12, messageId: null, chunkSeq: null, outcome: 'duplicate', code: 'DUPLICATE' },
        {
          ...rows[0]!,
          idx: 13,
          messageId: null,
          chunkSeq: null,
          outcome: 'suppressed',
          code: 'SUPPRESSED',
        },
      ];
      const ingest = { records: 13, valid: 10, invalid: 1, duplicates: 1, suppressed: 1, segments: 12 };
      await store.transition('f1', 'sending', { from: ['validating'], patch: { counts: ingest } });
      await store.insertRecipients('f1', [...rows, ...skipped]);
      await store.insertChunks('f1', chunksFor(10, 4));
      for (const seq of [1, 2, 3]) await store.setChunkState('f1', seq, 'inflight', ['pending']);
      await store.recordChunkResult('f1', 1, {
        state: 'accepted',
        attempts: 1,
        parts: [{ messageIds: ['m1', 'm2', 'm3', 'm4'], outcome: 'sent', transactionNumber: 'T1' }],
      });
      await store.recordChunkResult('f1', 2, {
        state: 'accepted',
        attempts: 1,
        parts: [
          { messageIds: ['m5', 'm6', 'm7'], outcome: 'sent', transactionNumber: 'T2' },
          { messageIds: ['m8'], outcome: 'rejected', code: 'DROPLINE_ERR_SERVICE_REJECTED' },
        ],
      });
      await store.recordChunkResult('f1', 3, {
        state: 'failed',
        attempts: 5,
        parts: [{ messageIds: ['m9', 'm10'], outcome: 'failed', code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE' }],
      });
      await store.recordDeliveries([
        event('f1', 'm1'),
        event('f1', 'm2'),
        event('f1', 'm3', { status: 'NO_SUCCESS' }),
        event('f1', 'm5'),
      ]);
      expect(await store.counts('f1')).toEqual({
        ...ingest,
        chunks: 3,
        chunksPending: 0,
        chunksInflight: 0,
        chunksAccepted: 2,
        chunksRejected: 0,
        chunksFailed: 1,
        chunksInDoubt: 0,
        chunksCancelled: 0,
        submitted: 7,
        rejected: 1,
        failed: 2,
        inDoubt: 0,
        delivered: 3,
        undelivered: 1,
        unknown: 0,
        accepted: 0,
        pendingDelivery: 3,
        contactLimited: 0,
        optedOut: 0,
        cancelled: 0,
      });
      await store.expireDeliveries('f1');
      expect(await store.counts('f1')).toMatchObject({
        delivered: 3,
        undelivered: 4,
        unknown: 3,
        pendingDelivery: 0,
      });
      const all = await collect(store.recipients('f1'));
      expect(all.map((r) => r.outcome)).toEqual([
        ...Array(7).fill('sent'),
        'rejected',
        'failed',
        'failed',
        'invalid',
        'duplicate',
        'suppressed',
      ]);
      expect(all[10]?.status).toBe(PENDING_DELIVERY); // never sent: no delivery status
    });

    /** Delivery counts recounted from every row of the report: what counts() must equal. */
    async function recount(fileId: string) {
      const rows = (await collect(store.reportPages(fileId))).flat();
      const reported = rows.filter((r) => r.status !== PENDING_DELIVERY);
      const sent = rows.filter((r) => r.outcome === 'sent');
      return {
        submitted: sent.length,
        inDoubt: rows.filter((r) => r.outcome === 'in_doubt').length,
        delivered: reported.filter((r) => r.status === DELIVERED).length,
        undelivered: reported.filter((r) => r.status !== DELIVERED).length,
        unknown: reported.filter((r) => r.status === UNKNOWN_DELIVERY).length,
        pendingDelivery: sent.filter((r) => r.status === PENDING_DELIVERY).length,
      };
    }
    async function exact(fileId: string, step: string): Promise<void> {
      expect(await store.counts(fileId), step).toMatchObject(await recount(fileId));
    }

    it('delivery counts stay exact through repeats, orphans, in-doubt settlement, requeue, expiry and clearRecipients', async () => {
      await sendingFile('f1', 9, 3);
      await sendingFile('f2', 3, 3);
      await exact('f1', 'ingested');
      // chunk 1 accepted whole; chunk 2 mixed parts; chunk 3 in doubt
      for (const seq of [1, 2, 3]) await store.setChunkState('f1', seq, 'inflight', ['pending']);
      await store.recordChunkResult('f1', 1, {
        state: 'accepted',
        attempts: 1,
        transactionNumber: 'T1',
        parts: [
          { messageIds: ['m1', 'm2', 'm3'], wholeChunk: true, outcome: 'sent', transactionNumber: 'T1' },
        ],
      });
      await store.recordChunkResult('f1', 2, {
        state: 'accepted',
        attempts: 1,
        parts: [
          { messageIds: ['m4', 'm5'], outcome: 'sent', transactionNumber: 'T2' },
          { messageIds: ['m6'], outcome: 'rejected', code: 'BAD' },
        ],
      });
      await store.markInflightInDoubt('f1');
      await exact('f1', 'results');
      // reports: repeats, an orphan, another file's number, one before its chunk's result
      await store.recordDeliveries([
        event('f1', 'm1', { transactionNumber: 'T1' }),
        event('f1', 'm1', { transactionNumber: 'T1' }),
        event('f1', 'm2', { transactionNumber: 'T1', status: 'NO_SUCCESS' }),
        event('f1', 'm4', { transactionNumber: 'T2' }),
        event('f1', 'nope'),
        event('f1', 'm5', { transactionNumber: 'T2', to: '573119999999' }),
      ]);
      await exact('f1', 'reports');
      // a second report for one recipient changes its status: counted once, as the last one
      await store.recordDeliveries([event('f1', 'm2', { transactionNumber: 'T1b', status: DELIVERED })]);
      await exact('f1', 'status changed');
      // a report settles the in-doubt chunk 3
      await store.recordDeliveries([event('f1', 'm8', { transactionNumber: 'T3' })]);
      expect((await store.listChunks('f1', ['accepted'])).map((c) => c.seq)).toContain(3);
      await exact('f1', 'in doubt settled');
      // f2: in doubt, requeued, sent again with reports
      await store.setChunkState('f2', 1, 'inflight', ['pending']);
      await store.recordChunkResult('f2', 1, {
        state: 'in_doubt',
        attempts: 1,
        parts: [{ messageIds: ['m1', 'm2', 'm3'], wholeChunk: true, outcome: 'in_doubt' }],
      });
      await exact('f2', 'in doubt');
      await store.requeueChunks('f2', ['in_doubt']);
      await exact('f2', 'requeued');
      await store.setChunkState('f2', 1, 'inflight', ['pending']);
      await store.recordDeliveries([event('f2', 'm3', { transactionNumber: 'U1' })]);
      await store.recordChunkResult('f2', 1, {
        state: 'accepted',
        attempts: 2,
        transactionNumber: 'U1',
        parts: [
          { messageIds: ['m1', 'm2', 'm3'], wholeChunk: true, outcome: 'sent', transactionNumber: 'U1' },
        ],
      });
      await exact('f2', 'sent again');
      expect(await store.counts('f2')).toMatchObject({ submitted: 3, delivered: 1, pendingDelivery: 2 });
      // the deadline: the rest UNKNOWN
      await store.expireDeliveries('f1');
      await store.expireDeliveries('f2');
      await exact('f1', 'expired');
      await exact('f2', 'expired');
      expect(await store.counts('f2')).toMatchObject({ unknown: 2, pendingDelivery: 0, undelivered: 2 });
      // f1 ingested again from scratch: nothing of its earlier rows counts; f2 untouched
      const f2 = await store.counts('f2');
      await store.clearRecipients('f1');
      await store.insertRecipients('f1', validRows(9, 3));
      await store.insertChunks('f1', chunksFor(9, 3));
      await exact('f1', 'cleared');
      expect(await store.counts('f1')).toMatchObject({
        delivered: 0,
        undelivered: 0,
        unknown: 0,
        submitted: 0,
      });
      expect(await store.counts('f2')).toEqual(f2);
    });

    it('counts of an unknown file are zero', async () => {
      const c = await store.counts('missing');
      expect(Object.values(c).every((v) => v === 0)).toBe(true);
    });

    it('reportPages: every record in idx order, in pages, with the report columns', async () => {
      await store.registerFile(newFile());
      await store.registerFile(newFile({ fileId: 'f2' }));
      await store.insertRecipients('f2', validRows(10, 10));
      const rows = validRows(12_000, 1000);
      rows[11_999] = {
        ...rows[11_999]!,
        number: null,
        messageId: null,
        chunkSeq: null,
        outcome: 'invalid',
        code: 'INVALID_NUMBER',
        detail: 'not a number',
        smsCount: null,
      };
      for (let i = 0; i < rows.length; i += 5000) await store.insertRecipients('f1', rows.slice(i, i + 5000));
      await store.insertChunks('f1', chunksFor(11_999, 1000));
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      h.clock.advance(1000);
      await store.recordChunkResult('f1', 1, {
        state: 'accepted',
        attempts: 1,
        transactionNumber: 'T1',
        parts: [{ messageIds: ['m1', 'm2'], outcome: 'sent', transactionNumber: 'T1' }],
      });
      await store.recordDeliveries([event('f1', 'm2')]);
      const pages = await collect(store.reportPages('f1'));
      expect(pages.length).toBeGreaterThan(1);
      const all = pages.flat();
      expect(all.map((r) => r.line)).toEqual(rows.map((r) => r.line));
      const full = await collect(store.recipients('f1'));
      const pick = (r: (typeof full)[number]) => ({
        line: r.line,
        number: r.number,
        value: r.value,
        messageId: r.messageId,
        outcome: r.outcome,
        code: r.code,
        status: r.status,
        transactionNumber: r.transactionNumber,
        smsCount: r.smsCount,
        updatedAt: r.updatedAt,
        detail: r.detail,
      });
      expect(all).toEqual(full.map(pick));
      expect(all[1]).toEqual({
        line: 3,
        number: '573000000002',
        value: '3000000002',
        messageId: 'm2',
        outcome: 'sent',
        code: null,
        status: DELIVERED,
        transactionNumber: 'T1',
        smsCount: 1,
        updatedAt: at(1000),
        detail: null,
      });
      expect(all[11_999]).toMatchObject({
        outcome: 'invalid',
        number: null,
        code: 'INVALID_NUMBER',
        detail: 'not a number',
        smsCount: null,
      });
      expect(await collect(store.reportPages('missing'))).toEqual([]);
    });

    it('recipients() pages over 12,000 rows in idx order', async () => {
      await store.registerFile(newFile());
      await store.registerFile(newFile({ fileId: 'f2' }));
      await store.insertRecipients('f2', validRows(10, 10));
      const rows = validRows(12_000, 1000);
      for (let i = 0; i < rows.length; i += 5000) await store.insertRecipients('f1', rows.slice(i, i + 5000));
      let expected = 1;
      let count = 0;
      for await (const r of store.recipients('f1')) {
        expect(r.idx).toBe(expected++);
        expect(r.fileId).toBe('f1');
        count++;
      }
      expect(count).toBe(12_000);
      await store.insertChunks('f1', chunksFor(12_000, 1000));
      await store.setChunkState('f1', 7, 'inflight', ['pending']);
      await store.markInflightInDoubt('f1');
      const doubt = await collect(store.recipients('f1', ['in_doubt']));
      expect(doubt.map((r) => r.idx)).toEqual(Array.from({ length: 1000 }, (_, i) => 6001 + i));
    });
  });

  describe('gauges (for /metrics)', () => {
    it('files by state, and the chunks in doubt of files not finished', async () => {
      expect(await store.gauges()).toEqual({ files: {}, chunksInDoubt: 0 });
      await sendingFile('f1', 4, 2);
      await sendingFile('f2', 2, 1);
      await store.registerFile(newFile({ fileId: 'f3' }));
      for (const [fileId, seq] of [
        ['f1', 1],
        ['f1', 2],
        ['f2', 1],
      ] as const)
        await store.setChunkState(fileId, seq, 'inflight', ['pending']);
      await store.markInflightInDoubt('f1');
      await store.markInflightInDoubt('f2');
      expect(await store.gauges()).toEqual({ files: { sending: 2, validating: 1 }, chunksInDoubt: 3 });
      // A finished file's chunks in doubt are history, not a worry.
      await store.transition('f2', 'cancelled');
      expect(await store.gauges()).toEqual({
        files: { sending: 1, validating: 1, cancelled: 1 },
        chunksInDoubt: 2,
      });
    });
  });
}
