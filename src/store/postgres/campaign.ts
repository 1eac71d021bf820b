// The PostgreSQL store's campaign-rules area: opt-outs and the contact limit held back before a
// chunk is sent, replies and opt-outs recorded (docs/campaign-rules.md).

import { holdBackRule } from '../campaign-rules.ts';
import { num, strOrNull, toFileReply, toReply } from '../mapping.ts';
import { recordReplyRule } from '../standing-rules.ts';
import { runAsync } from '../steps.ts';
import type {
  FileReply,
  HeldBack,
  HoldBackOptions,
  KeptReply,
  NewReply,
  ReplyCounts,
  ReplyRecord,
} from '../store.ts';
import type { PgDb } from './connection.ts';
import * as S from './sql.ts';

export async function holdBack(
  db: PgDb,
  fileId: string,
  seq: number,
  options: HoldBackOptions,
): Promise<HeldBack> {
  const what = `holding back recipients of chunk ${seq} of ${fileId}`;
  return db.tx(what, async (c) => {
    const chunk = { file_id: fileId, seq, now: db.now() };
    const slots = {
      ...chunk,
      account: options.contactLimit?.account ?? null,
      timezone: options.contactLimit?.timezone ?? null,
    };
    return runAsync(holdBackRule(options), {
      holdOptOuts: (code, detail) => db.count(what, S.HOLD_BACK_OPT_OUTS, { ...chunk, code, detail }, c),
      takeSlots: async (slot) => void (await db.count(what, S.TAKE_CONTACT_SLOTS, { ...slots, slot }, c)),
      holdUnslotted: (code, detail) => db.count(what, S.HOLD_BACK_CONTACTS, { ...slots, code, detail }, c),
    });
  });
}

export async function pruneContacts(db: PgDb, timezone: string): Promise<number> {
  return db.count('pruning contact-limit slots', S.PRUNE_CONTACTS, { timezone, now: db.now() });
}

export async function recordReply(db: PgDb, reply: NewReply): Promise<KeptReply | null> {
  const what = 'recording a reply';
  const number = reply.from;
  return db.tx(what, (c) =>
    runAsync(recordReplyRule(reply), {
      insertReply: async (intent) => {
        const [r] = await db.rows(
          what,
          S.RECORD_REPLY,
          {
            received_at: reply.receivedAt,
            from_number: number,
            to_number: reply.to,
            text: reply.text,
            opt_out: intent === 'opt_out',
            message_id: reply.messageId,
            intent,
            keyword: reply.keyword ?? null,
            since: reply.joinSince ?? null,
          },
          c,
        );
        return r ? { id: num(r.id), fileId: strOrNull(r.file_id) } : null;
      },
      optOut: async (id) =>
        (await db.count(what, S.OPT_OUT, { number, at: reply.receivedAt, reply: id }, c)) > 0,
      liftOptOut: async () => (await db.count(what, S.LIFT_OPT_OUT, { number }, c)) > 0,
      history: async (row) => void (await db.count(what, S.STANDING_CHANGE, { ...row, now: db.now() }, c)),
    }),
  );
}

export async function replies(
  db: PgDb,
  options: {
    since?: string | undefined;
    afterId?: number;
    limit: number;
  },
): Promise<ReplyRecord[]> {
  const rows = await db.rows('reading replies', S.REPLIES, {
    after_id: options.afterId ?? 0,
    since: options.since ?? null,
    limit: options.limit,
  });
  return rows.map(toReply);
}

export async function fileReplies(
  db: PgDb,
  fileId: string,
  options: { latest?: number } = {},
): Promise<FileReply[]> {
  const rows = await db.rows(`reading the replies of ${fileId}`, S.FILE_REPLIES, {
    file_id: fileId,
    limit: options.latest ?? null,
  });
  return rows.map(toFileReply).reverse();
}

export async function replyCounts(db: PgDb, fileId: string): Promise<ReplyCounts> {
  const [r] = await db.rows(`counting the replies of ${fileId}`, S.REPLY_COUNTS, { file_id: fileId });
  return { replies: num(r?.replies ?? 0), replied: num(r?.replied ?? 0) };
}
