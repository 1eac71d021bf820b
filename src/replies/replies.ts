// Users' replies (docs/opt-outs.md, docs/replies.md): the SMPP receiver hands each reply here;
// it is kept in the store, joined to the campaign that last sent to its number from the short
// code it answers (within replies.windowHours), and one whose text is an opt-out keyword puts
// its sender on the opt-out list, all in one transaction, before the SMSC gets its
// acknowledgement. Chunks not yet sent are checked against that list (Store.holdBack).

import { setTimeout as sleep } from 'node:timers/promises';
import type { LoadedConfig } from '../config/load.ts';
import { maskNumber } from '../core/redact.ts';
import { makeNumberRules, normalizeNumber } from '../format/numbers.ts';
import type { Logger } from '../log.ts';
import { isOptOut } from '../optout/keywords.ts';
import { storeUnavailable } from '../pipeline/patient-store.ts';
import type { Store } from '../store/store.ts';
import { type SmppReply, SmppReplyReceiver } from './smpp-receiver.ts';

export interface RecorderOptions {
  /** A reply whose whole text is one of these opts its sender out (docs/opt-outs.md "Keywords"). */
  keywords: readonly string[];
  /** replies.windowHours: how far back a reply may find the send it answers. */
  windowHours: number;
  /** A reply was joined to this file: its report.csv, if written, is due again. */
  onJoined?: ((fileId: string) => void) | undefined;
  /** Aborted when the receiver stops: a reply waiting for the store gives up (the SMSC keeps it). */
  signal?: AbortSignal | undefined;
}

const FIRST_WAIT_MS = 100;
const MAX_WAIT_MS = 5000;

/** Records one reply; resolves once it is in the store (the receiver acknowledges it then). */
export function replyRecorder(
  store: Store,
  options: RecorderOptions,
  logger: Logger,
): (reply: SmppReply) => Promise<void> {
  const { keywords, windowHours, onJoined } = options;
  // A reply's sender is the number campaigns send to: the same sent form (573001234567),
  // whatever the SMSC wrote (+57…, a national number). A sender that is no mobile number (a
  // short code, an alphanumeric name) is kept as written.
  const rules = { ...makeNumberRules(), allowedCountries: null };
  return async (reply) => {
    const n = normalizeNumber(reply.from, rules);
    const from = n.ok ? n.number : reply.from;
    const optOut = isOptOut(reply.text, keywords);
    const kept = await patiently(
      () =>
        store.recordReply({
          receivedAt: reply.receivedAt,
          from,
          to: reply.to,
          text: reply.text,
          optOut,
          messageId: reply.messageId ?? null,
          joinSince: joinSince(reply.receivedAt, windowHours),
        }),
      { logger, signal: options.signal, from },
    );
    // The receiver logs every reply (masked); an opt-out is worth its own line.
    if (optOut && kept) logger.info({ from: maskNumber(from) }, 'reply: opt-out recorded');
    if (kept?.fileId) onJoined?.(kept.fileId);
  };
}

/** The SMPP receiver of `replies.smpp`, started; null when none is configured. */
export function startReplies(
  store: Store,
  loaded: LoadedConfig,
  logger: Logger,
  onJoined?: (fileId: string) => void,
): { stop(): Promise<void> } | null {
  const smpp = loaded.config.replies.smpp;
  const password = loaded.secrets.smppPassword;
  if (!smpp || password === null) return null;
  const stopping = new AbortController();
  const receiver = new SmppReplyReceiver({
    host: smpp.host,
    port: smpp.port,
    tls: smpp.tls,
    systemId: smpp.systemId,
    password,
    onReply: replyRecorder(
      store,
      {
        keywords: loaded.config.replies.keywords.optOut,
        windowHours: loaded.config.replies.windowHours,
        onJoined,
        signal: stopping.signal,
      },
      logger,
    ),
    logger,
  });
  receiver.start();
  return {
    stop: () => {
      // A reply waiting for the store gives up at once: answered with an error, the SMSC keeps it.
      stopping.abort();
      return receiver.stop();
    },
  };
}

/**
 * A reply that meets the store away waits for it, unanswered, and the replies received after it
 * wait behind it (the receiver records one at a time): refused instead, it would come back
 * from the SMSC after its retry interval, behind replies that came later and were stored as
 * soon as the store was back (docs/replies.md "A store outage"). Any other error is thrown.
 */
async function patiently<T>(
  record: () => Promise<T>,
  o: { logger: Logger; signal: AbortSignal | undefined; from: string },
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

/** The earliest send a reply received at `receivedAt` may answer: `windowHours` before it. */
export function joinSince(receivedAt: string, windowHours: number): string {
  return new Date(Date.parse(receivedAt) - windowHours * 3_600_000).toISOString();
}
