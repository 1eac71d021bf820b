// The reader's record parser (docs/format.md "Encoding and lines"): physical lines from the line
// splitter become records (a quoted field may span lines: "Separator and quotes"), `#!` directives
// before the first record are read, the first data line decides the channel's record rules, the
// layout and the header, and a trailer-looking line is held until the file ends ("Proving a file is
// complete: trailer"). Each record is handed to the channel's rules (from its channel, src/channels/).

import { channelOf, channelsTaking } from '../channels/index.ts';
import { REASONS } from '../errors.ts';
import type { ParserState, RecordRules } from './channel-rules.ts';
import type { TextBytes } from './decode.ts';
import { type Channel, DirectiveError, readDirective } from './directives.ts';
import {
  chooseLayout,
  type Layout,
  MESSAGE_COLUMNS,
  MESSAGE_ID_COLUMNS,
  normaliseHeaderName,
} from './layout.ts';
import { LineSplitter } from './lines.ts';
import { MAX_LINE_LENGTH, type ReadOptions } from './read-types.ts';
import type { RecipientStager } from './recipient-stager.ts';
import {
  detectSeparator,
  MALFORMED,
  OPEN,
  type Parsed,
  parseCsv,
  parseMessageRecord,
  parsePersonalized,
  parseTrailer,
  splitNumbers,
} from './records.ts';
import type { SummaryBuilder } from './summary-builder.ts';
import {
  placeholderKey,
  type TemplateColumns,
  TWINS_HINT,
  templateColumns,
  twinsProblem,
} from './template.ts';

interface PendingRecord {
  startLine: number;
  lines: { text: string; lineNo: number; tooLong: boolean }[];
  length: number;
}

export class RecordParser implements ParserState {
  mode: ParserState['mode'] = 'start';
  layout: Layout = 'bulk';
  /** The separator (docs/format.md "Separator and quotes"), once a line has decided it. */
  sep: string | null = null;
  messageCol = -1;
  idCol = -1;
  columnCount = 0;
  /** docs/format.md "Templates": the header's columns as placeholders name them (headed files). */
  columns: TemplateColumns | null = null;
  /** Which fields of the last headed record were quoted (reused: no allocation per record). */
  readonly csvQuoted: boolean[] = [];
  /** The fields of the last headed record (reused too: a record's fields are done with before the next is parsed). */
  readonly csvFields: string[] = [];
  /** Where the fields of the last headed record start in its text (reused too). */
  readonly csvStarts: number[] = [];
  // recordBytes: the bytes of the record being read, when its text is them exactly (ASCII,
  // its line read whole from the last text decoded: TextBytes), the text starting at lineAt:
  // texts are hashed from the bytes (dedupe.ts scanTextAt, hashJoined), ~2.5x faster than
  // from the strings. null for any other record (a quoted record of several lines, a held
  // trailer).
  readonly textBytes: TextBytes = { bytes: null };
  /** Where the line the splitter gives onLine starts in textBytes (-1: not there whole). */
  lineAt = -1;
  recordBytes: Uint8Array | null = null;
  /** The channel's record rules, once the first data line has decided the channel. */
  rules: RecordRules | null = null;
  readonly #options: ReadOptions;
  readonly #summary: SummaryBuilder;
  readonly #stager: RecipientStager;
  readonly #maxLine: number;
  readonly #splitter: LineSplitter;
  #pending: PendingRecord | null = null;
  #heldTrailer: { text: string; lineNo: number; count: number | null } | null = null;
  readonly #directivesSeen = new Set<string>();

  constructor(options: ReadOptions, summary: SummaryBuilder, stager: RecipientStager, maxLine: number) {
    this.#options = options;
    this.#summary = summary;
    this.#stager = stager;
    this.#maxLine = maxLine;
    const splitter: LineSplitter = new LineSplitter(maxLine, (text, lineNo, tooLong) => {
      this.lineAt = splitter.lineAt;
      this.#line(text, lineNo, tooLong);
      this.lineAt = -1;
    });
    this.#splitter = splitter;
  }

