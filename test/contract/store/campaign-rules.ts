// The store contract, campaign rules (issue 14): a scheduled file taken only once its start has
// come on the store's clock, the contact limit's slots (unique per account, local day and
// number, whatever the number of workers), users' replies and the opt-outs they make, which a
// chunk not yet sent is checked against.
import { beforeEach, describe, expect, it } from 'vitest';
import type { HoldBackOptions, Store } from '../../../src/store/store.ts';
import { type ContractContext, newFile, type StoreHarness, validRows } from './helpers.ts';

const limit = (perDay = 1, account = 'default', timezone = 'America/Bogota'): HoldBackOptions => ({
  optOuts: false,
  contactLimit: { account, timezone, perDay },
});

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
    it('a number already sent a message by the account that day is held back CONTACT_LIMIT', async () => {
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
    });

    it('a recipient keeps the slot it took: its chunk checked again is not held back', async () => {
      await t.sendingFile('a', 2, 2);
      await store.holdBack('a', 1, limit());
      expect(await store.holdBack('a', 1, limit())).toEqual({ suppressed: 0, contactLimited: 0 });
      expect(await destinations('a', 1)).toHaveLength(2);
    });

    it('per account and per day; perDay 2 lets a second message through, not a third', async () => {
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
      // Days before yesterday go (the store's clock); yesterday's and today's stay.
      expect(await store.pruneContacts('America/Bogota')).toBe(0);
      h.clock.set(new Date('2026-03-03T05:00:00.000Z'));
      expect(await store.pruneContacts('America/Bogota')).toBe(4);
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
      expect(await store.recordReply(reply('573000000003', 'gracias', false))).not.toBeNull();
      const kept = await store.replies({ limit: 10 });
      expect(kept.map((r) => [r.from, r.text, r.optOut, r.messageId])).toEqual([
        ['573000000002', 'SALIR', true, 'mo-1'],
        ['573000000003', 'gracias', false, null],
        ['573000000003', 'gracias', false, null],
      ]);
      expect(await store.replies({ limit: 10, afterId: kept[1]!.id })).toHaveLength(1);
      expect(await store.replies({ limit: 10, since: t.at(1) })).toHaveLength(0);

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
