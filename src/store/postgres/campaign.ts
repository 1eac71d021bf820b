// The PostgreSQL store's campaign-rules area: opt-outs and the contact limit held back before a
// chunk is sent, replies and opt-outs recorded (docs/campaign-rules.md).

import type pg from 'pg';
import { beginChunkRule, type HoldBackOperations, holdBackRule, refusedOf } from '../campaign-rules.ts';
import { num, strOrNull, toFileReply, toReply } from '../mapping.ts';
import { redeliveryColumns } from '../reply-redelivery.ts';
import { recordReplyRule } from '../standing-rules.ts';
import { type AsyncOperations, runAsync } from '../steps.ts';
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
import type { PgDb } from './connection.ts';
import * as L from './ledger-sql.ts';
import { setChunkState } from './sending.ts';
import * as S from './sql.ts';

export async function holdBack(
  db: PgDb,
  fileId: string,
  seq: number,
  options: HoldBackOptions,
): Promise<HeldBack> {
  const what = `holding back recipients of chunk ${seq} of ${fileId}`;
  return db.tx(what, (c) => runAsync(holdBackRule(options), holdBackOps(db, c, what, fileId, seq, options)));
}

export async function beginChunk(
  db: PgDb,
  fileId: string,
  seq: number,
  guard: ChunkStateGuard,
  options: HoldBackOptions,
): Promise<BeginChunk> {
  const what = `starting chunk ${seq} of ${fileId}`;
  // One time for the start and its record (the transaction's now(), or the store's clock):
  // the chunk's result finds its start's record by it.
  const now = db.now();
  return db.tx(what, async (c) =>
    runAsync(beginChunkRule(options), {
      ...holdBackOps(db, c, what, fileId, seq, options, now),
      savepoint: async () => void (await c.query('SAVEPOINT begin_chunk')),
      undo: async () => void (await c.query('ROLLBACK TO SAVEPOINT begin_chunk')),
      toInflight: () => setChunkState(db, fileId, seq, 'inflight', ['pending'], guard, c, now),
    }),
  );
}

/** holdBack's operations on chunk `seq`'s pending rows, in transaction `c`. */
function holdBackOps(
  db: PgDb,
  c: pg.PoolClient,
  what: string,
  fileId: string,
  seq: number,
  options: HoldBackOptions,
  now = db.now(),
): AsyncOperations<HoldBackOperations> {
  const chunk = { file_id: fileId, seq, now };
  const limit = options.contactLimit;
  const ledger = {
    ...chunk,
    entity: limit?.entity ?? null,
    channel: limit?.channel ?? null,
    timezone: limit?.timezone ?? null,
    per_day: limit?.perDay ?? null,
    channels_per_week: limit?.channelsPerWeek ?? null,
  };
  return {
    holdOptOuts: (code, detail) => db.count(what, S.HOLD_BACK_OPT_OUTS, { ...chunk, code, detail }, c),
    // A key once a statement (an upsert touches a row once): its n-th row in round n.
    takeContacts: async (weekly) => {
      let taken = 0;
      for (let round = 1; round <= (limit?.perDay ?? 0); round++)
        taken += Number((await db.rows(what, L.TAKE_CONTACTS, { ...ledger, round, weekly }, c))[0]?.n ?? 0);
      return taken;
    },
    recordContacts: async (taken) => void (await db.count(what, L.RECORD_CONTACTS, { ...ledger, taken }, c)),
    pendingCount: async () => Number((await db.rows(what, L.PENDING_COUNT, chunk, c))[0]?.n ?? 0),
    refused: async (weekly) => (await db.rows(what, L.REFUSED, { ...ledger, weekly }, c)).map(refusedOf),
    holdRefused: (code, details) =>
      db.count(what, L.HOLD_REFUSED, { ...chunk, code, details: JSON.stringify(details) }, c),
  };
}

export async function pruneContacts(db: PgDb, options: PruneContactsOptions): Promise<number> {
  const [r] = await db.rows('pruning the contact ledger', L.PRUNE, {
    timezone: options.timezone,
    keep_days: Math.ceil(options.keepDays),
    now: db.now(),
  });
  return Number(r?.n ?? 0);
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
            ...redeliveryColumns(reply),
          },
          c,
        );
        return r ? { id: num(r.id), fileId: strOrNull(r.file_id) } : null;
      },
      optOut: async (id) =>
        (await db.count(what, S.OPT_OUT, { number, at: reply.receivedAt, reply: id }, c)) > 0,
      liftOptOut: async () => (await db.count(what, S.LIFT_OPT_OUT, { number }, c)) > 0,
      history: async (row) => void (await db.count(what, S.STANDING_CHANGE, { ...row, now: db.now() }, c)),
      oweAnswer: async (id, a) =>
        void (await db.count(
          what,
          S.OWE_ANSWER,
          {
            reply: id,
            number,
            short_code: reply.to,
            text: a.text,
            what: a.what,
            confirmation: a.confirmation,
            now: db.now(),
          },
          c,
        )),
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
