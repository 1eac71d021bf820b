// The SQLite store's campaign-rules area: opt-outs and the contact limit held back before a
// chunk is sent (the rule: ../campaign-rules.ts), replies and opt-outs recorded
// (docs/campaign-rules.md).

import type { SQLInputValue } from 'node:sqlite';
import { localDate, localWeek } from '../../plan/send-window.ts';
import { beginChunkRule, type HoldBackOperations, holdBackRule, refusedOf } from '../campaign-rules.ts';
import { num, strOrNull, toFileReply, toReply } from '../mapping.ts';
import { redeliveryColumns } from '../reply-redelivery.ts';
import { recordReplyRule } from '../standing-rules.ts';
import { runSync } from '../steps.ts';
import type {
  BeginChunk,
  ChunkStateGuard,
  FileReply,
  HeldBack,
  HoldBackOptions,
  KeptReply,
  NewReply,
  PruneContactsOptions,
  ReplyCounts,
  ReplyRecord,
} from '../store.ts';
import { changes, type SqliteDb } from './connection.ts';
import { dayNumber, named } from './ledger.ts';
import * as L from './ledger-sql.ts';
import { setChunkState } from './sending.ts';
import * as S from './sql.ts';

export async function holdBack(
  db: SqliteDb,
  fileId: string,
  seq: number,
  options: HoldBackOptions,
): Promise<HeldBack> {
  return db.tx(() => runSync(holdBackRule(options), holdBackOps(db, fileId, seq, options)));
}

export async function beginChunk(
  db: SqliteDb,
  fileId: string,
  seq: number,
  guard: ChunkStateGuard,
  options: HoldBackOptions,
): Promise<BeginChunk> {
  // One time for the start and its record: the chunk's result finds its start's record by it.
  const now = db.now();
  return db.tx(() =>
    runSync(beginChunkRule(options), {
      ...holdBackOps(db, fileId, seq, options, now),
      savepoint: () => db.db.exec('SAVEPOINT begin_chunk'),
      undo: () => db.db.exec('ROLLBACK TO begin_chunk'),
      toInflight: () => setChunkState(db, fileId, seq, 'inflight', ['pending'], guard, now),
    }),
  );
}

/** holdBack's operations on chunk `seq`'s pending rows, inside the caller's transaction. */
function holdBackOps(
  db: SqliteDb,
  fileId: string,
  seq: number,
  options: HoldBackOptions,
  now = db.now(),
): HoldBackOperations {
  const chunk = { ...db.span(fileId, seq), seq };
  const limit = options.contactLimit;
  // The local day and week on the store's clock: SQLite is one process's, so that process's clock.
  const today = new Date(now);
  const ledger = {
    ...chunk,
    now,
    entity: limit?.entity ?? null,
    channel: limit?.channel ?? null,
    day: limit ? localDate(today, limit.timezone) : null,
    week: limit ? localWeek(today, limit.timezone) : null,
    day_no: limit ? dayNumber(localDate(today, limit.timezone)) : null,
    week_no: limit ? dayNumber(localWeek(today, limit.timezone)) : null,
    per_day: limit?.perDay ?? null,
    channels_per_week: limit?.channelsPerWeek ?? null,
  };
  const stmt = (sql: string, params: Record<string, unknown>) => {
    const all = { ...ledger, ...params };
    return { s: db.stmt(sql), p: named(sql, all) as Record<string, SQLInputValue> };
  };
  const run = (sql: string, params: Record<string, unknown>) => {
    const { s, p } = stmt(sql, params);
    return s.run(p);
  };
  const rows = (sql: string, params: Record<string, unknown>) => {
    const { s, p } = stmt(sql, params);
    return s.all(p);
  };
  return {
    holdOptOuts: (code, detail) =>
      changes(db.stmt(S.HOLD_BACK_OPT_OUTS).run({ ...chunk, now, code, detail })),
    takeContacts: (weekly) => changes(run(L.TAKE_CONTACTS, { weekly: weekly ? 1 : 0 })),
    recordContacts: (taken) => void run(L.RECORD_CONTACTS, { taken }),
    pendingCount: () => num(rows(L.PENDING_COUNT, {})[0]?.n),
    refused: (weekly) => rows(L.REFUSED, { weekly: weekly ? 1 : 0 }).map(refusedOf),
    holdRefused: (code, details) => changes(run(L.HOLD_REFUSED, { code, details: JSON.stringify(details) })),
  };
}

export async function pruneContacts(db: SqliteDb, options: PruneContactsOptions): Promise<number> {
  const before = localDate(new Date(Date.parse(db.now()) - options.keepDays * 86_400_000), options.timezone);
  return db.tx(() => {
    // How many contacts went: a record counts its own, a row of the old ledger one.
    const chunks = db
      .stmt(L.PRUNE_CHUNKS)
      .all({ before })
      .reduce((sum, r) => sum + num(r.contacts), 0);
    db.stmt(L.PRUNE_SLOTS).run({ before });
    const keys = changes(db.stmt(L.PRUNE_KEYS).run({ before_no: dayNumber(before) }));
    return chunks + changes(db.stmt(L.PRUNE_DAYS).run({ before })) + keys;
  });
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
          ...redeliveryColumns(reply),
        });
        return r ? { id: num(r.id), fileId: strOrNull(r.file_id) } : null;
      },
      optOut: (id) => changes(db.stmt(S.OPT_OUT).run(reply.from, reply.receivedAt, id)) > 0,
      liftOptOut: () => changes(db.stmt(S.LIFT_OPT_OUT).run(reply.from)) > 0,
      history: (row) => void db.stmt(S.STANDING_CHANGE).run({ ...row }),
      oweAnswer: (id, a) =>
        void db.stmt(S.OWE_ANSWER).run({
          reply: id,
          number: reply.from,
          short_code: reply.to,
          text: a.text,
          what: a.what,
          confirmation: a.confirmation ? 1 : 0,
          now: db.now(),
        }),
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