  /** Text decoded from the file (its bytes in textBytes when they are its text exactly). */
  push(text: string): void {
    this.#splitter.push(text);
  }

  /** The end of the file: the last line, quotes never closed, the held trailer. */
  end(): void {
    this.#splitter.end();
    while (this.#pending) this.#abandonPending();
    this.#stager.flush();
    const summary = this.#summary.summary;
    if (this.#heldTrailer) {
      const t: { lineNo: number; count: number | null } = this.#heldTrailer;
      summary.trailer = { line: t.lineNo, count: t.count };
      this.#summary.checkCount('the trailer', t.lineNo, t.count);
    }
    const expect = summary.directives.expect;
    if (expect) this.#summary.checkCount('the `#! expect:` directive', expect.line, expect.count);
  }

  /**
   * The separator decided by `text` (docs/format.md "Separator and quotes"), as the summary gives
   * it.
   */
  detectSeparator(text: string): void {
    this.sep = detectSeparator(text);
    this.#summary.summary.separator = this.sep;
  }

  /** A physical line at the start of a record (not inside an open quote). */
  #line(text: string, lineNo: number, tooLong: boolean): void {
    if (this.#pending) {
      this.#continuePending(text, lineNo, tooLong);
      return;
    }
    if (tooLong) {
      this.#tooLong(text, lineNo);
      return;
    }
    if (text.length === 0) return;
    const c = text.charCodeAt(0);
    if (c === 35 /* # */) {
      this.#comment(text, lineNo, false);
      return;
    }
    if ((c <= 32 || c === 0xa0 || c === 0xfeff || c >= 0x2000) && text.trim().length === 0) return;
    if (this.mode === 'start') {
      this.#startFile(text, lineNo);
      if (this.#summary.summary.header) {
        this.#header(text, lineNo);
        return;
      }
    } else if (this.mode === 'records') {
      const trailer = parseTrailer(text);
      if (trailer) {
        this.#flushTrailer();
        this.#heldTrailer = { text, lineNo, count: trailer.count };
        return;
      }
      this.#flushTrailer();
    }
    const parsed = this.#parseRecord(text);
    if (parsed === OPEN) {
      this.#pending = { startLine: lineNo, lines: [{ text, lineNo, tooLong: false }], length: text.length };
      return;
    }
    // A record of this one line: its text is where the line is.
    if (this.lineAt >= 0) this.recordBytes = this.textBytes.bytes;
    this.#finishRecord(lineNo, text, parsed);
    this.recordBytes = null;
  }

