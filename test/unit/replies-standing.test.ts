// replyHandler (docs/opt-outs.md "Keywords", "Answers"): a reply read against its short code's
// settings, kept in a real (in-memory SQLite) store, then answered through a ReplyAnswerer that
// records what it is asked (the interface's test double; the HTTP client has its own test).
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import type { Logger } from '../../src/log.ts';
import { AnswerNotTaken, type ReplyAnswerer } from '../../src/replies/answers.ts';
import { type IncomingReply, replyHandler } from '../../src/replies/standing.ts';
import { SqliteStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/store.ts';
import { waitFor } from '../helpers/pipeline-harness.ts';

const N = '573001112233';
let store: Store;
let sent: [string, string, string][];
let failNext: boolean;
/** The next answers refused without being taken (AnswerNotTaken). */
let refuseNext = 0;
let lines: Record<string, unknown>[];
let logger: Logger;
const answerer: ReplyAnswerer = {
  async answer(to, shortCode, text) {
    if (failNext) {
      failNext = false;
      throw new Error('POST /momessage answered 503: busy');
    }
    if (refuseNext > 0) {
      refuseNext--;
      throw new AnswerNotTaken('POST /momessage answered 503: busy');
    }
    sent.push([to, shortCode, text]);
  },
};
const config = configSchema.parse({
  api: { baseUrl: 'http://127.0.0.1:1', username: 'u', password: 'p' },
  replies: {
    helpText: 'Ayuda: acme.co',
    confirmOptOut: 'Listo, no más mensajes',
    confirmOptIn: 'Bienvenido de nuevo',
    byShortCode: { '890123': { helpText: null, keywords: { optOut: ['PARAR'] } } },
  },
});

beforeEach(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.migrate();
  sent = [];
  failNext = false;
  refuseNext = 0;
  lines = [];
  logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
});
afterEach(async () => {
  await store.close();
});

let seq = 0;
const reply = (text: string, extra: Partial<IncomingReply> = {}): IncomingReply => ({
  receivedAt: new Date(Date.UTC(2026, 10, 28, 15, 0, seq++)).toISOString(),
  from: N,
  to: '85000',
  text,
  messageId: null,
  ...extra,
});

