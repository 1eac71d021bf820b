// Campaign rules applied before a chunk is sent (opt-outs, the contact limit), and the
// replies that feed the opt-out list.

import type { OwedAnswer, ReplyIntent } from './standing.ts';

export interface HoldBackOptions {
  /** Check the opt-out list (users' replies). */
  optOuts: boolean;
  /** contactLimit (docs/campaign-rules.md "Contact limit"); null: no limit. */
  contactLimit: ContactLimitOptions | null;
}

/**
 * The ledger of `entity`: slots of its local days and weeks in `timezone`, the day taken from
 * the store's clock (PostgreSQL's now(), as leases; SQLite's one process), never the caller's.
 */
export interface ContactLimitOptions {
  entity: string;
  /** The chunk's channel (`sms`, `whatsapp`, …): what channelsPerWeek counts. */
  channel: string;
  timezone: string;
  perDay: number;
  /** Distinct channels a key may be contacted by in a week; null: no weekly rule. */
  channelsPerWeek: number | null;
}

/**
 * beginChunk's answer: `began` (inflight, its recipients' contacts taken), `{ held }` (these
 * were held back: the chunk is pending, its destinations to be read again) or `refused` (the
 * fence said no: not this worker's, or the file no longer sending; nothing done).
 */
export type BeginChunk = 'began' | { held: HeldBack } | 'refused';

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
  /**
   * Joined to the latest recipient sent to `from` from the short code `to` at or after this
   * instant (ISO-8601: the reply's time less `replies.windowHours`); null or absent: not joined.
   */
  joinSince?: string | null;
  /**
   * The answer it is owed (help text, confirmation), kept in the same transaction when the reply
   * is (a reply delivered again owes nothing more); null or absent: none.
   */
  answer?: OwedAnswer | null | undefined;
}

export interface ReplyRecord extends Omit<NewReply, 'joinSince' | 'answer'> {
  id: number;
  intent: ReplyIntent | null;
  keyword: string | null;
  /** The campaign it was joined to; null: unjoined. */
  fileId: string | null;
}

/**
 * A reply just kept: its id, what it asked (the sender's standing changed in the same
 * transaction), and the campaign it was joined to (null: unjoined).
 */
export interface KeptReply {
  id: number;
  intent: ReplyIntent | null;
  fileId: string | null;
}

/** A reply joined to a campaign: its recipient's row (line, and position on a bulk line). */
export interface FileReply extends ReplyRecord {
  fileId: string;
  line: number;
  k: number;
}

/** A campaign's replies: how many, and how many recipients replied. */
export interface ReplyCounts {
  replies: number;
  replied: number;
}
