// The store contract, a number's standing (issue 35): an opt-out keyword puts its sender on the
// opt-out list and an opt-in takes it off, each change kept with its reply, keyword and time;
// an opt-in from a number a configured list holds is kept as such; replies flagged for review
// change nothing; one confirmation text a number a Bogotá day, whatever the number of stores.
import { beforeEach, expect, it } from 'vitest';
import { ANSWER_ABANDONED } from '../../../src/store/standing-rules.ts';
import type { NewReply, Store } from '../../../src/store/store.ts';
import type { ContractContext, StoreHarness } from './helpers.ts';

export function standing(t: ContractContext): void {
  let h: StoreHarness;
  let store: Store;
  beforeEach(() => {
    h = t.h;
    store = t.store;
  });

  const N = '573001112233';
  const reply = (
    ms: number,
    text: string,
    intent: NewReply['intent'],
    keyword: string | null = null,
    extra: Partial<NewReply> = {},
  ): NewReply => ({
    receivedAt: t.at(ms),
    from: N,
    to: '890123',
    text,
    optOut: intent === 'opt_out',
    messageId: null,
    intent,
    keyword,
    ...extra,
  });

  it('an opt-out then an opt-in: the list follows, the history keeps both with their replies', async () => {
    await t.sendingFile('a', 2, 1);
    expect(await store.standing(N)).toEqual({ number: N, optedOut: null, history: [] });

    expect(await store.recordReply(reply(0, 'Salir', 'opt_out', 'SALIR'))).toMatchObject({
      intent: 'opt_out',
      fileId: null,
    });
    // A second opt-out changes nothing: no second history row.
    expect(await store.recordReply(reply(1000, 'STOP', 'opt_out', 'STOP'))).toMatchObject({
      intent: 'opt_out',
      fileId: null,
    });
    const [salir, stop] = await store.replies({ limit: 10 });
    expect([salir!.intent, salir!.keyword, salir!.optOut, stop!.intent]).toEqual([
      'opt_out',
      'SALIR',
      true,
      'opt_out',
    ]);
    const out = await store.standing(N);
    expect(out.optedOut).toEqual({ at: t.at(0), reply: salir!.id });
    expect(out.history.map((c) => [c.change, c.source, c.reply, c.keyword, c.at, c.detail])).toEqual([
      ['opted_out', 'reply', salir!.id, 'SALIR', t.at(0), null],
    ]);

    expect(await store.recordReply(reply(60_000, 'Alta', 'opt_in', 'ALTA'))).toMatchObject({
      intent: 'opt_in',
      fileId: null,
    });
    const alta = (await store.replies({ limit: 10 })).at(-1)!;
    expect([alta.intent, alta.optOut]).toEqual(['opt_in', false]);
    const back = await store.standing(N);
    expect(back.optedOut).toBeNull();
    expect(back.history.map((c) => [c.change, c.source, c.reply, c.keyword, c.at])).toEqual([
      ['opted_out', 'reply', salir!.id, 'SALIR', t.at(0)],
      ['opted_in', 'reply', alta.id, 'ALTA', t.at(60_000)],
    ]);
    // Nothing is held back any more.
    expect(await store.holdBack('a', 1, { optOuts: true, contactLimit: null })).toEqual({
      suppressed: 0,
      contactLimited: 0,
    });
    // An opt-in of a number not opted out changes nothing.
    expect(await store.recordReply(reply(61_000, 'START', 'opt_in', 'START'))).toMatchObject({
      intent: 'opt_in',
      fileId: null,
    });
    expect((await store.standing(N)).history).toHaveLength(2);
  });

  it('an opt-in from a number a configured list holds: recorded, kept by the list, said in the history', async () => {
    await store.recordReply(reply(0, 'BAJA', 'opt_out', 'BAJA'));
    await store.recordReply(
      reply(5000, 'ALTA', 'opt_in', 'ALTA', {
        listedOn: ['suppressionList', 'sources.partner.suppressionList'],
      }),
    );
    const s = await store.standing(N);
    // The reply's own opt-out is lifted; the list is not the store's to change.
    expect(s.optedOut).toBeNull();
    expect(s.history.map((c) => [c.change, c.source, c.keyword, c.detail])).toEqual([
      ['opted_out', 'reply', 'BAJA', null],
      ['opted_in', 'reply', 'ALTA', null],
      ['kept_by_list', 'list', 'ALTA', 'suppressionList, sources.partner.suppressionList'],
    ]);
  });

  it('help and replies flagged for review change no standing; the review list and its count', async () => {
    await store.recordReply(reply(0, 'AYUDA', 'help', 'AYUDA'));
    await store.recordReply(reply(1000, 'no me escriban más', 'review'));
    await store.recordReply(reply(2000, 'gracias', null));
    await store.recordReply({ ...reply(3000, 'stop please', 'review'), from: '573009998877' });
    expect(await store.standing(N)).toEqual({ number: N, optedOut: null, history: [] });
    expect(await store.countRepliesToReview()).toBe(2);
    const review = await store.repliesToReview({ limit: 10 });
    expect(review.map((r) => [r.from, r.text, r.intent, r.optOut])).toEqual([
      [N, 'no me escriban más', 'review', false],
      ['573009998877', 'stop please', 'review', false],
    ]);
    expect(await store.repliesToReview({ limit: 10, afterId: review[0]!.id })).toHaveLength(1);
    expect((await store.replies({ limit: 10 })).map((r) => r.intent)).toEqual([
      'help',
      'review',
      null,
      'review',
    ]);
  });

  it('a reply kept again (its messageId) changes nothing a second time', async () => {
    await store.recordReply(reply(0, 'SALIR', 'opt_out', 'SALIR', { messageId: 'mo-1' }));
    await store.recordReply(reply(1000, 'ALTA', 'opt_in', 'ALTA', { messageId: 'mo-2' }));
    expect(await store.recordReply(reply(0, 'SALIR', 'opt_out', 'SALIR', { messageId: 'mo-1' }))).toBeNull();
    const s = await store.standing(N);
    expect(s.optedOut).toBeNull();
    expect(s.history.map((c) => c.change)).toEqual(['opted_out', 'opted_in']);
  });

  it('an operator opts a number out and back in: on the store clock, noted, held back meanwhile', async () => {
    await t.sendingFile('a', 2, 1);
    const first = '573000000001';
    expect(
      await store.changeStanding({ number: first, optedOut: true, note: 'ticket 88: asked by phone' }),
    ).toBe(true);
    expect(await store.changeStanding({ number: first, optedOut: true, note: null })).toBe(false);
    expect(await store.holdBack('a', 1, { optOuts: true, contactLimit: null })).toEqual({
      suppressed: 1,
      contactLimited: 0,
    });
    h.clock.advance(60_000);
    expect(await store.changeStanding({ number: first, optedOut: false, note: null })).toBe(true);
    expect(await store.changeStanding({ number: first, optedOut: false, note: null })).toBe(false);
    const s = await store.standing(first);
    expect(s.optedOut).toBeNull();
    expect(s.history.map((c) => [c.change, c.source, c.reply, c.keyword, c.at, c.detail])).toEqual([
      ['opted_out', 'operator', null, null, t.at(0), 'ticket 88: asked by phone'],
      ['opted_in', 'operator', null, null, t.at(60_000), null],
    ]);
    // A reply's opt-in lifts an operator's opt-out as it lifts a reply's.
    await store.changeStanding({ number: N, optedOut: true, note: null });
    expect((await store.standing(N)).optedOut).toEqual({ at: t.at(60_000), reply: null });
    await store.recordReply(reply(70_000, 'ALTA', 'opt_in', 'ALTA'));
    expect((await store.standing(N)).optedOut).toBeNull();
  });

  it('one confirmation a number a Bogotá day, on the store clock, whatever the number of stores', async () => {
    // T0 is 07:00 in Bogotá (UTC-5).
    const other = h.reopen ? await h.reopen() : store;
    try {
      const takes = await Promise.all([
        store.takeConfirmation(N, 'America/Bogota'),
        other.takeConfirmation(N, 'America/Bogota'),
        store.takeConfirmation(N, 'America/Bogota'),
      ]);
      expect(takes.filter(Boolean)).toHaveLength(1);
      expect(await other.takeConfirmation('573009998877', 'America/Bogota')).toBe(true);
      // 23:59 the same Bogotá day (04:59 UTC the next day): still taken.
      h.clock.set(new Date('2026-03-02T04:59:00.000Z'));
      expect(await store.takeConfirmation(N, 'America/Bogota')).toBe(false);
      // Midnight in Bogotá: a new day.
      h.clock.set(new Date('2026-03-02T05:00:00.000Z'));
      expect(await store.takeConfirmation(N, 'America/Bogota')).toBe(true);
      expect(await other.takeConfirmation(N, 'America/Bogota')).toBe(false);
    } finally {
      if (other !== store) await other.close();
    }
  });

  // docs/opt-outs.md "Answers": the answer a reply is owed is kept with it, claimed by one
  // process, sent once; a confirmation takes the number's day; a refusal that took nothing
  // leaves it owed, failed after MAX_ANSWER_ATTEMPTS claims.
  const help = { text: 'Ayuda: acme.co', what: 'helpText' as const, confirmation: false };
  const confirm = { text: 'No recibirás más', what: 'confirmOptOut' as const, confirmation: true };

  it('an answer owed is kept with its reply, claimed once, sent once, whatever the number of stores', async () => {
    const other = h.reopen ? await h.reopen() : store;
    try {
      const kept = await store.recordReply(reply(0, 'AYUDA', 'help', 'AYUDA', { answer: help }));
      const id = kept!.id;
      // Delivered again: kept already, nothing more owed.
      expect(await store.recordReply(reply(0, 'AYUDA', 'help', 'AYUDA', { answer: help }))).toBeNull();
      expect(await store.answersOwed(10)).toEqual([id]);
      expect(await store.replyAnswer(id)).toEqual({
        reply: id,
        number: N,
        shortCode: '890123',
        ...help,
        state: 'owed',
        attempts: 0,
        detail: null,
      });
      const claims = await Promise.all([
        store.claimAnswer(id, 'America/Bogota'),
        other.claimAnswer(id, 'America/Bogota'),
        store.claimAnswer(id, 'America/Bogota'),
      ]);
      expect(claims.filter((c) => c !== null)).toEqual([
        { reply: id, number: N, shortCode: '890123', ...help, attempts: 1 },
      ]);
      expect(await store.answersOwed(10)).toEqual([]);
      await store.settleAnswer(id, 'sent', null);
      expect(await store.replyAnswer(id)).toMatchObject({ state: 'sent', attempts: 1 });
      expect(await store.claimAnswer(id, 'America/Bogota')).toBeNull();
      // A reply owing nothing has no answer.
      const quiet = await store.recordReply(reply(1000, 'gracias', null));
      expect(await store.replyAnswer(quiet!.id)).toBeNull();
    } finally {
      if (other !== store) await other.close();
    }
  });

  it('a confirmation owed takes the day once; a refusal leaves it owed; failed after five claims', async () => {
    const a = (await store.recordReply(reply(0, 'SALIR', 'opt_out', 'SALIR', { answer: confirm })))!.id;
    const b = (await store.recordReply(reply(1000, 'STOP', 'opt_out', 'STOP', { answer: confirm })))!.id;
    expect(await store.answersOwed(10)).toEqual([a, b]);
    // A sweep's cursor: the answers owed after one already asked.
    expect(await store.answersOwed(10, a)).toEqual([b]);
    expect(await store.claimAnswer(a, 'America/Bogota')).toMatchObject({ reply: a, attempts: 1 });
    // Refused without being taken: owed again, and its own day does not skip it.
    await store.settleAnswer(a, 'owed', 'POST /momessage answered 503');
    expect(await store.replyAnswer(a)).toMatchObject({
      state: 'owed',
      detail: 'POST /momessage answered 503',
    });
    expect(await store.claimAnswer(a, 'America/Bogota')).toMatchObject({ reply: a, attempts: 2 });
    await store.settleAnswer(a, 'sent', null);
    // The second confirmation the same day: skipped, never sent.
    expect(await store.claimAnswer(b, 'America/Bogota')).toBeNull();
    expect(await store.replyAnswer(b)).toMatchObject({ state: 'skipped', attempts: 1 });
    expect(await store.answersOwed(10)).toEqual([]);

    const c = (await store.recordReply(reply(2000, 'AYUDA', 'help', 'AYUDA', { answer: help })))!.id;
    for (let i = 1; i <= 5; i++) {
      expect(await store.claimAnswer(c, 'America/Bogota')).toMatchObject({ attempts: i });
      await store.settleAnswer(c, 'owed', 'refused');
    }
    expect(await store.replyAnswer(c)).toMatchObject({ state: 'failed', attempts: 5, detail: 'refused' });
  });

  it('an answer owed for over a day is skipped, not sent', async () => {
    const id = (await store.recordReply(reply(0, 'AYUDA', 'help', 'AYUDA', { answer: help })))!.id;
    h.clock.set(new Date(Date.parse(t.at(0)) + 86_400_000 + 1000));
    expect(await store.claimAnswer(id, 'America/Bogota')).toBeNull();
    expect(await store.replyAnswer(id)).toMatchObject({ state: 'skipped' });
    expect(await store.answersOwed(10)).toEqual([]);
  });

  it('an answer left sending by a process that died is failed after an hour, never sent again; one sending now is left alone', async () => {
    const first = (await store.recordReply(reply(0, 'AYUDA', 'help', 'AYUDA', { answer: help })))!.id;
    const second = (await store.recordReply(reply(1, 'HELP', 'help', 'HELP', { answer: help })))!.id;
    expect(await store.claimAnswer(first, 'America/Bogota')).not.toBeNull();
    h.clock.set(new Date(Date.parse(t.at(0)) + 3_600_000 + 1000));
    expect(await store.claimAnswer(second, 'America/Bogota')).not.toBeNull();
    expect(await store.abandonAnswers()).toBe(1);
    expect(await store.replyAnswer(first)).toMatchObject({
      state: 'failed',
      detail: ANSWER_ABANDONED,
    });
    expect(await store.replyAnswer(second)).toMatchObject({ state: 'sending' });
    expect(await store.abandonAnswers()).toBe(0);
    expect(await store.answersOwed(10)).toEqual([]);
  });
}
