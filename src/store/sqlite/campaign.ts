// The SQLite store's campaign-rules area: opt-outs and the contact limit held back before a
// chunk is sent (the rule: ../campaign-rules.ts), replies and opt-outs recorded
// (docs/campaign-rules.md).

import { localDate } from '../../plan/send-window.ts';
import { holdBackRule } from '../campaign-rules.ts';
import { num, strOrNull, toFileReply, toReply } from '../mapping.ts';
import { recordReplyRule } from '../standing-rules.ts';
import { runSync } from '../steps.ts';
import type {
  FileReply,
  HeldBack,
  HoldBackOptions,
  KeptReply,
  NewReply,
  ReplyCounts,
  ReplyRecord,
} from '../store.ts';
import { changes, type SqliteDb } from './connection.ts';
import * as S from './sql.ts';

export async function holdBack(
  db: SqliteDb,
  fileId: string,
  seq: number,
  options: HoldBackOptions,
): Promise<HeldBack> {
  const now = db.now();
  const chunk = { ...db.span(fileId, seq), seq };
  // The local day on the store's clock: SQLite is one process's, so that process's clock.
  const slots = {
    ...chunk,
    account: options.contactLimit?.account ?? null,
    day: options.contactLimit ? localDate(new Date(now), options.contactLimit.timezone) : null,
  };
  return db.tx(() =>
    runSync(holdBackRule(options), {
      holdOptOuts: (code, detail) =>
        changes(db.stmt(S.HOLD_BACK_OPT_OUTS).run({ ...chunk, now, code, detail })),
      takeSlots: (slot) => void db.stmt(S.TAKE_CONTACT_SLOTS).run({ ...slots, slot }),
      holdUnslotted: (code, detail) =>
        changes(db.stmt(S.HOLD_BACK_CONTACTS).run({ ...slots, now, code, detail })),
    }),
  );
}

export async function pruneContacts(db: SqliteDb, timezone: string): Promise<number> {
  const yesterday = localDate(new Date(Date.parse(db.now()) - 86_400_000), timezone);
  return changes(db.stmt(S.PRUNE_CONTACTS).run(yesterday));
}

export async function recordReply(db: SqliteDb, reply: NewReply): Promise<KeptReply | null> {
  return db.tx(() =>
    runSync(recordReplyRule(reply), {
      insertReply: (intent) => {
        const r = db.stmt(S.RECORD_REPLY).get({
          received_at: reply.receivedAt,
          from_number: reply.from,
          to_number: reply.to,
          text: reply.text,
          opt_out: intent === 'opt_out' ? 1 : 0,
          message_id: reply.messageId,
          intent,
          keyword: reply.keyword ?? null,
          since: reply.joinSince ?? null,
        });
        return r ? { id: num(r.id), fileId: strOrNull(r.file_id) } : null;
      },
      optOut: (id) => changes(db.stmt(S.OPT_OUT).run(reply.from, reply.receivedAt, id)) > 0,
      liftOptOut: () => changes(db.stmt(S.LIFT_OPT_OUT).run(reply.from)) > 0,
      history: (row) => void db.stmt(S.STANDING_CHANGE).run({ ...row }),
    }),
  );
}

export async function replies(
  db: SqliteDb,
  options: {
    since?: string | undefined;
    afterId?: number;
    limit: number;
  },
): Promise<ReplyRecord[]> {
  return db
    .stmt(S.REPLIES)
    .all(options.afterId ?? 0, options.since ?? '', options.limit)
    .map(toReply);
}

export async function fileReplies(
  db: SqliteDb,
  fileId: string,
  options: { latest?: number } = {},
): Promise<FileReply[]> {
  const rows = db.stmt(S.FILE_REPLIES).all({ file_id: fileId, limit: options.latest ?? -1 });
  return rows.map(toFileReply).reverse();
}

export async function replyCounts(db: SqliteDb, fileId: string): Promise<ReplyCounts> {
  const r = db.stmt(S.REPLY_COUNTS).get({ file_id: fileId });
  return { replies: num(r?.replies ?? 0), replied: num(r?.replied ?? 0) };
}
