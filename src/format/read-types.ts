// What the drop-file reader takes and gives (docs/format.md): its options, the items it
// yields and the summary it ends with. Types and limits only, so that the channel helpers
// (email.ts) and the reader's parts import them without importing the reader.
import type { ReasonCode, TextParams } from '../errors.ts';
import type { ConsentCheck } from './consent.ts';
import type { Sniff, TextEncoding } from './decode.ts';
import type { AllowDirectives, Channel, Directives } from './directives.ts';
import type { Layout } from './layout.ts';
import type { NumberRules } from './numbers.ts';
import type { SuppressionList } from './suppression.ts';

/** The `transliterate` setting of a source: never (the sender's text) or gsm7 (look-alikes). */
export type TransliterateMode = 'never' | 'gsm7';

export interface ReadOptions {
  /**
   * File name, for the `.bulk.txt` / `.personalized.txt` rule of docs/format.md "How dropline tells
   * the layouts apart".
   */
  name: string;
  layout?: Layout | null;
  numberRules: NumberRules;
  suppression?: SuppressionList | null;
  /** The consent list of the file's channel (NO_CONSENT); null or absent: no consent list. */
  consent?: ConsentCheck | null;
  /** docs/format.md "Encoding and lines": longest physical line, in characters (default 64 KiB). */
  maxLineLength?: number;
  /** TOO_MANY_INVALID above it; default 0.2. */
  maxInvalidRatio?: number;
  /** FILE_TOO_LARGE above it; default 2 GiB. */
  maxFileBytes?: number;
  /** How many errors and warnings the summary lists (counts are always complete). */
  maxListed?: number;
  /** Compute the content sha256 in the sniff pass (the pipeline needs it; validate hashes in parallel). */
  hash?: boolean;
  /** Yield recipients, skipped records and warnings (default); false: only the summary. */
  items?: boolean;
  /** A sniff already made of the same bytes: skips the first pass. */
  sniffed?: Sniff;
  /** docs/format.md "Directives": the source's `allowDirectives` (default: every directive). */
  allowDirectives?: AllowDirectives;
  /** The time zone of a `#! sendAt:` without offset (the send window's; default America/Bogota). */
  sendAtTimeZone?: string;
  /**
   * The source's `transliterate`: 'gsm7' replaces characters outside GSM-7 that have a
   * GSM-7 look-alike (á→a, “→") in every text sent; 'never' (default) sends the text as written.
   */
  transliterate?: TransliterateMode;
  /** The source's channel (default sms); a file's `#! channel:` wins (docs/format.md "Directives"). */
  channel?: Channel;
  /**
   * An email file's content from its source's configuration, used where the file gives none
   * (`#! subject:`, `#! templateId:`): a stored template, or a subject and an HTML body whose
   * `{{column}}` placeholders are checked against the header (docs/format.md "Templates").
   */
  email?: EmailContentOptions | null;
  /**
   * A WhatsApp file's template and sending number from its source's configuration, used where
   * the file gives none (`#! templateId:`, `#! source:`; docs/format.md "WhatsApp files").
   */
  whatsapp?: WhatsAppContentOptions | null;
}

export interface EmailContentOptions {
  readonly templateId?: string | null;
  readonly subject?: string | null;
  readonly html?: string | null;
}

export interface WhatsAppContentOptions {
  /** The approved template every recipient is sent. */
  readonly templateId?: string | null;
  /** The sending number (digits, a leading `+` is dropped); none: the account's own. */
  readonly source?: string | null;
}

export const DEFAULTS = {
  maxLineLength: 64 * 1024,
  maxInvalidRatio: 0.2,
  maxFileBytes: 2 * 1024 ** 3,
  maxListed: 1000,
} as const;

/**
 * The largest line-length limit a setting may ask for (1 MiB, in characters): a line is held
 * in memory up to the limit, so this keeps the reader's memory bounded (docs/configuration.md).
 */
export const MAX_LINE_LENGTH = 1024 * 1024;

/** How many templates (distinct `{{…}}` messages) the summary lists with an example. */
export const TEMPLATES_LISTED = 20;
/** Distinct message-column templates kept parsed at once (a file rarely has more than a few). */

