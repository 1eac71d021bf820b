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
