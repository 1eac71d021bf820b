// SMS files' record rules (docs/format.md): a bulk file's message record, personalized
// texts (merged when they hold placeholders, docs/format.md "Templates"), their segments, encodings and
// warnings. RCS files are read the same way, one message a recipient (docs/format.md "RCS
// files").
import { REASONS } from '../../errors.ts';
import type { ReadContext, RecordRules } from '../../format/channel-rules.ts';
import {
  isNumber,
  NO_TEXT,
  type PreparedMessage,
  prepareMerged,
  prepareMessage,
} from '../../format/message.ts';
import { type NumberResult, normalizeNumber } from '../../format/numbers.ts';
import type { PersonalizedFields } from '../../format/records.ts';
import { splitNumbers } from '../../format/records.ts';
import {
  compileTemplate,
  joinTemplate,
  mergeTemplate,
  type Template,
  templateValues,
  trimText,
} from '../../format/template.ts';
import { BaseRules } from '../base-rules.ts';

/** Distinct message-column templates kept parsed at once (a file rarely has more than a few). */
const TEMPLATE_CACHE = 64;

/** What a personalized record sends, or why it has no value for a placeholder (MISSING_FIELD). */
type Message =
  | { msg: PreparedMessage; hash: number; missing: null }
  | { msg: null; missing: string; placeholder: string };

