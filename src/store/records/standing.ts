// A number's standing (docs/opt-outs.md "A number's standing"): what users' replies asked, and
// every change to whether a number may be written to, with who made it, how and when.

/**
 * What a reply asked (src/replies/keywords.ts, src/replies/soft-opt-out.ts): a keyword's kind,
 * or `review` for a reply that looks like an opt-out without being a keyword (never applied).
 */
export type ReplyIntent = 'opt_out' | 'opt_in' | 'help' | 'review';

/**
 * `opted_out`: put on the opt-out list; `opted_in`: taken off it; `kept_by_list`: an opt-in
 * that leaves the number suppressed, a configured suppression list holding it (`detail`).
 */
export type StandingChangeKind = 'opted_out' | 'opted_in' | 'kept_by_list';

/** Who made the change: a user's reply, a configured list, an operator. */
export type StandingSource = 'reply' | 'list' | 'operator';

export interface StandingChange {
  id: number;
  number: string;
  /** ISO-8601: when the reply was received (or the operator acted). */
  at: string;
  change: StandingChangeKind;
  source: StandingSource;
  /** The reply that made it (Store.replies' id). */
  reply: number | null;
  /** The keyword, normalised. */
  keyword: string | null;
  /**
   * `kept_by_list`: the configured lists holding the number (their names, comma-separated);
   * an operator's change: the operator's note.
   */
  detail: string | null;
}

export interface Standing {
  number: string;
  /** On the opt-out list of replies since `at` (by `reply`), or not (null). */
  optedOut: { at: string; reply: number | null } | null;
  /** Every change, oldest first. */
  history: StandingChange[];
}

/** An operator's change to a number's standing. */
export interface OperatorChange {
  number: string;
  /** true: put on the opt-out list; false: taken off it. */
  optedOut: boolean;
  /** Why, as the operator wrote it (a ticket, a call): kept as the change's detail. */
  note: string | null;
}

/** What a reply is answered with (docs/opt-outs.md "Answers"): the configuration key of its text. */
export type AnswerKind = 'helpText' | 'confirmOptOut' | 'confirmOptIn';

/** An answer a reply is owed, kept with the reply (NewReply.answer). */
export interface OwedAnswer {
  text: string;
  what: AnswerKind;
  /** A confirmation: sent only if the number's day has none yet (Store.claimAnswer decides). */
  confirmation: boolean;
}

/**
 * owed: to send; sending: claimed by a process; sent; failed: not sent again (it may have been
 * taken); skipped: the number's confirmation of the day was sent already, or owed over a day.
 */
export type AnswerState = 'owed' | 'sending' | 'sent' | 'failed' | 'skipped';

/** A reply's answer as kept. */
export interface ReplyAnswer extends OwedAnswer {
  reply: number;
  /** To whom, from which short code. */
  number: string;
  shortCode: string;
  state: AnswerState;
  /** Claims made. */
  attempts: number;
  /** Why it failed or was skipped. */
  detail: string | null;
}

/** An answer claimed to be sent now (Store.claimAnswer): `sending`, this process's. */
export type ClaimedAnswer = Omit<ReplyAnswer, 'state' | 'detail'>;

/** What sending a claimed answer came to: `owed` when it was refused without being taken. */
export type AnswerOutcome = 'sent' | 'failed' | 'owed';
