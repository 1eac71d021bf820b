// The conformance suite every Store implementation passes (src/store/store.ts is the spec).
// An implementation's test file calls storeContract() with a factory that returns a fresh,
// migrated store on an empty database and a clock the store reads its time from.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type ChunkInsert,
  type ChunkResult,
  DELIVERED,
  type DeliveryEvent,
  type NewFile,
  PENDING_DELIVERY,
  type RecipientInsert,
  type Store,
  UNKNOWN_DELIVERY,
} from '../../src/store/store.ts';

export interface TestClock {
  set(d: Date): void;
  advance(ms: number): void;
}

export interface StoreHarness {
  store: Store;
  clock: TestClock;
  /**
   * Another store on the same database, on the same clock, as a second process would open
   * it (not migrated). Optional: without it the tests that need two instances use one.
   */
  reopen?(): Promise<Store>;
  cleanup(): Promise<void>;
}

export const T0 = new Date('2026-03-01T12:00:00.000Z');

const INGEST = { records: 0, valid: 0, invalid: 0, duplicates: 0, suppressed: 0, segments: 0 };

export function newFile(overrides: Partial<NewFile> = {}): NewFile {
  const fileId = overrides.fileId ?? 'f1';
  return {
    fileId,
    source: 'local',
    name: `${fileId}.txt`,
    path: `inbox/${fileId}.txt`,
    sha256: `sha-${fileId}`,
    bytes: 100,
    state: 'validating',
    ...overrides,
  };
}

/** Valid recipients 1..n, messageIds m1..mn, planned into chunks of `chunkSize` (seq 1..). */
export function validRows(n: number, chunkSize: number, first = 1): RecipientInsert[] {
  const rows: RecipientInsert[] = [];
  for (let idx = first; idx < first + n; idx++) {
    rows.push({
      idx,
      line: idx + 1,
      k: 0,
      number: String(573000000000 + idx),
      value: String(3000000000 + idx),
      messageId: `m${idx}`,
      text: `hello ${idx}`,
      chunkSeq: Math.floor((idx - 1) / chunkSize) + 1,
      outcome: 'pending',
      code: null,
      detail: null,
      smsCount: 1,
    });
  }
  return rows;
}

function chunksFor(n: number, chunkSize: number): ChunkInsert[] {
  const chunks: ChunkInsert[] = [];
  for (let seq = 1; (seq - 1) * chunkSize < n; seq++) {
    chunks.push({ seq, size: Math.min(chunkSize, n - (seq - 1) * chunkSize) });
  }
  return chunks;
}

/** The number validRows gives the recipient with this messageId (a report names it by both). */
export function numberOf(messageId: string): string {
  const m = /^m(\d+)$/.exec(messageId);
  return m ? String(573000000000 + Number(m[1])) : `57300${messageId}`;
}

function event(fileId: string, messageId: string, overrides: Partial<DeliveryEvent> = {}): DeliveryEvent {
  return {
    transactionNumber: `tx-${fileId}-${messageId}`,
    to: numberOf(messageId),
    messageId,
    bulkId: fileId,
    callbackData: null,
    smsCount: 1,
    status: DELIVERED,
    receivedAt: T0.toISOString(),
    ...overrides,
  };
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of iterable) out.push(x);
  return out;
}