export class SmsRules extends BaseRules implements RecordRules {
  readonly addresses = false;
  readonly headlessCsv = false;
  readonly messageColumn = 'text';
  /** Texts are transliterated (the source's gsm7; never in an RCS file). */
  protected readonly gsm7: boolean;
  /** The `#! message:` template, once the header is known (headed personalized files only). */
  #fileTemplate: Template | null = null;
  /** Message texts with `{{`, parsed once each (bounded: cleared when full). */
  readonly #templates = new Map<string, Template>();
  #lastPrepared: PreparedMessage | null = null;
  #lastRaw = '';
  #lastQuoted = false;
  /** Where each inserted value is in recordBytes (-1: not there as it is). */
  #insertedAt = new Int32Array(4);
  readonly #current: {
    msg: PreparedMessage | null;
    /** The text's hash (a shared merged message has not its own). */
    hash: number;
    missing: string | null;
    placeholder: string;
  } = { msg: null, hash: 0, missing: null, placeholder: '' };
  /** The last message prepareMerged made without its text, offered to the next record. */
  #sharedMerged: PreparedMessage | null = null;
  readonly #mergedHash = { value: 0 };

  constructor(ctx: ReadContext, gsm7 = ctx.options.transliterate === 'gsm7') {
    super(ctx);
    this.gsm7 = gsm7;
  }

  start(text: string, _lineNo: number): void {
    const directive = this.summary.summary.directives.message;
    const layout = this.parser.layout;
    if (directive && !this.summary.summary.header) {
      // docs/format.md: `#! message:` needs columns (and a bulk file's message is its first line).
      this.summary.reject(
        'BAD_DIRECTIVE',
        `line ${directive.line}: \`#! message:\` needs a personalized file with a header line (number column, then the columns its placeholders name); this file is ${layout === 'bulk' ? 'bulk: its message is its first line' : 'personalized without a header'}`,
        undefined,
        { line: directive.line },
      );
    }
    if (layout === 'bulk') {
      this.parser.mode = 'message';
      return;
    }
    this.parser.detectSeparator(text);
    this.parser.mode = 'records';
  }

  header(_lineNo: number): void {
    const directive = this.summary.summary.directives.message;
    if (!directive) return;
    const t = compileTemplate(directive.template, this.parser.columns);
    this.#fileTemplate = t;
    if (t.problem !== null)
      this.summary.reject(
        'UNKNOWN_PLACEHOLDER',
        `line ${directive.line}: ${t.problem}`,
        t.hint ?? undefined,
        {
          line: directive.line,
        },
      );
  }

  message(line: number, text: string, parsed: { message: string; quoted: boolean }): void {
    const { message, quoted } = parsed;
    this.parser.mode = 'records';
    // docs/format.md "Bulk layout: one message, many numbers": a first record that is itself a valid number list is no message.
    const tokens = splitNumbers(message);
    if (!quoted && tokens.length > 0 && tokens.every((t) => isNumber(normalizeNumber(t, this.numberRules)))) {
      this.noMessage();
      this.numbers(line, text);
      return;
    }
    // docs/format.md "Templates": a bulk message has no columns to name, so a
    // placeholder in it is UNKNOWN_PLACEHOLDER; `{{{{` is a literal `{{` as everywhere.
    const merged = message.includes('{{') ? mergeTemplate(this.#templateOf(message, line), [], []) : message;
    const bulk = prepareMessage(String(merged), quoted, false, this.gsm7);
    this.bulkMessage = bulk;
    this.summary.summary.message = bulk.text;
    this.warnMessage(line, bulk);
    if (bulk.empty) this.summary.reject('NO_MESSAGE', 'the message (first record) is empty');
  }

  headless(line: number, _text: string, parsed: unknown): void {
    const f = parsed as PersonalizedFields;
    this.#personalized(line, f.number, f.message, f.quoted, null, null, f.at);
  }

  headed(line: number, fields: string[], id: string | null): void {
    const col = this.parser.messageCol;
    this.#personalized(
      line,
      fields[0] ?? '',
      col >= 0 ? (fields[col] ?? '') : '',
      col >= 0 && this.parser.csvQuoted[col] === true,
      id,
      fields,
      col >= 0 && col < fields.length ? this.parser.csvStarts[col]! : -1,
    );
  }

  accept(
    line: number,
    k: number,
    result: Extract<NumberResult, { ok: true }>,
    msg: PreparedMessage,
    messageId: string | null,
  ): void {
    this.summary.text(result.country, msg);
    this.stager.emitRecipient(
      line,
      k,
      result,
      result.country,
      msg.text,
      messageId,
      msg.segments.segments,
      msg.segments.encoding,
    );
    // Message warnings of personalized records go with the records that are sent.
    if (this.parser.layout === 'personalized') this.warnMessage(line, msg);
  }

  /** A message's warnings as this channel gives them. */
  protected warnMessage(line: number, msg: PreparedMessage): void {
    this.stager.warn(line, msg);
  }

  #personalized(
    line: number,
    number: string,
    rawMessage: string,
    quoted: boolean,
    id: string | null,
    fields: readonly string[] | null,
    /** Where rawMessage starts in the record's text (-1: not a part of it). */
    messageAt: number,
  ): void {
    this.summary.summary.records++;
    const parser = this.parser;
    const at = parser.recordBytes !== null && messageAt >= 0 ? parser.lineAt + messageAt : -1;
    const message = this.#recordMessage(line, rawMessage, quoted, fields, at);
    const { msg, missing } = message;
    const stager = this.stager;
    if (!stager.idAccepted(line, id)) return;
    const result = normalizeNumber(number, this.numberRules);
    if (result.ok && missing !== null) {
      stager.skip('invalid', line, 0, 'MISSING_FIELD', missing, message.placeholder, result.number);
      return;
    }
    if (result.ok && msg!.empty) {
      stager.skip(
        'invalid',
        line,
        0,
        'EMPTY_MESSAGE',
        REASONS.EMPTY_MESSAGE.message,
        rawMessage,
        result.number,
      );
      return;
    }
    stager.recipient(line, 0, number, result, msg ?? NO_TEXT, id, msg === null ? 0 : message.hash);
  }

  /** `rawAt`: where raw is in recordBytes (-1: not there as it is). */
  #personalizedMessage(raw: string, quoted: boolean, rawAt = -1): PreparedMessage {
    // Consecutive identical texts (template campaigns) are prepared once.
    if (this.#lastPrepared && raw === this.#lastRaw && quoted === this.#lastQuoted) return this.#lastPrepared;
    this.#lastRaw = raw;
    this.#lastQuoted = quoted;
    this.#lastPrepared = prepareMessage(raw, quoted, true, this.gsm7, this.parser.recordBytes, rawAt);
    return this.#lastPrepared;
  }

  /**
   * docs/format.md "Templates": a message text with `{{`, parsed once per distinct text. A placeholder
   * naming no column (or a `{{` never closed) rejects the file, UNKNOWN_PLACEHOLDER, naming
   * the first line where it appears; the rest of the file is still read.
   */
  #templateOf(text: string, line: number): Template {
    const templates = this.#templates;
    let t = templates.get(text);
    if (t === undefined) {
      if (templates.size >= TEMPLATE_CACHE) templates.clear();
      t = compileTemplate(text, this.parser.columns);
      templates.set(text, t);
    }
    if (t.problem !== null)
      this.summary.reject('UNKNOWN_PLACEHOLDER', `line ${line}: ${t.problem}`, t.hint ?? undefined, { line });
    return t;
  }

  /**
   * The record's text: its message, merged when it holds placeholders (headed files), or
   * the `#! message:` template when the message column is empty or absent. Reuses `current`.
   */
  #recordMessage(
    line: number,
    raw: string,
    quoted: boolean,
    fields: readonly string[] | null,
    /** Where raw is in recordBytes (-1: not there as it is). */
    rawAt: number,
  ): Message {
    const current = this.#current;
    const fileTemplate = this.#fileTemplate;
    let template: Template | null = null;
    if (fileTemplate !== null && trimText(raw).length === 0) {
      template = fileTemplate;
      quoted = false;
    } else if (raw.includes('{{')) template = this.#templateOf(raw, line);
    if (template === null) {
      current.msg = this.#personalizedMessage(raw, quoted, rawAt);
      current.hash = current.msg.hash;
      current.missing = null;
      return current as Message;
    }
    const parser = this.parser;
    const inserted = this.inserted;
    if (this.#insertedAt.length < template.cols.length)
      this.#insertedAt = new Int32Array(template.cols.length);
    const insertedAt = this.#insertedAt;
    // A headed record's values may be read from its bytes (csvStarts is its fields').
    const base = fields !== null && parser.recordBytes !== null ? parser.lineAt : -1;
    const missing = templateValues(
      template,
      fields ?? [],
      parser.csvQuoted,
      inserted,
      parser.csvStarts,
      base,
      insertedAt,
    );
    if (missing >= 0) {
      current.msg = null;
      const column = parser.columns?.names[template.cols[missing]!] ?? '';
      current.placeholder = template.written[missing]!;
      current.missing = `the message uses ${current.placeholder} but this line has no value in column ${column}`;
      return current as Message;
    }
    let msg: PreparedMessage | null = null;
    let text: string | null = null;
    if (template.cols.length > 0) {
      // Items carry the text: then each message has its own.
      const emit = this.stager.emit;
      msg = prepareMerged(
        template,
        inserted,
        quoted,
        this.gsm7,
        emit,
        this.#sharedMerged,
        this.#mergedHash,
        base >= 0 ? parser.recordBytes : null,
        insertedAt,
      );
      if (msg !== null) {
        if (!emit) this.#sharedMerged = msg;
        current.hash = this.#mergedHash.value;
      } else {
        // A merged text with placeholders is seldom the previous one: no comparison with it.
        msg = prepareMessage((text = joinTemplate(template, inserted)), quoted, true, this.gsm7);
        current.hash = msg.hash;
      }
    } else {
      msg = this.#personalizedMessage(template.literals[0]!, quoted);
      current.hash = msg.hash;
    }
    if (this.summary.wantsExample(template, fileTemplate)) {
      // As sent: the merged text, unless prepareMessage changed it (or made it).
      const sent = msg === this.#sharedMerged ? (text ?? joinTemplate(template, inserted)) : msg.text;
      this.summary.addExample(template, line, sent);
    }
    current.msg = msg;
    current.missing = null;
    return current as Message;
  }
}
