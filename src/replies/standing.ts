// What a user's reply does (docs/opt-outs.md "Keywords" and "A number's standing"): read
// against the keywords of the short code it was sent to, kept in the store with what it asked
// (the store changes the number's standing and joins the reply to the campaign it answers, in
// the same transaction: ../store/standing-rules.ts, docs/replies.md "The join"), then answered: the help text, or a confirmation of an opt-out or an opt-in, at most one a
// number a Bogotá day. Answers go out after the reply is kept and never hold its
// acknowledgement back; a reply delivered again (kept already) is not answered again.
import type { Config } from '../config/schema.ts';
import { maskNumber } from '../core/redact.ts';
import type { Logger } from '../log.ts';
import type { ReplyIntent, Store } from '../store/store.ts';
import type { ReplyAnswerer } from './answers.ts';
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

export function replyHandler(o: ReplyHandlerOptions): ReplyHandler {
  const pending = new Set<Promise<void>>();
  let saidNoAnswerer = false;
  const send = (to: string, shortCode: string, text: string, what: string) => {
    const log = { to: maskNumber(to), shortCode, what };
    if (!o.answerer) {
      if (!saidNoAnswerer) o.logger.warn(log, 'reply answer not sent: no account answers replies');
      saidNoAnswerer = true;
      return;
    }
    const p = o.answerer.answer(to, shortCode, text).then(
      () => o.logger.info(log, 'reply answered'),
      (err: Error) => o.logger.warn({ ...log, err: err.message }, 'reply answer failed'),
    );
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };
  /** A confirmation, when configured and the number's day has none yet (the store decides). */
  const confirm = (to: string, shortCode: string, text: string | null, what: string) => {
    if (text === null) return;
    const p = o.store.takeConfirmation(to, CONFIRMATION_TIMEZONE).then(
      (mine) => {
        if (mine) send(to, shortCode, text, what);
      },
      (err: Error) => o.logger.warn({ to: maskNumber(to), err: err.message }, 'reply confirmation skipped'),
    );
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };

  /** What the reply asked, logged and answered (after it is kept, never holding its acknowledgement). */
  function answer(
    reply: IncomingReply,
    intent: ReplyIntent,
    keyword: string | null,
    listedOn: string[],
    settings: ReplySettings,
  ): void {
    const from = maskNumber(reply.from);
    if (intent === 'opt_out') {
      o.logger.info({ from, keyword }, 'reply: opt-out recorded');
      confirm(reply.from, reply.to, settings.confirmOptOut, 'confirmOptOut');
    } else if (intent === 'opt_in') {
      o.logger.info({ from, keyword, lists: listedOn }, 'reply: opt-in recorded');
      // A number a list still holds gets no confirmation: it would promise messages that never come.
      if (listedOn.length === 0) confirm(reply.from, reply.to, settings.confirmOptIn, 'confirmOptIn');
    } else if (intent === 'help') {
      if (settings.helpText !== null) send(reply.from, reply.to, settings.helpText, 'helpText');
    } else o.logger.info({ from }, 'reply: flagged for review (looks like an opt-out, is no keyword)');
  }

  return {
    async record(reply) {
      const settings = replySettings(o.config, reply.to);
      const { intent, keyword } = readReply(reply.text, settings);
      const listedOn = intent === 'opt_in' && o.listsHolding ? o.listsHolding(reply.from) : [];
      const kept = await o.store.recordReply({
        ...reply,
        optOut: intent === 'opt_out',
        intent,
        keyword,
        listedOn,
        joinSince: joinSince(reply.receivedAt, o.config.replies.windowHours),
      });
      if (!kept) return null;
      if (intent !== null) answer(reply, intent, keyword, listedOn, settings);
      return kept.fileId;
    },
    async drain() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
  };
}

/** The earliest send a reply received at `receivedAt` may answer: `windowHours` before it. */
export function joinSince(receivedAt: string, windowHours: number): string {
  return new Date(Date.parse(receivedAt) - windowHours * 3_600_000).toISOString();
}