describe('replyHandler', () => {
  it('help answered from the short code written to; opt-out confirmed, the opt-in the same day not', async () => {
    const handler = replyHandler({ store, config, listsHolding: null, answerer, logger });
    await handler.record(reply('Ayuda'));
    await handler.record(reply('SALIR'));
    await handler.record(reply('ALTA'));
    await handler.drain();
    expect(sent).toEqual([
      [N, '85000', 'Ayuda: acme.co'],
      [N, '85000', 'Listo, no más mensajes'],
    ]);
    expect((await store.replies({ limit: 10 })).map((r) => [r.intent, r.keyword])).toEqual([
      ['help', 'AYUDA'],
      ['opt_out', 'SALIR'],
      ['opt_in', 'ALTA'],
    ]);
    // Logs: numbers masked, no reply text.
    const logged = JSON.stringify(lines);
    expect(logged).not.toContain(N);
    expect(logged).not.toContain('Ayuda: acme.co');
  });

  it("a short code's own keywords and texts: help not answered there, its own opt-out word", async () => {
    const handler = replyHandler({ store, config, listsHolding: null, answerer, logger });
    await handler.record(reply('help', { to: '890123' }));
    await handler.record(reply('parar', { to: '890123' }));
    await handler.record(reply('SALIR ya', { to: '890123', from: '573009998877' }));
    await handler.drain();
    expect((await store.replies({ limit: 10 })).map((r) => r.intent)).toEqual(['help', 'opt_out', null]);
    expect(sent).toEqual([[N, '890123', 'Listo, no más mensajes']]);
  });

  it('a reply delivered again is not answered again; a listed number gets no opt-in confirmation', async () => {
    const handler = replyHandler({
      store,
      config,
      listsHolding: () => ['suppressionList'],
      answerer,
      logger,
    });
    await handler.record(reply('ayuda', { messageId: 'mo-1' }));
    await handler.record(reply('ayuda', { messageId: 'mo-1' }));
    await handler.record(reply('alta', { from: '573005556666' }));
    await handler.drain();
    expect(sent).toEqual([[N, '85000', 'Ayuda: acme.co']]);
    const s = await store.standing('573005556666');
    expect(s.history.map((c) => [c.change, c.detail])).toEqual([['kept_by_list', 'suppressionList']]);
  });

  it('a soft opt-out is kept for review, changes nothing, answers nothing', async () => {
    const handler = replyHandler({ store, config, listsHolding: null, answerer, logger });
    await handler.record(reply('no me escriban más'));
    await handler.drain();
    expect(await store.countRepliesToReview()).toBe(1);
    expect((await store.standing(N)).optedOut).toBeNull();
    expect(sent).toEqual([]);
    expect(
      lines.some((l) => l.msg === 'reply: flagged for review (looks like an opt-out, is no keyword)'),
    ).toBe(true);
  });

  it('a failed answer is logged, masked; without an answerer, said once', async () => {
    const handler = replyHandler({ store, config, listsHolding: null, answerer, logger });
    failNext = true;
    await handler.record(reply('HELP'));
    await handler.drain();
    const failed = lines.find((l) => l.msg === 'reply answer failed');
    expect(failed).toMatchObject({ to: '57300****233', err: 'POST /momessage answered 503: busy' });

    const none = replyHandler({ store, config, listsHolding: null, answerer: null, logger });
    await none.record(reply('HELP'));
    await none.record(reply('HELP'));
    await none.drain();
    expect(lines.filter((l) => l.msg === 'reply answer not sent: no account answers replies')).toHaveLength(
      1,
    );
  });

  // docs/opt-outs.md "Answers": owed with the reply, sent once; a refusal that took nothing
  // leaves it owed for sendOwed, any other failure is never sent again.
  it('an answer refused without being taken stays owed and goes with sendOwed, once', async () => {
    const handler = replyHandler({ store, config, listsHolding: null, answerer, logger });
    refuseNext = 2;
    await handler.record(reply('AYUDA'));
    await handler.record(reply('SALIR'));
    await handler.drain();
    expect(sent).toEqual([]);
    const owed = await store.answersOwed(10);
    expect(owed).toHaveLength(2);
    expect(lines.filter((l) => l.msg === 'reply answer failed' && l.owed === true)).toHaveLength(2);
    expect(await handler.sendOwed()).toBe(2);
    expect(await handler.sendOwed()).toBe(0);
    expect(sent).toEqual([
      [N, '85000', 'Ayuda: acme.co'],
      [N, '85000', 'Listo, no más mensajes'],
    ]);
    // A failure that may have been taken: failed, not sent again.
    failNext = true;
    await handler.record(reply('HELP', { from: '573005556666' }));
    await handler.drain();
    expect(await handler.sendOwed()).toBe(0);
    expect(sent).toHaveLength(2);
    const last = (await store.replies({ limit: 10 })).at(-1)!;
    expect(await store.replyAnswer(last.id)).toMatchObject({ state: 'failed' });
  });

  it('an answer left sending by a process that died: the sweep an hour later fails it, says so, never sends it', async () => {
    let now = Date.UTC(2026, 10, 28, 15, 0, 0);
    const clocked = new SqliteStore({ path: ':memory:', now: () => new Date(now) });
    await clocked.migrate();
    try {
      // The dead process: its answer claimed, its request never answered.
      const hung: ReplyAnswerer = { answer: () => new Promise(() => {}) };
      const dead = replyHandler({ store: clocked, config, listsHolding: null, answerer: hung, logger });
      await dead.record(reply('AYUDA'));
      const kept = (await clocked.replies({ limit: 1 }))[0]!;
      await waitFor(
        'the answer claimed',
        async () => (await clocked.replyAnswer(kept.id))?.state === 'sending',
      );
      const sweeper = replyHandler({ store: clocked, config, listsHolding: null, answerer, logger });
      await sweeper.sendOwed();
      expect(await clocked.replyAnswer(kept.id)).toMatchObject({ state: 'sending' });
      now += 3_600_000 + 1000;
      await sweeper.sendOwed();
      expect(await clocked.replyAnswer(kept.id)).toMatchObject({ state: 'failed' });
      expect(lines.filter((l) => l.answers === 1 && String(l.msg).includes('left sending'))).toHaveLength(1);
      expect(sent).toEqual([]);
    } finally {
      await clocked.close();
    }
  });

  it('a service refusing for a while: a sweep asks each answer owed once, and none is given up', async () => {
    const handler = replyHandler({ store, config, listsHolding: null, answerer, logger });
    // More than a page of answers owed (101 numbers asked for help), the service refusing.
    refuseNext = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 101; i++)
      await handler.record(reply('AYUDA', { from: `57300200${String(i).padStart(4, '0')}` }));
    await handler.drain();
    const owed = await store.answersOwed(1000);
    expect(owed).toHaveLength(101);
    let asked = 0;
    const counting: ReplyAnswerer = {
      async answer(to, shortCode, text) {
        asked++;
        return answerer.answer(to, shortCode, text);
      },
    };
    const sweeper = replyHandler({ store, config, listsHolding: null, answerer: counting, logger });
    await sweeper.sendOwed();
    expect(asked).toBe(101);
    expect(await store.answersOwed(1000)).toEqual(owed);
    // The service is back: the next sweep sends them all.
    refuseNext = 0;
    await sweeper.sendOwed();
    expect(sent).toHaveLength(101);
    expect(await store.answersOwed(1000)).toEqual([]);
  });
});
