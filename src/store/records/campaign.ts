// Campaign rules applied before a chunk is sent (opt-outs, the contact limit), and the
// replies that feed the opt-out list.

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
}

export interface ReplyRecord extends NewReply {
  id: number;
}
