// The PostgreSQL store's standing area: a number's history, the confirmation texts' daily
// right, the replies flagged for review (docs/opt-outs.md "A number's standing").

import { num, numOrNull, str, toReply, toStandingChange } from '../mapping.ts';
import {
  ANSWER_ABANDONED,
  ANSWER_SENDING_LIMIT_MS,
  ANSWER_SKIPPED,
  claimAnswerRule,
  MAX_ANSWER_ATTEMPTS,
  operatorRule,
  toClaimedRow,
  toReplyAnswer,
} from '../standing-rules.ts';
import { runAsync } from '../steps.ts';
import type {
  AnswerOutcome,
  ClaimedAnswer,
  OperatorChange,
  ReplyAnswer,
  ReplyRecord,
  Standing,
} from '../store.ts';
import type { PgDb } from './connection.ts';
import * as S from './sql.ts';

export async function standing(db: PgDb, number: string): Promise<Standing> {
  const what = 'reading a number’s standing';
  const [out] = await db.rows(what, S.OPTED_OUT, { number });
  const history = await db.rows(what, S.STANDING_HISTORY, { number });
  return {
    number,
    optedOut: out ? { at: str(out.at), reply: numOrNull(out.reply) } : null,
    history: history.map(toStandingChange),
  };
}

export async function changeStanding(db: PgDb, change: OperatorChange): Promise<boolean> {
  const what = 'changing a number’s standing';
  const number = change.number;
  const now = db.now();
  return db.tx(what, (c) =>
    runAsync(operatorRule(change, now), {
      optOutByHand: async () => (await db.count(what, S.OPT_OUT_BY_HAND, { number, now }, c)) > 0,
      liftOptOut: async () => (await db.count(what, S.LIFT_OPT_OUT, { number }, c)) > 0,
      history: async (row) => void (await db.count(what, S.STANDING_CHANGE, { ...row, now }, c)),
    }),
  );
}

export async function takeConfirmation(db: PgDb, number: string, timezone: string): Promise<boolean> {
  const what = 'taking a confirmation text’s day';
  const params = { number, timezone, now: db.now() };
  return db.tx(what, async (c) => {
    await db.count(what, S.PRUNE_CONFIRMATIONS, params, c);
    return (await db.count(what, S.TAKE_CONFIRMATION, params, c)) > 0;
  });
}

export async function repliesToReview(
  db: PgDb,
  options: { afterId?: number; limit: number },
): Promise<ReplyRecord[]> {
  const rows = await db.rows('reading replies to review', S.REPLIES_TO_REVIEW, {
    after_id: options.afterId ?? 0,
    limit: options.limit,
  });
  return rows.map(toReply);
}

export async function countRepliesToReview(db: PgDb): Promise<number> {
  const [r] = await db.rows('counting replies to review', S.COUNT_REPLIES_TO_REVIEW, {});
  return num(r?.n ?? 0);
}

export async function claimAnswer(db: PgDb, reply: number, timezone: string): Promise<ClaimedAnswer | null> {
  const what = 'claiming a reply’s answer';
  const params = { reply, timezone, now: db.now() };
  return db.tx(what, (c) =>
    runAsync(claimAnswerRule(), {
      claim: async () => {
        const [r] = await db.rows(what, S.CLAIM_ANSWER, { ...params, stale_detail: ANSWER_SKIPPED.stale }, c);
        return r ? toClaimedRow(r) : null;
      },
      takeDay: async (number) => {
        await db.count(what, S.PRUNE_CONFIRMATIONS, { ...params, number }, c);
        if ((await db.count(what, S.TAKE_CONFIRMATION, { ...params, number }, c)) === 0) return false;
        await db.count(what, S.ANSWER_DAY, params, c);
        return true;
      },
      skip: async (detail) => void (await db.count(what, S.SKIP_ANSWER, { ...params, detail }, c)),
    }),
  );
}

export async function settleAnswer(
  db: PgDb,
  reply: number,
  outcome: AnswerOutcome,
  detail: string | null,
): Promise<void> {
  await db.count('settling a reply’s answer', S.SETTLE_ANSWER, {
    reply,
    state: outcome,
    detail,
    now: db.now(),
    max_attempts: MAX_ANSWER_ATTEMPTS,
  });
}

export async function answersOwed(db: PgDb, limit: number, after = 0): Promise<number[]> {
  const rows = await db.rows('reading the answers owed', S.ANSWERS_OWED, { limit, after });
  return rows.map((r) => num(r.reply));
}

export async function abandonAnswers(db: PgDb): Promise<number> {
  return db.count('failing the answers left sending', S.ABANDON_ANSWERS, {
    now: db.now(),
    limit_ms: ANSWER_SENDING_LIMIT_MS,
    detail: ANSWER_ABANDONED,
  });
}

export async function replyAnswer(db: PgDb, reply: number): Promise<ReplyAnswer | null> {
  const [r] = await db.rows('reading a reply’s answer', S.REPLY_ANSWER, { reply });
  return r ? toReplyAnswer(r) : null;
}
