// Campaign rules applied before a chunk is sent (opt-outs, the contact limit), and the
// replies that feed the opt-out list.

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
  /**
   * Joined to the latest recipient sent to `from` from the short code `to` at or after this
   * instant (ISO-8601: the reply's time less `replies.windowHours`); null or absent: not joined.
   */
  joinSince?: string | null;
}

export interface ReplyRecord extends Omit<NewReply, 'joinSince'> {
  id: number;
  /** The campaign it was joined to; null: unjoined. */
  fileId: string | null;
}

/** A reply just kept: its id, and the campaign it was joined to (null: unjoined). */
export interface KeptReply {
  id: number;
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
