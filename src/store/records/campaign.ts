// Campaign rules applied before a chunk is sent (opt-outs, the contact limit), and the
// replies that feed the opt-out list.

import type { ReplyIntent } from './standing.ts';

export interface HoldBackOptions {
  /** Check the opt-out list (users' replies). */
  optOuts: boolean;
  /**
   * contactLimit: the account's slots of the local day in `timezone`, the day taken from the
   * store's clock (PostgreSQL's now(), as leases; SQLite's one process), never the caller's.
   * null: no limit.
   */
  contactLimit: { account: string; timezone: string; perDay: number } | null;
}

/** Recipients of the chunk held back by holdBack. */
export interface HeldBack {
  suppressed: number;
  contactLimited: number;
}

export interface NewReply {
  /** ISO-8601. */
  receivedAt: string;
  /** The sender's number as sent (digits, country code first). */
  from: string;
  to: string;
  text: string;
  optOut: boolean;
  /** The service's id of the reply, when it gives one. */
  messageId: string | null;
  /** What the reply asked (absent: `optOut` says; docs/opt-outs.md "A number's standing"). */
  intent?: ReplyIntent | null | undefined;
  /** The keyword matched, normalised. */
  keyword?: string | null | undefined;
  /**
   * The configured suppression lists holding the sender when it was received: an opt-in then
   * lifts only the reply's opt-out, and the history says the lists keep the number suppressed.
   */
  listedOn?: readonly string[] | undefined;
}

export interface ReplyRecord extends NewReply {
  id: number;
  intent: ReplyIntent | null;
  keyword: string | null;
}
