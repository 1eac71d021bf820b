// What a reply does to its sender's standing (docs/opt-outs.md "A number's standing"), written
// once for both backends (./steps.ts), inside the transaction that keeps the reply: an opt-out
// puts the number on the opt-out list, an opt-in takes it off, and each change is a row of the
// number's history. A configured suppression list is not the store's to change: an opt-in from
// a number one holds is kept as `kept_by_list`, and the list goes on suppressing it.
// The answer a reply is owed is kept in that transaction too, and claimed, sent and settled
// after it (docs/opt-outs.md "Answers").
import { bool, num, type Row, str, strOrNull } from './mapping.ts';
import { asker, type Rule } from './steps.ts';
import type {
  AnswerKind,
  ClaimedAnswer,
  KeptReply,
  NewReply,
  OperatorChange,
  OwedAnswer,
  ReplyAnswer,
  ReplyIntent,
  StandingChangeKind,
  StandingSource,
} from './store.ts';

/** A history row as written (its id and the number's normal form come from the backend). */
export interface StandingRow {
  number: string;
  /** null: the store's clock (PostgreSQL's own now(), when no clock is injected). */
  at: string | null;
  change: StandingChangeKind;
  source: StandingSource;
  reply: number | null;
  keyword: string | null;
  detail: string | null;
}

/** What a backend does for recordReply, inside its one transaction. */
export type ReplyOperations = {
  /**
   * The reply kept, joined in the same statement to the campaign it answers (docs/replies.md
   * "The join"): its id and that file (null: unjoined), or null when its messageId was kept
   * already.
   */
  insertReply(intent: ReplyIntent | null): { id: number; fileId: string | null } | null;
  /** The number put on the opt-out list by reply `reply`: false when it was on it. */
  optOut(reply: number): boolean;
  /** The number taken off the opt-out list: false when it was not on it. */
  liftOptOut(): boolean;
  history(row: StandingRow): void;
  /** Reply `reply`'s answer kept as owed (docs/opt-outs.md "Answers"). */
  oweAnswer(reply: number, answer: OwedAnswer): void;
};

const ask = asker<ReplyOperations>();

/** The reply's intent: as given, else what `optOut` says (callers of before issue 35). */
export function intentOf(reply: NewReply): ReplyIntent | null {
  if (reply.intent !== undefined) return reply.intent;
  return reply.optOut ? 'opt_out' : null;
}

export function* recordReplyRule(reply: NewReply): Rule<ReplyOperations, KeptReply | null> {
  const intent = intentOf(reply);
  const kept = yield* ask('insertReply', intent);
  if (kept === null) return null;
  const { id, fileId } = kept;
  // Owed in the reply's transaction: a crash before it is sent does not lose it.
  if (reply.answer) yield* ask('oweAnswer', id, reply.answer);
  const row = {
    number: reply.from,
    at: reply.receivedAt,
    reply: id,
    keyword: reply.keyword ?? null,
    detail: null,
  };
  if (intent === 'opt_out') {
    if (yield* ask('optOut', id)) yield* ask('history', { ...row, change: 'opted_out', source: 'reply' });
  } else if (intent === 'opt_in') {
    if (yield* ask('liftOptOut')) yield* ask('history', { ...row, change: 'opted_in', source: 'reply' });
    const lists = reply.listedOn ?? [];
    if (lists.length > 0)
      yield* ask('history', { ...row, change: 'kept_by_list', source: 'list', detail: lists.join(', ') });
  }
  return { id, intent, fileId };
}

/** What a backend does for an operator's change, inside its one transaction. */
export type OperatorOperations = Pick<ReplyOperations, 'liftOptOut' | 'history'> & {
  /** The number put on the opt-out list by no reply: false when it was on it. */
  optOutByHand(): boolean;
};

const askOperator = asker<OperatorOperations>();

/**
 * An operator's change (`dropline optouts <number> --opt-out | --opt-in`): the same list and
 * history as a reply's, source `operator`, `detail` the operator's note. false: nothing changed.
 */
export function* operatorRule(change: OperatorChange, at: string | null): Rule<OperatorOperations, boolean> {
  const done = change.optedOut ? yield* askOperator('optOutByHand') : yield* askOperator('liftOptOut');
  if (!done) return false;
  yield* askOperator('history', {
    number: change.number,
    at,
    change: change.optedOut ? 'opted_out' : 'opted_in',
    source: 'operator',
    reply: null,
    keyword: null,
    detail: change.note,
  });
  return true;
}

/** Claims made of an answer before it is failed for good (docs/opt-outs.md "Answers"). */
export const MAX_ANSWER_ATTEMPTS = 5;

/**
 * How long an answer may stay `sending`: longer, the process sending it died (its tries and
 * waits take minutes at most), and it is failed (Store.abandonAnswers).
 */
export const ANSWER_SENDING_LIMIT_MS = 3_600_000;

/** What an answer failed that way says (kept as its detail). */
export const ANSWER_ABANDONED =
  'the process sending it stopped before it knew whether the service took it: not sent again';

/** Why an answer was skipped (kept as its detail). */
export const ANSWER_SKIPPED = {
  stale: 'owed for more than a day: not sent',
  dayTaken: 'the number had its confirmation of the day',
} as const;

/** An answer row as claimed (claimAnswerSql's RETURNING). */
export interface ClaimedRow {
  reply: number;
  number: string;
  shortCode: string;
  text: string;
  what: AnswerKind;
  confirmation: boolean;
  state: 'sending' | 'skipped';
  attempts: number;
  /** The confirmation day it took at an earlier claim; null: none yet. */
  day: string | null;
}

/** What a backend does for claimAnswer, inside its one transaction. */
export type ClaimOperations = {
  /** The answer owed set `sending` (or `skipped`, owed over a day); null: not owed. */
  claim(): ClaimedRow | null;
  /** The number's confirmation day taken for this answer: false when the day had one. */
  takeDay(number: string): boolean;
  skip(detail: string): void;
};

const askClaim = asker<ClaimOperations>();

/**
 * Claims an owed answer. A confirmation takes the number's day once (kept on the row, so a
 * claim after a refusal that took nothing does not find its own day taken).
 */
export function* claimAnswerRule(): Rule<ClaimOperations, ClaimedAnswer | null> {
  const row = yield* askClaim('claim');
  if (row === null || row.state !== 'sending') return null;
  if (row.confirmation && row.day === null && !(yield* askClaim('takeDay', row.number))) {
    yield* askClaim('skip', ANSWER_SKIPPED.dayTaken);
    return null;
  }
  const { reply, number, shortCode, text, what, confirmation, attempts } = row;
  return { reply, number, shortCode, text, what, confirmation, attempts };
}

/** A reply_answers row as claimed (claimAnswerSql's RETURNING). */
export function toClaimedRow(r: Row): ClaimedRow {
  return {
    reply: num(r.reply),
    number: str(r.number),
    shortCode: str(r.short_code),
    text: str(r.text),
    what: str(r.what) as AnswerKind,
    confirmation: bool(r.confirmation),
    state: str(r.state) as ClaimedRow['state'],
    attempts: num(r.attempts),
    day: r.day === null || r.day === undefined ? null : String(r.day),
  };
}

/** A reply_answers row (replyAnswerSql). */
export function toReplyAnswer(r: Row): ReplyAnswer {
  const { day: _day, state: _state, ...claimed } = toClaimedRow(r);
  return { ...claimed, state: str(r.state) as ReplyAnswer['state'], detail: strOrNull(r.detail) };
}
