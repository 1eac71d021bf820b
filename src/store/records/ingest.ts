// A file's recipients, chunks and attachments as its read records them (docs/store.md
// "Recipients", "Chunks").

/**
 * What became of one record of the file. `pending`: valid, not sent yet; `in_doubt`: its
 * request may have reached the service (no answer). The report shows these names.
 */
export type RecipientOutcome =
  | 'pending'
  | 'sent'
  | 'invalid'
  | 'duplicate'
  | 'suppressed'
  | 'rejected'
  | 'failed'
  | 'in_doubt'
  /** Not sent: the account already contacted the number that day (contactLimit). */
  | 'contact_limit'
  /** Never sent because its file was cancelled (docs/contract.md "Recipient outcomes"). */
  | 'cancelled';

export interface RecipientInsert {
  /** 1-based order of the row in the file (the report's order). */
  idx: number;
  line: number;
  /** Position on a bulk line (1-based), 0 in personalized files. */
  k: number;
  /** The sent form when the number was valid, else null. */
  number: string | null;
  /** The raw value from the file (for invalid rows and errors.csv). */
  value: string | null;
  messageId: string | null;
  /**
   * The messageId is the generated `<fileId>-<line>[-<k>]` (docs/format.md "Identifiers"),
   * which the store derives on read: `messageId` may then be left null on insert.
   */
  generatedMessageId?: boolean;
  /** Personalized text of a valid recipient; null for bulk files (the text is the file's message). */
  text: string | null;
  /** The chunk a valid recipient is planned into. */
  chunkSeq: number | null;
  outcome: RecipientOutcome;
  /** A format reason code (invalid, duplicate, suppressed) or an API error code. */
  code: string | null;
  /** Human-readable detail of the code. */
  detail: string | null;
  smsCount: number | null;
}

export interface RecipientRecord extends RecipientInsert {
  fileId: string;
  /** Delivery status (PENDING_DELIVERY, a status name, or UNKNOWN_DELIVERY). */
  status: string;
  transactionNumber: string | null;
  updatedAt: string;
}

export interface ChunkInsert {
  seq: number;
  /** Destinations in the chunk. */
  size: number;
}

/** One shared attachment of an email file, as the service takes it (docs/channels.md "Email"). */
export interface FileAttachment {
  name: string;
  contentType: string;
  /** base64 */
  content: string;
}
