// What a reply does to its sender's standing (docs/opt-outs.md "A number's standing"), written
// once for both backends (./steps.ts), inside the transaction that keeps the reply: an opt-out
// puts the number on the opt-out list, an opt-in takes it off, and each change is a row of the
// number's history. A configured suppression list is not the store's to change: an opt-in from
// a number one holds is kept as `kept_by_list`, and the list goes on suppressing it.
import { asker, type Rule } from './steps.ts';
import type {
  KeptReply,
  NewReply,
  OperatorChange,
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
