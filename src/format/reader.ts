// The drop-file reader: bytes → recipients, record errors, warnings and a final summary,
// exactly as FORMAT.md defines them. One streaming API for `validate` and the pipeline.
//
// Pure: the caller passes a function that opens the bytes (it is called twice: a sniff
// pass for the encoding, then the parse pass). Memory is bounded by the line-length limit
// plus the duplicate index (~12 bytes per distinct recipient); no record is kept.
import { REASONS, type ReasonCode } from '../errors.ts';
import { type ByteChunks, decodeText, type Sniff, sniff, type TextEncoding } from './decode.ts';
import { INDEX_BATCH, MessageIdIndex, RecipientIndex, scanText, textScan } from './dedupe.ts';
import {
  type AllowDirectives,
  DirectiveError,
  type Directives,
  noDirectives,
  readDirective,
} from './directives.ts';
import {
  chooseLayout,
  type Layout,
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
  parseCsv,
  parseMessageRecord,
  parsePersonalized,
  parseTrailer,
  splitNumbers,
} from './records.ts';
import { countSegments, isPlainGsm, type SegmentInfo } from './segments.ts';
import type { SuppressionList } from './suppression.ts';

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
}

export const DEFAULTS = {
  maxLineLength: 64 * 1024,
  maxInvalidRatio: 0.2,
  maxFileBytes: 2 * 1024 ** 3,
  maxListed: 1000,
} as const;

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
  segments: number;
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
  segments: number;
  encodings: { gsm7: number; ucs2: number };
  countries: Record<string, number>;
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
  text: string;
  segments: SegmentInfo;
  hash: number;
  warnings: { code: ReasonCode; message: string }[];
  empty: boolean;
}

// C0 control characters other than LF (line breaks inside quoted messages are kept as LF).
const CONTROL = /[\x00-\x09\x0b-\x1f]/;
const CONTROL_ALL = /[\x00-\x09\x0b-\x1f]/g;
const LONG_MESSAGE_CHARS = 500;
const NO_TEXT: PreparedMessage = {
  text: '',
  segments: { encoding: 'gsm7', segments: 0, gsm7Segments: 0, nonGsm: [] },
  hash: 0,
  warnings: [],
  empty: true,
};
const MESSAGE_ID_MAX = 64;

/** The text's hash (0 when not wanted) and whether it is plain GSM, in one pass when hashing. */
const NO_WARNINGS: PreparedMessage['warnings'] = [];

/**
 * Runs once per personalized record: the text's hash (for duplicates) and whether it is
 * plain GSM come from one pass over it (scanText), and nothing is allocated for the
 * warnings of a message that has none.
 */
