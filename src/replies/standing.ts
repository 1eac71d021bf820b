// What a user's reply does (docs/opt-outs.md "Keywords" and "A number's standing"): read
// against the keywords of the short code it was sent to, kept in the store with what it asked
// (the store changes the number's standing and joins the reply to the campaign it answers, in
// the same transaction: ../store/standing-rules.ts, docs/replies.md "The join"), then answered:
// the help text, or a confirmation of an opt-out or an opt-in, at most one a number a Bogotá
// day. The answer owed is kept in the reply's transaction and sent after it, never holding its
// acknowledgement back; one still owed after a crash is sent at the next start (sendOwed). A
// reply delivered again (kept already) owes nothing more.
import type { Config } from '../config/schema.ts';
import { maskNumber } from '../core/redact.ts';
import type { Logger } from '../log.ts';
import type { OwedAnswer, ReplyIntent, Store } from '../store/store.ts';
import { AnswerNotTaken, type ReplyAnswerer } from './answers.ts';
import { matchKeyword } from './keywords.ts';
import { type ReplySettings, replySettings } from './settings.ts';
import { looksLikeOptOut } from './soft-opt-out.ts';

/** Confirmations are counted in Colombian days (docs/opt-outs.md "Answers"). */
export const CONFIRMATION_TIMEZONE = 'America/Bogota';

/** A reply as the receiver hands it over, its sender in the sent form (573001234567). */
export interface IncomingReply {
  readonly receivedAt: string;
  readonly from: string;
  readonly to: string;
  readonly text: string;
  readonly messageId: string | null;
}

export interface ReplyHandlerOptions {
  readonly store: Store;
  readonly config: Pick<Config, 'replies'>;
  /** The configured suppression lists holding a number, by name; null: none configured. */
  readonly listsHolding: ((number: string) => string[]) | null;
  /** null: nothing is answered (logged once). */
  readonly answerer: ReplyAnswerer | null;
  readonly logger: Logger;
}

export interface ReplyHandler {
  /**
   * Resolves once the reply is kept (the receiver acknowledges it then), with the file it was
   * joined to (null: unjoined, or kept already).
   */
  record(reply: IncomingReply): Promise<string | null>;
  /**
   * Sends the answers still owed (a crash before they went, a refusal that took nothing):
   * at start and periodically. Resolves with how many were looked at.
   */
  sendOwed(): Promise<number>;
  /** Waits for the answers under way (shutdown). */
  drain(): Promise<void>;
}

/** What a reply asks, read against its short code's keywords. */
export function readReply(
  text: string,
  settings: ReplySettings,
): { intent: ReplyIntent | null; keyword: string | null } {
  const match = matchKeyword(text, settings.keywords);
  if (match) return { intent: match.kind, keyword: match.keyword };
  return { intent: looksLikeOptOut(text, settings.keywords.optOut) ? 'review' : null, keyword: null };
}

/** What a reply is owed, read against its short code's settings (null: nothing). */
export function owedAnswer(
  intent: ReplyIntent | null,
  listedOn: readonly string[],
  settings: ReplySettings,
): OwedAnswer | null {
  const owed = (text: string | null, what: OwedAnswer['what'], confirmation: boolean) =>
    text === null ? null : { text, what, confirmation };
  if (intent === 'help') return owed(settings.helpText, 'helpText', false);
  if (intent === 'opt_out') return owed(settings.confirmOptOut, 'confirmOptOut', true);
  // A number a list still holds gets no confirmation: it would promise messages that never come.
  if (intent === 'opt_in' && listedOn.length === 0) return owed(settings.confirmOptIn, 'confirmOptIn', true);
  return null;
}

/** What the reply asked, logged. */
function logIntent(
  o: ReplyHandlerOptions,
  reply: IncomingReply,
  intent: ReplyIntent,
  keyword: string | null,
  listedOn: string[],
): void {
  const from = maskNumber(reply.from);
  if (intent === 'opt_out') o.logger.info({ from, keyword }, 'reply: opt-out recorded');
  else if (intent === 'opt_in') o.logger.info({ from, keyword, lists: listedOn }, 'reply: opt-in recorded');
  else if (intent === 'review')
    o.logger.info({ from }, 'reply: flagged for review (looks like an opt-out, is no keyword)');
}

