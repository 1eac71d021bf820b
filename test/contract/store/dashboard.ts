// The store contract, what the dashboard shows of a file (issue 13): error counts by code, the
// timeline of its states, its delivery statuses by minute, and the search of the file list.
import { beforeEach, describe, expect, it } from 'vitest';
import { stateReason } from '../../../src/errors.ts';
import {
  DELIVERED,
  type DeliveryMinute,
  type FileState,
  type Store,
  UNKNOWN_DELIVERY,
} from '../../../src/store/store.ts';
import {
  type ContractContext,
  event,
  generatedReport,
  generatedRows,
  newFile,
  type StoreHarness,
  T0,
  validRows,
} from './helpers.ts';

export function dashboard(t: ContractContext): void {
  let h: StoreHarness;
  let store: Store;
  const at = (ms: number) => t.at(ms);
  beforeEach(() => {
    h = t.h;
    store = t.store;
  });

  describe('error counts', () => {
    it('a new file has none; a patch writes them (transition or update), a patch without them keeps them', async () => {
      const { file } = await store.registerFile(newFile());
      expect(file.errorCounts).toEqual({});
      const counts = { INVALID_NUMBER: 1200, DUPLICATE_NUMBER: 3 };
      const moved = await store.transition('f1', 'scheduled', {
        patch: { errorCounts: counts, errors: [{ line: 2, code: 'INVALID_NUMBER', message: 'bad' }] },
      });
      expect(moved?.errorCounts).toEqual(counts);
      expect((await store.getFile('f1'))?.errorCounts).toEqual(counts);
      // other patches leave them
      await store.transition('f1', 'sending', { patch: { reason: 'go', errors: [] } });
      expect((await store.getFile('f1'))?.errorCounts).toEqual(counts);
      await store.updateFile('f1', { errorCounts: { MISSING_TEXT: 7 } });
      expect((await store.getFile('f1'))?.errorCounts).toEqual({ MISSING_TEXT: 7 });
      expect((await store.listFiles())[0]?.errorCounts).toEqual({ MISSING_TEXT: 7 });
      await store.updateFile('f1', { errorCounts: {} });
      expect((await store.getFile('f1'))?.errorCounts).toEqual({});
      // files claimed from an inbox start with none too
      const [claimed] = await store.claimFiles(
        'local',
        [{ name: 'c.txt', path: 'inbox/c.txt', sha256: 'sc', bytes: 1 }],
        { idFor: (sha) => sha, duplicateSince: at(0) },
      );
      expect(claimed?.file.errorCounts).toEqual({});
    });
  });

  describe('state detail (issue 32)', () => {
    it('a new file has none; an update writes it, another patch keeps it, null clears it', async () => {
      const { file } = await store.registerFile(newFile());
      expect(file.detail).toBeNull();
      const detail = {
        code: 'SERVICE_UNREACHABLE' as const,
        since: at(1000),
        error: 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9',
      };
      await store.transition('f1', 'sending');
      await store.updateFile('f1', { detail });
      expect((await store.getFile('f1'))?.detail).toEqual(detail);
      await store.updateFile('f1', { reason: 'still' });
      expect((await store.listFiles())[0]?.detail).toEqual(detail);
      await store.updateFile('f1', { detail: null });
      expect((await store.getFile('f1'))?.detail).toBeNull();
    });
  });

  describe('file events (the timeline of its states)', () => {
    const states = async (fileId: string) => (await store.fileEvents(fileId)).map((e) => e.state);

    it('records the state a file is recorded in and each change, with the time and the reason then', async () => {
      await store.registerFile(newFile());
      h.clock.advance(1000);
      await store.transition('f1', 'scheduled', {
        from: ['validating'],
        patch: { scheduledUntil: at(2000) },
      });
      h.clock.advance(1000);
      expect(await store.acquireFile('w1', ['scheduled'], 60_000)).not.toBeNull();
      await store.transition('f1', 'sending', { owner: 'w1' });
      h.clock.advance(1000);
      await store.transition('f1', 'paused', { patch: { reason: 'paused by an operator' } });
      h.clock.advance(1000);
      await store.transition('f1', 'sending', { patch: { reason: null } });
      h.clock.advance(1000);
      await store.transition('f1', 'partial', { patch: { reason: '3 chunks failed' } });
      expect(await store.fileEvents('f1')).toEqual([
        { at: at(0), state: 'validating', reason: null },
        { at: at(1000), state: 'scheduled', reason: null },
        { at: at(2000), state: 'sending', reason: null },
        { at: at(3000), state: 'paused', reason: 'paused by an operator' },
        { at: at(4000), state: 'sending', reason: null },
        { at: at(5000), state: 'partial', reason: '3 chunks failed' },
      ]);
      expect(await store.fileEvents('nope')).toEqual([]);
    });

    it("keeps a reason's code and parameters with it, on the file and on its event", async () => {
      await store.registerFile(newFile());
      const partial = stateReason('PARTIAL', { failed: 2, inDoubt: 1 }, 'f1');
      const moved = await store.transition('f1', 'partial', { patch: partial });
      expect(moved?.reason).toBe(partial.reason);
      expect(moved?.reasonCode).toEqual({ code: 'PARTIAL', params: { failed: 2, inDoubt: 1 } });
      expect((await store.getFile('f1'))?.reasonCode).toEqual(partial.reasonCode);
      // A patch of other fields keeps them; a reason written without a code keeps none.
      await store.updateFile('f1', { errorCounts: { A: 1 } });
      expect((await store.getFile('f1'))?.reasonCode).toEqual(partial.reasonCode);
      await store.transition('f1', 'paused', { patch: { reason: 'held by an operator' } });
      expect((await store.getFile('f1'))?.reasonCode).toBeNull();
      await store.transition('f1', 'cancelled', { patch: stateReason('CANCELLED_BY_USER') });
      await store.transition('f1', 'sending', { patch: { reason: null, reasonCode: null } });
      expect(await store.fileEvents('f1')).toEqual([
        { at: at(0), state: 'validating', reason: null },
        { at: at(0), state: 'partial', reason: partial.reason, reasonCode: partial.reasonCode },
        { at: at(0), state: 'paused', reason: 'held by an operator' },
        {
          at: at(0),
          state: 'cancelled',
          reason: 'cancelled by a user',
          reasonCode: { code: 'CANCELLED_BY_USER', params: {} },
        },
        { at: at(0), state: 'sending', reason: null },
      ]);
    });

    it("a file recorded rejected, or as a duplicate, has its rejection's code and parameters as its reason's", async () => {
      await store.registerFile(
        newFile({
          fileId: 'big',
          state: 'rejected',
          rejection: { code: 'FILE_TOO_LARGE', message: 'too large', params: { max: 10, bytes: 20 } },
        }),
      );
      expect((await store.getFile('big'))?.reasonCode).toEqual({
        code: 'FILE_TOO_LARGE',
        params: { max: 10, bytes: 20 },
      });
      expect((await store.fileEvents('big'))[0]?.reasonCode).toEqual({
        code: 'FILE_TOO_LARGE',
        params: { max: 10, bytes: 20 },
      });
      const idFor = (sha: string, n: number) => `${sha}-${n}`;
      const ready = (name: string) => ({ name, path: `inbox/${name}`, sha256: 'sha-dup', bytes: 1 });
      const [first] = await store.claimFiles('local', [ready('a.txt')], { idFor, duplicateSince: at(0) });
      const [again] = await store.claimFiles('local', [ready('b.txt')], { idFor, duplicateSince: at(0) });
      expect(again?.file.state).toBe('duplicate');
      const params = { fileId: first!.file.fileId, name: 'a.txt', state: 'validating' };
      expect(again?.file.reasonCode).toEqual({ code: 'DUPLICATE_FILE', params });
      expect((await store.fileEvents(again!.file.fileId))[0]?.reasonCode).toEqual({
        code: 'DUPLICATE_FILE',
        params,
      });
      expect(first?.file.reasonCode).toBeNull();
    });

    it('a move that keeps the reason it had does not repeat it', async () => {
      await store.registerFile(newFile());
      await store.transition('f1', 'sending', { patch: { reason: 'resumed by a user' } });
      await store.transition('f1', 'submitted');
      expect((await store.fileEvents('f1')).map((e) => [e.state, e.reason])).toEqual([
        ['validating', null],
        ['sending', 'resumed by a user'],
        ['submitted', null],
      ]);
    });

    it('records nothing when the state stays: same-state transitions, updates, leases, a failed compare-and-set', async () => {
      await store.registerFile(newFile());
      await store.transition('f1', 'sending');
      h.clock.advance(1000);
      await store.transition('f1', 'sending', { patch: { reason: 'still sending' } });
      await store.updateFile('f1', { reason: 'x', errorCounts: { A: 1 } });
      await store.setPaths([{ fileId: 'f1', path: 'processing/f1.txt' }]);
      expect(await store.takeLease('f1', 'w1', 60_000)).toBe(true);
      expect(await store.renewLease('f1', 'w1', 60_000)).toBe(true);
      await store.releaseLease('f1', 'w1');
      expect(await store.acquireFile('w2', ['sending'], 60_000)).not.toBeNull();
      // preconditions that do not hold move nothing
      expect(await store.transition('f1', 'completed', { from: ['submitted'] })).toBeNull();
      expect(await store.transition('f1', 'completed', { owner: 'w1' })).toBeNull();
      expect(await store.fileEvents('f1')).toEqual([
        { at: at(0), state: 'validating', reason: null },
        { at: at(0), state: 'sending', reason: null },
      ]);
    });

    it('files recorded rejected or claimed (duplicates too) have their first event, with its reason', async () => {
      const rejection = { code: 'MISSING_TRAILER', message: 'no marker came' };
      await store.registerFile(newFile({ fileId: 'r', state: 'rejected', rejection }));
      expect(await store.fileEvents('r')).toEqual([
        { at: at(0), state: 'rejected', reason: 'no marker came' },
      ]);
      // registering it again records nothing
      await store.registerFile(newFile({ fileId: 'r', state: 'rejected', rejection }));
      expect(await store.fileEvents('r')).toHaveLength(1);
      const ready = (name: string) => ({ name, path: `inbox/${name}`, sha256: 'same', bytes: 1 });
      const idFor = (sha: string, n: number) => `${sha}-${n}`;
      h.clock.advance(500);
      const claimed = await store.claimFiles('local', [ready('a.txt'), ready('b.txt')], {
        idFor,
        duplicateSince: at(0),
      });
      expect(claimed.map((c) => [c.file.fileId, c.file.state])).toEqual([
        ['same-1', 'validating'],
        ['same-2', 'duplicate'],
      ]);
      expect(await store.fileEvents('same-1')).toEqual([{ at: at(500), state: 'validating', reason: null }]);
      const [dup] = await store.fileEvents('same-2');
      expect(dup).toMatchObject({ at: at(500), state: 'duplicate' });
      expect(dup?.reason).toBe(claimed[1]!.file.reason);
      expect(dup?.reason).toBeTruthy();
      // claimed again: found, not recorded again
      await store.claimFiles('local', [ready('a.txt')], { idFor, duplicateSince: at(0) });
      expect(await store.fileEvents('same-1')).toHaveLength(1);
    });

    it('gives the newest `limit` (200 by default), oldest first', async () => {
      await store.registerFile(newFile());
      const cycle: FileState[] = ['sending', 'paused'];
      for (let i = 0; i < 250; i++) {
        h.clock.advance(1000);
        await store.transition('f1', cycle[i % 2]!, { patch: { reason: `step ${i}` } });
      }
      const all = await store.fileEvents('f1');
      expect(all).toHaveLength(200);
      // 251 events (validating, then 250 changes): the first 51 left out
      expect(all[0]).toEqual({ at: at(51_000), state: 'sending', reason: 'step 50' });
      expect(all.at(-1)).toEqual({ at: at(250_000), state: 'paused', reason: 'step 249' });
      expect(all.map((e) => e.at)).toEqual([...all.map((e) => e.at)].sort());
      expect(await store.fileEvents('f1', 3)).toEqual([
        { at: at(248_000), state: 'paused', reason: 'step 247' },
        { at: at(249_000), state: 'sending', reason: 'step 248' },
        { at: at(250_000), state: 'paused', reason: 'step 249' },
      ]);
      expect(await store.fileEvents('f1', 1000)).toHaveLength(251);
      expect(await store.fileEvents('f1', 0)).toEqual([]);
    });

    it('two changes within one millisecond keep their order', async () => {
      await store.registerFile(newFile());
      for (const s of ['scheduled', 'sending', 'paused', 'sending', 'submitted'] as const)
        await store.transition('f1', s);
      expect(await states('f1')).toEqual([
        'validating',
        'scheduled',
        'sending',
        'paused',
        'sending',
        'submitted',
      ]);
    });
  });

  describe('deliveries by minute', () => {
    const submitted = t.submittedFile;
    /** The timeline summed over its minutes equals the file's counts (undelivered there holds UNKNOWN too). */
    async function expectSums(fileId: string) {
      const minutes = await store.deliveryTimeline(fileId);
      const sum = (k: keyof Omit<DeliveryMinute, 'minute'>) => minutes.reduce((n, m) => n + m[k], 0);
      const c = await store.counts(fileId);
      expect({
        delivered: sum('delivered'),
        undelivered: sum('undelivered'),
        unknown: sum('unknown'),
        accepted: sum('accepted'),
      }).toEqual({
        delivered: c.delivered,
        undelivered: c.undelivered - c.unknown,
        unknown: c.unknown,
        accepted: c.accepted,
      });
      return minutes;
    }
    const minute = (m: number) => new Date(T0.getTime() + m * 60_000).toISOString();

    it('counts each final status in the minute it was recorded in; a duplicate report once; a status replaced moves', async () => {
      await submitted('f1', 8, 4);
      expect(await store.deliveryTimeline('f1')).toEqual([]);
      // minute 0 (12:00:30): mixed statuses, a report repeated in the batch
      h.clock.advance(30_000);
      const d = await store.recordDeliveries([
        event('f1', 'm1'),
        event('f1', 'm2', { status: 'NO_SUCCESS' }),
        event('f1', 'm3', { status: 'EXPIRED' }),
        event('f1', 'm1'),
        event('f1', 'm4'),
      ]);
      expect(d).toMatchObject({ recorded: 4, duplicates: 1 });
      expect(await expectSums('f1')).toEqual([
        { minute: minute(0), delivered: 2, undelivered: 2, unknown: 0, accepted: 0 },
      ]);
      // minute 1: the same report again (same transactionNumber and to) changes nothing; m2
      // delivered after all (another report); m3 from one undelivered status to another
      h.clock.advance(45_000);
      expect((await store.recordDeliveries([event('f1', 'm1')])).duplicates).toBe(1);
      await store.recordDeliveries([
        event('f1', 'm2', { transactionNumber: 'again-m2' }),
        event('f1', 'm3', { transactionNumber: 'again-m3', status: 'NO_SUCCESS' }),
      ]);
      expect(await expectSums('f1')).toEqual([
        { minute: minute(0), delivered: 2, undelivered: 2, unknown: 0, accepted: 0 },
        { minute: minute(1), delivered: 1, undelivered: -1, unknown: 0, accepted: 0 },
      ]);
      // minute 3: one recipient reported twice in one batch (NO_SUCCESS, then DELIVERED)
      h.clock.advance(120_000);
      await store.recordDeliveries([
        event('f1', 'm5', { transactionNumber: 'a-m5', status: 'NO_SUCCESS' }),
        event('f1', 'm5', { transactionNumber: 'b-m5' }),
      ]);
      expect((await store.chunkRecipients('f1', 2))[0]?.status).toBe(DELIVERED);
      expect((await expectSums('f1')).at(-1)).toEqual({
        minute: minute(3),
        delivered: 1,
        undelivered: 0,
        unknown: 0,
        accepted: 0,
      });
    });

    it('expireDeliveries counts UNKNOWN in its minute; a report after it moves one out of unknown', async () => {
      await submitted('f1', 5, 5);
      await store.recordDeliveries([event('f1', 'm1'), event('f1', 'm2', { status: 'NO_SUCCESS' })]);
      h.clock.advance(72 * 3_600_000);
      expect(await store.expireDeliveries('f1')).toBe(3);
      expect(await store.expireDeliveries('f1')).toBe(0);
      expect(await expectSums('f1')).toEqual([
        { minute: minute(0), delivered: 1, undelivered: 1, unknown: 0, accepted: 0 },
        { minute: minute(72 * 60), delivered: 0, undelivered: 0, unknown: 3, accepted: 0 },
      ]);
      h.clock.advance(90_000);
      await store.recordDeliveries([event('f1', 'm3'), event('f1', 'm4', { status: 'REJECTED' })]);
      expect(await expectSums('f1')).toEqual([
        { minute: minute(0), delivered: 1, undelivered: 1, unknown: 0, accepted: 0 },
        { minute: minute(72 * 60), delivered: 0, undelivered: 0, unknown: 3, accepted: 0 },
        { minute: minute(72 * 60 + 1), delivered: 1, undelivered: 1, unknown: -2, accepted: 0 },
      ]);
      expect(await store.counts('f1')).toMatchObject({ delivered: 2, undelivered: 3, unknown: 1 });
    });

    it('generated messageIds, own ones, several files in one batch, orphans: each file its own minutes', async () => {
      await store.registerFile(newFile({ fileId: 'g' }));
      await store.insertRecipients('g', generatedRows('g'));
      await store.insertChunks('g', [
        { seq: 1, size: 4 },
        { seq: 2, size: 3 },
      ]);
      for (const seq of [1, 2]) {
        await store.setChunkState('g', seq, 'inflight', ['pending']);
        await store.recordChunkResult('g', seq, {
          state: 'accepted',
          attempts: 1,
          parts: [{ messageIds: [], wholeChunk: true, outcome: 'sent' }],
        });
      }
      await submitted('f2', 3, 3);
      h.clock.advance(61_000);
      const d = await store.recordDeliveries([
        generatedReport('g', 'g-1-1', 'T1'),
        { ...generatedReport('g', 'g-1-2', 'T2'), status: 'NO_SUCCESS' },
        generatedReport('g', 'own-5', 'T3'),
        event('f2', 'm1', { status: UNKNOWN_DELIVERY }),
        event('f2', 'm2'),
        event('f2', 'nobody'),
        event('elsewhere', 'm1'),
      ]);
      expect(d).toMatchObject({ recorded: 7, orphans: 2 });
      expect(await expectSums('g')).toEqual([
        { minute: minute(1), delivered: 2, undelivered: 1, unknown: 0, accepted: 0 },
      ]);
      expect(await expectSums('f2')).toEqual([
        { minute: minute(1), delivered: 1, undelivered: 0, unknown: 1, accepted: 0 },
      ]);
      expect(await store.deliveryTimeline('elsewhere')).toEqual([]);
    });

    it('reports before the chunk result, and in-doubt chunks they settle, count like any other', async () => {
      await t.sendingFile('f1', 4, 2);
      await store.setChunkState('f1', 1, 'inflight', ['pending']);
      await store.setChunkState('f1', 2, 'inflight', ['pending']);
      await store.recordDeliveries([event('f1', 'm1', { transactionNumber: 'T1' })]);
      await store.markInflightInDoubt('f1');
      await store.recordDeliveries([event('f1', 'm4', { transactionNumber: 'T2', status: 'NO_SUCCESS' })]);
      expect(await expectSums('f1')).toEqual([
        { minute: minute(0), delivered: 1, undelivered: 1, unknown: 0, accepted: 0 },
      ]);
      expect(await store.counts('f1')).toMatchObject({ submitted: 4, delivered: 1, undelivered: 1 });
    });

    it('retention keeps the minutes; recipients cleared before a new ingest take theirs along', async () => {
      await submitted('old', 3, 3);
      await store.recordDeliveries([event('old', 'm1'), event('old', 'm2', { status: 'NO_SUCCESS' })]);
      await store.transition('old', 'completed');
      const before = await store.deliveryTimeline('old');
      expect(before).toHaveLength(1);
      h.clock.advance(10 * 86_400_000);
      for (let i = 0; i < 20; i++)
        if ((await store.prune({ finishedBefore: at(86_400_000), maxRows: 2 })).idle) break;
      expect((await store.getFile('old'))?.prunedAt).not.toBeNull();
      expect(await store.deliveryTimeline('old')).toEqual(before);
      expect(await store.counts('old')).toMatchObject({ delivered: 1, undelivered: 1 });
      expect((await store.fileEvents('old')).map((e) => e.state)).toEqual([
        'validating',
        'sending',
        'completed',
      ]);

      await submitted('again', 2, 2, validRows(2, 2));
      await store.recordDeliveries([event('again', 'm1')]);
      await store.clearRecipients('again');
      expect(await store.deliveryTimeline('again')).toEqual([]);
      expect(await store.deliveryTimeline('nope')).toEqual([]);
    });
  });

  describe('listFiles search', () => {
    /** Files a (oldest) … in order, one millisecond apart. */
    async function files(list: { id: string; name: string; source?: string; state?: FileState }[]) {
      for (const f of list) {
        await store.registerFile(
          newFile({ fileId: f.id, name: f.name, path: `inbox/${f.id}`, source: f.source ?? 'local' }),
        );
        if (f.state) await store.transition(f.id, f.state);
        h.clock.advance(1);
      }
    }
    const ids = async (search: string, more: Parameters<Store['listFiles']>[0] = {}) =>
      (await store.listFiles({ ...more, search })).map((f) => f.fileId);

    it('by name, case-insensitively (beyond ASCII too), or by the start of the fileId', async () => {
      await files([
        { id: 'a1b2c3', name: 'Campaña NAVIDAD.txt' },
        { id: 'a1ff00', name: 'clientes-abril.txt' },
        { id: 'b2c3d4', name: 'CAMPAÑA verano.TXT' },
        { id: 'c3d4e5', name: 'misc.txt' },
      ]);
      expect(await ids('navidad')).toEqual(['a1b2c3']);
      expect(await ids('campaña')).toEqual(['b2c3d4', 'a1b2c3']);
      expect(await ids('CAMPAÑA')).toEqual(['b2c3d4', 'a1b2c3']);
      expect(await ids('.txt')).toEqual(['c3d4e5', 'b2c3d4', 'a1ff00', 'a1b2c3']);
      // the start of a fileId, not its middle
      expect(await ids('a1')).toEqual(['a1ff00', 'a1b2c3']);
      expect(await ids('A1B')).toEqual(['a1b2c3']);
      expect(await ids('b2c3')).toEqual(['b2c3d4']);
      expect(await ids('d4e5')).toEqual([]);
      expect(await ids('nothing like it')).toEqual([]);
    });

    it('%, _ and \\ are plain characters', async () => {
      await files([
        { id: 'p1', name: 'promo_50%.txt' },
        { id: 'p2', name: 'promoX50Y.txt' },
        { id: 'p3', name: 'promo 50 off.txt' },
        { id: 'p4', name: 'back\\slash.txt' },
        { id: 'p5', name: 'backXslash.txt' },
      ]);
      expect(await ids('%')).toEqual(['p1']);
      expect(await ids('_')).toEqual(['p1']);
      expect(await ids('o_5')).toEqual(['p1']);
      expect(await ids('50%')).toEqual(['p1']);
      expect(await ids('promo%off')).toEqual([]);
      expect(await ids('\\')).toEqual(['p4']);
      expect(await ids('k\\s')).toEqual(['p4']);
      expect(await ids('promo')).toEqual(['p3', 'p2', 'p1']);
    });

    it('combines with source, states, limit and before (newest first, page by page)', async () => {
      await files([
        { id: 'r1', name: 'report-1.txt', state: 'completed' },
        { id: 'x1', name: 'other-1.txt', state: 'completed' },
        { id: 'r2', name: 'report-2.txt', source: 'sftp', state: 'completed' },
        { id: 'r3', name: 'report-3.txt', state: 'sending' },
        { id: 'r4', name: 'REPORT-4.txt', state: 'completed' },
        { id: 'x2', name: 'other-2.txt', state: 'completed' },
        { id: 'r5', name: 'report-5.txt', state: 'completed' },
      ]);
      expect(await ids('report')).toEqual(['r5', 'r4', 'r3', 'r2', 'r1']);
      expect(await ids('report', { source: 'local' })).toEqual(['r5', 'r4', 'r3', 'r1']);
      expect(await ids('report', { states: ['completed'] })).toEqual(['r5', 'r4', 'r2', 'r1']);
      expect(await ids('report', { source: 'local', states: ['completed'] })).toEqual(['r5', 'r4', 'r1']);
      expect(await ids('report', { states: [] })).toEqual([]);
      // pages of 2: each page starts after the last file of the one before
      const pages: string[][] = [];
      let before: string | undefined;
      for (;;) {
        const page = await ids('report', { states: ['completed'], limit: 2, ...(before ? { before } : {}) });
        if (page.length === 0) break;
        pages.push(page);
        before = page.at(-1);
      }
      expect(pages).toEqual([
        ['r5', 'r4'],
        ['r2', 'r1'],
      ]);
      // `before` a file the search does not match: the matches older than it
      expect(await ids('report', { before: 'x2' })).toEqual(['r4', 'r3', 'r2', 'r1']);
      // no search, an empty one: every file
      expect((await store.listFiles({ limit: 3 })).map((f) => f.fileId)).toEqual(['r5', 'x2', 'r4']);
      expect(await ids('', { limit: 3 })).toEqual(['r5', 'x2', 'r4']);
    });
  });

  describe('the header (Store.summary)', () => {
    it('files sending, recipients accepted and reports recorded since the day began, reports waiting', async () => {
      const store = t.store;
      await t.submittedFile('a', 6, 3);
      t.h.clock.advance(60_000);
      const since = t.at(60_000);
      await t.submittedFile('b', 4, 4);
      await t.sendingFile('c', 5, 5);
      await store.transition('a', 'submitted');
      t.h.clock.advance(60_000);
      await store.recordDeliveries([
        event('a', 'm1'),
        event('a', 'm2', { status: 'NO_SUCCESS' }),
        event('b', 'm1'),
      ]);
      // a's chunks were accepted before `since`; its reports came after it.
      expect(await store.summary(since)).toEqual({
        sending: 2,
        sent: 4,
        delivered: 2,
        undelivered: 1,
        waiting: 4 + 3,
      });
      expect(await store.summary(t.at(0))).toMatchObject({ sent: 10 });
      // A file done waits for nothing; a moment after everything, nothing was sent or reported.
      await store.transition('b', 'completed');
      expect(await store.summary(t.at(10 * 60_000))).toEqual({
        sending: 1,
        sent: 0,
        delivered: 0,
        undelivered: 0,
        waiting: 4,
      });
    });
  });
}
