// The store contract, ingest: recipients and chunks recorded, read back, cleared; what a chunk sends.
import { beforeEach, describe, expect, it } from 'vitest';
import { PENDING_DELIVERY, type RecipientInsert, type Store } from '../../../src/store/store.ts';
import {
  type ContractContext,
  chunksFor,
  collect,
  generatedRows,
  newFile,
  type StoreHarness,
  T0,
  validRows,
} from './helpers.ts';

export function ingest(t: ContractContext): void {
  let h: StoreHarness;
  let store: Store;
  const sendingFile = (fileId: string, n: number, chunkSize: number, rows?: RecipientInsert[]) =>
    t.sendingFile(fileId, n, chunkSize, rows);
  beforeEach(() => {
    h = t.h;
    store = t.store;
  });

  describe('email attachments', () => {
    const pdf = {
      name: 'factura.pdf',
      contentType: 'application/pdf',
      content: Buffer.from('%PDF').toString('base64'),
    };
    const txt = {
      name: 'terminos.txt',
      contentType: 'text/plain',
      content: Buffer.from('Términos').toString('base64'),
    };

    it('setAttachments keeps them in order; a second call replaces them; clearRecipients removes them', async () => {
      await store.registerFile(newFile({ fileId: 'a1' }));
      await store.registerFile(newFile({ fileId: 'a2', sha256: 'other' }));
      expect(await store.attachments('a1')).toEqual([]);
      await store.setAttachments('a1', [pdf, txt]);
      await store.setAttachments('a2', [txt]);
      expect(await store.attachments('a1')).toEqual([pdf, txt]);
      await store.setAttachments('a1', [txt]);
      expect(await store.attachments('a1')).toEqual([txt]);
      // A file read again starts without the attachments of its earlier read; others keep theirs.
      await store.clearRecipients('a1');
      expect(await store.attachments('a1')).toEqual([]);
      expect(await store.attachments('a2')).toEqual([txt]);
    });
  });

  describe("a bulk file's message", () => {
    it('is kept on the file: set by a patch, read back with it, listed, left by other patches', async () => {
      await store.registerFile(newFile({ fileId: 'b1' }));
      expect((await store.getFile('b1'))?.bulkText).toBeNull();
      const message = 'Aviso: su factura vence el viernes. "Gracias", ñandú 😀';
      const sending = await store.transition('b1', 'sending', {
        from: ['validating'],
        patch: { layout: 'bulk', bulkText: message },
      });
      expect(sending?.bulkText).toBe(message);
      expect((await store.getFile('b1'))?.bulkText).toBe(message);
      expect((await store.listFiles({})).find((f) => f.fileId === 'b1')?.bulkText).toBe(message);
      // A patch without it (a pause, a reason) leaves it; one with null clears it.
      await store.transition('b1', 'paused', { patch: { reason: 'held' } });
      await store.updateFile('b1', { reason: null });
      expect((await store.getFile('b1'))?.bulkText).toBe(message);
      await store.updateFile('b1', { bulkText: null });
      expect((await store.getFile('b1'))?.bulkText).toBeNull();
    });
  });

  describe('ingest and chunks', () => {
    it('insertRecipients and chunkRecipients: idx order, outcome filter, pending status', async () => {
      await store.registerFile(newFile());
      const rows = validRows(6, 3);
      const invalid: RecipientInsert = {
        idx: 7,
        line: 8,
        k: 0,
        number: null,
        value: '57300',
        messageId: 'bad',
        text: null,
        chunkSeq: null,
        outcome: 'invalid',
        code: 'INVALID_NUMBER',
        detail: 'not a valid mobile number',
        smsCount: null,
      };
      // inserted out of order, in two calls: the store orders by idx
      await store.insertRecipients('f1', [invalid, rows[5]!, rows[2]!, rows[4]!]);
      await store.insertRecipients('f1', [rows[0]!, rows[3]!, rows[1]!]);
      await store.insertChunks('f1', chunksFor(6, 3));

      const c1 = await store.chunkRecipients('f1', 1);
      expect(c1.map((r) => r.idx)).toEqual([1, 2, 3]);
      expect(c1[0]).toEqual({
        ...rows[0],
        fileId: 'f1',
        status: PENDING_DELIVERY,
        transactionNumber: null,
        updatedAt: T0.toISOString(),
      });
      expect((await store.chunkRecipients('f1', 2)).map((r) => r.messageId)).toEqual(['m4', 'm5', 'm6']);
      expect(await store.chunkRecipients('f1', 2, ['failed'])).toEqual([]);
      expect(await store.chunkRecipients('f1', 3)).toEqual([]);

      const chunks = await store.listChunks('f1');
      expect(chunks).toEqual([
        {
          fileId: 'f1',
          seq: 1,
          size: 3,
          state: 'pending',
          attempts: 0,
          transactionNumber: null,
          errorCode: null,
          errorMessage: null,
          updatedAt: T0.toISOString(),
        },
        expect.objectContaining({ seq: 2, size: 3, state: 'pending' }),
      ]);
      const all = await collect(store.recipients('f1'));
      expect(all.map((r) => r.idx)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(all[6]).toMatchObject({
        outcome: 'invalid',
        code: 'INVALID_NUMBER',
        value: '57300',
        number: null,
      });
      expect((await collect(store.recipients('f1', ['invalid']))).map((r) => r.idx)).toEqual([7]);
    });

    it('texts, values and messageIds come back exactly as recorded, whatever characters they hold', async () => {
      await store.registerFile(newFile());
      const odd = [
        'say "hi"',
        'back\\slash \\"',
        '{a,b}',
        'NULL',
        '',
        ' padded ',
        'línea\nnueva ñ 😀',
        "it's",
        // what COPY's text format escapes or reads specially
        'tab\there',
        'cr\r\nlf',
        '\\N',
        '\\t not a tab',
        'ends with \\',
      ];
      const rows = validRows(odd.length, odd.length).map((r, i) => ({
        ...r,
        text: odd[i]!,
        value: odd[(i + 1) % odd.length]!,
        messageId: `id ${odd[i]}`,
      }));
      await store.insertRecipients('f1', rows);
      await store.insertChunks('f1', [{ seq: 1, size: odd.length }]);
      const back = await collect(store.recipients('f1'));
      expect(back.map((r) => [r.text, r.value, r.messageId])).toEqual(
        rows.map((r) => [r.text, r.value, r.messageId]),
      );
      expect((await store.chunkDestinations('f1', 1)).map((d) => d.text)).toEqual(odd);
    });

    it('clearRecipients removes the recipients and chunks of one file', async () => {
      await sendingFile('f1', 5, 2);
      await sendingFile('f2', 3, 2);
      await store.clearRecipients('f1');
      expect(await collect(store.recipients('f1'))).toEqual([]);
      expect(await store.listChunks('f1')).toEqual([]);
      expect(await collect(store.recipients('f2'))).toHaveLength(3);
      // and the file can be ingested again
      await store.insertRecipients('f1', validRows(5, 2));
      await store.insertChunks('f1', chunksFor(5, 2));
      expect(await store.listChunks('f1')).toHaveLength(3);
    });

    it("a failed insertRecipients leaves nothing behind: the next file's rows stay its own through the retry", async () => {
      await store.registerFile(newFile({ fileId: 'f1' }));
      // The batch fails inside its transaction (an idx out of range), as SQLITE_FULL would.
      await expect(
        store.insertRecipients('f1', [...validRows(2, 2), { ...validRows(1, 2)[0]!, idx: -1 }]),
      ).rejects.toThrow();
      await store.registerFile(newFile({ fileId: 'f2' }));
      const f2 = validRows(3, 2).map((r) => ({ ...r, number: `f2-${r.idx}` }));
      await store.insertRecipients('f2', f2);
      // f1 is ingested again: its clear and its rows touch only f1
      await store.clearRecipients('f1');
      await store.insertRecipients('f1', validRows(5, 2));
      expect((await collect(store.recipients('f2'))).map((r) => r.number)).toEqual(['f2-1', 'f2-2', 'f2-3']);
      expect(await collect(store.recipients('f1'))).toHaveLength(5);
      await store.clearRecipients('f1');
      expect(await collect(store.recipients('f2'))).toHaveLength(3);
    });

    it('setChunkState is a compare-and-set; entering inflight counts an attempt', async () => {
      await sendingFile('f1', 4, 2);
      expect(await store.setChunkState('f1', 1, 'inflight', ['inflight'])).toBe(false);
      expect(await store.setChunkState('f1', 1, 'inflight', ['pending'])).toBe(true);
      expect(await store.setChunkState('f1', 1, 'inflight', ['pending'])).toBe(false);
      expect(await store.setChunkState('f1', 1, 'pending', ['inflight'])).toBe(true);
      expect(await store.setChunkState('f1', 1, 'inflight', ['pending', 'failed'])).toBe(true);
      expect(await store.setChunkState('f1', 9, 'inflight', ['pending'])).toBe(false);
      const chunks = await store.listChunks('f1');
      expect(chunks.map((c) => [c.seq, c.state, c.attempts])).toEqual([
        [1, 'inflight', 2],
        [2, 'pending', 0],
      ]);
      expect((await store.listChunks('f1', ['inflight'])).map((c) => c.seq)).toEqual([1]);
      expect((await store.listChunks('f1', ['pending', 'failed'])).map((c) => c.seq)).toEqual([2]);
    });

    it("setChunkState with an owner: only while that owner holds the file's lease (fencing)", async () => {
      await sendingFile('f1', 4, 2);
      // Nobody holds it: refused for an owner, as for a worker whose lease was released.
      expect(await store.setChunkState('f1', 1, 'inflight', ['pending'], { owner: 'w1' })).toBe(false);
      expect(await store.takeLease('f1', 'w1', 10_000)).toBe(true);
      expect(await store.setChunkState('f1', 1, 'inflight', ['pending'], { owner: 'w2' })).toBe(false);
      expect(await store.setChunkState('f1', 1, 'inflight', ['pending'], { owner: 'w1' })).toBe(true);
      // w1 stalls past its lease; w2 takes the file over: w1 starts no chunk any more.
      h.clock.advance(10_001);
      expect(await store.takeLease('f1', 'w2', 10_000)).toBe(true);
      expect(await store.setChunkState('f1', 2, 'inflight', ['pending'], { owner: 'w1' })).toBe(false);
      // w2's lease lapses with nobody taking the file: no chunk starts until it is renewed.
      h.clock.advance(10_001);
      expect(await store.setChunkState('f1', 2, 'inflight', ['pending'], { owner: 'w2' })).toBe(false);
      expect(await store.renewLease('f1', 'w2', 10_000)).toBe(true);
      expect(await store.setChunkState('f1', 2, 'inflight', ['pending'], { owner: 'w2' })).toBe(true);
      expect((await store.listChunks('f1')).map((c) => [c.seq, c.state, c.attempts])).toEqual([
        [1, 'inflight', 1],
        [2, 'inflight', 1],
      ]);
    });

    it('setChunkState with a file state: no chunk starts once the file was paused or cancelled', async () => {
      await sendingFile('f1', 4, 2);
      expect(await store.takeLease('f1', 'w1', 10_000)).toBe(true);
      const guard = { owner: 'w1', fileState: 'sending' } as const;
      expect(await store.setChunkState('f1', 1, 'inflight', ['pending'], guard)).toBe(true);
      // A user pauses the file between two chunks: the next one stays pending.
      expect(await store.transition('f1', 'paused', { from: ['sending'] })).not.toBeNull();
      expect(await store.setChunkState('f1', 2, 'inflight', ['pending'], guard)).toBe(false);
      expect(await store.setChunkState('f1', 2, 'inflight', ['pending'], { fileState: 'sending' })).toBe(
        false,
      );
      expect(await store.setChunkState('f1', 2, 'inflight', ['pending'], { fileState: 'paused' })).toBe(true);
      expect((await store.listChunks('f1')).map((c) => [c.seq, c.state])).toEqual([
        [1, 'inflight'],
        [2, 'inflight'],
      ]);
    });
  });

  describe('chunkDestinations', () => {
    it("the chunk's pending recipients in idx order: number, messageId and text only", async () => {
      await store.registerFile(newFile());
      const rows = validRows(5, 5);
      rows[3] = { ...rows[3]!, text: null };
      // inserted out of order: the store orders by idx
      await store.insertRecipients('f1', [rows[4]!, rows[2]!, rows[0]!]);
      await store.insertRecipients('f1', [rows[3]!, rows[1]!]);
      await store.insertRecipients(
        'f1',
        validRows(2, 2, 6).map((r) => ({ ...r, chunkSeq: 2 })),
      );
      await store.insertChunks('f1', [
        { seq: 1, size: 5 },
        { seq: 2, size: 2 },
      ]);
      expect(await store.chunkDestinations('f1', 1)).toEqual([
        { number: '573000000001', messageId: 'm1', text: 'hello 1' },
        { number: '573000000002', messageId: 'm2', text: 'hello 2' },
        { number: '573000000003', messageId: 'm3', text: 'hello 3' },
        { number: '573000000004', messageId: 'm4', text: null },
        { number: '573000000005', messageId: 'm5', text: 'hello 5' },
      ]);
      // only pending ones: a retried chunk resends what the service did not take
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      await store.recordChunkResult('f1', 1, {
        state: 'failed',
        attempts: 1,
        parts: [
          { messageIds: ['m1', 'm3'], outcome: 'sent', transactionNumber: 'T1' },
          { messageIds: ['m2', 'm4', 'm5'], outcome: 'failed', code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE' },
        ],
      });
      expect(await store.chunkDestinations('f1', 1)).toEqual([]);
      await store.requeueChunks('f1', ['failed']);
      expect((await store.chunkDestinations('f1', 1)).map((d) => d.messageId)).toEqual(['m2', 'm4', 'm5']);
      expect((await store.chunkDestinations('f1', 2)).map((d) => d.messageId)).toEqual(['m6', 'm7']);
      expect(await store.chunkDestinations('f1', 3)).toEqual([]);
      expect(await store.chunkDestinations('f2', 1)).toEqual([]);
    });
  });
  describe('chunkMessageIds', () => {
    const n = (i: number) => String(573000000000 + i);

    it("a chunk's recipients by number: the file's own messageIds; numbers not in the chunk left out", async () => {
      await sendingFile('f1', 6, 3);
      expect(await store.chunkMessageIds('f1', 2, [n(4), n(6), n(1), n(9), n(4)])).toEqual(
        new Map([
          [n(4), 'm4'],
          [n(6), 'm6'],
        ]),
      );
      expect(await store.chunkMessageIds('f1', 1, [n(1), n(2), n(3)])).toEqual(
        new Map([
          [n(1), 'm1'],
          [n(2), 'm2'],
          [n(3), 'm3'],
        ]),
      );
      // Numbers as stored (digits, country code first): another form is not looked for.
      expect(await store.chunkMessageIds('f1', 1, [`+${n(1)}`, n(1).slice(2)])).toEqual(new Map());
      // Whatever became of the recipients since: the chunk and its numbers decide.
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      await store.recordChunkResult('f1', 1, {
        state: 'accepted',
        attempts: 1,
        parts: [
          { messageIds: ['m1', 'm3'], outcome: 'sent', transactionNumber: 'T1' },
          { messageIds: ['m2'], outcome: 'rejected', code: 'E' },
        ],
      });
      expect([...(await store.chunkMessageIds('f1', 1, [n(3), n(2)])).entries()].sort()).toEqual([
        [n(2), 'm2'],
        [n(3), 'm3'],
      ]);
    });

    it("generated messageIds (<fileId>-<line>[-<k>]), bulk parts included; another chunk's numbers are not returned", async () => {
      await store.registerFile(newFile());
      await store.registerFile(newFile({ fileId: 'f2' }));
      await store.insertRecipients('f1', generatedRows('f1'));
      await store.insertRecipients('f2', generatedRows('f2'));
      for (const f of ['f1', 'f2'])
        await store.insertChunks(f, [
          { seq: 1, size: 4 },
          { seq: 2, size: 3 },
        ]);
      // Chunk 1: line 1's three numbers (k 1..3) and line 2; chunk 2: own-5, f1-4-1, and line 10
      // (recorded without a messageId) whose number is also line 1's first; the invalid line 9
      // has that number too but no chunk.
      expect(await store.chunkMessageIds('f1', 1, [n(1), n(3), n(4), n(5), n(6), n(9)])).toEqual(
        new Map([
          [n(1), 'f1-1-1'],
          [n(3), 'f1-1-3'],
          [n(4), 'f1-2-1'],
        ]),
      );
      expect(await store.chunkMessageIds('f1', 2, [n(1), n(2), n(5), n(6)])).toEqual(
        new Map([
          [n(5), 'own-5'],
          [n(6), 'f1-4-1'],
        ]),
      );
      // Each file's own ids.
      expect(await store.chunkMessageIds('f2', 1, [n(2)])).toEqual(new Map([[n(2), 'f2-1-2']]));
    });

    it('an unknown file or chunk, no numbers, or a seq no chunk can have: an empty map', async () => {
      await sendingFile('f1', 4, 2);
      expect(await store.chunkMessageIds('f1', 3, [n(1)])).toEqual(new Map());
      expect(await store.chunkMessageIds('f1', 0, [n(1)])).toEqual(new Map());
      expect(await store.chunkMessageIds('nope', 1, [n(1)])).toEqual(new Map());
      expect(await store.chunkMessageIds('', 1, [n(1)])).toEqual(new Map());
      expect(await store.chunkMessageIds('f1', 1, [])).toEqual(new Map());
      expect(await store.chunkMessageIds('f1', 2 ** 31, [n(1)])).toEqual(new Map());
      expect(await store.chunkMessageIds('f1', -1, [n(1)])).toEqual(new Map());
      expect(await store.chunkMessageIds('f1', 1.5, [n(1)])).toEqual(new Map());
      expect(await store.chunkMessageIds('f\u0000', 1, [n(1), 'a\u0000'])).toEqual(new Map());
      expect(await store.chunkMessageIds('f1', 1, [n(1), 'a\u0000'])).toEqual(new Map([[n(1), 'm1']]));
    });
  });
}
