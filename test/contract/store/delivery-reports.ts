// The store contract, delivery reports: idempotency, matching, orphans, settlement of in-doubt chunks, expiry.
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
  collect,
  event,
  generatedReport,
  generatedRows,
  newFile,
  numberOf,
  type StoreHarness,
  validRows,
} from './helpers.ts';

export function deliveryReports(t: ContractContext): void {
  let h: StoreHarness;
  let store: Store;
  const at = (ms: number) => t.at(ms);
  const sendingFile = (fileId: string, n: number, chunkSize: number, rows?: RecipientInsert[]) =>
    t.sendingFile(fileId, n, chunkSize, rows);
  beforeEach(() => {
    h = t.h;
    store = t.store;
  });

  describe('delivery reports', () => {
    async function submitted(
      fileId: string,
      n: number,
      chunkSize: number,
      rows = validRows(n, chunkSize),
    ): Promise<void> {
      await sendingFile(fileId, n, chunkSize, rows);
      for (let seq = 1; (seq - 1) * chunkSize < n; seq++) {
        await store.setChunkState(fileId, seq, 'inflight', ['pending']);
        const ids = rows.filter((r) => r.chunkSeq === seq).map((r) => r.messageId!);
        await store.recordChunkResult(fileId, seq, {
          state: 'accepted',
          attempts: 1,
          transactionNumber: `T${seq}`,
          parts: [{ messageIds: ids, outcome: 'sent', transactionNumber: `T${seq}` }],
        });
      }
    }

    it('a recipient delivered stays delivered: a failure reported later for another of its sends (a resend after doubt) does not undo it', async () => {
      await submitted('f1', 4, 4);
      // m1 sent twice (T1, then a resend T9): its handset got T9's; T1's failure arrives last
      // (the service keeps no order of its reports: docs/notify.md "Duplicates, ordering and orphans").
      await store.recordDeliveries([event('f1', 'm1', { transactionNumber: 'T9' })]);
      await store.recordDeliveries([event('f1', 'm1', { transactionNumber: 'T1', status: 'NO_SUCCESS' })]);
      // m2: the failure first, then the delivery.
      await store.recordDeliveries([event('f1', 'm2', { transactionNumber: 'T1', status: 'NO_SUCCESS' })]);
      await store.recordDeliveries([event('f1', 'm2', { transactionNumber: 'T9' })]);
      // m3: failed only.
      await store.recordDeliveries([event('f1', 'm3', { transactionNumber: 'T1', status: 'NO_SUCCESS' })]);
      const counts = await store.counts('f1');
      expect(counts.delivered).toBe(2);
      expect(counts.undelivered).toBe(1);
      const status = new Map((await collect(store.recipients('f1'))).map((r) => [r.messageId, r.status]));
      expect([status.get('m1'), status.get('m2'), status.get('m3')]).toEqual([
        DELIVERED,
        DELIVERED,
        'NO_SUCCESS',
      ]);
    });

    it('a report naming a line or part beyond any file is an orphan beside the good ones, never a failed batch', async () => {
      await submitted('f1', 4, 4);
      const d = await store.recordDeliveries([
        event('f1', 'm1'),
        // Generated-looking ids whose line or part no file can have (PostgreSQL's int is 32 bits).
        event('f1', 'f1-3000000000', { transactionNumber: 'tx-huge-line' }),
        event('f1', 'f1-1-9999999999', { transactionNumber: 'tx-huge-part' }),
        event('f1', 'm2'),
      ]);
      expect(d).toMatchObject({ recorded: 4, duplicates: 0, orphans: 2 });
      const counts = await store.counts('f1');
      expect(counts.delivered).toBe(2);
    });

    it('generated messageIds (<fileId>-<line>[-<k>]) read back and match chunk results and delivery reports', async () => {
      await store.registerFile(newFile());
      await store.registerFile(newFile({ fileId: 'f2' }));
      const rows = generatedRows('f1');
      await store.insertRecipients('f2', generatedRows('f2'));
      await store.insertRecipients('f1', rows);
      await store.insertChunks('f1', [
        { seq: 1, size: 4 },
        { seq: 2, size: 3 },
      ]);
      const back: RecipientInsert[] = [];
      for await (const r of store.recipients('f1')) {
        const { fileId, status, transactionNumber, updatedAt, ...insert } = r;
        expect(fileId).toBe('f1');
        back.push(insert);
      }
      expect(back).toEqual(rows);
      expect((await store.chunkDestinations('f1', 1)).map((d) => d.messageId)).toEqual([
        'f1-1-1',
        'f1-1-2',
        'f1-1-3',
        'f1-2-1',
      ]);
      expect((await store.chunkRecipients('f1', 2)).map((r) => r.messageId)).toEqual([
        'own-5',
        'f1-4-1',
        null,
      ]);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      await store.recordChunkResult('f1', 1, {
        state: 'accepted',
        attempts: 1,
        parts: [
          { messageIds: ['f1-1-1', 'f1-1-3'], outcome: 'sent', transactionNumber: 'T1' },
          { messageIds: ['f1-1-2', 'f1-2-1'], outcome: 'rejected', code: 'E' },
        ],
      });
      const out = await store.chunkRecipients('f1', 1);
      expect(out.map((r) => r.outcome)).toEqual(['sent', 'rejected', 'sent', 'rejected']);
      const d = await store.recordDeliveries([
        generatedReport('f1', 'f1-1-3'),
        generatedReport('f1', 'own-5'),
        generatedReport('f1', 'f1-01-1'),
        generatedReport('f1', 'f1-4-1'),
        generatedReport('f1', 'f1-9-1'),
        generatedReport('f1', 'f2-1-1'),
        generatedReport('f1', 'f1-3-1'),
      ]);
      // own-5 and f1-4-1 match recipients of chunk 2; f1-01-1, f1-9-1 (invalid), f2-1-1 and
      // f1-3-1 (line 3 has its own messageId) do not
      expect(d).toMatchObject({ recorded: 7, orphans: 4 });
      const statuses = (await store.chunkRecipients('f1', 1)).map((r) => r.status);
      expect(statuses).toEqual(['pending', 'pending', 'DELIVERED_TO_HANDSET', 'pending']);
      expect((await store.chunkRecipients('f1', 2)).map((r) => r.status)).toEqual([
        'DELIVERED_TO_HANDSET',
        'DELIVERED_TO_HANDSET',
        'pending',
      ]);
      expect((await store.counts('f2')).delivered).toBe(0);
      let reportIds: (string | null)[] = [];
      for await (const page of store.reportPages('f1'))
        reportIds = reportIds.concat(page.map((r) => r.messageId));
      expect(reportIds).toEqual(rows.map((r) => r.messageId));
    });

    it('is idempotent on (transactionNumber, to)', async () => {
      await submitted('f1', 3, 3);
      h.clock.advance(100);
      const e = event('f1', 'm1', { transactionNumber: 'T1', smsCount: 2 });
      expect(await store.recordDeliveries([e, e])).toEqual({
        recorded: 1,
        duplicates: 1,
        orphans: 0,
        fileIds: ['f1'],
      });
      h.clock.advance(100);
      expect(await store.recordDeliveries([{ ...e, status: 'NO_SUCCESS' }])).toEqual({
        recorded: 0,
        duplicates: 1,
        orphans: 0,
        fileIds: [],
      });
      const r = (await store.chunkRecipients('f1', 1))[0];
      expect(r).toMatchObject({
        status: DELIVERED,
        smsCount: 2,
        transactionNumber: 'T1',
        updatedAt: at(100),
      });
      expect(await store.counts('f1')).toMatchObject({ delivered: 1, undelivered: 0, pendingDelivery: 2 });
      expect(await store.recordDeliveries([])).toEqual({
        recorded: 0,
        duplicates: 0,
        orphans: 0,
        fileIds: [],
      });
    });

    it('a batch of 300 reports: generated and own ids, a recipient reported twice, repeats and orphans', async () => {
      // Rows 1-200 carry the generated id <fileId>-<line>; 201-299 ids of the file's own;
      // row 300 an own id that only looks generated (no valid row is on line 9999).
      const rows = validRows(300, 100).map((r) => ({
        ...r,
        messageId: r.idx <= 200 ? `f1-${r.line}` : r.idx < 300 ? `own${r.idx}` : 'f1-9999',
      }));
      await submitted('f1', 300, 100, rows);
      h.clock.advance(100);
      const events = rows.map((r) =>
        event('f1', r.messageId!, {
          to: r.number!,
          status: r.idx === 1 || r.idx % 3 === 0 ? 'NO_SUCCESS' : DELIVERED,
          smsCount: 1 + (r.idx % 2),
        }),
      );
      const orphans = [event('f1', 'f1-9998'), event('f1', 'nobody'), event('f1', '')];
      // Row 1 reported twice in one statement's piece, under two transactions: the later status
      // wins (two failures; a delivery would stay, whatever came after it).
      const again = event('f1', 'f1-2', {
        transactionNumber: 'tx-again',
        to: rows[0]!.number!,
        status: 'EXPIRED',
        smsCount: 2,
      });
      const batch = [
        events[0]!,
        again,
        ...events.slice(1, 150),
        events[7]!,
        ...orphans,
        ...events.slice(150),
      ];
      expect(await store.recordDeliveries(batch)).toEqual({
        recorded: 304,
        duplicates: 1,
        orphans: 3,
        fileIds: ['f1'],
      });
      const read = (await collect(store.recipients('f1'))).map((r) => [r.messageId, r.status, r.smsCount]);
      expect(read).toEqual(
        rows.map((r) => [
          r.messageId,
          r.idx === 1 ? 'EXPIRED' : r.idx % 3 === 0 ? 'NO_SUCCESS' : DELIVERED,
          1 + (r.idx % 2),
        ]),
      );
      expect(await store.counts('f1')).toMatchObject({
        delivered: 199,
        undelivered: 101,
        pendingDelivery: 0,
      });
      // The same batch again changes nothing.
      expect(await store.recordDeliveries(batch)).toEqual({
        recorded: 0,
        duplicates: 305,
        orphans: 0,
        fileIds: [],
      });
    });

    it('keeps reports for unknown messageIds and bulkIds as orphans', async () => {
      await submitted('f1', 2, 2);
      const unknownMessage = event('f1', 'nope');
      const unknownBulk = event('someone-else', 'm1');
      const known = event('f1', 'm2');
      expect(await store.recordDeliveries([unknownMessage, unknownBulk, known])).toEqual({
        recorded: 3,
        duplicates: 0,
        orphans: 2,
        fileIds: ['f1'],
      });
      // an orphan seen again is a duplicate, not a second orphan
      expect(await store.recordDeliveries([unknownMessage])).toEqual({
        recorded: 0,
        duplicates: 1,
        orphans: 0,
        fileIds: [],
      });
      expect((await store.chunkRecipients('f1', 1)).map((r) => r.status)).toEqual([
        PENDING_DELIVERY,
        DELIVERED,
      ]);
    });

    it("a report whose `to` is not the recipient's number is an orphan, not a status change", async () => {
      await submitted('f1', 2, 2);
      const forged = event('f1', 'm1', { to: '573119999999', status: 'NO_SUCCESS' });
      expect(await store.recordDeliveries([forged])).toEqual({
        recorded: 1,
        duplicates: 0,
        orphans: 1,
        fileIds: [],
      });
      expect((await store.chunkRecipients('f1', 1)).map((r) => r.status)).toEqual([
        PENDING_DELIVERY,
        PENDING_DELIVERY,
      ]);
      expect(await store.counts('f1')).toMatchObject({ delivered: 0, undelivered: 0, pendingDelivery: 2 });
      // the recipient's own report applies; the number written with a + is the same number
      const own = event('f1', 'm1', { to: `+${numberOf('m1')}` });
      expect(await store.recordDeliveries([own, forged])).toMatchObject({ recorded: 1, orphans: 0 });
      expect((await store.chunkRecipients('f1', 1)).map((r) => r.status)).toEqual([
        DELIVERED,
        PENDING_DELIVERY,
      ]);
    });

    it('does not match invalid or duplicate rows that carry a messageId', async () => {
      await store.registerFile(newFile());
      await store.insertRecipients('f1', [
        {
          ...validRows(1, 1)[0]!,
          messageId: 'dup',
          chunkSeq: null,
          outcome: 'invalid',
          code: 'DUPLICATE_MESSAGE_ID',
        },
      ]);
      expect((await store.recordDeliveries([event('f1', 'dup')])).orphans).toBe(1);
      expect((await collect(store.recipients('f1')))[0]?.status).toBe(PENDING_DELIVERY);
    });

    it('a report that arrives before the chunk result sticks', async () => {
      await sendingFile('f1', 2, 2);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      expect((await store.recordDeliveries([event('f1', 'm1', { transactionNumber: 'T1' })])).recorded).toBe(
        1,
      );
      expect((await store.chunkRecipients('f1', 1))[0]).toMatchObject({
        outcome: 'pending',
        status: DELIVERED,
      });
      expect(
        await store.recordChunkResult('f1', 1, {
          state: 'accepted',
          attempts: 1,
          transactionNumber: 'T1',
          parts: [{ messageIds: ['m1', 'm2'], outcome: 'sent', transactionNumber: 'T1' }],
        }),
      ).toBe('accepted');
      const rs = await store.chunkRecipients('f1', 1);
      expect(rs.map((r) => [r.outcome, r.status, r.transactionNumber])).toEqual([
        ['sent', DELIVERED, 'T1'],
        ['sent', PENDING_DELIVERY, 'T1'],
      ]);
      expect(await store.counts('f1')).toMatchObject({ submitted: 2, delivered: 1, pendingDelivery: 1 });
    });

    it('an in-doubt result for a chunk that already has a report is recorded accepted', async () => {
      await sendingFile('f1', 3, 3);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      await store.recordDeliveries([event('f1', 'm2', { status: 'NO_SUCCESS' })]);
      const state = await store.recordChunkResult('f1', 1, {
        state: 'in_doubt',
        attempts: 1,
        errorCode: 'DROPLINE_ERR_SERVICE_IN_DOUBT',
        parts: [
          { messageIds: ['m1', 'm2', 'm3'], outcome: 'in_doubt', code: 'DROPLINE_ERR_SERVICE_IN_DOUBT' },
        ],
      });
      expect(state).toBe('accepted');
      expect((await store.listChunks('f1'))[0]?.state).toBe('accepted');
      expect((await store.chunkRecipients('f1', 1)).map((r) => [r.outcome, r.status])).toEqual([
        ['sent', PENDING_DELIVERY],
        ['sent', 'NO_SUCCESS'],
        ['sent', PENDING_DELIVERY],
      ]);
      expect(await store.counts('f1')).toMatchObject({ chunksAccepted: 1, chunksInDoubt: 0, inDoubt: 0 });
    });

    it('an in-doubt result without reports stays in doubt', async () => {
      await sendingFile('f1', 2, 2);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      const state = await store.recordChunkResult('f1', 1, {
        state: 'in_doubt',
        attempts: 1,
        errorCode: 'DROPLINE_ERR_SERVICE_IN_DOUBT',
        parts: [{ messageIds: ['m1', 'm2'], outcome: 'in_doubt', code: 'DROPLINE_ERR_SERVICE_IN_DOUBT' }],
      });
      expect(state).toBe('in_doubt');
      expect(await store.counts('f1')).toMatchObject({ chunksInDoubt: 1, inDoubt: 2, submitted: 0 });
    });

    it('a report settles an in-doubt chunk: accepted, its in-doubt recipients sent', async () => {
      await sendingFile('f1', 4, 2);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      await store.setChunkState('f1', 2, 'inflight', ['pending']);
      await store.markInflightInDoubt('f1');
      expect(await store.counts('f1')).toMatchObject({ chunksInDoubt: 2, inDoubt: 4 });
      const result = await store.recordDeliveries([event('f1', 'm2', { transactionNumber: 'T9' })]);
      expect(result).toEqual({ recorded: 1, duplicates: 0, orphans: 0, fileIds: ['f1'] });
      expect((await store.listChunks('f1')).map((c) => c.state)).toEqual(['accepted', 'in_doubt']);
      expect(
        (await store.chunkRecipients('f1', 1)).map((r) => [r.outcome, r.status, r.transactionNumber]),
      ).toEqual([
        ['sent', PENDING_DELIVERY, null],
        ['sent', DELIVERED, 'T9'],
      ]);
      expect(await store.counts('f1')).toMatchObject({
        chunksAccepted: 1,
        chunksInDoubt: 1,
        inDoubt: 2,
        submitted: 2,
        delivered: 1,
        pendingDelivery: 1,
      });
    });

    it('a report received before a crash settles the chunk when it is found inflight', async () => {
      await sendingFile('f1', 2, 2);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      await store.recordDeliveries([event('f1', 'm1')]);
      expect(await store.markInflightInDoubt('f1')).toBe(1);
      expect((await store.listChunks('f1'))[0]?.state).toBe('accepted');
      expect(await store.counts('f1')).toMatchObject({
        submitted: 2,
        inDoubt: 0,
        delivered: 1,
        pendingDelivery: 1,
      });
    });

    it('expireDeliveries marks submitted recipients still pending UNKNOWN', async () => {
      await submitted('f1', 4, 4);
      await store.recordDeliveries([event('f1', 'm1'), event('f1', 'm2', { status: 'NO_SUCCESS' })]);
      h.clock.advance(72 * 3600_000);
      expect(await store.expireDeliveries('f1')).toBe(2);
      expect(await store.expireDeliveries('f1')).toBe(0);
      const rs = await store.chunkRecipients('f1', 1);
      expect(rs.map((r) => r.status)).toEqual([DELIVERED, 'NO_SUCCESS', UNKNOWN_DELIVERY, UNKNOWN_DELIVERY]);
      expect(rs[2]?.updatedAt).toBe(at(72 * 3600_000));
      expect(await store.counts('f1')).toMatchObject({
        submitted: 4,
        delivered: 1,
        undelivered: 3,
        unknown: 2,
        pendingDelivery: 0,
      });
      // a late report still counts
      await store.recordDeliveries([event('f1', 'm3')]);
      expect(await store.counts('f1')).toMatchObject({ delivered: 2, undelivered: 2, unknown: 1 });
    });
  });
}
