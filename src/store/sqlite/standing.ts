// The SQLite store's standing area: a number's history, the confirmation texts' daily right,
// the replies flagged for review (docs/opt-outs.md "A number's standing").

import { localDate } from '../../plan/send-window.ts';
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
import { runSync } from '../steps.ts';
import type {
  AnswerOutcome,
  ClaimedAnswer,
  OperatorChange,
  ReplyAnswer,
  ReplyRecord,
  Standing,
} from '../store.ts';
import { changes, type SqliteDb } from './connection.ts';
import * as S from './sql.ts';

export async function standing(db: SqliteDb, number: string): Promise<Standing> {
  const out = db.stmt(S.OPTED_OUT).get(number);
  return {
    number,
    optedOut: out ? { at: str(out.at), reply: numOrNull(out.reply) } : null,
    history: db.stmt(S.STANDING_HISTORY).all(number).map(toStandingChange),
  };
}

export async function changeStanding(db: SqliteDb, change: OperatorChange): Promise<boolean> {
  const at = db.now();
  return db.tx(() =>
    runSync(operatorRule(change, at), {
      optOutByHand: () => changes(db.stmt(S.OPT_OUT).run(change.number, at, null)) > 0,
      liftOptOut: () => changes(db.stmt(S.LIFT_OPT_OUT).run(change.number)) > 0,
      history: (row) => void db.stmt(S.STANDING_CHANGE).run({ ...row }),
    }),
  );
}

export async function takeConfirmation(db: SqliteDb, number: string, timezone: string): Promise<boolean> {
  // The local day on the store's clock: SQLite is one process's, so that process's clock.
  const now = Date.parse(db.now());
  const day = localDate(new Date(now), timezone);
  const yesterday = localDate(new Date(now - 86_400_000), timezone);
  return db.tx(() => {
    // Days before yesterday decide nothing any more (a clock moved back a little still finds its day).
    db.stmt(S.PRUNE_CONFIRMATIONS).run(yesterday);
    return changes(db.stmt(S.TAKE_CONFIRMATION).run(number, day)) > 0;
  });
}

export async function repliesToReview(
  db: SqliteDb,
  options: { afterId?: number; limit: number },
): Promise<ReplyRecord[]> {
  return db
    .stmt(S.REPLIES_TO_REVIEW)
    .all(options.afterId ?? 0, options.limit)
    .map(toReply);
}

export async function countRepliesToReview(db: SqliteDb): Promise<number> {
  return num(db.stmt(S.COUNT_REPLIES_TO_REVIEW).get()?.n ?? 0);
}

export async function claimAnswer(
  db: SqliteDb,
  reply: number,
  timezone: string,
): Promise<ClaimedAnswer | null> {
  // The day and "over a day" on the store's clock: SQLite is one process's, so that process's clock.
  const now = db.now();
  const at = Date.parse(now);
  const stale = new Date(at - 86_400_000).toISOString();
  return db.tx(() =>
    runSync(claimAnswerRule(), {
      claim: () => {
        const r = db.stmt(S.CLAIM_ANSWER).get({ reply, now, stale, stale_detail: ANSWER_SKIPPED.stale });
        return r ? toClaimedRow(r) : null;
      },
      takeDay: (number) => {
        const day = localDate(new Date(at), timezone);
        db.stmt(S.PRUNE_CONFIRMATIONS).run(localDate(new Date(at - 86_400_000), timezone));
        if (changes(db.stmt(S.TAKE_CONFIRMATION).run(number, day)) === 0) return false;
        db.stmt(S.ANSWER_DAY).run({ day, reply });
        return true;
      },
      skip: (detail) => void db.stmt(S.SKIP_ANSWER).run({ reply, detail, now }),
    }),
  );
}

export async function settleAnswer(
  db: SqliteDb,
  reply: number,
  outcome: AnswerOutcome,
  detail: string | null,
): Promise<void> {
  db.stmt(S.SETTLE_ANSWER).run({
    reply,
    state: outcome,
    detail,
    now: db.now(),
    max_attempts: MAX_ANSWER_ATTEMPTS,
  });
}

export async function answersOwed(db: SqliteDb, limit: number, after = 0): Promise<number[]> {
  return db
    .stmt(S.ANSWERS_OWED)
    .all({ limit, after })
    .map((r) => num(r.reply));
}

export async function abandonAnswers(db: SqliteDb): Promise<number> {
  const now = db.now();
  const before = new Date(Date.parse(now) - ANSWER_SENDING_LIMIT_MS).toISOString();
  return changes(db.stmt(S.ABANDON_ANSWERS).run({ now, before, detail: ANSWER_ABANDONED }));
}

export async function replyAnswer(db: SqliteDb, reply: number): Promise<ReplyAnswer | null> {
  const r = db.stmt(S.REPLY_ANSWER).get({ reply });
  return r ? toReplyAnswer(r) : null;
}
