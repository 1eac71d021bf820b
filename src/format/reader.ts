// The drop-file reader: bytes → recipients, record errors, warnings and a final summary,
// exactly as FORMAT.md defines them. One streaming API for `validate` and the pipeline.
//
// Pure: the caller passes a function that opens the bytes (it is called twice: a sniff
// pass for the encoding, then the parse pass). Memory is bounded by the line-length limit
// plus the duplicate index (~12 bytes per distinct recipient); no record is kept.
import { REASONS, type ReasonCode } from '../errors.ts';
import {
  type ByteChunks,
  decodeText,
  type Sniff,
  sniff,
  type TextBytes,
  type TextEncoding,
} from './decode.ts';
import {
  hashJoined,
  hashString,
  INDEX_BATCH,
  joinedScan,
  MessageIdIndex,
  RecipientIndex,
  scanText,
  scanTextAt,
  textScan,
} from './dedupe.ts';
import {
  type AllowDirectives,
  type Channel,
  DirectiveError,
  type Directives,
  noDirectives,
  readDirective,
} from './directives.ts';
import { normalizeEmail } from './email.ts';
import {
  chooseLayout,
  type Layout,
  type LayoutChoice,
  layoutFromName,
  MESSAGE_COLUMNS,
  MESSAGE_ID_COLUMNS,
  normaliseHeaderName,
} from './layout.ts';
import { LineSplitter } from './lines.ts';
import { type NumberResult, type NumberRules, normalizeNumber } from './numbers.ts';
import {
  detectSeparator,
  hasSeparatorOrQuote,
  MALFORMED,
  OPEN,
  type Parsed,
  type PersonalizedFields,
  parseCsv,
  parseMessageRecord,
  parsePersonalized,
  parseTrailer,
  splitNumbers,
} from './records.ts';
import { countJoined, countSegments, isPlainGsm, type SegmentInfo } from './segments.ts';
import type { SuppressionList } from './suppression.ts';
import {
  compileTemplate,
  joinTemplate,
  mergeTemplate,
  placeholderKey,
  type Template,
  type TemplateColumns,
  TWINS_HINT,
  templateColumns,
  templateValues,
  trimText,
  twinsProblem,
} from './template.ts';
import { transliterate, transliteratedSegmentsOf, transliterationReadsText } from './transliterate.ts';
import { numberedColumns, splitParameters } from './whatsapp.ts';

/** The `transliterate` setting of a source: never (the sender's text) or gsm7 (look-alikes). */
export type TransliterateMode = 'never' | 'gsm7';