function prepareMessage(raw: string, quoted: boolean, hashText: boolean): PreparedMessage {
  let warnings: PreparedMessage['warnings'] | null = null;
  let text = quoted ? raw : raw.trim();
  let hash = hashText ? scanText(text) || 1 : 0;
  let plain = hashText ? textScan.plain : isPlainGsm(text);
  if (!plain && CONTROL.test(text)) {
    text = text.replace(CONTROL_ALL, '');
    if (!quoted) text = text.trim();
    hash = hashText ? scanText(text) || 1 : 0;
    plain = hashText ? textScan.plain : isPlainGsm(text);
    (warnings ??= []).push({ code: 'CONTROL_CHARS_REMOVED', message: REASONS.CONTROL_CHARS_REMOVED.message });
  }
  // An unquoted text is trimmed already.
  const empty = (quoted ? text.trim() : text).length === 0;
  const segments = countSegments(text, plain);
  if (!empty) {
    if (text.length > LONG_MESSAGE_CHARS) {
      (warnings ??= []).push({
        code: 'LONG_MESSAGE',
        message: `the message has ${text.length} characters (over 500)`,
      });
    }
    if (segments.encoding === 'ucs2') {
      const chars = segments.nonGsm.map((c) => `'${c}'`).join(', ');
      (warnings ??= []).push({
        code: 'UCS2_MESSAGE',
        message: `${chars} force UCS-2 (70 characters a segment instead of 160): ${segments.segments} segment(s), ${segments.gsm7Segments} in GSM-7`,
      });
    }
  }
  return { text, segments, hash, warnings: warnings ?? NO_WARNINGS, empty };
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

  const summary: ReadSummary = {
    kind: 'summary',
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
  const reject = (code: ReasonCode, detail?: string): void => {
    if (summary.rejection) return;
    const info = REASONS[code];
    summary.rejection = { code, message: detail ?? info.message, hint: info.hint };
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
  // Runs of the same country (a file is mostly one) are counted here and added to the map
  // when the country changes: two map operations a recipient were measurable.
  let runCountry = '';
  let runCount = 0;
  const flushCountry = (): void => {
    if (runCount > 0) countries.set(runCountry, (countries.get(runCountry) ?? 0) + runCount);
    runCount = 0;
  };
  const recipients = new RecipientIndex(sniffed.lineEstimate);
  let messageIds: MessageIdIndex | null = null;

  let mode: Mode = 'start';
  let layout: Layout = 'bulk';
  let sep: string | null = null;
  let messageCol = -1;
  let idCol = -1;
  let columnCount = 0;
  let bulkMessage: PreparedMessage | null = null;
  let lastPrepared: PreparedMessage | null = null;
  let lastRaw = '';
  let lastQuoted = false;
  let pending: PendingRecord | null = null;
  /** Which fields of the last headed record were quoted (reused: no allocation per record). */
  const csvQuoted: boolean[] = [];
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
  // duplicate index together (RecipientIndex.addBatch); anything else the reader says of
  // the file (an item, an issue) first lets them through, so order is kept everywhere.
  const staged = {
    numbers: [] as string[],
    hashes: new Uint32Array(INDEX_BATCH),
    lines: new Uint32Array(INDEX_BATCH),
    firsts: new Uint32Array(INDEX_BATCH),
    ks: [] as number[],
    raws: [] as string[],
    results: [] as Extract<NumberResult, { ok: true }>[],
    msgs: [] as PreparedMessage[],
    ids: [] as (string | null)[],
    count: 0,
  };

  const flushRecipients = (): void => {
    const n = staged.count;
    if (n === 0) return;
    staged.count = 0;
    recipients.addBatch(staged.numbers, staged.hashes, staged.lines, n, staged.firsts);
    for (let i = 0; i < n; i++) {
      accept(
        staged.lines[i]!,
        staged.ks[i]!,
        staged.raws[i]!,
        staged.results[i]!,
        staged.msgs[i]!,
        staged.ids[i]!,
        staged.firsts[i]!,
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

  const warn = (line: number, warnings: PreparedMessage['warnings']): void => {
    if (warnings.length > 0) flushRecipients();
    for (const w of warnings) {
      if (emit) batch.push({ kind: 'warning', line, code: w.code, message: w.message });
      listIssue('warnings', { line, code: w.code, message: w.message, hint: REASONS[w.code].hint });
    }
  };

  /** A number was read: check it, suppress, de-duplicate, emit. */
  const recipient = (
    line: number,
    k: number,
    raw: string,
    result: NumberResult,
    msg: PreparedMessage,
    messageId: string | null,
  ): void => {
    if (!result.ok) {
      skip('invalid', line, k, result.code, numberProblem(result, raw.trim()), raw, result.number ?? null);
      return;
    }
    const number = result.number;
    if (suppression?.has(number)) {
      skip('suppressed', line, k, 'SUPPRESSED', REASONS.SUPPRESSED.message, raw, number);
      return;
    }
    const i = staged.count++;
    staged.numbers[i] = number;
    staged.hashes[i] = msg.hash;
    staged.lines[i] = line;
    staged.ks[i] = k;
    staged.raws[i] = raw;
    staged.results[i] = result;
    staged.msgs[i] = msg;
    staged.ids[i] = messageId;
    if (staged.count === INDEX_BATCH) flushRecipients();
  };

  /** A staged recipient, once the duplicate index has answered (`first`: 0 new, else its first line). */
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
    summary.segments += msg.segments.segments;
    if (msg.segments.encoding === 'gsm7') summary.encodings.gsm7++;
    else summary.encodings.ucs2++;
    if (result.country !== runCountry) {
      flushCountry();
      runCountry = result.country;
    }
    runCount++;
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
    if (layout === 'personalized') warn(line, msg.warnings);
  };

  const recordError = (line: number, code: ReasonCode, message: string, value: string): void => {
    summary.records++;
    skip('invalid', line, 0, code, message, value);
  };

  const personalizedMessage = (raw: string, quoted: boolean): PreparedMessage => {
    // Consecutive identical texts (template campaigns) are prepared once.
    if (lastPrepared && raw === lastRaw && quoted === lastQuoted) return lastPrepared;
    lastRaw = raw;
    lastQuoted = quoted;
    lastPrepared = prepareMessage(raw, quoted, true);
    return lastPrepared;
  };

  const personalizedRecord = (
    line: number,
    number: string,
    rawMessage: string,
    quoted: boolean,
    id: string | null,
  ): void => {
    summary.records++;
    const msg = personalizedMessage(rawMessage, quoted);
    if (id !== null) {
      if (id.length > MESSAGE_ID_MAX) {
        skip(
          'invalid',
          line,
          0,
          'INVALID_MESSAGE_ID',
          `the messageId has ${id.length} characters (at most 64)`,
          id,
        );
        return;
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
        return;
      }
    }
    const result = normalizeNumber(number, rules);
    if (result.ok && msg.empty) {
      skip('invalid', line, 0, 'EMPTY_MESSAGE', REASONS.EMPTY_MESSAGE.message, rawMessage, result.number);
      return;
    }
    recipient(line, 0, number, result, msg, id);
  };

  const numbersRecord = (line: number, text: string): void => {
    summary.records++;
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
    return summary.header ? parseCsv(text, sep ?? ';', csvQuoted) : parsePersonalized(text, sep);
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
      bulkMessage = prepareMessage(message, quoted, false);
      summary.message = bulkMessage.text;
      warn(line, bulkMessage.warnings);
      if (bulkMessage.empty) reject('NO_MESSAGE', 'the message (first record) is empty');
      return;
    }
    if (layout === 'bulk') {
      numbersRecord(line, text);
      return;
    }
    if (!summary.header) {
      const f = parsed as { number: string; message: string; quoted: boolean };
      personalizedRecord(line, f.number, f.message, f.quoted, null);
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
    personalizedRecord(
      line,
      fields[0] ?? '',
      messageCol >= 0 ? (fields[messageCol] ?? '') : '',
      messageCol >= 0 && csvQuoted[messageCol] === true,
      id.length > 0 ? id : null,
    );
  };

  const startFile = (text: string): void => {
    const choice = chooseLayout(text, options.name, options.layout ?? null);
    layout = choice.layout;
    summary.layout = layout;
    summary.header = choice.header;
    if (layout === 'bulk') {
      mode = 'message';
      return;
    }
    sep = detectSeparator(text);
    summary.separator = sep;
    mode = 'records';
  };

  const header = (text: string): void => {
    const fields = parseCsv(text, sep ?? ';');
    const names = Array.isArray(fields) ? fields : text.split(sep ?? ';');
    summary.columns = names.map((n) => n.trim());
    columnCount = names.length;
    names.forEach((raw, i) => {
      const n = normaliseHeaderName(raw);
      if (i !== 0 && MESSAGE_COLUMNS.has(n) && messageCol < 0) messageCol = i;
      else if (i !== 0 && MESSAGE_ID_COLUMNS.has(n) && idCol < 0) idCol = i;
    });
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
      if (mode === 'start') startFile(text);
      if (mode === 'message') noMessage('the message record is longer than the line-length limit');
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
      startFile(text);
      if (summary.header) {
        header(text);
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
    finishRecord(lineNo, text, parsed);
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
    abandonPending('a quoted field is never closed');
  };

  /** FORMAT.md 3: a quote never closed is an error for its record; parsing resumes at the next line. */
  const abandonPending = (message = 'a quoted field is never closed'): void => {
    const p = pending!;
    pending = null;
    if (mode === 'message') noMessage('the quoted message is never closed');
    recordError(p.startLine, 'MALFORMED_QUOTE', message, p.lines[0]!.text.slice(0, 40));
    for (let i = 1; i < p.lines.length; i++) {
      const l = p.lines[i]!;
      onLine(l.text, l.lineNo, l.tooLong);
    }
  };

  const splitter = new LineSplitter(maxLine, onLine);
  for await (const text of decodeText(open(), sniffed.encoding)) {
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
