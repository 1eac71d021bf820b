// The store contract, campaign rules (issue 14): a scheduled file taken only once its start has
// come on the store's clock, the contact limit's slots (unique per account, local day and
// number, whatever the number of workers), users' replies and the opt-outs they make, which a
// chunk not yet sent is checked against.
import { beforeEach, describe, expect, it } from 'vitest';
import { pruneOld } from '../../../src/store/retention.ts';
import type { Store } from '../../../src/store/store.ts';
import { type ContractContext, ley2300, limit, newFile, type StoreHarness, validRows } from './helpers.ts';

export function campaignRules(t: ContractContext): void {
  let h: StoreHarness;
  let store: Store;
  beforeEach(() => {
    h = t.h;
    store = t.store;
  });

  /** The chunk's numbers as the request would carry them. */
  const destinations = async (fileId: string, seq: number) =>
    (await store.chunkDestinations(fileId, seq)).map((d) => d.number);

  describe('scheduled files', () => {
    it('sendAt, scheduledUntil and cost are kept and cleared', async () => {
      await store.registerFile(newFile({ fileId: 's1' }));
      const cost = {
        segmentsByCountry: { CO: 12, MX: 3 },
        transliteration: {
          mode: 'gsm7' as const,
          segmentsAsWritten: 30,
          segmentsTransliterated: 15,
          recipientsChanged: 9,
        },
      };
      const f = await store.transition('s1', 'scheduled', {
        patch: { sendAt: t.at(3_600_000), scheduledUntil: t.at(7_200_000), cost },
      });
      expect(f).toMatchObject({
        state: 'scheduled',
        sendAt: t.at(3_600_000),
        scheduledUntil: t.at(7_200_000),
        cost,
      });
      await store.transition('s1', 'sending', { from: ['scheduled'], patch: { scheduledUntil: null } });
      expect(await store.getFile('s1')).toMatchObject({
        scheduledUntil: null,
        sendAt: t.at(3_600_000),
        cost,
      });
    });

    it('acquireFile takes a scheduled file only once its start has come (the store clock)', async () => {
      await store.registerFile(newFile({ fileId: 'later' }));
      await store.transition('later', 'scheduled', { patch: { scheduledUntil: t.at(60_000) } });
      await store.registerFile(newFile({ fileId: 'waiting-validation' }));
      expect((await store.acquireFile('w1', ['scheduled'], 30_000))?.fileId).toBeUndefined();
      // Other states are not held up by a scheduled file that is not due.
      expect((await store.acquireFile('w1', ['validating', 'scheduled'], 30_000))?.fileId).toBe(
        'waiting-validation',
      );
      h.clock.advance(59_999);
      expect(await store.acquireFile('w2', ['scheduled'], 30_000)).toBeNull();
      h.clock.advance(1);
      expect((await store.acquireFile('w2', ['scheduled'], 30_000))?.fileId).toBe('later');
      // Held: nobody else takes it until its lease lapses.
      expect(await store.acquireFile('w3', ['scheduled'], 30_000)).toBeNull();
      h.clock.advance(30_000);
      expect((await store.acquireFile('w3', ['scheduled'], 30_000))?.fileId).toBe('later');
    });
  });

  describe('contact limit', () => {
    it('a number the entity already contacted that day is held back CONTACT_LIMIT, saying by what and when', async () => {
      await t.sendingFile('a', 4, 2);
      // File b: the numbers 3 to 6, so 3 and 4 are in both files.
      const shifted = validRows(4, 2).map((r) => ({ ...r, number: String(573000000002 + r.idx) }));
      await t.sendingFile('b', 4, 2, shifted);
      expect(await store.holdBack('a', 1, limit())).toEqual({ suppressed: 0, contactLimited: 0 });
      expect(await store.holdBack('a', 2, limit())).toEqual({ suppressed: 0, contactLimited: 0 });
      // File b's first chunk holds rows 3 and 4: both already contacted by file a.
      expect(await store.holdBack('b', 1, limit())).toEqual({ suppressed: 0, contactLimited: 2 });
      expect(await destinations('b', 1)).toEqual([]);
      expect(await store.holdBack('b', 2, limit())).toEqual({ suppressed: 0, contactLimited: 0 });
      expect(await destinations('b', 2)).toEqual(['573000000005', '573000000006']);
      const counts = await store.counts('b');
      expect(counts).toMatchObject({ valid: 2, contactLimited: 2 });
      expect(counts.records).toBe(
        counts.valid + counts.invalid + counts.duplicates + counts.suppressed + counts.contactLimited,
      );
      const rows = [];
      for await (const r of store.recipients('b')) rows.push([r.line, r.outcome, r.code]);
      expect(rows).toEqual([
        [2, 'contact_limit', 'CONTACT_LIMIT'],
        [3, 'contact_limit', 'CONTACT_LIMIT'],
        [4, 'pending', null],
        [5, 'pending', null],
      ]);
      // T0 is 07:00 in Bogotá: the contact in the way, on the store's clock, in the limit's zone.
      const limited = [];
      for await (const r of store.recipients('b', ['contact_limit'])) limited.push(r.detail);
      expect(limited).toEqual([
        'already contacted this day: by sms at 2026-03-01 07:00:00 -05:00 (contactLimit 1 a day)',
        'already contacted this day: by sms at 2026-03-01 07:00:00 -05:00 (contactLimit 1 a day)',
      ]);
    });

    it('a recipient keeps the slot it took: its chunk checked again is not held back', async () => {
      await t.sendingFile('a', 2, 2);
      await store.holdBack('a', 1, limit());
      expect(await store.holdBack('a', 1, limit())).toEqual({ suppressed: 0, contactLimited: 0 });
      expect(await destinations('a', 1)).toHaveLength(2);
    });

    it('per entity and per day; perDay 2 lets a second message through, not a third', async () => {
      await t.sendingFile('a', 1, 1);
      await t.sendingFile('b', 1, 1);
      await t.sendingFile('c', 1, 1);
      await t.sendingFile('d', 1, 1);
      // T0 is 07:00 on 2026-03-01 in Bogotá, 12:00 UTC: still 03-01 in Bogotá until 05:00 UTC.
      await store.holdBack('a', 1, limit(1));
      expect((await store.holdBack('b', 1, limit(1, 'other'))).contactLimited).toBe(0);
      // In Tokyo (UTC+9) the store's instant is 21:00 on 03-01 too: the same local day.
      expect((await store.holdBack('c', 1, limit(1, 'default', 'Asia/Tokyo'))).contactLimited).toBe(1);
      expect((await store.holdBack('d', 1, limit(1))).contactLimited).toBe(1);
      await t.sendingFile('e', 1, 1);
      await t.sendingFile('f', 1, 1);
      expect((await store.holdBack('e', 1, limit(2, 'third'))).contactLimited).toBe(0);
      expect((await store.holdBack('f', 1, limit(2, 'third'))).contactLimited).toBe(0);
      await t.sendingFile('g', 1, 1);
      expect((await store.holdBack('g', 1, limit(2, 'third'))).contactLimited).toBe(1);
      // The day is the store's: at 23:59 Bogotá still 03-01, a minute later 03-02 (not the caller's).
      h.clock.set(new Date('2026-03-02T04:59:00.000Z'));
      await t.sendingFile('h', 1, 1);
      expect((await store.holdBack('h', 1, limit(1))).contactLimited).toBe(1);
      h.clock.set(new Date('2026-03-02T05:00:00.000Z'));
      await t.sendingFile('i', 1, 1);
      expect((await store.holdBack('i', 1, limit(1))).contactLimited).toBe(0);
      // Days more than keepDays before today go (the store's clock); the later ones stay.
      const prune = { timezone: 'America/Bogota', keepDays: 1 };
      expect(await store.pruneContacts(prune)).toBe(0);
      h.clock.set(new Date('2026-03-03T05:00:00.000Z'));
      // The four contacts of 03-01, and the two keys last contacted that day (another
      // entity's, the third's); the default entity's key was contacted on 03-02.
      expect(await store.pruneContacts(prune)).toBe(6);
      expect((await store.holdBack('g', 1, limit(2, 'third'))).contactLimited).toBe(0);
    });

    it('two workers holding back the same numbers at once: each number is let through once', async () => {
      const n = 200;
      const files = ['w1', 'w2', 'w3', 'w4'];
      for (const f of files) await t.sendingFile(f, n, 50);
      const other = h.reopen ? await h.reopen() : store;
      try {
        const held = await Promise.all(
          files.flatMap((f, i) =>
            [1, 2, 3, 4].map((seq) => (i % 2 === 0 ? store : other).holdBack(f, seq, limit())),
          ),
        );
        expect(held.reduce((sum, r) => sum + r.contactLimited, 0)).toBe(n * (files.length - 1));
        const sent = [];
        for (const f of files) for (const seq of [1, 2, 3, 4]) sent.push(...(await destinations(f, seq)));
        expect(sent.sort()).toEqual(
          validRows(n, 50)
            .map((r) => r.number)
            .sort(),
        );
      } finally {
        if (other !== store) await other.close();
      }
    });
  });

  describe('beginChunk: the write-ahead under the campaign rules', () => {
    const sending = { fileState: 'sending' } as const;
    const contacted = async () =>
      (
        await store.contacts({ from: '2000-01-01', to: '2100-01-01', entity: null, after: null, limit: 100 })
      ).map((c) => [c.fileId, c.key]);
    const chunkStates = async (fileId: string) =>
      (await store.listChunks(fileId)).map((c) => [c.seq, c.state, c.attempts]);

    it('began: the chunk is inflight and its recipients took their contacts, in one transaction', async () => {
      await t.sendingFile('a', 4, 2);
      expect(await store.beginChunk('a', 1, sending, limit())).toBe('began');
      expect(await chunkStates('a')).toEqual([
        [1, 'inflight', 1],
        [2, 'pending', 0],
      ]);
      expect(await contacted()).toEqual([
        ['a', '573000000001'],
        ['a', '573000000002'],
      ]);
      // Begun already: the fence says no, and nothing more is taken.
      expect(await store.beginChunk('a', 1, sending, limit())).toBe('refused');
      expect(await contacted()).toHaveLength(2);
    });

    it('held: the held rows keep their outcome, the chunk stays pending and takes no contact; its next start sends the rest', async () => {
      await t.sendingFile('a', 2, 2);
      const shifted = validRows(2, 2).map((r) => ({ ...r, number: String(573000000001 + r.idx) }));
      await t.sendingFile('b', 2, 2, shifted);
      expect(await store.beginChunk('a', 1, sending, limit())).toBe('began');
      // File b holds 573000000002 (contacted by a) and 573000000003 (not yet).
      expect(await store.beginChunk('b', 1, sending, limit())).toEqual({
        held: { suppressed: 0, contactLimited: 1 },
      });
      expect(await chunkStates('b')).toEqual([[1, 'pending', 0]]);
      expect(await contacted()).toEqual([
        ['a', '573000000001'],
        ['a', '573000000002'],
      ]);
      const outcomes = [];
      for await (const r of store.recipients('b')) outcomes.push([r.number, r.outcome, r.code]);
      expect(outcomes).toEqual([
        ['573000000002', 'contact_limit', 'CONTACT_LIMIT'],
        ['573000000003', 'pending', null],
      ]);
      expect(await destinations('b', 1)).toEqual(['573000000003']);
      expect(await store.beginChunk('b', 1, sending, limit())).toBe('began');
      expect(await chunkStates('b')).toEqual([[1, 'inflight', 1]]);
      expect(await contacted()).toContainEqual(['b', '573000000003']);
    });

    it('refused: a file no longer sending holds nobody back and takes no contact', async () => {
      await t.sendingFile('a', 2, 2);
      await store.transition('a', 'paused', { from: ['sending'] });
      expect(await store.beginChunk('a', 1, sending, limit())).toBe('refused');
      expect(await chunkStates('a')).toEqual([[1, 'pending', 0]]);
      expect(await contacted()).toEqual([]);
    });
  });

  describe('a chunk result gives back the contacts the service never took', () => {
    const sending = { fileState: 'sending' } as const;
    const contacted = async () =>
      (
        await store.contacts({ from: '2000-01-01', to: '2100-01-01', entity: null, after: null, limit: 100 })
      ).map((c) => [c.fileId, c.key]);
    const held = async (fileId: string) => {
      const rows = [];
      for await (const r of store.recipients(fileId)) if (r.outcome === 'contact_limit') rows.push(r.number);
      return rows;
    };
    const ids = async (fileId: string, seq: number) =>
      (await store.chunkDestinations(fileId, seq)).map((d) => d.messageId);
    const bogota = (date: string) => h.clock.set(new Date(`${date}T10:00:00-05:00`));
    const STATE = { sent: 'accepted', failed: 'failed', rejected: 'rejected', in_doubt: 'in_doubt' } as const;
    /** Chunk 1 of `fileId` answered: every recipient `outcome` (as one part, or the whole request). */
    const answered = async (fileId: string, outcome: keyof typeof STATE, whole = false) =>
      store.recordChunkResult(fileId, 1, {
        state: STATE[outcome],
        attempts: 1,
        parts: [
          {
            messageIds: await ids(fileId, 1),
            outcome,
            ...(whole ? { wholeChunk: true } : {}),
            ...(outcome === 'sent' ? {} : { code: `CODE_${outcome.toUpperCase()}` }),
          },
        ],
      });

    it('rejected, failed and put-back recipients give their contact back; sent and in-doubt ones keep it', async () => {
      await t.sendingFile('a', 5, 5);
      expect(await store.beginChunk('a', 1, sending, limit())).toBe('began');
      const [sent, doubt, rejected, failed, back] = await ids('a', 1);
      await store.recordChunkResult('a', 1, {
        state: 'in_doubt',
        attempts: 5,
        parts: [
          { messageIds: [sent!], outcome: 'sent', transactionNumber: 'T1' },
          { messageIds: [doubt!], outcome: 'in_doubt', code: 'DROPLINE_ERR_SERVICE_IN_DOUBT' },
          { messageIds: [rejected!], outcome: 'rejected', code: 'DROPLINE_ERR_SERVICE_REJECTED' },
          { messageIds: [failed!], outcome: 'failed', code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE' },
          { messageIds: [back!], outcome: 'pending', code: 'DROPLINE_ERR_SERVICE_AUTH' },
        ],
      });
      expect(await contacted()).toEqual([
        ['a', '573000000001'],
        ['a', '573000000002'],
      ]);
      // Another campaign the same day reaches the three the service never took.
      await t.sendingFile('b', 5, 5);
      expect(await store.beginChunk('b', 1, sending, limit())).toEqual({
        held: { suppressed: 0, contactLimited: 2 },
      });
      expect(await held('b')).toEqual(['573000000001', '573000000002']);
      expect(await store.beginChunk('b', 1, sending, limit())).toBe('began');
      expect((await contacted()).filter(([f]) => f === 'b')).toEqual([
        ['b', '573000000003'],
        ['b', '573000000004'],
        ['b', '573000000005'],
      ]);
    });

    it('a whole request failed for good (every try refused) gives back every contact of its chunk', async () => {
      await t.sendingFile('a', 2, 2);
      expect(await store.beginChunk('a', 1, sending, limit())).toBe('began');
      await answered('a', 'failed', true);
      expect(await contacted()).toEqual([]);
      await t.sendingFile('b', 2, 2);
      expect(await store.beginChunk('b', 1, sending, limit())).toBe('began');
      // Sent again the same day (retry), the first file's recipients take their contact anew.
      await store.requeueChunks('a', ['failed']);
      expect(await store.beginChunk('a', 1, sending, limit(2))).toBe('began');
      expect(await contacted()).toHaveLength(4);
    });

    it("the week's channel goes back with the contact that opened it, never one an earlier contact opened", async () => {
      bogota('2026-02-23');
      await t.sendingFile('wa-mon', 1, 1);
      expect(await store.beginChunk('wa-mon', 1, sending, ley2300('whatsapp'))).toBe('began');
      await answered('wa-mon', 'sent');
      // Wednesday: the number (contacted by WhatsApp on Monday) and a new one; the service takes neither.
      bogota('2026-02-25');
      const two = validRows(2, 2).map((r) => ({ ...r, number: String(573000000000 + r.idx) }));
      await t.sendingFile('wa-wed', 2, 2, two);
      expect(await store.beginChunk('wa-wed', 1, sending, ley2300('whatsapp'))).toBe('began');
      await answered('wa-wed', 'failed');
      // SMS the same day: the new number's week is free again; Monday's WhatsApp still stands.
      await t.sendingFile('sms-wed', 2, 2, two);
      expect(await store.beginChunk('sms-wed', 1, sending, ley2300('sms'))).toEqual({
        held: { suppressed: 0, contactLimited: 1 },
      });
      expect(await held('sms-wed')).toEqual(['573000000001']);
      expect(await store.beginChunk('sms-wed', 1, sending, ley2300('sms'))).toBe('began');
    });

    it('a number twice in a chunk given back: both its day slots come back, its week channel stays (another contact used it)', async () => {
      const twice = (channel: string) => limit(2, 'default', 'America/Bogota', channel, 1);
      const same = validRows(2, 2).map((r) => ({ ...r, number: '573000000001' }));
      await t.sendingFile('a', 2, 2, same);
      expect(await store.beginChunk('a', 1, sending, twice('sms'))).toBe('began');
      await answered('a', 'rejected');
      expect(await contacted()).toEqual([]);
      // Its second contact did not add SMS to the week: the store cannot tell that the first
      // did, so SMS stays the number's channel of the week (the safe side).
      await t.sendingFile('wa', 1, 1, same.slice(0, 1));
      expect(await store.beginChunk('wa', 1, sending, twice('whatsapp'))).toEqual({
        held: { suppressed: 0, contactLimited: 1 },
      });
      // The day's two slots are free again: the same two messages the same day go out.
      await t.sendingFile('b', 2, 2, same);
      expect(await store.beginChunk('b', 1, sending, twice('sms'))).toBe('began');
      // Recorded twice (a late duplicate of the result): nothing more is given back.
      await answered('a', 'rejected');
      await t.sendingFile('c', 1, 1, same.slice(0, 1));
      expect(await store.beginChunk('c', 1, sending, twice('sms'))).toEqual({
        held: { suppressed: 0, contactLimited: 1 },
      });
    });

    it('a contact given back from a key that holds other contacts (a third of the day, a third channel of the week): recorded, slots kept', async () => {
      const one = validRows(1, 1).map((r) => ({ ...r, number: '573000000001' }));
      // perDay 3: two contacts sent, the third given back.
      for (const f of ['a', 'b', 'c']) {
        await t.sendingFile(f, 1, 1, one);
        expect(await store.beginChunk(f, 1, sending, limit(3))).toBe('began');
      }
      await answered('a', 'sent');
      // The third given back while a fourth file took the key after it: its latest stays.
      await t.sendingFile('d', 1, 1, one);
      expect(await store.beginChunk('d', 1, sending, limit(4))).toBe('began');
      await answered('b', 'sent');
      await answered('c', 'failed');
      await answered('d', 'sent');
      expect(await contacted()).toEqual([
        ['a', '573000000001'],
        ['b', '573000000001'],
        ['d', '573000000001'],
      ]);
      // No weekly rule: SMS on Monday, WhatsApp on Tuesday, a WhatsApp refused on Wednesday.
      const week: [string, string, string][] = [
        ['mon', '2026-02-23', 'sms'],
        ['tue', '2026-02-24', 'whatsapp'],
        ['wed', '2026-02-25', 'whatsapp'],
      ];
      for (const [f, day, channel] of week) {
        bogota(day);
        const pair = validRows(2, 2).map((r) => ({ ...r, number: String(573000000001 + r.idx) }));
        await t.sendingFile(f, 2, 2, pair);
        expect(await store.beginChunk(f, 1, sending, limit(1, 'default', 'America/Bogota', channel))).toBe(
          'began',
        );
        await answered(f, f === 'wed' ? 'failed' : 'sent');
      }
      const ledger = await store.contacts({
        from: '2026-02-23',
        to: '2026-02-25',
        entity: null,
        after: null,
        limit: 10,
      });
      expect(ledger.map((c) => [c.fileId, c.key, c.channel, c.slot, c.weekSlot])).toEqual([
        ['mon', '573000000002', 'sms', 1, 1],
        ['mon', '573000000003', 'sms', 1, 1],
        ['tue', '573000000002', 'whatsapp', 1, 2],
        ['tue', '573000000003', 'whatsapp', 1, 2],
      ]);
    });

    it('a recipient in doubt keeps its contact even when its retry the same day fails', async () => {
      await t.sendingFile('a', 1, 1);
      expect(await store.beginChunk('a', 1, sending, limit())).toBe('began');
      await answered('a', 'in_doubt', true);
      await store.requeueChunks('a', ['in_doubt']);
      expect(await store.beginChunk('a', 1, sending, limit())).toBe('began');
      await answered('a', 'failed', true);
      expect(await contacted()).toEqual([['a', '573000000001']]);
      await t.sendingFile('b', 1, 1);
      expect(await store.beginChunk('b', 1, sending, limit())).toEqual({
        held: { suppressed: 0, contactLimited: 1 },
      });
    });

    it("a late result of a worker whose file was taken over and sent again gives nothing back: the new start's contacts stand", async () => {
      await t.sendingFile('a', 1, 1);
      expect(await store.takeLease('a', 'w1', 30_000)).toBe(true);
      expect(await store.beginChunk('a', 1, { owner: 'w1', fileState: 'sending' }, limit())).toBe('began');
      // w1 is cut off; the next day w2 takes the file over, finds the chunk in doubt, an
      // operator retries it, and its start takes that day's contact.
      h.clock.advance(86_400_000);
      expect(await store.takeLease('a', 'w2', 30_000)).toBe(true);
      await store.markInflightInDoubt('a');
      await store.requeueChunks('a', ['in_doubt']);
      expect(await store.beginChunk('a', 1, { owner: 'w2', fileState: 'sending' }, limit())).toBe('began');
      // w1's answer arrives at last: the service refused its request.
      await store.recordChunkResult(
        'a',
        1,
        {
          state: 'failed',
          attempts: 1,
          parts: [{ messageIds: await ids('a', 1), outcome: 'failed', code: 'CODE_FAILED' }],
        },
        { owner: 'w1' },
      );
      expect(await contacted()).toEqual([
        ['a', '573000000001'],
        ['a', '573000000001'],
      ]);
    });

    it.each([
      ['', 1000],
      [', the clock stepped back meanwhile', -60_000],
    ])(
      'a chunk in doubt retried without the limit (removed from the configuration) and refused keeps its first contacts%s',
      async (_, step) => {
        await t.sendingFile('a', 1, 1);
        h.clock.advance(3_600_000);
        expect(await store.beginChunk('a', 1, sending, limit())).toBe('began');
        h.clock.advance(1000);
        await answered('a', 'in_doubt', true);
        await store.requeueChunks('a', ['in_doubt']);
        h.clock.advance(step);
        // Sent again as a chunk without campaign rules is (Store.setChunkState), then refused.
        expect(await store.setChunkState('a', 1, 'inflight', ['pending'], sending)).toBe(true);
        await answered('a', 'rejected', true);
        expect(await contacted()).toEqual([['a', '573000000001']]);
      },
    );
  });

  describe('the contact ledger of an entity (channels a week, compliance)', () => {
    /** The file's recipients: [number, outcome, detail]. */
    const outcomes = async (fileId: string) => {
      const rows = [];
      for await (const r of store.recipients(fileId)) rows.push([r.number, r.outcome, r.detail]);
      return rows;
    };
    /** Bogotá wall clock on a day of the week of 2026-02-23 (a Monday). */
    const bogota = (date: string, time = '10:00') => h.clock.set(new Date(`${date}T${time}:00-05:00`));

    it('one channel a week: another channel is held back that week with when and by what; a new week frees it', async () => {
      bogota('2026-02-24');
      await t.sendingFile('sms-tue', 2, 2);
      expect(await store.holdBack('sms-tue', 1, ley2300('sms'))).toEqual({
        suppressed: 0,
        contactLimited: 0,
      });
      bogota('2026-02-25');
      await t.sendingFile('wa-wed', 2, 2);
      expect(await store.holdBack('wa-wed', 1, ley2300('whatsapp'))).toEqual({
        suppressed: 0,
        contactLimited: 2,
      });
      const week =
        'already contacted by another channel this week: by sms at 2026-02-24 10:00:00 -05:00 (contactLimit 1 channel a week)';
      expect(await outcomes('wa-wed')).toEqual([
        ['573000000001', 'contact_limit', week],
        ['573000000002', 'contact_limit', week],
      ]);
      // The same channel on another day of the week is no second channel.
      await t.sendingFile('sms-wed', 2, 2);
      expect(await store.holdBack('sms-wed', 1, ley2300('sms'))).toEqual({
        suppressed: 0,
        contactLimited: 0,
      });
      // Sunday 23:59 is still that week; Monday 00:00 is another.
      bogota('2026-03-01', '23:59');
      await t.sendingFile('wa-sun', 2, 2);
      expect((await store.holdBack('wa-sun', 1, ley2300('whatsapp'))).contactLimited).toBe(2);
      bogota('2026-03-02', '00:00');
      await t.sendingFile('wa-mon', 2, 2);
      expect((await store.holdBack('wa-mon', 1, ley2300('whatsapp'))).contactLimited).toBe(0);
      // Another entity keeps its own ledger.
      await t.sendingFile('other', 2, 2);
      expect((await store.holdBack('other', 1, ley2300('sms', 'acme'))).contactLimited).toBe(0);
    });

    it('a recipient the day refused takes no channel of the week: another channel may still take it', async () => {
      const two = (channel: string) => limit(1, 'default', 'America/Bogota', channel, 2);
      bogota('2026-02-24');
      await t.sendingFile('sms', 1, 1);
      await t.sendingFile('wa', 1, 1);
      expect((await store.holdBack('sms', 1, two('sms'))).contactLimited).toBe(0);
      // WhatsApp the same day: refused by the day, so it takes no channel slot of the week.
      expect((await store.holdBack('wa', 1, two('whatsapp'))).contactLimited).toBe(1);
      expect((await outcomes('wa'))[0]![2]).toBe(
        'already contacted this day: by sms at 2026-02-24 10:00:00 -05:00 (contactLimit 1 a day)',
      );
      bogota('2026-02-25');
      await t.sendingFile('mail', 1, 1);
      expect((await store.holdBack('mail', 1, two('email'))).contactLimited).toBe(0);
      bogota('2026-02-26');
      await t.sendingFile('wa-thu', 1, 1);
      expect((await store.holdBack('wa-thu', 1, two('whatsapp'))).contactLimited).toBe(1);
      expect((await outcomes('wa-thu'))[0]![2]).toBe(
        'already contacted by another channel this week: by email at 2026-02-25 10:00:00 -05:00 (contactLimit 2 channels a week)',
      );
    });

    it('slots: a number thrice in a chunk with perDay 2 takes slots 1 and 2, the third is held; another channel that week holds week slot 2', async () => {
      const both = (channel: string) => limit(2, 'default', 'America/Bogota', channel, 2);
      bogota('2026-02-24');
      const thrice = validRows(4, 4).map((r) => ({
        ...r,
        number: r.idx < 4 ? '573000000001' : '573000000002',
      }));
      await t.sendingFile('sms', 4, 4, thrice);
      expect((await store.holdBack('sms', 1, both('sms'))).contactLimited).toBe(1);
      expect((await outcomes('sms')).map((r) => r[1])).toEqual([
        'pending',
        'pending',
        'contact_limit',
        'pending',
      ]);
      bogota('2026-02-25');
      await t.sendingFile(
        'wa',
        2,
        2,
        validRows(2, 2).map((r) => ({ ...r, number: '573000000001' })),
      );
      expect((await store.holdBack('wa', 1, both('whatsapp'))).contactLimited).toBe(0);
      const ledger = await store.contacts({
        from: '2026-02-24',
        to: '2026-02-25',
        entity: null,
        after: null,
        limit: 10,
      });
      expect(ledger.map((c) => [c.day, c.key, c.channel, c.slot, c.weekSlot, c.fileId])).toEqual([
        ['2026-02-24', '573000000001', 'sms', 1, 1, 'sms'],
        ['2026-02-24', '573000000001', 'sms', 2, 1, 'sms'],
        ['2026-02-24', '573000000002', 'sms', 1, 1, 'sms'],
        ['2026-02-25', '573000000001', 'whatsapp', 1, 2, 'wa'],
        ['2026-02-25', '573000000001', 'whatsapp', 2, 2, 'wa'],
      ]);
    });

    it("a file's recipients pruned before its contacts' days: compliance prints the same contacts, counted once", async () => {
      bogota('2026-02-24');
      const twice = validRows(5, 2).map((r) => (r.idx === 5 ? { ...r, number: '573000000001' } : r));
      await t.sendingFile('old', 5, 2, twice);
      for (const seq of [1, 2, 3])
        expect((await store.holdBack('old', seq, limit(2))).contactLimited).toBe(0);
      const query = { from: '2026-02-24', to: '2026-02-24', entity: null, after: null, limit: 10 };
      const before = await store.contacts(query);
      expect(before.map((c) => [c.key, c.slot])).toEqual([
        ['573000000001', 1],
        ['573000000002', 1],
        ['573000000003', 1],
        ['573000000004', 1],
        ['573000000001', 2],
      ]);
      await store.transition('old', 'completed');
      // retentionDays shorter than the ledger's (which keeps at least a week), a few rows a step.
      const totals = await pruneOld(store, {
        retentionDays: 0,
        now: new Date('2026-02-25T12:00:00Z'),
        maxRows: 3,
      });
      expect(totals).toMatchObject({ files: 1, recipients: 5 });
      expect(await store.contacts(query)).toEqual(before);
      const first = await store.contacts({ ...query, limit: 3 });
      expect([...first, ...(await store.contacts({ ...query, after: first.at(-1)!, limit: 3 }))]).toEqual(
        before,
      );
      // Their day pruned: the five contacts, each once (the keys stay until their week ends).
      bogota('2026-02-27');
      expect(await store.pruneContacts({ timezone: 'America/Bogota', keepDays: 1 })).toBe(5);
      expect(await store.contacts(query)).toEqual([]);
    });

    it('two workers sending the same numbers by two channels at once: each number contacted once', async () => {
      const n = 200;
      bogota('2026-02-24');
      await t.sendingFile('by-sms', n, 50);
      await t.sendingFile('by-wa', n, 50);
      const other = h.reopen ? await h.reopen() : store;
      try {
        const held = await Promise.all(
          [1, 2, 3, 4].flatMap((seq) => [
            store.holdBack('by-sms', seq, ley2300('sms')),
            other.holdBack('by-wa', seq, ley2300('whatsapp')),
          ]),
        );
        expect(held.reduce((sum, r) => sum + r.contactLimited, 0)).toBe(n);
        const sent = [];
        for (const f of ['by-sms', 'by-wa'])
          for (const seq of [1, 2, 3, 4]) sent.push(...(await destinations(f, seq)));
        expect(sent.sort()).toEqual(
          validRows(n, 50)
            .map((r) => r.number)
            .sort(),
        );
        const ledger = await store.contacts({
          from: '2026-02-24',
          to: '2026-02-24',
          entity: null,
          after: null,
          limit: 1000,
        });
        expect(ledger).toHaveLength(n);
      } finally {
        if (other !== store) await other.close();
      }
    });

    it('contacts: the ledger by day and entity, page by page, with the file and what it was checked against', async () => {
      bogota('2026-02-24');
      await t.sendingFile('a', 2, 2);
      await store.holdBack('a', 1, ley2300('sms'));
      await store.recordFileChecks('a', { account: 'bulk', channel: 'sms', entity: 'default' });
      await store.recordFileChecks('a', {
        window: 'colombia-commercial',
        lists: [{ kind: 'suppression', name: 'suppressionList', sha256: 'sha256:ab' }],
      });
      bogota('2026-02-25');
      await t.sendingFile('b', 1, 1);
      await store.holdBack('b', 1, ley2300('whatsapp', 'acme'));
      const query = { from: '2026-02-24', to: '2026-02-25', entity: null, after: null, limit: 10 };
      const all = await store.contacts(query);
      expect(all.map((c) => [c.entity, c.day, c.key, c.slot, c.channel, c.fileId, c.weekSlot])).toEqual([
        ['default', '2026-02-24', '573000000001', 1, 'sms', 'a', 1],
        ['default', '2026-02-24', '573000000002', 1, 'sms', 'a', 1],
        ['acme', '2026-02-25', '573000000001', 1, 'whatsapp', 'b', 1],
      ]);
      expect(all[0]).toMatchObject({
        at: '2026-02-24T15:00:00.000Z',
        fileName: 'a.txt',
        account: 'bulk',
        window: 'colombia-commercial',
        lists: [{ kind: 'suppression', name: 'suppressionList', sha256: 'sha256:ab' }],
      });
      expect(all[2]).toMatchObject({ account: null, window: null, lists: null });
      const first = await store.contacts({ ...query, limit: 2 });
      const rest = await store.contacts({ ...query, after: first.at(-1)!, limit: 2 });
      expect([...first, ...rest]).toEqual(all);
      expect(await store.contacts({ ...query, entity: 'acme' })).toHaveLength(1);
      expect(await store.contacts({ ...query, to: '2026-02-24' })).toHaveLength(2);
    });
  });

  describe('replies and opt-outs', () => {
    const reply = (from: string, text: string, optOut: boolean, messageId: string | null = null) => ({
      receivedAt: t.at(0),
      from,
      to: '890123',
      text,
      optOut,
      messageId,
    });

    it('every reply is kept, once per messageId; an opt-out holds its number back from chunks not yet sent', async () => {
      await t.sendingFile('a', 4, 2);
      expect(await store.recordReply(reply('573000000002', 'SALIR', true, 'mo-1'))).not.toBeNull();
      expect(await store.recordReply(reply('573000000002', 'SALIR', true, 'mo-1'))).toBeNull();
      expect(await store.recordReply(reply('573000000003', 'gracias', false))).not.toBeNull();
      // Without a messageId, the same reply at the same time is one delivered again
      // (docs/opt-outs.md "A reply delivered again"); a minute later, a reply of its own.
      expect(await store.recordReply(reply('573000000003', 'gracias', false))).toBeNull();
      expect(
        await store.recordReply({ ...reply('573000000003', 'gracias', false), receivedAt: t.at(60_000) }),
      ).not.toBeNull();
      const kept = await store.replies({ limit: 10 });
      expect(kept.map((r) => [r.from, r.text, r.optOut, r.messageId])).toEqual([
        ['573000000002', 'SALIR', true, 'mo-1'],
        ['573000000003', 'gracias', false, null],
        ['573000000003', 'gracias', false, null],
      ]);
      expect(await store.replies({ limit: 10, afterId: kept[1]!.id })).toHaveLength(1);
      expect(await store.replies({ limit: 10, since: t.at(1) })).toHaveLength(1);
      expect(await store.replies({ limit: 10, since: t.at(60_001) })).toHaveLength(0);

      // Without the check, nothing is held back; with it, only the opted-out number.
      expect(await store.holdBack('a', 1, { optOuts: false, contactLimit: null })).toEqual({
        suppressed: 0,
        contactLimited: 0,
      });
      expect(await store.holdBack('a', 1, { optOuts: true, contactLimit: null })).toEqual({
        suppressed: 1,
        contactLimited: 0,
      });
      expect(await destinations('a', 1)).toEqual(['573000000001']);
      const counts = await store.counts('a');
      expect(counts).toMatchObject({ records: 4, valid: 3, suppressed: 1, optedOut: 1, contactLimited: 0 });
    });
  });
}
