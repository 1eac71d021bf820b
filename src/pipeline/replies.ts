// Users' replies (issue 14 "Replies that opt out", issue 35 keywords): the SMPP receiver
// (src/optout) hands each reply here; src/replies/standing.ts reads it against its short
// code's keywords and keeps it in the store, which changes the sender's standing in the same
// transaction, before the SMSC gets its acknowledgement. Chunks not yet sent are checked
// against the opt-out list (Store.holdBack).
import type { LoadedConfig } from '../config/load.ts';
import { makeNumberRules, normalizeNumber } from '../format/numbers.ts';
import type { Logger } from '../log.ts';
import { type SmppReply, SmppReplyReceiver } from '../optout/smpp-receiver.ts';
import type { ReplyAnswerer } from '../replies/answers.ts';
import { type ReplyHandler, replyHandler } from '../replies/standing.ts';
import type { Store } from '../store/store.ts';
import type { SuppressionLists } from './suppression-lists.ts';

export interface RepliesOptions {
  readonly store: Store;
  readonly loaded: LoadedConfig;
  readonly logger: Logger;
  /** The configured opt-out lists (an opt-in does not lift them); null: none. */
  readonly lists?: SuppressionLists | null | undefined;
  /** Sends the help text and confirmations; null: they are not sent. */
  readonly answerer?: ReplyAnswerer | null | undefined;
}

/** Records one reply; resolves once it is in the store (the receiver acknowledges it then). */
export function replyRecorder(handler: ReplyHandler): (reply: SmppReply) => Promise<void> {
  // A reply's sender is the number campaigns send to: the same sent form (573001234567),
  // whatever the SMSC wrote (+57…, a national number). A sender that is no mobile number (a
  // short code, an alphanumeric name) is kept as written.
  const rules = { ...makeNumberRules(), allowedCountries: null };
  return async (reply) => {
    const n = normalizeNumber(reply.from, rules);
    await handler.record({
      receivedAt: reply.receivedAt,
      from: n.ok ? n.number : reply.from,
      to: reply.to,
      text: reply.text,
      messageId: reply.messageId ?? null,
    });
  };
}

/** The SMPP receiver of `optOut.smpp`, started; null when none is configured. */
export function startReplies(o: RepliesOptions): { stop(): Promise<void> } | null {
  const smpp = o.loaded.config.optOut.smpp;
  const password = o.loaded.secrets.smppPassword;
  if (!smpp || password === null) return null;
  const lists = o.lists ?? null;
  const handler = replyHandler({
    store: o.store,
    config: o.loaded.config,
    listsHolding: lists ? (number) => lists.holding(number) : null,
    answerer: o.answerer ?? null,
    logger: o.logger,
  });
  const receiver = new SmppReplyReceiver({
    host: smpp.host,
    port: smpp.port,
    tls: smpp.tls,
    systemId: smpp.systemId,
    password,
    onReply: replyRecorder(handler),
    logger: o.logger,
  });
  receiver.start();
  return {
    async stop() {
      await receiver.stop();
      await handler.drain();
    },
  };
}