  /** A line longer than the limit (docs/format.md "Encoding and lines"): its record is an error. */
  #tooLong(text: string, lineNo: number): void {
    const maxLine = this.#maxLine;
    // A comment is never a record, however long (its first characters are still known).
    if (text.charCodeAt(0) === 35 /* # */) {
      this.#comment(text, lineNo, true);
      return;
    }
    if (this.mode === 'start') this.#startFile(text, lineNo);
    if (this.mode === 'message') {
      // The bulk message itself (docs/format.md "Bulk layout: one message, many numbers"): no
      // recipient record, and nothing can be sent without it, so the whole file is rejected with
      // the line's code.
      this.rules!.noMessage(
        `line ${lineNo}: the message is longer than ${maxLine} characters (the line-length limit)`,
        'LINE_TOO_LONG',
        `shorten the message to at most ${maxLine} characters, or raise the line-length limit (validate --max-line-length, at most ${MAX_LINE_LENGTH})`,
        { line: lineNo },
      );
      return;
    }
    this.#flushTrailer();
    this.#stager.recordError(lineNo, 'LINE_TOO_LONG', `the line is longer than ${maxLine} characters`, text);
  }

  /**
   * A `#` line: a directive before the first data record (docs/format.md "Directives"), else a
   * comment.
   */
  #comment(text: string, lineNo: number, tooLong: boolean): void {
    if (this.mode !== 'start' || text.charCodeAt(1) !== 33 /* ! */) return;
    const options = this.#options;
    try {
      if (tooLong)
        throw new DirectiveError(lineNo, `the directive is longer than ${this.#maxLine} characters`);
      readDirective(
        text,
        lineNo,
        options.allowDirectives ?? true,
        this.#summary.summary.directives,
        this.#directivesSeen,
        options.sendAtTimeZone,
      );
    } catch (err) {
      if (!(err instanceof DirectiveError)) throw err;
      this.#summary.reject('BAD_DIRECTIVE', err.message, undefined, { line: err.line });
    }
  }

  /** The first data line: the channel, its record rules, the layout; then the rules start the file. */
  #startFile(text: string, lineNo: number): void {
    const summary = this.#summary.summary;
    const options = this.#options;
    summary.channel = summary.directives.channel?.channel ?? options.channel ?? 'sms';
    const rules = channelOf(summary.channel).rules({
      options,
      parser: this,
      stager: this.#stager,
      summary: this.#summary,
    });
    this.rules = rules;
    this.#stager.channel = rules;
    this.#stager.keyed = rules.addresses;
    const choice = rules.layout(
      text,
      chooseLayout(text, options.name, options.layout ?? null, rules.addresses),
    );
    this.layout = choice.layout;
    summary.layout = choice.layout;
    summary.header = choice.header;
    this.#notForChannel(summary.channel);
    rules.start(text, lineNo);
  }

  /** `#! <name>:` given in a file for a channel it does not apply to: BAD_DIRECTIVE naming both. */
  #notForChannel(channel: Channel): void {
    const d = this.#summary.summary.directives;
    const given = (['subject', 'templateId', 'source', 'flash'] as const)
      .map((name) => {
        const channels = channelsTaking(name);
        return {
          at: channels.includes(channel) ? null : d[name],
          name,
          files: `${channels.join(' and ')} files (${channels.map((c) => `\`#! channel: ${c}\``).join(' or ')})`,
        };
      })
      // The first of them in the file is named.
      .sort((a, b) => (a.at?.line ?? 0) - (b.at?.line ?? 0));
    for (const { at, name, files } of given)
      if (at)
        this.#summary.reject(
          'BAD_DIRECTIVE',
          `line ${at.line}: \`#! ${name}:\` is for ${files}; this file is for ${channel}`,
          undefined,
          { line: at.line },
        );
  }

  /** The header line: the columns, the message and messageId columns, then the channel's. */
  #header(text: string, lineNo: number): void {
    const summary = this.#summary.summary;
    const rules = this.rules!;
    const fields = parseCsv(text, this.sep ?? ';');
    const names = Array.isArray(fields) ? fields : text.split(this.sep ?? ';');
    summary.columns = names.map((n) => n.trim());
    this.columnCount = names.length;
    const findsMessage = rules.messageColumn !== 'none';
    names.forEach((raw, i) => {
      const n = normaliseHeaderName(raw);
      if (i !== 0 && findsMessage && MESSAGE_COLUMNS.has(n) && this.messageCol < 0) this.messageCol = i;
      else if (i !== 0 && MESSAGE_ID_COLUMNS.has(n) && this.idCol < 0) this.idCol = i;
    });
    // A message column placeholders may name (WhatsApp's `#! message:`) is not a text.
    const textCol = rules.messageColumn === 'text' ? this.messageCol : -1;
    const columns = templateColumns(summary.columns, textCol, lineNo);
    this.columns = columns;
    // A column read by its name must be the only one of that name (docs/format.md); the
    // number (or address) is the first column whatever its name.
    const roles: [number, string][] = [
      [textCol, 'message'],
      [this.idCol, 'messageId'],
    ];
    for (const [col, role] of roles) {
      const twins = col < 0 ? null : twinsProblem(columns, placeholderKey(summary.columns[col]!));
      if (twins !== null)
        this.#summary.reject(
          'UNKNOWN_PLACEHOLDER',
          `line ${lineNo}: the ${role} column is ambiguous: ${twins}`,
          TWINS_HINT,
          { line: lineNo },
        );
    }
    rules.header(lineNo);
  }

  /** Parses one complete record (possibly several physical lines joined). */
  #parseRecord(text: string): Parsed<unknown> {
    if (this.mode === 'message') return parseMessageRecord(text);
    if (this.layout === 'bulk') return splitNumbers(text);
    const header = this.#summary.summary.header;
    if (this.sep === null && !header) {
      // The first data record had no SEP at all (a personalized layout chosen by
      // configuration or name): the first record that has one decides (docs/format.md).
      this.detectSeparator(text);
    }
    return header || this.rules!.headlessCsv
      ? parseCsv(text, this.sep ?? ';', this.csvQuoted, this.csvFields, this.csvStarts)
      : parsePersonalized(text, this.sep);
  }

  #finishRecord(line: number, text: string, parsed: Exclude<Parsed<unknown>, typeof OPEN>): void {
    const rules = this.rules!;
    if (parsed === MALFORMED) {
      if (this.mode === 'message') rules.noMessage('the message record has a broken quote');
      this.#stager.recordError(line, 'MALFORMED_QUOTE', REASONS.MALFORMED_QUOTE.message, text.slice(0, 40));
      return;
    }
    if (this.mode === 'message') {
      rules.message(line, text, parsed as { message: string; quoted: boolean });
      return;
    }
    if (this.layout === 'bulk') {
      rules.numbers(line, text);
      return;
    }
    if (!this.#summary.summary.header) {
      rules.headless(line, text, parsed);
      return;
    }
    const fields = parsed as string[];
    const columnCount = this.columnCount;
    if (fields.length === columnCount + 1 && fields[columnCount] === '') fields.pop();
    if (fields.length > columnCount) {
      this.#stager.recordError(
        line,
        'TOO_MANY_FIELDS',
        `the record has ${fields.length} fields, the header ${columnCount}`,
        text.slice(0, 40),
      );
      return;
    }
    const id = this.idCol >= 0 ? (fields[this.idCol]?.trim() ?? '') : '';
    rules.headed(line, fields, id.length > 0 ? id : null);
  }

  /** A trailer-looking line followed by more data was an ordinary record. */
  #flushTrailer(): void {
    if (!this.#heldTrailer) return;
    const { text, lineNo } = this.#heldTrailer;
    this.#heldTrailer = null;
    const parsed = this.#parseRecord(text);
    if (parsed !== OPEN) this.#finishRecord(lineNo, text, parsed);
  }

  #continuePending(text: string, lineNo: number, tooLong: boolean): void {
    const p = this.#pending!;
    p.lines.push({ text, lineNo, tooLong });
    p.length += text.length + 1;
    if (!tooLong && p.length <= this.#maxLine) {
      const joined = p.lines.map((l) => l.text).join('\n');
      const parsed = this.#parseRecord(joined);
      if (parsed === OPEN) return;
      if (parsed === MALFORMED) {
        // The quote "closed" on a later line but text follows it: most often a quote never closed
        // that met the next record's opening quote. Resynchronise as docs/format.md "Separator and
        // quotes" says.
        this.#abandonPending(REASONS.MALFORMED_QUOTE.message);
        return;
      }
      this.#pending = null;
      this.#finishRecord(p.startLine, joined, parsed);
      return;
    }
    // Whether or not it closes later: no record may outgrow the limit (docs/format.md "Encoding and
    // lines").
    this.#abandonPending(
      `a quoted field is not closed within ${this.#maxLine} characters (the line-length limit)`,
    );
  }

  /**
   * docs/format.md "Separator and quotes": a quote never closed is an error for its record; parsing
   * resumes at the next line.
   */
  #abandonPending(message = 'a quoted field is never closed'): void {
    const p = this.#pending!;
    this.#pending = null;
    // The lines are read again, not as the line the splitter gave: not from its bytes.
    this.lineAt = -1;
    if (this.mode === 'message')
      this.rules!.noMessage(message.replace('a quoted field', 'the quoted message'));
    this.#stager.recordError(p.startLine, 'MALFORMED_QUOTE', message, p.lines[0]!.text.slice(0, 40));
    for (let i = 1; i < p.lines.length; i++) {
      const l = p.lines[i]!;
      this.#line(l.text, l.lineNo, l.tooLong);
    }
  }
}
