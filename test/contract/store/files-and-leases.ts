// The store contract, files and leases: registration, transitions, listing, claims of ready files, leases.
import { beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../../src/store/store.ts';
import { type ContractContext, INGEST, newFile, type StoreHarness, T0 } from './helpers.ts';

export function filesAndLeases(t: ContractContext): void {
  let h: StoreHarness;
  let store: Store;
  const at = (ms: number) => t.at(ms);
  beforeEach(() => {
    h = t.h;
    store = t.store;
  });

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

  describe('shared settings', () => {
    it('the first value kept wins, for every instance on the database; starts at once agree', async () => {
      expect(await store.keepSetting('notify.token', 'first')).toBe('first');
      expect(await store.keepSetting('notify.token', 'second')).toBe('first');
      expect(await store.keepSetting('other', 'x')).toBe('x');
      const other = h.reopen ? await h.reopen() : store;
      try {
        expect(await other.keepSetting('notify.token', 'third')).toBe('first');
        // Several processes' first starts at once: one value for all of them.
        const kept = await Promise.all(
          ['a', 'b', 'c', 'd'].map((v, i) => (i % 2 ? other : store).keepSetting('at-once', v)),
        );
        expect(new Set(kept).size).toBe(1);
      } finally {
        if (other !== store) await other.close();
      }
    });

    it('settingsUnder lists the settings of one prefix, by key, and no other (% and _ are plain)', async () => {
      await store.keepSetting('notify.formerToken.b', '2');
      await store.keepSetting('notify.formerToken.a', '1');
      await store.keepSetting('notify.token', 'x');
      await store.keepSetting('notify_formerToken.c', 'like-wildcard');
      expect(await store.settingsUnder('notify.formerToken.')).toEqual([
        { key: 'notify.formerToken.a', value: '1' },
        { key: 'notify.formerToken.b', value: '2' },
      ]);
      expect(await store.settingsUnder('nothing.')).toEqual([]);
    });
  });

  describe('shared service tokens', () => {
    const token = (n: number) => ({
      accessToken: `a${n}`,
      refreshToken: `r${n}`,
      renewAt: at(3_600_000 * n),
    });

    it('one worker renews at a time; the others adopt the generation it stored', async () => {
      expect(await store.sharedToken('acct')).toBeNull();
      // Two workers find no token: one gets the right, the other waits.
      expect(await store.claimTokenRenewal('acct', 'w1', 0, 30_000)).toBe(true);
      expect(await store.claimTokenRenewal('acct', 'w2', 0, 30_000)).toBe(false);
      expect(await store.sharedToken('acct')).toBeNull();
      expect(await store.storeToken('acct', 'w1', token(1))).toEqual({ ...token(1), generation: 1 });
      expect(await store.sharedToken('acct')).toEqual({ ...token(1), generation: 1 });
      // w2 asks with what it saw (nothing): generation 1 is there now, nothing to renew.
      expect(await store.claimTokenRenewal('acct', 'w2', 0, 30_000)).toBe(false);
      // A renewal of generation 1 by w2; w1, which saw generation 1 too, is refused meanwhile.
      expect(await store.claimTokenRenewal('acct', 'w2', 1, 30_000)).toBe(true);
      expect(await store.claimTokenRenewal('acct', 'w1', 1, 30_000)).toBe(false);
      // Only the holder of the right stores.
      expect(await store.storeToken('acct', 'w1', token(9))).toBeNull();
      expect((await store.storeToken('acct', 'w2', token(2)))?.generation).toBe(2);
      expect(await store.sharedToken('acct')).toEqual({ ...token(2), generation: 2 });
      // Accounts are apart.
      expect(await store.sharedToken('other')).toBeNull();
    });

    it('a right whose holder died lapses; a failed renewal gives it back at once', async () => {
      expect(await store.claimTokenRenewal('acct', 'w1', 0, 10_000)).toBe(true);
      h.clock.advance(10_001);
      expect(await store.claimTokenRenewal('acct', 'w2', 0, 10_000)).toBe(true);
      await store.releaseTokenRenewal('acct', 'w2');
      expect(await store.claimTokenRenewal('acct', 'w3', 0, 10_000)).toBe(true);
      // w1 wakes: its right is gone.
      expect(await store.storeToken('acct', 'w1', token(1))).toBeNull();
      expect(await store.storeToken('acct', 'w3', { ...token(1), refreshToken: null })).toEqual({
        ...token(1),
        refreshToken: null,
        generation: 1,
      });
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

    it('a file recorded rejected carries its code from its first moment (never rejected without one)', async () => {
      const rejection = { code: 'MISSING_TRAILER', message: 'no marker came' };
      const { file } = await store.registerFile(newFile({ state: 'rejected', rejection }));
      expect(file).toMatchObject({ state: 'rejected', rejection, reason: 'no marker came' });
      expect(await store.getFile('f1')).toEqual(file);
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
        possibleDuplicates: 0,
      });
      h.clock.advance(10);
      await store.updateFile('f1', { reason: null, header: false });
      const after = await store.getFile('f1');
      expect(after).toMatchObject({
        state: 'rejected',
        path: 'processing/f1.txt',
        layout: 'personalized',
        header: false,
        counts,
        reason: null,
        errors,
        possibleDuplicates: 0,
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
      expect((await store.listFiles({ source: 'sftp', states: ['sending'] })).map((f) => f.fileId)).toEqual([
        'b',
      ]);
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

    it('a file another worker claimed and moved, seen in a stale listing, is the same claim; a later drop of it is a duplicate', async () => {
      const opts = { idFor, duplicateSince: at(0) };
      // Two workers listed the inbox; the first claims, moves the file and records its path.
      const [first] = await store.claimFiles('local', [ready('a.txt', 'sa'), ready('b.txt', 'sb')], opts);
      await store.setPaths([{ fileId: 'sa', path: 'processing/a.txt' }]);
      // Both batches (one file, and several: the batch lookup) find that claim, nothing new.
      for (const batch of [[ready('a.txt', 'sa')], [ready('a.txt', 'sa'), ready('c.txt', 'sc')]]) {
        const second = await store.claimFiles('local', batch, opts);
        expect([second[0]!.file.fileId, second[0]!.created, second[0]!.duplicateOf]).toEqual([
          'sa',
          false,
          null,
        ]);
      }
      expect((await store.listFiles()).filter((f) => f.sha256 === 'sa')).toHaveLength(1);
      // Once it has been sent, the same content dropped again under its name is a duplicate.
      await store.transition('sa', 'sending');
      await store.transition('sa', 'submitted');
      await store.setPaths([{ fileId: 'sa', path: 'done/a.txt' }]);
      const [again] = await store.claimFiles('local', [ready('a.txt', 'sa')], opts);
      expect([again!.created, again!.file.state, again!.duplicateOf?.fileId]).toEqual([
        true,
        'duplicate',
        first!.file.fileId,
      ]);
    });

    it("a claim's record of its moves changes only a path still where it moved from", async () => {
      await store.claimFiles('local', [ready('a.txt', 'sa'), ready('b.txt', 'sb')], {
        idFor,
        duplicateSince: at(0),
      });
      // A worker found a.txt moved before the claim recorded it, and recorded its path itself.
      await store.setPaths([{ fileId: 'sa', path: 'processing/a.txt' }]);
      await store.setPaths([
        { fileId: 'sa', path: 'processing/a.txt', from: 'inbox/a.txt' },
        { fileId: 'sb', path: 'processing/b.txt', from: 'inbox/b.txt' },
      ]);
      expect((await store.getFile('sb'))?.path).toBe('processing/b.txt');
      // The worker has moved a.txt on to done/ since: a late record of the claim changes nothing.
      await store.setPaths([{ fileId: 'sa', path: 'done/a.txt' }]);
      await store.setPaths([{ fileId: 'sa', path: 'processing/a.txt', from: 'inbox/a.txt' }]);
      expect((await store.getFile('sa'))?.path).toBe('done/a.txt');
    });

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

  describe('reports owed', () => {
    it('a failed report write is owed with back-off on the store clock, due in order, cleared once written', async () => {
      await store.registerFile(newFile({ fileId: 'a' }));
      await store.registerFile(newFile({ fileId: 'b' }));
      expect((await store.getFile('a'))?.reportPending).toBeNull();
      const backoff = { baseMs: 1000, maxMs: 3000 };
      await store.reportFailed('a', backoff);
      expect((await store.getFile('a'))?.reportPending).toEqual({
        since: at(0),
        failures: 1,
        retryAt: at(1000),
      });
      expect(await store.reportsDue(10)).toEqual([]);
      h.clock.advance(1000);
      expect(await store.reportsDue(10)).toEqual(['a']);
      // Failed again: 2 s, then 3 s at most; `since` stays the first failure's.
      await store.reportFailed('a', backoff);
      expect((await store.getFile('a'))?.reportPending).toEqual({
        since: at(0),
        failures: 2,
        retryAt: at(3000),
      });
      await store.reportFailed('b', backoff);
      await store.reportFailed('a', backoff);
      expect((await store.getFile('a'))?.reportPending?.retryAt).toBe(at(4000));
      h.clock.advance(3000);
      expect(await store.reportsDue(10)).toEqual(['b', 'a']);
      expect(await store.reportsDue(1)).toEqual(['b']);
      await store.reportsWritten('b');
      expect((await store.getFile('b'))?.reportPending).toBeNull();
      expect(await store.reportsDue(10)).toEqual(['a']);
      // Owed without a failure (a cancel to close): due at once, its count kept.
      await store.oweReports('b');
      expect((await store.getFile('b'))?.reportPending).toEqual({
        since: at(4000),
        failures: 0,
        retryAt: at(4000),
      });
      await store.oweReports('a');
      expect((await store.getFile('a'))?.reportPending).toEqual({
        since: at(0),
        failures: 3,
        retryAt: at(4000),
      });
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
}