/** A recipient to send. `k` is its 1-based position on a bulk line (0 in personalized files). */
export interface RecipientItem {
  kind: 'recipient';
  line: number;
  k: number;
  number: string;
  country: string;
  text: string;
  /**
   * From the file's messageId column; null when the pipeline derives it (docs/format.md
   * "Identifiers").
   */
  messageId: string | null;
  /** SMS: the text's segments; RCS: 1 (one message, whatever its length); email, WhatsApp: 0. */
  segments: number;
  /** The text's SMS encoding (RCS too, as an SMS would need; email, WhatsApp: gsm7). */
  encoding: 'gsm7' | 'ucs2';
}

/** A record or number that is not sent: invalid, a duplicate, or suppressed. */
export interface SkippedItem {
  kind: 'invalid' | 'duplicate' | 'suppressed';
  line: number;
  k: number;
  code: ReasonCode;
  message: string;
  value: string;
  /** The sent form when the number itself was valid. */
  number: string | null;
  /** DUPLICATE: the line where the recipient was first seen. */
  firstLine?: number;
}

export interface WarningItem {
  kind: 'warning';
  line: number;
  code: ReasonCode;
  message: string;
}

export interface Issue {
  line: number;
  code: ReasonCode;
  message: string;
  hint: string;
  value?: string;
}

export interface ReadSummary {
  kind: 'summary';
  /**
   * The channel the file is read for: its `#! channel:`, else its source's (docs/format.md
   * "Directives").
   */
  channel: Channel;
  /**
   * Email files (docs/format.md "Email files"): what each recipient is sent, from the file's
   * directives or its source's configuration: a stored template, or a subject and an HTML body
   * (their `{{column}}` placeholders filled by the service from each recipient's fields). Null for
   * the other channels, and for an email file without content (rejected NO_MESSAGE).
   */
  email: { templateId: string | null; subject: string | null; html: string | null } | null;
  /**
   * WhatsApp files (docs/format.md "WhatsApp files"): the approved template
   * every recipient is sent (`#! templateId:`, else the source's) and the sending number
   * (`#! source:`, else the source's; null: the account's own). Each recipient's `text` is its
   * template parameters as a JSON array of strings. Null for the other channels, and for a
   * WhatsApp file without a template (rejected NO_MESSAGE).
   */
  whatsapp: { templateId: string; source: string | null } | null;
  bytes: number;
  sha256: string | null;
  encoding: TextEncoding | null;
  layout: Layout | null;
  separator: string | null;
  header: boolean;
  columns: string[] | null;
  /** The bulk message. */
  message: string | null;
  records: number;
  valid: number;
  invalid: number;
  duplicates: number;
  suppressed: number;
  /** Of `suppressed`, the recipients without consent for the file's channel (NO_CONSENT). */
  noConsent: number;
  /** Segments of the valid recipients' texts as sent (RCS: one a valid recipient). */
  segments: number;
  encodings: { gsm7: number; ucs2: number };
  countries: Record<string, number>;
  /** Segments of the valid recipients by ISO country (of the texts as sent), largest first. */
  segmentsByCountry: Record<string, number>;
  /**
   * The valid recipients' segments with the texts as the sender wrote them and as they are
   * (gsm7) or would be (never) transliterated; `segments` is the one of the two actually sent.
   * recipientsChanged: valid recipients whose text transliteration changes (or would change).
   * RCS files are never transliterated: mode never, every count 0.
   */
  transliteration: {
    mode: TransliterateMode;
    segmentsAsWritten: number;
    segmentsTransliterated: number;
    recipientsChanged: number;
  };
  /**
   * docs/format.md "Templates": each distinct template (`#! message:`, or a message with
   * placeholders) with the merged text of the first record that used it (`line`), as sent; at most
   * 20.
   */
  templates: { line: number; template: string; example: string }[];
  accepted: boolean;
  /** `params`: what `message` says beyond the code (summary-builder.ts reject). */
  rejection: { code: ReasonCode; message: string; hint: string; params: TextParams } | null;
  errors: Issue[];
  warnings: Issue[];
  errorsTruncated: boolean;
  warningsTruncated: boolean;
  errorCounts: Partial<Record<ReasonCode, number>>;
  warningCounts: Partial<Record<ReasonCode, number>>;
  trailer: { line: number; count: number | null } | null;
  /** docs/format.md "Directives": what the file's `#!` directives asked for. */
  directives: Directives;
}

export type ReadItem = RecipientItem | SkippedItem | WarningItem;
/** The reader yields batches of items; the last batch holds the summary alone. */
export type ReadBatch = ReadItem[] | [ReadSummary];