export function replyHandler(o: ReplyHandlerOptions): ReplyHandler {
  const pending = new Set<Promise<void>>();
  let saidNoAnswerer = false;
  const track = (p: Promise<void>) => {
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };

  /**
   * Reply `id`'s owed answer, claimed (one process gets it; a confirmation takes the number's
   * day), sent and settled: sent; owed again when the service surely did not take it; failed
   * otherwise, never sent again (docs/opt-outs.md "Answers").
   */
  async function deliver(answerer: ReplyAnswerer, id: number): Promise<void> {
    const claimed = await o.store.claimAnswer(id, CONFIRMATION_TIMEZONE);
    if (!claimed) return;
    const log = { to: maskNumber(claimed.number), shortCode: claimed.shortCode, what: claimed.what };
    try {
      await answerer.answer(claimed.number, claimed.shortCode, claimed.text);
    } catch (err) {
      const again = err instanceof AnswerNotTaken;
      o.logger.warn(
        { ...log, err: (err as Error).message, ...(again ? { owed: true } : {}) },
        'reply answer failed',
      );
      await o.store.settleAnswer(id, again ? 'owed' : 'failed', (err as Error).message);
      return;
    }
    o.logger.info(log, 'reply answered');
    await o.store.settleAnswer(id, 'sent', null);
  }
  const send = (id: number) => {
    if (!o.answerer) return;
    const answerer = o.answerer;
    track(
      deliver(answerer, id).catch((err: Error) =>
        o.logger.warn({ reply: id, err: err.message }, 'reply answer left owed: the store did not answer'),
      ),
    );
  };

  return {
    async record(reply) {
      const settings = replySettings(o.config, reply.to);
      const { intent, keyword } = readReply(reply.text, settings);
      const listedOn = intent === 'opt_in' && o.listsHolding ? o.listsHolding(reply.from) : [];
      const owed = owedAnswer(intent, listedOn, settings);
      if (owed && !o.answerer && !saidNoAnswerer) {
        o.logger.warn(
          { to: maskNumber(reply.from), what: owed.what },
          'reply answer not sent: no account answers replies',
        );
        saidNoAnswerer = true;
      }
      const kept = await o.store.recordReply({
        ...reply,
        optOut: intent === 'opt_out',
        intent,
        keyword,
        listedOn,
        joinSince: joinSince(reply.receivedAt, o.config.replies.windowHours),
        // Owed in the reply's transaction, so a crash before it is sent does not lose it.
        answer: o.answerer ? owed : null,
      });
      if (!kept) return null;
      if (intent !== null) logIntent(o, reply, intent, keyword, listedOn);
      // Sent after the reply is kept, never holding its acknowledgement back.
      if (o.answerer && owed) send(kept.id);
      return kept.fileId;
    },
    async sendOwed() {
      // Answers whose process died while sending them: failed, never sent again (docs/opt-outs.md "Answers").
      const abandoned = await o.store.abandonAnswers();
      if (abandoned > 0)
        o.logger.warn(
          { answers: abandoned },
          'reply answers left sending by a process that stopped: failed, not sent again (they may have been taken)',
        );
      if (!o.answerer) return 0;
      let sent = 0;
      // Each answer once a sweep (one put back owed waits for the next sweep, a minute later:
      // a service refusing for a while must not use up its attempts at once).
      for (let after = 0; ; ) {
        const owed = await o.store.answersOwed(OWED_PAGE, after);
        // Claimed one at a time: an answer another process claimed meanwhile is skipped.
        for (const id of owed) await deliver(o.answerer, id);
        sent += owed.length;
        if (owed.length < OWED_PAGE) return sent;
        after = owed.at(-1)!;
      }
    },
    async drain() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
  };
}

/** Answers owed read a page at a time. */
const OWED_PAGE = 100;

/** The earliest send a reply received at `receivedAt` may answer: `windowHours` before it. */
export function joinSince(receivedAt: string, windowHours: number): string {
  return new Date(Date.parse(receivedAt) - windowHours * 3_600_000).toISOString();
}
