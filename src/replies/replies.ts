// Users' replies (docs/opt-outs.md, docs/replies.md): the SMPP receiver hands each reply here;
// ./standing.ts reads it against its short code's keywords and keeps it in the store, which in
// the same transaction changes the sender's standing and joins the reply to the campaign that
// last sent to its number from the short code it answers (within replies.windowHours), before
// the SMSC gets its acknowledgement. Chunks not yet sent are checked against the opt-out list
// (Store.holdBack).

import { setTimeout as sleep } from 'node:timers/promises';
import type { LoadedConfig } from '../config/load.ts';
import { maskNumber } from '../core/redact.ts';
import { makeNumberRules, normalizeNumber } from '../format/numbers.ts';
import type { Logger } from '../log.ts';
import { storeUnavailable } from '../pipeline/patient-store.ts';
import type { SuppressionLists } from '../pipeline/suppression-lists.ts';
import type { Store } from '../store/store.ts';
import type { ReplyAnswerer } from './answers.ts';
import { type SmppReply, SmppReplyReceiver } from './smpp-receiver.ts';
import { type ReplyHandler, replyHandler } from './standing.ts';

export interface RepliesOptions {
  readonly store: Store;
  readonly loaded: LoadedConfig;
  readonly logger: Logger;
  /** The configured opt-out lists (an opt-in does not lift them); null: none. */
  readonly lists?: SuppressionLists | null | undefined;
  /** Sends the help text and confirmations; null: they are not sent. */
  readonly answerer?: ReplyAnswerer | null | undefined;
  /** A reply was joined to this file: its report.csv, if written, is due again. */
  readonly onJoined?: ((fileId: string) => void) | undefined;
  /** Answers still owed are sent at start and this often (default a minute). */
  readonly answersOwedEveryMs?: number | undefined;
}

export interface RecorderOptions {
  readonly logger: Logger;
  /** A reply was joined to this file. */
  readonly onJoined?: ((fileId: string) => void) | undefined;
  /** Aborted when the receiver stops: a reply waiting for the store gives up (the SMSC keeps it). */
  readonly signal?: AbortSignal | undefined;
}

const FIRST_WAIT_MS = 100;
const MAX_WAIT_MS = 5000;

/** Records one reply; resolves once it is in the store (the receiver acknowledges it then). */
export function replyRecorder(
  handler: ReplyHandler,
  o: RecorderOptions,
): (reply: SmppReply) => Promise<void> {
  // A reply's sender is the number campaigns send to: the same sent form (573001234567),
  // whatever the SMSC wrote (+57…, a national number). A sender that is no mobile number (a
  // short code, an alphanumeric name) is kept as written.
  const rules = { ...makeNumberRules(), allowedCountries: null };
  return async (reply) => {
    const n = normalizeNumber(reply.from, rules);
    const from = n.ok ? n.number : reply.from;
    const incoming = {
      receivedAt: reply.receivedAt,
      from,
      to: reply.to,
      text: reply.text,
      messageId: reply.messageId ?? null,
    };
    const joined = await patiently(() => handler.record(incoming), { ...o, from });
    if (joined !== null) o.onJoined?.(joined);
  };
}

/** The SMPP receiver of `replies.smpp`, started; null when none is configured. */
export function startReplies(o: RepliesOptions): { stop(): Promise<void> } | null {
  const smpp = o.loaded.config.replies.smpp;
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
  const stopping = new AbortController();
  const receiver = new SmppReplyReceiver({
    host: smpp.host,
    port: smpp.port,
    tls: smpp.tls,
    systemId: smpp.systemId,
    password,
    onReply: replyRecorder(handler, { logger: o.logger, onJoined: o.onJoined, signal: stopping.signal }),
    logger: o.logger,
  });
  receiver.start();
  // Answers still owed (a crash before they went, a refusal that took nothing): at start, then
  // every minute (docs/opt-outs.md "Answers").
  let sweeping: Promise<void> | null = null;
  const sweep = () => {
    if (sweeping || stopping.signal.aborted) return;
    sweeping = handler
      .sendOwed()
      .then(
        () => {},
        (err: Error) => o.logger.warn({ err: err.message }, 'answers owed not sent: tried again in a minute'),
      )
      .finally(() => {
        sweeping = null;
      });
  };
  sweep();
  const sweeper = setInterval(sweep, o.answersOwedEveryMs ?? ANSWERS_OWED_EVERY_MS);
  sweeper.unref();
  return {
    async stop() {
      // A reply waiting for the store gives up at once: answered with an error, the SMSC keeps it.
      stopping.abort();
      clearInterval(sweeper);
      await receiver.stop();
      await sweeping;
      await handler.drain();
    },
  };
}

/** How often answers still owed are looked for. */
const ANSWERS_OWED_EVERY_MS = 60_000;

/**
 * A reply that meets the store away waits for it, unanswered, and the replies received after it
 * wait behind it (the receiver records one at a time): refused instead, it would come back
 * from the SMSC after its retry interval, behind replies that came later and were stored as
 * soon as the store was back (docs/replies.md "A store outage"). Any other error is thrown.
 */
async function patiently<T>(
  record: () => Promise<T>,
  o: { logger: Logger; signal?: AbortSignal | undefined; from: string },
): Promise<T> {
  for (let attempt = 0, wait = FIRST_WAIT_MS; ; attempt++, wait = Math.min(wait * 2, MAX_WAIT_MS)) {
    try {
      const kept = await record();
      if (attempt > 0)
        o.logger.info({ from: maskNumber(o.from) }, 'the store answers again: the reply is kept');
      return kept;
    } catch (err) {
      if (!storeUnavailable(err) || o.signal?.aborted) throw err;
      if (attempt === 0)
        o.logger.warn(
          { from: maskNumber(o.from), err: (err as Error).message },
          'a reply waits for the store: unanswered until it is kept, the replies after it wait behind it',
        );
      await sleep(wait, undefined, { signal: o.signal }).catch(() => {});
    }
  }
}
