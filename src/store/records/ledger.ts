// The contact ledger's records (docs/campaign-rules.md "Contact limit", "Compliance"): its
// retention, what a file was checked against, and a contact as `dropline compliance` reads it.

/** Ledger days (and weeks ended) older than keepDays before the store's local day go. */
export interface PruneContactsOptions {
  timezone: string;
  keepDays: number;
}

/** What `dropline compliance` prints beside a file's contacts; absent fields stay as recorded. */
export interface FileChecks {
  account?: string;
  channel?: string;
  entity?: string;
  /** The send window in force when the file was sent, as configured (`colombia-commercial`, JSON). */
  window?: string;
  /** The lists checked at the file's read, each its sha256 (`sha256:<hex>`). */
  lists?: CheckedList[];
}

export interface CheckedList {
  /** `suppression` (an opt-out list) or `consent`. */
  kind: 'suppression' | 'consent';
  /** The configuration key that names it (`suppressionList`, `sources.<name>.suppressionList`, `consent.list`). */
  name: string;
  sha256: string;
}

/** One contact of the ledger: a slot taken just before its recipient's chunk was sent. */
export interface ContactRecord {
  entity: string;
  /** Local date (`YYYY-MM-DD`) of the slot, in the limit's zone on the store's clock. */
  day: string;
  /** The normalised number, or the address in lower case. */
  key: string;
  slot: number;
  channel: string;
  /** ISO-8601: when the slot was taken. */
  at: string;
  recipient: number;
  /** null when the file record is gone. */
  fileId: string | null;
  fileName: string | null;
  source: string | null;
  account: string | null;
  window: string | null;
  lists: CheckedList[] | null;
  /** The week slot the contact's channel held that week (null: no weekly rule). */
  weekSlot: number | null;
}

/** Where a page of contacts starts: after this (day, recipient). */
export interface ContactCursor {
  day: string;
  recipient: number;
}

export interface ContactsQuery {
  /** Local dates, both included. */
  from: string;
  to: string;
  entity: string | null;
  after: ContactCursor | null;
  limit: number;
}