export interface ReadOptions {
  /** File name, for the `.bulk.txt` / `.personalized.txt` rule of FORMAT.md 4.3. */
  name: string;
  layout?: Layout | null;
  numberRules: NumberRules;
  suppression?: SuppressionList | null;
  /** FORMAT.md 2: longest physical line, in characters (default 64 KiB). */
  maxLineLength?: number;
  /** FORMAT.md 7: default 0.2. */
  maxInvalidRatio?: number;
  /** FORMAT.md 7: default 2 GiB. */
  maxFileBytes?: number;
  /** How many errors and warnings the summary lists (counts are always complete). */
  maxListed?: number;
  /** Compute the content sha256 in the sniff pass (the pipeline needs it; validate hashes in parallel). */
  hash?: boolean;
  /** Yield recipients, skipped records and warnings (default); false: only the summary. */
  items?: boolean;
  /** A sniff already made of the same bytes: skips the first pass. */
  sniffed?: Sniff;
  /** FORMAT.md 8.1: the source's `allowDirectives` (default: every directive). */
  allowDirectives?: AllowDirectives;
  /** FORMAT.md 8.1: the time zone of a `#! sendAt:` without offset (the send window's; default America/Bogota). */
  sendAtTimeZone?: string;
  /**
   * The source's `transliterate`: 'gsm7' replaces characters outside GSM-7 that have a
   * GSM-7 look-alike (á→a, “→") in every text sent; 'never' (default) sends the text as written.
   */
  transliterate?: TransliterateMode;
  /** The source's channel (default sms); a file's `#! channel:` wins (FORMAT.md 8.1). */
  channel?: Channel;
  /**
   * An email file's content from its source's configuration, used where the file gives none
   * (`#! subject:`, `#! templateId:`): a stored template, or a subject and an HTML body whose
   * `{{column}}` placeholders are checked against the header (FORMAT.md 8.2, 8.3).
   */
  email?: EmailContentOptions | null;
  /**
   * A WhatsApp file's template and sending number from its source's configuration, used where
   * the file gives none (`#! templateId:`, `#! source:`; FORMAT.md 8.3).
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
const TEMPLATE_CACHE = 64;

/** A recipient to send. `k` is its 1-based position on a bulk line (0 in personalized files). */
export interface RecipientItem {
  kind: 'recipient';
  line: number;
  k: number;
  number: string;
  country: string;
  text: string;
  /** From the file's messageId column; null when the pipeline derives it (FORMAT.md 9). */
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
  /** The channel the file is read for: its `#! channel:`, else its source's (FORMAT.md 8.1). */
  channel: Channel;
  /**
   * Email files (FORMAT.md 8.3): what each recipient is sent, from the file's directives or
   * its source's configuration: a stored template, or a subject and an HTML body (their
   * `{{column}}` placeholders filled by the service from each recipient's fields). Null for
   * the other channels, and for an email file without content (rejected NO_MESSAGE).
   */
  email: { templateId: string | null; subject: string | null; html: string | null } | null;
  /**
   * WhatsApp files (FORMAT.md 8.3, docs/format.md "WhatsApp files"): the approved template
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
   * FORMAT.md 8.2: each distinct template (`#! message:`, or a message with placeholders) with
   * the merged text of the first record that used it (`line`), as sent; at most 20.
   */
  templates: { line: number; template: string; example: string }[];
  accepted: boolean;
  rejection: { code: ReasonCode; message: string; hint: string } | null;
  errors: Issue[];
  warnings: Issue[];
  errorsTruncated: boolean;
  warningsTruncated: boolean;
  errorCounts: Partial<Record<ReasonCode, number>>;
  warningCounts: Partial<Record<ReasonCode, number>>;
  trailer: { line: number; count: number | null } | null;
  /** FORMAT.md 8.1: what the file's `#!` directives asked for. */
  directives: Directives;
}

export type ReadItem = RecipientItem | SkippedItem | WarningItem;
/** The reader yields batches of items; the last batch holds the summary alone. */
export type ReadBatch = ReadItem[] | [ReadSummary];

interface PreparedMessage {
  /** The text sent: merged, control characters removed, transliterated under gsm7. */
  text: string;
  segments: SegmentInfo;
  /** The text's hash for the duplicate index (0: not hashed, the bulk message). */
  hash: number;
  /**
   * The message's warnings, as bits (CONTROL_REMOVED, LONG, UCS2): their texts are written
   * only when listed or yielded (warningMessage), so a million UCS-2 texts allocate nothing
   * for the warnings past the first 1000.
   */
  warnings: number;
  empty: boolean;
  /** Segments of the text as the sender wrote it (before transliteration). */
  asWritten: number;
  /** Segments of the text transliterated (sent under gsm7, the alternative under never). */
  transliterated: number;
  /** Transliteration changes (or, under never, would change) the text. */
  changed: boolean;
}

// C0 control characters other than LF (line breaks inside quoted messages are kept as LF).
const CONTROL = /[\x00-\x09\x0b-\x1f]/;
const CONTROL_ALL = /[\x00-\x09\x0b-\x1f]/g;
/** A line break (CRLF, CR or LF) in an email field: one space. */
const FIELD_BREAKS = /\r\n|[\r\n]/g;

/**
 * An email record's fields with every line break made a space and every other C0 control
 * character removed, or `fields` itself when none has one: the service merges them into the
 * subject, where a line feed would start another header (`Ana\nBcc: …`).
 */
function oneLineFields(fields: readonly string[]): readonly string[] {
  if (!fields.some((f) => CONTROL_OR_LF.test(f))) return fields;
  return fields.map((f) => f.replace(FIELD_BREAKS, ' ').replace(CONTROL_ALL, ''));
}
const CONTROL_OR_LF = /[\x00-\x1f]/;
const LONG_MESSAGE_CHARS = 500;
const NO_TEXT: PreparedMessage = {
  text: '',
  segments: { encoding: 'gsm7', segments: 0, gsm7Segments: 0, nonGsm: [] },
  hash: 0,
  warnings: 0,
  empty: true,
  asWritten: 0,
  transliterated: 0,
  changed: false,
};
const MESSAGE_ID_MAX = 64;

/** PreparedMessage.warnings: one bit a warning, in the order they are listed. */
const CONTROL_REMOVED = 1;
const LONG = 2;
const UCS2 = 4;
const MESSAGE_WARNINGS = [
  [CONTROL_REMOVED, 'CONTROL_CHARS_REMOVED'],
  [LONG, 'LONG_MESSAGE'],
  [UCS2, 'UCS2_MESSAGE'],
] as const;

/** LONG_MESSAGE's hint in an RCS file (REASONS' speaks of segments, which RCS has not). */
const RCS_LONG_HINT =
  'the service recommends RCS messages under 500 characters (no limit): shorten it if you can';

function warningMessage(
  code: (typeof MESSAGE_WARNINGS)[number][1],
  msg: PreparedMessage,
  rcs: boolean,
): string {
  switch (code) {
    case 'LONG_MESSAGE':
      return rcs
        ? `the message has ${msg.text.length} characters (over 500, the most the service recommends for RCS)`
        : `the message has ${msg.text.length} characters (over 500)`;
    case 'UCS2_MESSAGE': {
      const s = msg.segments;
      const chars = s.nonGsm.map((c) => `'${c}'`).join(', ');
      return `${chars} force UCS-2 (70 characters a segment instead of 160): ${s.segments} segment(s), ${s.gsm7Segments} in GSM-7`;
    }
    default:
      return REASONS[code].message;
  }
}

/**
 * Runs once per personalized record: the text's hash (for duplicates) and whether it is
 * plain GSM come from one pass over it (scanText), and nothing is allocated for the
 * warnings of a message. A plain (ASCII GSM-7) text, most of them, skips the
 * control-character and transliteration work altogether.
 */
function prepareMessage(
  raw: string,
  quoted: boolean,
  hashText: boolean,
  gsm7: boolean,
  /** The bytes raw was read from, and where it is in them (TextBytes): it is hashed from them. */
  bytes: Uint8Array | null = null,
  at = -1,
): PreparedMessage {
  let warnings = 0;
  let text = quoted ? raw : raw.trim();
  // A trimmed text is read from its string (the bytes hold raw, spaces and all).
  let hash = hashText ? scanTextAt(text, text.length === raw.length ? bytes : null, at) || 1 : 0;
  let plain = hashText ? textScan.plain : isPlainGsm(text);
  if (!plain && CONTROL.test(text)) {
    text = text.replace(CONTROL_ALL, '');
    if (!quoted) text = text.trim();
    hash = hashText ? scanText(text) || 1 : 0;
    plain = hashText ? textScan.plain : isPlainGsm(text);
    warnings = CONTROL_REMOVED;
  }
  // Under gsm7 the text sent (and so its duplicates, segments and warnings) is the
  // transliterated one; the text as written is only counted.
  let asWritten = -1;
  let changed = false;
  if (gsm7 && !plain) {
    const t = transliterate(text, true);
    if (t !== text) {
      asWritten = countSegments(text, false).segments;
      changed = true;
      text = quoted ? t : t.trim();
      hash = hashText ? scanText(text) || 1 : 0;
      plain = hashText ? textScan.plain : isPlainGsm(text);
    }
  }
  // An unquoted text is trimmed already.
  const empty = (quoted ? text.trim() : text).length === 0;
  return prepared(text, countSegments(text, plain), hash, warnings, empty, asWritten, changed, gsm7);
}

/** What prepareMessage and prepareMerged end with, once the text sent and its segments are known. */
function prepared(
  text: string,
  segments: SegmentInfo,
  hash: number,
  warnings: number,
  empty: boolean,
  asWritten: number,
  changed: boolean,
  gsm7: boolean,
): PreparedMessage {
  let transliterated = segments.segments;
  if (asWritten < 0) asWritten = segments.segments;
  if (!gsm7 && segments.encoding === 'ucs2') {
    // What gsm7 would send instead: computed for UCS-2 texts only (the others stay the same).
    const n = transliteratedSegmentsOf(text, segments);
    if (n >= 0) {
      transliterated = n;
      changed = true;
    }
  }
  if (!empty) {
    if (text.length > LONG_MESSAGE_CHARS) warnings |= LONG;
    if (segments.encoding === 'ucs2') warnings |= UCS2;
  }
  return { text, segments, hash, warnings, empty, asWritten, transliterated, changed };
}

/** Set by countJoined: whether the merged text is plain GSM, and its length. */
const joined = { plain: false, length: 0 };

/** String.prototype.trim would remove the code unit `c` (white space or a line terminator). */
function isTrimmed(c: number): boolean {
  if (c > 0x20 && c < 0x7f) return false;
  return /\s/.test(String.fromCharCode(c));
}

/**
 * prepareMessage(joinTemplate(template, values), quoted, true, gsm7), with the same answer,
 * from the values alone: the hash (hashJoined) and the segments (countJoined) are made from
 * the literal parts' precomputed stats, and the text is not even made when it is not wanted.
 * `hash` gets the text's hash: a message without its text (`withText` false, and no
 * warning or count that needs it) is `shared` itself when that says the same, so a million
 * records of one template allocate one message; its text is then the first record's, and
 * only its counts may be read. null when the text needs prepareMessage after all: white
 * space at either end of an unquoted text (trimmed), control characters (removed),
 * characters gsm7 would transliterate, or a count that needs the whole text (countJoined).
 */
function prepareMerged(
  template: Template,
  values: readonly string[],
  quoted: boolean,
  gsm7: boolean,
  withText: boolean,
  shared: PreparedMessage | null,
  hash: { value: number },
  /** The bytes the values were read from, and where each is (hashJoined). */
  bytes: Uint8Array | null = null,
  at: Int32Array | null = null,
): PreparedMessage | null {
  const { literals } = template;
  const n = template.cols.length;
  if (!quoted) {
    // The first and last characters: of the outer literal parts, or of the values beside
    // them when those are empty (a value is never empty).
    const first = literals[0]!.length > 0 ? literals[0]! : values[0]!;
    const lastLiteral = literals[n]!;
    const last = lastLiteral.length > 0 ? lastLiteral : values[n - 1]!;
    if (isTrimmed(first.charCodeAt(0)) || isTrimmed(last.charCodeAt(last.length - 1))) return null;
  }
  const h = hashJoined(template.literalHash, values, n, bytes, at) || 1;
  const segments = countJoined(
    template.literalStats,
    values,
    n,
    joinedScan.valuesPlain,
    joined,
    shared?.segments ?? null,
  );
  // Under gsm7 a text outside GSM-7 may change: transliterate decides, with the whole text.
  if (segments === null || (gsm7 && segments.nonGsm.length > 0)) return null;
  hash.value = h;
  const needsText =
    withText ||
    joined.length > LONG_MESSAGE_CHARS ||
    (segments.encoding === 'ucs2' && transliterationReadsText(segments.nonGsm));
  if (!needsText && shared !== null && shared.segments === segments && (shared.warnings & LONG) === 0)
    return shared;
  // Never empty: every value holds a character other than white space (templateValues).
  return prepared(joinTemplate(template, values), segments, h, 0, false, -1, false, gsm7);
}

/** A number, even one that cannot be sent (a landline, a country not allowed). */
function isNumber(result: NumberResult): boolean {
  return result.ok || result.code !== 'INVALID_NUMBER';
}

/** What the reader says about a number that does not normalise. */
function numberProblem(result: Exclude<NumberResult, { ok: true }>, value: string): string {
  switch (result.code) {
    case 'NOT_MOBILE':
      return `${value} is a landline, not a mobile number`;
    case 'COUNTRY_NOT_ALLOWED':
      return `${value} is a number of ${result.country ?? 'a country'} that this source does not allow`;
    default:
      return value.length === 0 ? 'the number is missing' : `${value} is not a valid mobile number`;
  }
}

interface PendingRecord {
  startLine: number;
  lines: { text: string; lineNo: number; tooLong: boolean }[];
  length: number;
}

type Mode = 'start' | 'message' | 'records';

/**
 * Reads a drop file. `open` must return the same bytes each time it is called.
 */
export async function* readDropFile(open: () => ByteChunks, options: ReadOptions): AsyncGenerator<ReadBatch> {
  const maxLine = options.maxLineLength ?? DEFAULTS.maxLineLength;
  const maxListed = options.maxListed ?? DEFAULTS.maxListed;
  const maxInvalidRatio = options.maxInvalidRatio ?? DEFAULTS.maxInvalidRatio;
  const rules = options.numberRules;
  const suppression = options.suppression ?? null;
  const translitMode: TransliterateMode = options.transliterate ?? 'never';
  /** Texts are transliterated (the source's gsm7; never in an RCS file: set by startFile). */
  let gsm7 = translitMode === 'gsm7';

  const summary: ReadSummary = {
    kind: 'summary',
    channel: 'sms',
    email: null,
    whatsapp: null,
    bytes: 0,
    sha256: null,
    encoding: null,
    layout: null,
    separator: null,
    header: false,
    columns: null,
    message: null,
    records: 0,
    valid: 0,
    invalid: 0,
    duplicates: 0,
    suppressed: 0,
    segments: 0,
    encodings: { gsm7: 0, ucs2: 0 },
    countries: {},
    segmentsByCountry: {},
    transliteration: {
      mode: translitMode,
      segmentsAsWritten: 0,
      segmentsTransliterated: 0,
      recipientsChanged: 0,
    },
    templates: [],
    accepted: false,
    rejection: null,
    errors: [],
    warnings: [],
    errorsTruncated: false,
    warningsTruncated: false,
    errorCounts: {},
    warningCounts: {},
    trailer: null,
    directives: noDirectives(),
  };
  const reject = (code: ReasonCode, detail?: string, hint?: string): void => {
    if (summary.rejection) return;
    const info = REASONS[code];
    summary.rejection = { code, message: detail ?? info.message, hint: hint ?? info.hint };
  };

  const sniffed =
    options.sniffed ??
    (await sniff(open(), {
      hash: options.hash ?? false,
      maxBytes: options.maxFileBytes ?? DEFAULTS.maxFileBytes,
    }));
  summary.bytes = sniffed.bytes;
  summary.sha256 = sniffed.sha256;
  if (sniffed.tooLarge) {
    reject(
      'FILE_TOO_LARGE',
      `the file is larger than ${options.maxFileBytes ?? DEFAULTS.maxFileBytes} bytes`,
    );
    yield [summary];
    return;
  }
  summary.encoding = sniffed.encoding;
  if (sniffed.binary) {
    reject('BINARY_FILE');
    yield [summary];
    return;
  }

  let batch: ReadItem[] = [];
  const emit = options.items ?? true;
  const countries = new Map<string, number>();
  const countrySegments = new Map<string, number>();
  // Runs of the same country (a file is mostly one) are counted here and added to the map
  // when the country changes: two map operations a recipient were measurable.
  let runCountry = '';
  let runCount = 0;
  let runSegments = 0;
  const flushCountry = (): void => {
    if (runCount > 0) {
      countries.set(runCountry, (countries.get(runCountry) ?? 0) + runCount);
      countrySegments.set(runCountry, (countrySegments.get(runCountry) ?? 0) + runSegments);
    }
    runCount = 0;
    runSegments = 0;
  };
  const translit = summary.transliteration;
  // A summary alone never says which line a duplicate repeats: its index keeps no lines.
  const recipients = new RecipientIndex(sniffed.lineEstimate, emit);
  let messageIds: MessageIdIndex | null = null;

  let mode: Mode = 'start';
  let layout: Layout = 'bulk';
  /** FORMAT.md 8.3: an email file (addresses, fields), decided with the layout. */
  let email = false;
  /** An email file's subject and HTML body templates that have placeholders (MISSING_FIELD). */
  const emailTemplates: Template[] = [];
  /** The first of emailTemplates is the subject. */
  let emailSubjectMerged = false;
  /** FORMAT.md 8.3: a WhatsApp file (numbers, template parameters), decided with the layout. */
  let whatsapp = false;
  /**
   * An RCS file (docs/format.md "RCS files"): read as an sms file, but one message a recipient
   * (segments 1), no UCS2_MESSAGE, not transliterated. Decided with the layout.
   */
  let rcs = false;
  /** email, whatsapp or rcs: accept's one test on the sms path. */
  let otherChannel = false;
  /** A WhatsApp file's `#! message:` parameters, each a template (null: numbered columns or fields). */
  let waParams: Template[] | null = null;
  /** Otherwise the column of each parameter: the header's `1` … `n`, or fields 2 … of a headless line. */
  let waCols: number[] = [];
  /** A headless WhatsApp file: the parameters of every line, as many as its first line has (-1: not yet). */
  let waCount = -1;
  /** How the parameters are read (summary.templates), and whether its example is given. */
  let waDescription = '';
  let waExampleGiven = false;
  /** The parameters of the last WhatsApp record (reused). */
  const waValues: string[] = [];
  let sep: string | null = null;
  let messageCol = -1;
  let idCol = -1;
  let columnCount = 0;
  /** FORMAT.md 8.2: the header's columns as placeholders name them (headed files). */
  let columns: TemplateColumns | null = null;
  /** The `#! message:` template, once the header is known (headed personalized files only). */
  let fileTemplate: Template | null = null;
  /** Message texts with `{{`, parsed once each (bounded: cleared when full). */
  const templates = new Map<string, Template>();
  /** Templates already listed in summary.templates (by text: a cleared cache forgets). */
  const listedTemplates = new Set<string>();
  let bulkMessage: PreparedMessage | null = null;
  let lastPrepared: PreparedMessage | null = null;
  let lastRaw = '';
  let lastQuoted = false;
  let pending: PendingRecord | null = null;
  /** Which fields of the last headed record were quoted (reused: no allocation per record). */
  const csvQuoted: boolean[] = [];
  /** The fields of the last headed record (reused too: a record's fields are done with before the next is parsed). */
  const csvFields: string[] = [];
  /** The values the last merged template inserted (reused too). */
  const inserted: string[] = [];
  /** Where the fields of the last headed record start in its text (reused too). */
  const csvStarts: number[] = [];
  /** Where each inserted value is in recordBytes (-1: not there as it is). */
  let insertedAt = new Int32Array(4);
  // recordBytes: the bytes of the record being read, when its text is them exactly (ASCII,
  // its line read whole from the last text decoded: TextBytes), the text starting at lineAt:
  // texts are hashed from the bytes (dedupe.ts scanTextAt, hashJoined), ~2.5x faster than
  // from the strings. null for any other record (a quoted record of several lines, a held
  // trailer).
  const textBytes: TextBytes = { bytes: null };
  /** Where the line the splitter gives onLine starts in textBytes (-1: not there whole). */
  let lineAt = -1;
  let recordBytes: Uint8Array | null = null;
  let heldTrailer: { text: string; lineNo: number; count: number | null } | null = null;
  const directivesSeen = new Set<string>();

  /** A `#` line: a directive before the first data record (FORMAT.md 8.1), else a comment. */
  const comment = (text: string, lineNo: number, tooLong: boolean): void => {
    if (mode !== 'start' || text.charCodeAt(1) !== 33 /* ! */) return;
    try {
      if (tooLong)
        throw new DirectiveError(`line ${lineNo}: the directive is longer than ${maxLine} characters`);
      readDirective(
        text,
        lineNo,
        options.allowDirectives ?? true,
        summary.directives,
        directivesSeen,
        options.sendAtTimeZone,
      );
    } catch (err) {
      if (!(err instanceof DirectiveError)) throw err;
      reject('BAD_DIRECTIVE', err.message);
    }
  };

  const listIssue = (list: 'errors' | 'warnings', issue: Issue): void => {
    const counts = list === 'errors' ? summary.errorCounts : summary.warningCounts;
    counts[issue.code] = (counts[issue.code] ?? 0) + 1;
    if (summary[list].length < maxListed) summary[list].push(issue);
    else if (list === 'errors') summary.errorsTruncated = true;
    else summary.warningsTruncated = true;
  };

  // Recipients wait here, in line order, until INDEX_BATCH of them are checked against the
  // suppression list and the duplicate index together (hasBatch, RecipientIndex.addBatch:
  // the cache misses of a batch overlap); anything else the reader says of the file (an
  // item, an issue) first lets them through, so order is kept everywhere. A suppressed
  // recipient is not added to the duplicate index.
  const staged = {
    /** Each number's value (sentValue): the key of the list and of the duplicate index. */
    values: new Float64Array(INDEX_BATCH),
    hashes: new Uint32Array(INDEX_BATCH),
    lines: new Uint32Array(INDEX_BATCH),
    firsts: new Uint32Array(INDEX_BATCH),
    ks: [] as number[],
    raws: [] as string[],
    results: [] as Extract<NumberResult, { ok: true }>[],
    msgs: [] as PreparedMessage[],
    ids: [] as (string | null)[],
    count: 0,
    /** 1: on the suppression list. */
    suppressed: new Uint8Array(INDEX_BATCH),
    // The batch without its suppressed recipients, for the duplicate index.
    keptValues: new Float64Array(INDEX_BATCH),
    keptHashes: new Uint32Array(INDEX_BATCH),
    keptLines: new Uint32Array(INDEX_BATCH),
    /** Email addresses (no value): the key's two 32-bit hashes (RecipientIndex.addKeys). */
    keyHi: new Uint32Array(INDEX_BATCH),
    keyLo: new Uint32Array(INDEX_BATCH),
  };

  const flushRecipients = (): void => {
    const n = staged.count;
    if (n === 0) return;
    staged.count = 0;
    const { values, hashes, lines, suppressed } = staged;
    if (email) {
      recipients.addKeys(staged.keyHi, staged.keyLo, hashes, lines, n, staged.firsts);
    } else if (suppression === null) {
      recipients.addValues(values, hashes, lines, n, staged.firsts);
    } else {
      if (suppression.hasValues) suppression.hasValues(values, n, suppressed);
      else for (let i = 0; i < n; i++) suppressed[i] = suppression.has(staged.results[i]!.number) ? 1 : 0;
      let kept = 0;
      for (let i = 0; i < n; i++) {
        if (suppressed[i] === 1) continue;
        staged.keptValues[kept] = values[i]!;
        staged.keptHashes[kept] = hashes[i]!;
        staged.keptLines[kept] = lines[i]!;
        kept++;
      }
      recipients.addValues(staged.keptValues, staged.keptHashes, staged.keptLines, kept, staged.firsts);
    }
    let k = 0;
    for (let i = 0; i < n; i++) {
      const result = staged.results[i]!;
      if (suppression !== null && !email && suppressed[i] === 1) {
        skip(
          'suppressed',
          lines[i]!,
          staged.ks[i]!,
          'SUPPRESSED',
          REASONS.SUPPRESSED.message,
          staged.raws[i]!,
          result.number,
        );
        continue;
      }
      accept(
        lines[i]!,
        staged.ks[i]!,
        staged.raws[i]!,
        result,
        staged.msgs[i]!,
        staged.ids[i]!,
        staged.firsts[k++]!,
      );
    }
  };

  const skip = (
    kind: SkippedItem['kind'],
    line: number,
    k: number,
    code: ReasonCode,
    message: string,
    value: string,
    number: string | null = null,
    firstLine?: number,
  ): void => {
    flushRecipients();
    if (emit) {
      const item: SkippedItem = { kind, line, k, code, message, value, number };
      if (firstLine !== undefined) item.firstLine = firstLine;
      batch.push(item);
    }
    if (kind === 'invalid') {
      summary.invalid++;
      listIssue('errors', { line, code, message, hint: REASONS[code].hint, value });
    } else if (kind === 'duplicate') summary.duplicates++;
    else summary.suppressed++;
  };

  /** `warnings`: msg's, or fewer (an RCS file's have no UCS2_MESSAGE). */
  const warn = (line: number, msg: PreparedMessage, warnings = msg.warnings): void => {
    if (warnings === 0) return;
    flushRecipients();
    for (const [bit, code] of MESSAGE_WARNINGS) {
      if ((warnings & bit) === 0) continue;
      if (!emit && summary.warnings.length >= maxListed) {
        // Counted, not listed: its text is never needed (listIssue without the Issue).
        summary.warningCounts[code] = (summary.warningCounts[code] ?? 0) + 1;
        summary.warningsTruncated = true;
        continue;
      }
      const message = warningMessage(code, msg, rcs);
      if (emit) batch.push({ kind: 'warning', line, code, message });
      const hint = rcs && code === 'LONG_MESSAGE' ? RCS_LONG_HINT : REASONS[code].hint;
      listIssue('warnings', { line, code, message, hint });
    }
  };

  /** CONTROL_CHARS_REMOVED of an email record whose fields were made one line (oneLineFields). */
  const warnFields = (line: number): void => {
    flushRecipients();
    const code = 'CONTROL_CHARS_REMOVED';
    if (!emit && summary.warnings.length >= maxListed) {
      summary.warningCounts[code] = (summary.warningCounts[code] ?? 0) + 1;
      summary.warningsTruncated = true;
      return;
    }
    const message =
      'line breaks and control characters were removed from the fields (an email subject is one line)';
    if (emit) batch.push({ kind: 'warning', line, code, message });
    listIssue('warnings', { line, code, message, hint: REASONS[code].hint });
  };

  /** A number was read: check it, then stage it (suppression, duplicates and emitting follow). */
  const recipient = (
    line: number,
    k: number,
    raw: string,
    result: NumberResult,
    msg: PreparedMessage,
    messageId: string | null,
    /** The text's hash for the duplicate index (msg.hash, unless msg is shared). */
    hash = msg.hash,
  ): void => {
    if (!result.ok) {
      skip('invalid', line, k, result.code, numberProblem(result, raw.trim()), raw, result.number ?? null);
      return;
    }
    const i = staged.count++;
    if (email) {
      staged.keyHi[i] = hashString(result.number, 0x811c9dc5);
      staged.keyLo[i] = hashString(result.number, 0x01234567);
      staged.values[i] = 0;
    } else staged.values[i] = result.value;
    staged.hashes[i] = hash;
    staged.lines[i] = line;
    staged.ks[i] = k;
    staged.raws[i] = raw;
    staged.results[i] = result;
    staged.msgs[i] = msg;
    staged.ids[i] = messageId;
    if (staged.count === INDEX_BATCH) flushRecipients();
  };

  /**
   * A staged recipient, once the duplicate index has answered (`first`: 0 new, else its
   * first line; 1 when items are not emitted, where that line is never shown).
   */
  const accept = (
    line: number,
    k: number,
    raw: string,
    result: Extract<NumberResult, { ok: true }>,
    msg: PreparedMessage,
    messageId: string | null,
    first: number,
  ): void => {
    const number = result.number;
    if (first !== 0) {
      skip('duplicate', line, k, 'DUPLICATE', `already on line ${first}`, raw, number, first);
      return;
    }
    summary.valid++;
    if (otherChannel) {
      if (rcs) {
        acceptRcs(line, k, number, result.country, msg, messageId);
        return;
      }
      // No segments or encodings: an email (its text is the recipient's fields), or a WhatsApp
      // template (its text is the parameters); a WhatsApp number's country is counted.
      const country = email ? '' : result.country;
      if (whatsapp) {
        if (country !== runCountry) {
          flushCountry();
          runCountry = country;
        }
        runCount++;
      }
      if (emit) {
        batch.push({
          kind: 'recipient',
          line,
          k,
          number,
          country,
          text: msg.text,
          messageId,
          segments: 0,
          encoding: 'gsm7',
        });
      }
      return;
    }
    const segments = msg.segments.segments;
    summary.segments += segments;
    translit.segmentsAsWritten += msg.asWritten;
    translit.segmentsTransliterated += msg.transliterated;
    if (msg.changed) translit.recipientsChanged++;
    if (msg.segments.encoding === 'gsm7') summary.encodings.gsm7++;
    else summary.encodings.ucs2++;
    if (result.country !== runCountry) {
      flushCountry();
      runCountry = result.country;
    }
    runCount++;
    runSegments += segments;
    if (emit) {
      batch.push({
        kind: 'recipient',
        line,
        k,
        number,
        country: result.country,
        text: msg.text,
        messageId,
        segments: msg.segments.segments,
        encoding: msg.segments.encoding,
      });
    }
    // Message warnings of personalized records go with the records that are sent.
    if (layout === 'personalized') warn(line, msg);
  };

  /**
   * A valid recipient of an RCS file: one message (segments 1, whatever its length), its
   * encoding counted as an SMS's would be; warnings as an SMS text's but UCS2_MESSAGE.
   */
  const acceptRcs = (
    line: number,
    k: number,
    number: string,
    country: string,
    msg: PreparedMessage,
    messageId: string | null,
  ): void => {
    const encoding = msg.segments.encoding;
    summary.segments++;
    if (encoding === 'gsm7') summary.encodings.gsm7++;
    else summary.encodings.ucs2++;
    if (country !== runCountry) {
      flushCountry();
      runCountry = country;
    }
    runCount++;
    runSegments++;
    if (emit) {
      batch.push({
        kind: 'recipient',
        line,
        k,
        number,
        country,
        text: msg.text,
        messageId,
        segments: 1,
        encoding,
      });
    }
    if (layout === 'personalized') warn(line, msg, msg.warnings & ~UCS2);
  };

  const recordError = (line: number, code: ReasonCode, message: string, value: string): void => {
    summary.records++;
    skip('invalid', line, 0, code, message, value);
  };

  /** `rawAt`: where raw is in recordBytes (-1: not there as it is). */
  const personalizedMessage = (raw: string, quoted: boolean, rawAt = -1): PreparedMessage => {
    // Consecutive identical texts (template campaigns) are prepared once.
    if (lastPrepared && raw === lastRaw && quoted === lastQuoted) return lastPrepared;
    lastRaw = raw;
    lastQuoted = quoted;
    lastPrepared = prepareMessage(raw, quoted, true, gsm7, recordBytes, rawAt);
    return lastPrepared;
  };

  /**
   * FORMAT.md 8.2: a message text with `{{`, parsed once per distinct text. A placeholder
   * naming no column (or a `{{` never closed) rejects the file, UNKNOWN_PLACEHOLDER, naming
   * the first line where it appears; the rest of the file is still read.
   */
  const templateOf = (text: string, line: number): Template => {
    let t = templates.get(text);
    if (t === undefined) {
      if (templates.size >= TEMPLATE_CACHE) templates.clear();
      t = compileTemplate(text, columns);
      templates.set(text, t);
    }
    if (t.problem !== null) reject('UNKNOWN_PLACEHOLDER', `line ${line}: ${t.problem}`, t.hint ?? undefined);
    return t;
  };

  /** The first record that used a template gives its example (summary.templates): not yet given. */
  /** The template listed last: most records of a file use the one before them (no Set lookup). */
  let lastListed: Template | null = null;
  const wantsExample = (t: Template): boolean =>
    t !== lastListed &&
    summary.templates.length < TEMPLATES_LISTED &&
    !listedTemplates.has(t.source) &&
    (t.placeholders > 0 || t === fileTemplate);

  const addExample = (t: Template, line: number, text: string): void => {
    lastListed = t;
    listedTemplates.add(t.source);
    summary.templates.push({ line, template: t.source, example: text });
  };

  /** What a personalized record sends, or why it has no value for a placeholder (MISSING_FIELD). */
  type Message =
    | { msg: PreparedMessage; hash: number; missing: null }
    | { msg: null; missing: string; placeholder: string };
  const current: {
    msg: PreparedMessage | null;
    /** The text's hash (a shared merged message has not its own). */
    hash: number;
    missing: string | null;
    placeholder: string;
  } = {
    msg: null,
    hash: 0,
    missing: null,
    placeholder: '',
  };
  /** The last message prepareMerged made without its text, offered to the next record. */
  let sharedMerged: PreparedMessage | null = null;
  const mergedHash = { value: 0 };

  /**
   * The record's text: its message, merged when it holds placeholders (headed files), or
   * the `#! message:` template when the message column is empty or absent. Reuses `current`.
   */
  const recordMessage = (
    line: number,
    raw: string,
    quoted: boolean,
    fields: readonly string[] | null,
    /** Where raw is in recordBytes (-1: not there as it is). */
    rawAt: number,
  ): Message => {
    let template: Template | null = null;
    if (fileTemplate !== null && trimText(raw).length === 0) {
      template = fileTemplate;
      quoted = false;
    } else if (raw.includes('{{')) template = templateOf(raw, line);
    if (template === null) {
      current.msg = personalizedMessage(raw, quoted, rawAt);
      current.hash = current.msg.hash;
      current.missing = null;
      return current as Message;
    }
    if (insertedAt.length < template.cols.length) insertedAt = new Int32Array(template.cols.length);
    // A headed record's values may be read from its bytes (csvStarts is its fields').
    const base = fields !== null && recordBytes !== null ? lineAt : -1;
    const missing = templateValues(template, fields ?? [], csvQuoted, inserted, csvStarts, base, insertedAt);
    if (missing >= 0) {
      current.msg = null;
      const column = columns?.names[template.cols[missing]!] ?? '';
      current.placeholder = template.written[missing]!;
      current.missing = `the message uses ${current.placeholder} but this line has no value in column ${column}`;
      return current as Message;
    }
    let msg: PreparedMessage | null = null;
    let text: string | null = null;
    if (template.cols.length > 0) {
      // Items carry the text: then each message has its own.
      msg = prepareMerged(
        template,
        inserted,
        quoted,
        gsm7,
        emit,
        sharedMerged,
        mergedHash,
        base >= 0 ? recordBytes : null,
        insertedAt,
      );
      if (msg !== null) {
        if (!emit) sharedMerged = msg;
        current.hash = mergedHash.value;
      } else {
        // A merged text with placeholders is seldom the previous one: no comparison with it.
        msg = prepareMessage((text = joinTemplate(template, inserted)), quoted, true, gsm7);
        current.hash = msg.hash;
      }
    } else {
      msg = personalizedMessage(template.literals[0]!, quoted);
      current.hash = msg.hash;
    }
    if (wantsExample(template)) {
      // As sent: the merged text, unless prepareMessage changed it (or made it).
      const sent = msg === sharedMerged ? (text ?? joinTemplate(template, inserted)) : msg.text;
      addExample(template, line, sent);
    }
    current.msg = msg;
    current.missing = null;
    return current as Message;
  };

  /** The record's messageId column: false when it makes the record invalid (skipped). */
  const idAccepted = (line: number, id: string | null): boolean => {
    if (id === null) return true;
    if (id.length > MESSAGE_ID_MAX) {
      skip(
        'invalid',
        line,
        0,
        'INVALID_MESSAGE_ID',
        `the messageId has ${id.length} characters (at most 64)`,
        id,
      );
      return false;
    }
    messageIds ??= new MessageIdIndex(sniffed.lineEstimate);
    const first = messageIds.add(id, line);
    if (first !== 0) {
      skip(
        'invalid',
        line,
        0,
        'DUPLICATE_MESSAGE_ID',
        `messageId ${id} is already used on line ${first}`,
        id,
      );
      return false;
    }
    return true;
  };

  const personalizedRecord = (
    line: number,
    number: string,
    rawMessage: string,
    quoted: boolean,
    id: string | null,
    fields: readonly string[] | null,
    /** Where rawMessage starts in the record's text (-1: not a part of it). */
    messageAt: number,
  ): void => {
    summary.records++;
    const at = recordBytes !== null && messageAt >= 0 ? lineAt + messageAt : -1;
    const message = recordMessage(line, rawMessage, quoted, fields, at);
    const { msg, missing } = message;
    if (!idAccepted(line, id)) return;
    const result = normalizeNumber(number, rules);
    if (result.ok && missing !== null) {
      skip('invalid', line, 0, 'MISSING_FIELD', missing, message.placeholder, result.number);
      return;
    }
    if (result.ok && msg!.empty) {
      skip('invalid', line, 0, 'EMPTY_MESSAGE', REASONS.EMPTY_MESSAGE.message, rawMessage, result.number);
      return;
    }
    recipient(line, 0, number, result, msg ?? NO_TEXT, id, msg === null ? 0 : message.hash);
  };

  /**
   * FORMAT.md 8.3: one address of an email file. `fields`: the headed record's, sent as the
   * recipient's `fields` (every column but the address and the messageId, by header name as
   * written; the leftmost column wins a name), which the subject's and body's placeholders
   * need non-empty (MISSING_FIELD); null on an address list.
   */
  const emailRecipient = (
    line: number,
    k: number,
    raw: string,
    id: string | null,
    fields: readonly string[] | null,
  ): void => {
    const r = normalizeEmail(raw);
    if (!r.ok) {
      skip('invalid', line, k, 'INVALID_EMAIL', r.message, raw);
      return;
    }
    let msg = NO_TEXT;
    let hash = 0;
    if (fields !== null) {
      // Any field may be merged into the subject (a stored template's is not known here):
      // none carries a line break or control character to the service (docs/format.md).
      const cleaned = oneLineFields(fields);
      if (cleaned !== fields) {
        fields = cleaned;
        warnFields(line);
      }
      for (const t of emailTemplates) {
        const missing = templateValues(t, fields, csvQuoted, inserted);
        if (missing >= 0) {
          const column = columns?.names[t.cols[missing]!] ?? '';
          const placeholder = t.written[missing]!;
          const message = `the email uses ${placeholder} but this line has no value in column ${column}`;
          skip('invalid', line, k, 'MISSING_FIELD', message, placeholder, r.address);
          return;
        }
        // The subject merged, as an example (the body may be long).
        if (t === emailTemplates[0] && emailSubjectMerged && wantsExample(t))
          addExample(t, line, joinTemplate(t, inserted));
      }
      const names = summary.columns ?? [];
      const values: Record<string, string> = {};
      for (let c = 1; c < names.length; c++) {
        const name = names[c]!;
        if (c === idCol || name === '' || Object.hasOwn(values, name)) continue;
        values[name] = csvQuoted[c] === true ? (fields[c] ?? '') : (fields[c] ?? '').trim();
      }
      const text = JSON.stringify(values);
      msg = { ...NO_TEXT, text, empty: false };
      hash = hashString(text) || 1;
    }
    // An address has no numeric value: its key is two hashes of it (recipient).
    recipient(line, k, raw, { ok: true, number: r.address, country: '', value: -1 }, msg, id, hash);
  };

  /**
   * FORMAT.md 8.3: one record of a WhatsApp file with its fields (a headed line, or a headless
   * one: the number, then its parameters). Its parameters, in the template's order: the
   * `#! message:` parameters merged with the line's columns, or the numbered columns (headed),
   * or the fields after the number (headless). Check order as a headed SMS line: the messageId,
   * then the number, then MISSING_FIELD (a parameter without a value).
   */
  const whatsappRecord = (
    line: number,
    number: string,
    id: string | null,
    fields: readonly string[],
  ): void => {
    summary.records++;
    const values = waValues;
    values.length = 0;
    let missing: string | null = null;
    let missingValue = '';
    if (waParams !== null) {
      for (let p = 0; p < waParams.length && missing === null; p++) {
        const t = waParams[p]!;
        const m = templateValues(t, fields, csvQuoted, inserted);
        if (m >= 0) {
          missingValue = t.written[m]!;
          missing = `parameter ${p + 1} uses ${missingValue} but this line has no value in column ${columns?.names[t.cols[m]!] ?? ''}`;
        } else values.push(joinTemplate(t, inserted));
      }
    } else {
      for (let p = 0; p < waCols.length; p++) {
        const c = waCols[p]!;
        const value = fields[c];
        if (value === undefined || value.trim().length === 0) {
          missingValue = summary.header ? (columns?.names[c] ?? '') : `field ${c + 1}`;
          missing = summary.header
            ? `parameter ${p + 1} has no value on this line (column ${missingValue})`
            : `parameter ${p + 1} (field ${c + 1}) has no value on this line`;
          break;
        }
        values.push(csvQuoted[c] === true ? value : value.trim());
      }
    }
    if (!idAccepted(line, id)) return;
    const result = normalizeNumber(number, rules);
    if (result.ok && missing !== null) {
      skip('invalid', line, 0, 'MISSING_FIELD', missing, missingValue, result.number);
      return;
    }
    if (missing !== null || !result.ok) {
      recipient(line, 0, number, result, NO_TEXT, id, 0);
      return;
    }
    const text = JSON.stringify(values);
    if (!waExampleGiven) {
      waExampleGiven = true;
      summary.templates.push({ line, template: waDescription, example: text });
    }
    recipient(line, 0, number, result, { ...NO_TEXT, text, empty: false }, id, hashString(text) || 1);
  };

  /**
   * A headless WhatsApp line: its fields after the number are the parameters; the first line
   * sets how many every line has (more: TOO_MANY_FIELDS; fewer: MISSING_FIELD). One trailing
   * SEP is dropped, as FORMAT.md 4.1 drops it from a message.
   */
  const whatsappHeadless = (line: number, text: string, fields: string[]): void => {
    const last = fields.length - 1;
    if (last > 0 && fields[last] === '' && csvQuoted[last] !== true) fields.pop();
    const n = fields.length - 1;
    if (waCount < 0) {
      waCount = n;
      waCols = Array.from({ length: n }, (_, p) => p + 1);
      waDescription = n === 0 ? '' : n === 1 ? 'field 2 of each line' : `fields 2 to ${n + 1} of each line`;
    }
    if (n > waCount) {
      recordError(
        line,
        'TOO_MANY_FIELDS',
        `the line has ${n} parameters after the number, the first line ${waCount} (quote a parameter that holds the separator)`,
        text.slice(0, 40),
      );
      return;
    }
    whatsappRecord(line, fields[0] ?? '', null, fields);
  };

  const numbersRecord = (line: number, text: string): void => {
    summary.records++;
    if (email) {
      const tokens = hasSeparatorOrQuote(text) ? splitNumbers(text) : [text];
      for (let k = 0; k < tokens.length; k++) emailRecipient(line, k + 1, tokens[k]!, null, null);
      return;
    }
    const msg = bulkMessage ?? NO_TEXT;
    if (!hasSeparatorOrQuote(text)) {
      recipient(line, 1, text, normalizeNumber(text, rules), msg, null);
      return;
    }
    if (sep === null) {
      sep = detectSeparator(text);
      summary.separator = sep;
    }
    const tokens = splitNumbers(text);
    for (let k = 0; k < tokens.length; k++) {
      const raw = tokens[k]!;
      recipient(line, k + 1, raw, normalizeNumber(raw, rules), msg, null);
    }
  };

  /** The bulk file has no usable message: rejected, its numbers still read for the counts. */
  const noMessage = (detail?: string): void => {
    mode = 'records';
    bulkMessage = NO_TEXT;
    reject('NO_MESSAGE', detail);
  };

  /** Parses one complete record (possibly several physical lines joined). */
  const parseRecord = (text: string): Parsed<unknown> => {
    if (mode === 'message') return parseMessageRecord(text);
    if (layout === 'bulk') return splitNumbers(text);
    if (sep === null && !summary.header) {
      // The first data record had no SEP at all (a personalized layout chosen by
      // configuration or name): the first record that has one decides (docs/format.md).
      sep = detectSeparator(text);
      summary.separator = sep;
    }
    return summary.header || whatsapp
      ? parseCsv(text, sep ?? ';', csvQuoted, csvFields, csvStarts)
      : parsePersonalized(text, sep);
  };

  const finishRecord = (line: number, text: string, parsed: Exclude<Parsed<unknown>, typeof OPEN>): void => {
    if (parsed === MALFORMED) {
      if (mode === 'message') noMessage('the message record has a broken quote');
      recordError(line, 'MALFORMED_QUOTE', REASONS.MALFORMED_QUOTE.message, text.slice(0, 40));
      return;
    }
    if (mode === 'message') {
      const { message, quoted } = parsed as { message: string; quoted: boolean };
      mode = 'records';
      // FORMAT.md 4.2: a first record that is itself a valid number list is no message.
      const tokens = splitNumbers(message);
      if (!quoted && tokens.length > 0 && tokens.every((t) => isNumber(normalizeNumber(t, rules)))) {
        noMessage();
        numbersRecord(line, text);
        return;
      }
      // FORMAT.md 8.2 reading (docs/format.md): a bulk message has no columns to name, so a
      // placeholder in it is UNKNOWN_PLACEHOLDER; `{{{{` is a literal `{{` as everywhere.
      const merged = message.includes('{{') ? mergeTemplate(templateOf(message, line), [], []) : message;
      bulkMessage = prepareMessage(String(merged), quoted, false, gsm7);
      summary.message = bulkMessage.text;
      warn(line, bulkMessage, rcs ? bulkMessage.warnings & ~UCS2 : bulkMessage.warnings);
      if (bulkMessage.empty) reject('NO_MESSAGE', 'the message (first record) is empty');
      return;
    }
    if (layout === 'bulk') {
      numbersRecord(line, text);
      return;
    }
    if (!summary.header) {
      if (whatsapp) {
        whatsappHeadless(line, text, parsed as string[]);
        return;
      }
      const f = parsed as PersonalizedFields;
      personalizedRecord(line, f.number, f.message, f.quoted, null, null, f.at);
      return;
    }
    const fields = parsed as string[];
    if (fields.length === columnCount + 1 && fields[columnCount] === '') fields.pop();
    if (fields.length > columnCount) {
      recordError(
        line,
        'TOO_MANY_FIELDS',
        `the record has ${fields.length} fields, the header ${columnCount}`,
        text.slice(0, 40),
      );
      return;
    }
    const id = idCol >= 0 ? (fields[idCol]?.trim() ?? '') : '';
    if (email) {
      summary.records++;
      if (idAccepted(line, id.length > 0 ? id : null))
        emailRecipient(line, 0, fields[0] ?? '', id || null, fields);
      return;
    }
    if (whatsapp) {
      whatsappRecord(line, fields[0] ?? '', id || null, fields);
      return;
    }
    personalizedRecord(
      line,
      fields[0] ?? '',
      messageCol >= 0 ? (fields[messageCol] ?? '') : '',
      messageCol >= 0 && csvQuoted[messageCol] === true,
      id.length > 0 ? id : null,
      fields,
      messageCol >= 0 && messageCol < fields.length ? csvStarts[messageCol]! : -1,
    );
  };

  /** `#! <name>:` given in a file for a channel it does not apply to: BAD_DIRECTIVE naming both. */
  const notForChannel = (): void => {
    const d = summary.directives;
    const c = summary.channel;
    const rules: [{ line: number } | null | undefined, string, string][] = [
      [c === 'email' ? null : d.subject, 'subject', 'email files (`#! channel: email`)'],
      [
        c === 'email' || c === 'whatsapp' ? null : d.templateId,
        'templateId',
        'email and whatsapp files (`#! channel: email` or `#! channel: whatsapp`)',
      ],
      [c === 'whatsapp' ? null : d.source, 'source', 'whatsapp files (`#! channel: whatsapp`)'],
      [c === 'sms' ? null : d.flash, 'flash', 'sms files (`#! channel: sms`)'],
    ];
    // The first of them in the file is named.
    rules.sort((a, b) => (a[0]?.line ?? 0) - (b[0]?.line ?? 0));
    for (const [given, name, files] of rules)
      if (given)
        reject('BAD_DIRECTIVE', `line ${given.line}: \`#! ${name}:\` is for ${files}; this file is for ${c}`);
  };

  const startFile = (text: string, lineNo: number): void => {
    const d = summary.directives;
    summary.channel = d.channel?.channel ?? options.channel ?? 'sms';
    email = summary.channel === 'email';
    whatsapp = summary.channel === 'whatsapp';
    rcs = summary.channel === 'rcs';
    otherChannel = email || whatsapp || rcs;
    if (rcs) {
      // docs/format.md "RCS files": the text is sent as written, whatever the source's transliterate.
      gsm7 = false;
      translit.mode = 'never';
    }
    let choice = chooseLayout(text, options.name, options.layout ?? null, email);
    if (whatsapp) choice = whatsappLayout(text, choice);
    layout = choice.layout;
    summary.layout = layout;
    summary.header = choice.header;
    notForChannel();
    if (email) {
      startEmail(text, choice.header);
      return;
    }
    if (whatsapp) {
      startWhatsapp(text, lineNo);
      return;
    }
    const directive = summary.directives.message;
    if (directive && !choice.header) {
      // docs/format.md: `#! message:` needs columns (and a bulk file's message is its first line).
      reject(
        'BAD_DIRECTIVE',
        `line ${directive.line}: \`#! message:\` needs a personalized file with a header line (number column, then the columns its placeholders name); this file is ${layout === 'bulk' ? 'bulk: its message is its first line' : 'personalized without a header'}`,
      );
    }
    if (layout === 'bulk') {
      mode = 'message';
      return;
    }
    sep = detectSeparator(text);
    summary.separator = sep;
    mode = 'records';
  };

  /**
   * FORMAT.md 4.3 for a WhatsApp file, which has no message record: a first line whose every
   * field is a number is a list of numbers (bulk), not a number and its parameters, unless the
   * source's layout or the file's name says personalized.
   */
  const whatsappLayout = (text: string, choice: LayoutChoice): LayoutChoice => {
    if (choice.layout !== 'personalized' || choice.header) return choice;
    if ((options.layout ?? layoutFromName(options.name)) !== null) return choice;
    const tokens = splitNumbers(text);
    return tokens.length > 0 && tokens.every((t) => isNumber(normalizeNumber(t, rules)))
      ? { layout: 'bulk', header: false }
      : choice;
  };

  /**
   * A WhatsApp file: a header (the number column, then the parameters' columns), a headless
   * personalized file (the number, then its parameters), or lists of numbers (no message
   * record: every recipient gets the same parameters, from `#! message:` or none).
   */
  const startWhatsapp = (text: string, lineNo: number): void => {
    const d = summary.directives;
    whatsappContent();
    mode = 'records';
    if (summary.header) {
      // The header (header()) says where the parameters come from.
      sep = detectSeparator(text);
      summary.separator = sep;
      return;
    }
    if (layout === 'bulk') {
      const values: string[] = [];
      if (d.message) {
        // No columns: a placeholder is UNKNOWN_PLACEHOLDER; the constant parts are the parameters.
        for (const t of whatsappParameters(d.message, null)) values.push(t.literals.join(''));
      }
      const text = JSON.stringify(values);
      bulkMessage = { ...NO_TEXT, text, empty: false };
      waExampleGiven = true;
      summary.templates.push({ line: lineNo, template: waDescription, example: text });
      return;
    }
    if (d.message)
      reject(
        'BAD_DIRECTIVE',
        `line ${d.message.line}: \`#! message:\` maps the columns of a WhatsApp file with a header line (number column, then the columns its placeholders name), or gives a list of numbers its parameters; in this file without a header the fields after the number are the parameters`,
      );
    sep = detectSeparator(text);
    summary.separator = sep;
  };

  /**
   * What a WhatsApp file sends: the file's `#! templateId:` (else its source's), from the file's
   * `#! source:` number (else its source's, else the account's own: null). No template:
   * NO_MESSAGE.
   */
  const whatsappContent = (): void => {
    const d = summary.directives;
    const o = options.whatsapp ?? {};
    const templateId = d.templateId?.id ?? (o.templateId || null);
    const source = d.source?.number ?? (o.source ? o.source.replace(/^\+/, '') : null);
    if (templateId === null) {
      reject(
        'NO_MESSAGE',
        "a WhatsApp file needs a template: `#! templateId:` or its source's `whatsapp.templateId`",
        'add `#! templateId: <id>` (a template approved for the WhatsApp account), or set whatsapp.templateId in the source settings',
      );
      return;
    }
    summary.whatsapp = { templateId, source };
  };

  /**
   * `#! message:` in a WhatsApp file: its parameters separated by `|` (`||` a literal `|`),
   * each a template (FORMAT.md 8.2) whose placeholders must name columns (UNKNOWN_PLACEHOLDER).
   */
  const whatsappParameters = (
    directive: { line: number; template: string },
    cols: TemplateColumns | null,
  ): Template[] => {
    waDescription = directive.template;
    const out: Template[] = [];
    const parts = splitParameters(directive.template);
    for (let p = 0; p < parts.length; p++) {
      if (parts[p]!.length === 0)
        reject(
          'BAD_DIRECTIVE',
          `line ${directive.line}: parameter ${p + 1} of \`#! message:\` is empty (parameters are separated by |; a literal | is written ||)`,
        );
      const t = compileTemplate(parts[p]!, cols);
      if (t.problem !== null)
        reject(
          'UNKNOWN_PLACEHOLDER',
          `line ${directive.line}: parameter ${p + 1}: ${t.problem}`,
          t.hint ?? undefined,
        );
      out.push(t);
    }
    return out;
  };

  /** The header of a WhatsApp file: `#! message:`'s columns, else the numbered columns. */
  const whatsappHeader = (lineNo: number): void => {
    const d = summary.directives;
    const names = summary.columns ?? [];
    if (d.message) {
      waParams = whatsappParameters(d.message, columns);
      return;
    }
    if (messageCol >= 0) {
      const origin = d.channel
        ? `\`#! channel: whatsapp\` on line ${d.channel.line}`
        : 'its source sends whatsapp';
      reject(
        'BAD_DIRECTIVE',
        `line ${lineNo}: column ${messageCol + 1} \`${names[messageCol]}\` is a message text, which a WhatsApp file never sends (${origin}): it sends an approved template and its parameters`,
        'name the parameter columns 1, 2, … in the order of the template, or map columns to parameters with `#! message: {{nombre}} | {{saldo}}` (docs/format.md "WhatsApp files")',
      );
    }
    const numbered = numberedColumns(names);
    if (numbered.problem !== null)
      reject(
        'UNKNOWN_PLACEHOLDER',
        `line ${lineNo}: ${numbered.problem}`,
        "name the parameter columns 1, 2, … n without a gap (the template's {{1}} … {{n}}), or map columns to parameters with `#! message:`",
      );
    waCols = numbered.cols;
    waDescription = waCols.map((_, p) => `{{${p + 1}}}`).join(' | ');
  };

  /** An email file: a header with its fields, or lists of addresses (no message record). */
  const startEmail = (text: string, headed: boolean): void => {
    const d = summary.directives;
    if (d.message)
      reject(
        'BAD_DIRECTIVE',
        `line ${d.message.line}: an email file is sent \`#! subject:\` with its source's html body, or \`#! templateId:\`; \`#! message:\` is for sms`,
      );
    mode = 'records';
    if (headed) {
      sep = detectSeparator(text);
      summary.separator = sep;
    } else {
      bulkMessage = NO_TEXT;
      emailContent();
    }
  };

  /**
   * What an email file sends: the file's `#! templateId:`, else its `#! subject:` with the
   * source's html body, else the source's templateId, or its subject and html. Placeholders of
   * the subject and body must name columns (UNKNOWN_PLACEHOLDER); none sent: NO_MESSAGE.
   */
  const emailContent = (): void => {
    const d = summary.directives;
    const o = options.email ?? {};
    if (d.templateId && d.subject)
      reject(
        'BAD_DIRECTIVE',
        `line ${d.subject.line}: \`#! subject:\` does nothing with \`#! templateId:\` (the template's own subject applies)`,
      );
    const templateId = d.templateId?.id ?? (d.subject ? null : (o.templateId ?? null));
    if (templateId !== null) {
      summary.email = { templateId, subject: null, html: null };
      return;
    }
    const subject = d.subject?.template ?? o.subject ?? null;
    const html = o.html ?? null;
    if (subject === null || html === null) {
      reject(
        'NO_MESSAGE',
        "an email file needs `#! templateId:`, or a subject (`#! subject:` or its source's `email.subject`) and its source's `email.html` body",
        'add `#! templateId: <id>` (a template stored on the service), or `#! subject:` with an html body in the source settings',
      );
      return;
    }
    summary.email = { templateId: null, subject, html };
    const parts: [string, string, number | undefined][] = [
      ['the subject', subject, d.subject?.line],
      ["the source's html body", html, undefined],
    ];
    for (const [what, source, line] of parts) {
      const t = compileTemplate(source, columns);
      if (t.problem !== null)
        reject(
          'UNKNOWN_PLACEHOLDER',
          `${line === undefined ? '' : `line ${line}: `}${what}: ${t.problem}`,
          t.hint ?? undefined,
        );
      if (t.placeholders > 0) {
        if (emailTemplates.length === 0 && source === subject) emailSubjectMerged = true;
        emailTemplates.push(t);
      }
    }
  };

  const header = (text: string, lineNo: number): void => {
    const fields = parseCsv(text, sep ?? ';');
    const names = Array.isArray(fields) ? fields : text.split(sep ?? ';');
    summary.columns = names.map((n) => n.trim());
    columnCount = names.length;
    names.forEach((raw, i) => {
      const n = normaliseHeaderName(raw);
      if (i !== 0 && !email && MESSAGE_COLUMNS.has(n) && messageCol < 0) messageCol = i;
      else if (i !== 0 && MESSAGE_ID_COLUMNS.has(n) && idCol < 0) idCol = i;
    });
    // A WhatsApp file's `#! message:` may name any column, a message column too.
    columns = templateColumns(summary.columns, whatsapp ? -1 : messageCol, lineNo);
    // A column read by its name must be the only one of that name (docs/format.md); the
    // number (or address) is the first column whatever its name.
    const roles: [number, string][] = [
      // A WhatsApp file's message column is refused as such (whatsappHeader).
      [whatsapp ? -1 : messageCol, 'message'],
      [idCol, 'messageId'],
    ];
    for (const [col, role] of roles) {
      const twins = col < 0 ? null : twinsProblem(columns, placeholderKey(summary.columns[col]!));
      if (twins !== null)
        reject(
          'UNKNOWN_PLACEHOLDER',
          `line ${lineNo}: the ${role} column is ambiguous: ${twins}`,
          TWINS_HINT,
        );
    }
    if (email) {
      emailContent();
      return;
    }
    if (whatsapp) {
      whatsappHeader(lineNo);
      return;
    }
    const directive = summary.directives.message;
    if (directive) {
      fileTemplate = compileTemplate(directive.template, columns);
      if (fileTemplate.problem !== null)
        reject(
          'UNKNOWN_PLACEHOLDER',
          `line ${directive.line}: ${fileTemplate.problem}`,
          fileTemplate.hint ?? undefined,
        );
    }
  };

  /** A physical line at the start of a record (not inside an open quote). */
  const onLine = (text: string, lineNo: number, tooLong: boolean): void => {
    if (pending) {
      continuePending(text, lineNo, tooLong);
      return;
    }
    if (tooLong) {
      // A comment is never a record, however long (its first characters are still known).
      if (text.charCodeAt(0) === 35 /* # */) {
        comment(text, lineNo, true);
        return;
      }
      if (mode === 'start') startFile(text, lineNo);
      if (mode === 'message') {
        // The bulk message itself (FORMAT.md 2, 4.2; docs/format.md): no recipient record, and
        // nothing can be sent without it, so the whole file is rejected with the line's code.
        mode = 'records';
        bulkMessage = NO_TEXT;
        reject(
          'LINE_TOO_LONG',
          `line ${lineNo}: the message is longer than ${maxLine} characters (the line-length limit)`,
          `shorten the message to at most ${maxLine} characters, or raise the line-length limit (validate --max-line-length, at most ${MAX_LINE_LENGTH})`,
        );
        return;
      }
      flushTrailer();
      recordError(lineNo, 'LINE_TOO_LONG', `the line is longer than ${maxLine} characters`, text);
      return;
    }
    if (text.length === 0) return;
    const c = text.charCodeAt(0);
    if (c === 35 /* # */) {
      comment(text, lineNo, false);
      return;
    }
    if ((c <= 32 || c === 0xa0 || c === 0xfeff || c >= 0x2000) && text.trim().length === 0) return;
    if (mode === 'start') {
      startFile(text, lineNo);
      if (summary.header) {
        header(text, lineNo);
        return;
      }
    } else if (mode === 'records') {
      const trailer = parseTrailer(text);
      if (trailer) {
        flushTrailer();
        heldTrailer = { text, lineNo, count: trailer.count };
        return;
      }
      flushTrailer();
    }
    const parsed = parseRecord(text);
    if (parsed === OPEN) {
      pending = { startLine: lineNo, lines: [{ text, lineNo, tooLong: false }], length: text.length };
      return;
    }
    // A record of this one line: its text is where the line is.
    if (lineAt >= 0) recordBytes = textBytes.bytes;
    finishRecord(lineNo, text, parsed);
    recordBytes = null;
  };

  /** A trailer-looking line followed by more data was an ordinary record. */
  const flushTrailer = (): void => {
    if (!heldTrailer) return;
    const { text, lineNo } = heldTrailer;
    heldTrailer = null;
    const parsed = parseRecord(text);
    if (parsed !== OPEN) finishRecord(lineNo, text, parsed);
  };

  const continuePending = (text: string, lineNo: number, tooLong: boolean): void => {
    const p = pending!;
    p.lines.push({ text, lineNo, tooLong });
    p.length += text.length + 1;
    if (!tooLong && p.length <= maxLine) {
      const joined = p.lines.map((l) => l.text).join('\n');
      const parsed = parseRecord(joined);
      if (parsed === OPEN) return;
      if (parsed === MALFORMED) {
        // The quote "closed" on a later line but text follows it: most often a quote never
        // closed that met the next record's opening quote. Resynchronise like FORMAT.md 3.
        abandonPending(REASONS.MALFORMED_QUOTE.message);
        return;
      }
      pending = null;
      finishRecord(p.startLine, joined, parsed);
      return;
    }
    // Whether or not it closes later: no record may outgrow the limit (FORMAT.md 3).
    abandonPending(`a quoted field is not closed within ${maxLine} characters (the line-length limit)`);
  };

  /** FORMAT.md 3: a quote never closed is an error for its record; parsing resumes at the next line. */
  const abandonPending = (message = 'a quoted field is never closed'): void => {
    const p = pending!;
    pending = null;
    // The lines are read again, not as the line the splitter gave: not from its bytes.
    lineAt = -1;
    if (mode === 'message') noMessage(message.replace('a quoted field', 'the quoted message'));
    recordError(p.startLine, 'MALFORMED_QUOTE', message, p.lines[0]!.text.slice(0, 40));
    for (let i = 1; i < p.lines.length; i++) {
      const l = p.lines[i]!;
      onLine(l.text, l.lineNo, l.tooLong);
    }
  };

  const splitter: LineSplitter = new LineSplitter(maxLine, (text, lineNo, tooLong) => {
    lineAt = splitter.lineAt;
    onLine(text, lineNo, tooLong);
    lineAt = -1;
  });
  for await (const text of decodeText(open(), sniffed.encoding, textBytes)) {
    splitter.push(text);
    flushRecipients();
    if (batch.length > 0) {
      yield batch;
      batch = [];
    }
  }
  splitter.end();
  while (pending) abandonPending();
  flushRecipients();
  /** A count the file announced (trailer, `#! expect:`) against the records read. */
  const checkCount = (what: string, line: number, count: number | null): void => {
    if (count !== null && count !== summary.records)
      reject(
        'TRAILER_MISMATCH',
        `${what} on line ${line} says ${count} records, the file has ${summary.records}`,
      );
  };
  if (heldTrailer) {
    const t: { lineNo: number; count: number | null } = heldTrailer;
    summary.trailer = { line: t.lineNo, count: t.count };
    checkCount('the trailer', t.lineNo, t.count);
  }
  const expect = summary.directives.expect;
  if (expect) checkCount('the `#! expect:` directive', expect.line, expect.count);
  if (batch.length > 0) yield batch;

  flushCountry();
  summary.countries = Object.fromEntries([...countries].sort((a, b) => b[1] - a[1]));
  summary.segmentsByCountry = Object.fromEntries([...countrySegments].sort((a, b) => b[1] - a[1]));
  if (summary.records === 0 && !summary.rejection) reject('EMPTY_FILE');
  const judged = summary.valid + summary.invalid;
  if (judged > 0 && summary.invalid / judged > maxInvalidRatio) {
    reject(
      'TOO_MANY_INVALID',
      `${summary.invalid} of ${judged} recipients are invalid (${((100 * summary.invalid) / judged).toFixed(1)}%, the limit is ${(100 * maxInvalidRatio).toFixed(1)}%)`,
    );
  }
  summary.accepted = summary.rejection === null;
  yield [summary];
}

/**
 * A file read for another channel than its source sends (its `#! channel:`; FORMAT.md 8.1):
 * rejected BAD_DIRECTIVE, never sent by the source's channel: a source sends one channel, its
 * account's (docs/channels.md).
 */
export function refuseOtherChannel(summary: ReadSummary, sourceChannel: Channel): void {
  if (!summary.accepted || summary.channel === sourceChannel) return;
  const line = summary.directives.channel?.line;
  summary.accepted = false;
  summary.rejection = {
    code: 'BAD_DIRECTIVE',
    message: `${line === undefined ? '' : `line ${line}: `}this source sends ${sourceChannel}, not ${summary.channel}: drop the file in a source whose account sends ${summary.channel}`,
    hint: REASONS.BAD_DIRECTIVE.hint,
  };
}