export function storeContract(name: string, factory: () => Promise<StoreHarness>): void {
  describe(`Store contract: ${name}`, () => {
    let h: StoreHarness;
    let store: Store;
    const at = (ms: number) => new Date(T0.getTime() + ms).toISOString();

    beforeEach(async () => {
      h = await factory();
      store = h.store;
      h.clock.set(T0);
    });
    afterEach(async () => {
      await h.cleanup();
    });

    /** A file with `n` valid recipients in chunks of `chunkSize`, in state sending. */
    async function sendingFile(
      fileId: string,
      n: number,
      chunkSize: number,
      rows = validRows(n, chunkSize),
    ): Promise<void> {
      await store.registerFile(newFile({ fileId }));
      await store.transition(fileId, 'sending', {
        patch: { counts: { ...INGEST, records: n, valid: n, segments: n } },
      });
      await store.insertRecipients(fileId, rows);
      await store.insertChunks(fileId, chunksFor(n, chunkSize));
    }

    describe('migrations', () => {
      it('migrate() is idempotent, also from another instance on the same database', async () => {
        await store.migrate();
        await store.migrate();
        await store.ping();
        await store.registerFile(newFile());
        if (h.reopen) {
          const other = await h.reopen();
          await other.migrate();
          await other.ping();
          expect((await other.getFile('f1'))?.fileId).toBe('f1');
          await other.close();
        }
        expect((await store.getFile('f1'))?.state).toBe('validating');
      });
    });

    describe('files', () => {
      it('registerFile records a file with its initial state timestamp', async () => {
        const { file, created } = await store.registerFile(newFile({ forced: true }));
        expect(created).toBe(true);
        expect(file).toMatchObject({
          fileId: 'f1',
          source: 'local',
          name: 'f1.txt',
          path: 'inbox/f1.txt',
          sha256: 'sha-f1',
          bytes: 100,
          state: 'validating',
          layout: null,
          header: false,
          counts: INGEST,
          rejection: null,
          reason: null,
          forced: true,
          possibleDuplicates: 0,
          errors: [],
          createdAt: T0.toISOString(),
          updatedAt: T0.toISOString(),
          timestamps: { validating: T0.toISOString() },
          deliveryDeadline: null,
          leaseOwner: null,
          leaseUntil: null,
        });
        expect(await store.getFile('f1')).toEqual(file);
        expect(await store.getFile('nope')).toBeNull();
      });

      it('registerFile is unique on (source, path, sha256) and on fileId', async () => {
        await store.registerFile(newFile());
        h.clock.advance(1000);
        const again = await store.registerFile(
          newFile({ fileId: 'other', name: 'f1.txt', path: 'inbox/f1.txt', sha256: 'sha-f1' }),
        );
        expect(again.created).toBe(false);
        expect(again.file.fileId).toBe('f1');
        expect(again.file.createdAt).toBe(T0.toISOString());
        const sameId = await store.registerFile(newFile({ path: 'processing/f1.txt' }));
        expect(sameId.created).toBe(false);
        expect(sameId.file.path).toBe('inbox/f1.txt');
        // Another source, or other content at the same path, is another file.
        expect((await store.registerFile(newFile({ fileId: 'f2', source: 'sftp' }))).created).toBe(true);
        expect((await store.registerFile(newFile({ fileId: 'f3', sha256: 'sha-other' }))).created).toBe(true);
        expect(await store.getFile('other')).toBeNull();
      });

      it('transition is a compare-and-set on the state', async () => {
        await store.registerFile(newFile());
        h.clock.advance(1000);
        expect(await store.transition('f1', 'sending', { from: ['scheduled', 'paused'] })).toBeNull();
        expect((await store.getFile('f1'))?.state).toBe('validating');
        expect((await store.getFile('f1'))?.timestamps.sending).toBeUndefined();
        const moved = await store.transition('f1', 'sending', { from: ['validating'] });
        expect(moved?.state).toBe('sending');
        expect(moved?.timestamps).toEqual({ validating: T0.toISOString(), sending: at(1000) });
        expect(moved?.updatedAt).toBe(at(1000));
        expect(await store.transition('missing', 'sending')).toBeNull();
      });

      it('timestamps record the first time a state was entered', async () => {
        await store.registerFile(newFile());
        h.clock.advance(1000);
        await store.transition('f1', 'sending');
        h.clock.advance(1000);
        await store.transition('f1', 'paused', { from: ['sending'] });
        h.clock.advance(1000);
        const back = await store.transition('f1', 'sending', { from: ['paused'] });
        expect(back?.timestamps).toEqual({ validating: at(0), sending: at(1000), paused: at(2000) });
        expect(back?.updatedAt).toBe(at(3000));
      });

      it('transition with an owner needs the lease held by that owner', async () => {
        await store.registerFile(newFile());
        expect(await store.transition('f1', 'sending', { owner: 'w1' })).toBeNull();
        expect(await store.takeLease('f1', 'w1', 60_000)).toBe(true);
        expect(await store.transition('f1', 'sending', { owner: 'w2' })).toBeNull();
        expect((await store.getFile('f1'))?.state).toBe('validating');
        const moved = await store.transition('f1', 'sending', { owner: 'w1', from: ['validating'] });
        expect(moved?.state).toBe('sending');
        expect(moved?.leaseOwner).toBe('w1');
      });

      it('transition and updateFile apply a patch; undefined fields stay, null clears', async () => {
        await store.registerFile(newFile());
        const counts = { records: 10, valid: 7, invalid: 2, duplicates: 1, suppressed: 0, segments: 9 };
        const errors = [
          { line: 3, code: 'INVALID_NUMBER', message: 'not a valid mobile number', value: '57300' },
        ];
        const rejected = await store.transition('f1', 'rejected', {
          from: ['validating'],
          patch: {
            path: 'processing/f1.txt',
            layout: 'personalized',
            encoding: 'utf-8',
            separator: ';',
            header: true,
            counts,
            rejection: { code: 'TOO_MANY_INVALID', message: 'too many invalid recipients' },
            reason: 'r',
            errors,
            deliveryDeadline: at(5000),
            addPossibleDuplicates: 2,
          },
        });
        expect(rejected).toMatchObject({
          state: 'rejected',
          path: 'processing/f1.txt',
          layout: 'personalized',
          encoding: 'utf-8',
          separator: ';',
          header: true,
          counts,
          rejection: { code: 'TOO_MANY_INVALID', message: 'too many invalid recipients' },
          reason: 'r',
          errors,
          deliveryDeadline: at(5000),
          possibleDuplicates: 2,
        });
        h.clock.advance(10);
        await store.updateFile('f1', { reason: null, addPossibleDuplicates: 3, header: false });
        const after = await store.getFile('f1');
        expect(after).toMatchObject({
          state: 'rejected',
          path: 'processing/f1.txt',
          layout: 'personalized',
          header: false,
          counts,
          reason: null,
          errors,
          possibleDuplicates: 5,
          updatedAt: at(10),
        });
        await store.updateFile('f1', { rejection: null, layout: null, deliveryDeadline: null, errors: [] });
        expect(await store.getFile('f1')).toMatchObject({
          rejection: null,
          layout: null,
          deliveryDeadline: null,
          errors: [],
        });
      });

      it('listFiles: newest first, filtered by source and states, limited', async () => {
        const ids = ['a', 'b', 'c', 'd'];
        for (const [i, id] of ids.entries()) {
          await store.registerFile(newFile({ fileId: id, source: i % 2 === 0 ? 'local' : 'sftp' }));
          h.clock.advance(1000);
        }
        await store.transition('b', 'sending');
        await store.transition('c', 'completed');
        expect((await store.listFiles()).map((f) => f.fileId)).toEqual(['d', 'c', 'b', 'a']);
        expect((await store.listFiles({ source: 'local' })).map((f) => f.fileId)).toEqual(['c', 'a']);
        expect((await store.listFiles({ states: ['sending', 'completed'] })).map((f) => f.fileId)).toEqual([
          'c',
          'b',
        ]);
        expect((await store.listFiles({ source: 'sftp', states: ['sending'] })).map((f) => f.fileId)).toEqual(
          ['b'],
        );
        expect((await store.listFiles({ limit: 2 })).map((f) => f.fileId)).toEqual(['d', 'c']);
        expect(await store.listFiles({ states: [] })).toEqual([]);
      });

      it('claimFiles: content submitted or completed within the window is a duplicate, by either instant', async () => {
        const idFor = (sha: string, n: number) => `${sha}-${n}`;
        const ready = (name: string) => ({ name, path: `inbox/${name}`, sha256: 'sha-old', bytes: 1 });
        const claim = async (name: string, since: number) =>
          (await store.claimFiles('local', [ready(name)], { idFor, duplicateSince: at(since) }))[0]!;
        const first = await claim('a.txt', 0);
        await store.transition(first.file.fileId, 'submitted');
        h.clock.advance(10_000);
        // submitted at T0: a duplicate for a window starting at T0, not for one starting later
        expect((await claim('b.txt', 0)).duplicateOf?.fileId).toBe(first.file.fileId);
        const c = await claim('c.txt', 1);
        expect(c.file.state).toBe('validating');
        await store.transition(c.file.fileId, 'cancelled'); // no longer being sent
        // completed later (T0 + 10 s): that instant counts too
        await store.transition(first.file.fileId, 'completed');
        expect((await claim('d.txt', 5_000)).duplicateOf?.fileId).toBe(first.file.fileId);
        expect((await claim('e.txt', 10_001)).file.state).toBe('validating');
        // another source or other content: never a duplicate of it
        const [other] = await store.claimFiles('sftp', [ready('a.txt')], {
          idFor: (sha, n) => `sftp-${sha}-${n}`,
          duplicateSince: at(0),
        });
        expect(other?.file.state).toBe('validating');
      });

      it('countBySha counts the files of a source with that content', async () => {
        expect(await store.countBySha('local', 'sha-x')).toBe(0);
        await store.registerFile(newFile({ fileId: 'a', sha256: 'sha-x' }));
        await store.registerFile(newFile({ fileId: 'b', sha256: 'sha-x', path: 'inbox/b2.txt' }));
        await store.registerFile(newFile({ fileId: 'c', sha256: 'sha-x', source: 'sftp' }));
        expect(await store.countBySha('local', 'sha-x')).toBe(2);
        expect(await store.countBySha('sftp', 'sha-x')).toBe(1);
      });
    });

    describe('claimFiles (a batch of ready files in one transaction)', () => {
      const idFor = (sha: string, n: number) => (n > 1 ? `${sha}-r${n}` : sha);
      const ready = (name: string, sha: string) => ({ name, path: `inbox/${name}`, sha256: sha, bytes: 10 });

      it('records new files as validating, numbering repeated content, and finds a file recorded before', async () => {
        const first = await store.claimFiles('local', [ready('a.txt', 'sa'), ready('b.txt', 'sb')], {
          idFor,
          duplicateSince: at(0),
        });
        expect(first.map((c) => [c.file.fileId, c.file.state, c.created, c.duplicateOf])).toEqual([
          ['sa', 'validating', true, null],
          ['sb', 'validating', true, null],
        ]);
        // The same path and content again (a crash before the move): the same record.
        const again = await store.claimFiles('local', [ready('a.txt', 'sa')], {
          idFor,
          duplicateSince: at(0),
        });
        expect(again.map((c) => [c.file.fileId, c.created])).toEqual([['sa', false]]);
        expect(await store.countBySha('local', 'sa')).toBe(1);
      });

      it('the same content being sent, or completed within the window, is DUPLICATE_FILE unless forced', async () => {
        await store.claimFiles('local', [ready('a.txt', 'sa')], { idFor, duplicateSince: at(0) });
        await store.setPaths([{ fileId: 'sa', path: 'processing/a.txt' }]);
        expect((await store.getFile('sa'))?.path).toBe('processing/a.txt');
        // In progress: a second copy under another name is a duplicate, numbered 2.
        const [dup] = await store.claimFiles('local', [ready('copy.txt', 'sa')], {
          idFor,
          duplicateSince: at(0),
        });
        expect(dup?.file.fileId).toBe('sa-r2');
        expect(dup?.file.state).toBe('duplicate');
        expect(dup?.file.rejection?.code).toBe('DUPLICATE_FILE');
        expect(dup?.duplicateOf?.fileId).toBe('sa');
        // Completed long ago (before the window): not a duplicate any more.
        await store.transition('sa', 'completed');
        h.clock.advance(10_000);
        const [later] = await store.claimFiles('local', [ready('again.txt', 'sa')], {
          idFor,
          duplicateSince: at(5_000),
        });
        expect([later?.file.fileId, later?.file.state]).toEqual(['sa-r3', 'validating']);
        // Forced: never a duplicate, even while the same content is being sent.
        const [forced] = await store.claimFiles('local', [ready('forced.txt', 'sa')], {
          idFor,
          duplicateSince: at(0),
          force: true,
        });
        expect([forced?.file.fileId, forced?.file.state, forced?.file.forced]).toEqual([
          'sa-r4',
          'validating',
          true,
        ]);
      });

      it('a fileId taken by another file is a conflict, and nothing of the batch is recorded', async () => {
        await store.registerFile(newFile({ fileId: 'taken', sha256: 'other-content' }));
        await expect(
          store.claimFiles('local', [ready('a.txt', 'sa'), ready('b.txt', 'sb')], {
            idFor: (sha) => (sha === 'sb' ? 'taken' : sha),
            duplicateSince: at(0),
          }),
        ).rejects.toMatchObject({ code: 'DROPLINE_ERR_STORE_CONFLICT' });
        expect(await store.getFile('sa')).toBeNull();
        expect(await store.countBySha('local', 'sb')).toBe(0);
      });

      it('two copies in one batch: the second is the duplicate of the first', async () => {
        const claimed = await store.claimFiles('local', [ready('a.txt', 'sx'), ready('b.txt', 'sx')], {
          idFor,
          duplicateSince: at(0),
        });
        expect(claimed.map((c) => [c.file.fileId, c.file.state, c.duplicateOf?.fileId ?? null])).toEqual([
          ['sx', 'validating', null],
          ['sx-r2', 'duplicate', 'sx'],
        ]);
      });
    });

    describe('leases', () => {
      it('acquireFile takes the oldest-updated free file in the states', async () => {
        for (const id of ['a', 'b', 'c']) {
          await store.registerFile(newFile({ fileId: id, state: 'sending' }));
          h.clock.advance(1000);
        }
        await store.updateFile('a', { reason: 'touched' }); // a is now the newest update
        await store.transition('c', 'completed');
        const first = await store.acquireFile('w1', ['sending', 'paused'], 30_000);
        expect(first?.fileId).toBe('b');
        expect(first?.leaseOwner).toBe('w1');
        expect(first?.leaseUntil).toBe(at(3000 + 30_000));
        expect((await store.acquireFile('w2', ['sending'], 30_000))?.fileId).toBe('a');
        expect(await store.acquireFile('w3', ['sending'], 30_000)).toBeNull();
        expect(await store.acquireFile('w3', [], 30_000)).toBeNull();
      });

      it('acquireFile under concurrency: exactly one winner per file', async () => {
        const files = ['a', 'b', 'c', 'd', 'e'];
        for (const id of files) await store.registerFile(newFile({ fileId: id, state: 'sending' }));
        const other = h.reopen ? await h.reopen() : store;
        try {
          const results = await Promise.all(
            Array.from({ length: 20 }, (_, i) =>
              (i % 2 === 0 ? store : other).acquireFile(`w${i}`, ['sending'], 60_000),
            ),
          );
          const won = results.filter((r) => r !== null);
          expect(won).toHaveLength(files.length);
          expect(new Set(won.map((r) => r.fileId))).toEqual(new Set(files));
          for (const r of won) {
            expect((await store.getFile(r.fileId))?.leaseOwner).toBe(r.leaseOwner);
          }
          expect(new Set(won.map((r) => r.leaseOwner)).size).toBe(files.length);
        } finally {
          if (other !== store) await other.close();
        }
      });

      it('an expired lease can be taken by another owner', async () => {
        await store.registerFile(newFile({ state: 'sending' }));
        expect((await store.acquireFile('w1', ['sending'], 10_000))?.fileId).toBe('f1');
        h.clock.advance(9_999);
        expect(await store.acquireFile('w2', ['sending'], 10_000)).toBeNull();
        expect(await store.takeLease('f1', 'w2', 10_000)).toBe(false);
        h.clock.advance(1);
        const taken = await store.acquireFile('w2', ['sending'], 10_000);
        expect(taken?.leaseOwner).toBe('w2');
        expect(await store.renewLease('f1', 'w1', 10_000)).toBe(false);
        expect(await store.transition('f1', 'paused', { owner: 'w1' })).toBeNull();
      });

      it('takeLease, renewLease, releaseLease', async () => {
        await store.registerFile(newFile());
        expect(await store.takeLease('f1', 'w1', 10_000)).toBe(true);
        expect(await store.takeLease('f1', 'w2', 10_000)).toBe(false);
        h.clock.advance(5000);
        expect(await store.takeLease('f1', 'w1', 10_000)).toBe(true); // already ours: extended
        expect((await store.getFile('f1'))?.leaseUntil).toBe(at(15_000));
        h.clock.advance(5000);
        expect(await store.renewLease('f1', 'w1', 10_000)).toBe(true);
        expect((await store.getFile('f1'))?.leaseUntil).toBe(at(20_000));
        expect(await store.renewLease('f1', 'w2', 10_000)).toBe(false);
        await store.releaseLease('f1', 'w2'); // not the owner: nothing happens
        expect((await store.getFile('f1'))?.leaseOwner).toBe('w1');
        await store.releaseLease('f1', 'w1');
        expect(await store.getFile('f1')).toMatchObject({ leaseOwner: null, leaseUntil: null });
        expect(await store.takeLease('f1', 'w2', 10_000)).toBe(true);
        expect(await store.takeLease('missing', 'w2', 10_000)).toBe(false);
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
        expect((await collect(store.recipients('f2'))).map((r) => r.number)).toEqual([
          'f2-1',
          'f2-2',
          'f2-3',
        ]);
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
        expect(await store.setChunkState('f1', 2, 'inflight', ['pending'], { owner: 'w2' })).toBe(true);
        expect((await store.listChunks('f1')).map((c) => [c.seq, c.state, c.attempts])).toEqual([
          [1, 'inflight', 1],
          [2, 'inflight', 1],
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
            parts: [
              { messageIds: ['m1', 'm2'], outcome: 'failed', code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE' },
            ],
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
        expect((await store.chunkRecipients('f1', 3)).map((r) => r.outcome)).toEqual([
          'rejected',
          'rejected',
        ]);
        expect(await store.requeueChunks('f1', ['failed', 'in_doubt'])).toBe(0);
        // attempts are kept: they count every request ever made for the chunk
        expect((await store.listChunks('f1'))[1]?.attempts).toBe(5);
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
            status: r.idx % 3 === 0 ? 'NO_SUCCESS' : DELIVERED,
            smsCount: 1 + (r.idx % 2),
          }),
        );
        const orphans = [event('f1', 'f1-9998'), event('f1', 'nobody'), event('f1', '')];
        // Row 1 reported twice in one statement's piece, under two transactions: the later status wins.
        const again = event('f1', 'f1-2', {
          transactionNumber: 'tx-again',
          to: rows[0]!.number!,
          status: 'NO_SUCCESS',
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
            r.idx === 1 || r.idx % 3 === 0 ? 'NO_SUCCESS' : DELIVERED,
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
        expect(
          (await store.recordDeliveries([event('f1', 'm1', { transactionNumber: 'T1' })])).recorded,
        ).toBe(1);
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
        expect(rs.map((r) => r.status)).toEqual([
          DELIVERED,
          'NO_SUCCESS',
          UNKNOWN_DELIVERY,
          UNKNOWN_DELIVERY,
        ]);
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

    describe('retention (prune)', () => {
      /** A file sent, its first recipient reported, then moved to `state`. */
      async function finished(fileId: string, state: 'completed' | 'partial' | 'cancelled', n = 5) {
        await sendingFile(fileId, n, 2);
        for (let seq = 1; (seq - 1) * 2 < n; seq++) {
          await store.setChunkState(fileId, seq, 'inflight', ['pending']);
          await store.recordChunkResult(fileId, seq, {
            state: 'accepted',
            attempts: 1,
            transactionNumber: `${fileId}-T${seq}`,
            parts: [
              { messageIds: [], wholeChunk: true, outcome: 'sent', transactionNumber: `${fileId}-T${seq}` },
            ],
          });
        }
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
          submitted: 7,
          rejected: 1,
          failed: 2,
          inDoubt: 0,
          delivered: 3,
          undelivered: 1,
          unknown: 0,
          pendingDelivery: 3,
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
        for (let i = 0; i < rows.length; i += 5000)
          await store.insertRecipients('f1', rows.slice(i, i + 5000));
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
        for (let i = 0; i < rows.length; i += 5000)
          await store.insertRecipients('f1', rows.slice(i, i + 5000));
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
  });
}
