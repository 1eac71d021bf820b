// The reader's recipients on their way out (docs/format.md "Duplicates", "Suppression"):
// staged in line order, checked in batches against the suppression list and the duplicate
// index, then accepted (the channel's record rules count and emit them) or skipped; every
// other item (a skipped record, a warning) first lets the staged ones through, so the
// items keep the file's order.
import { REASONS, type ReasonCode } from '../errors.ts';
import type { ConsentCheck } from './consent.ts';
import { hashString, INDEX_BATCH, MessageIdIndex, RecipientIndex } from './dedupe.ts';
import {
  MESSAGE_ID_MAX,
  MESSAGE_WARNINGS,
  numberProblem,
  type PreparedMessage,
  RCS_LONG_HINT,
  warningMessage,
} from './message.ts';
import type { NumberResult } from './numbers.ts';
import type { ReadItem, RecipientItem, SkippedItem } from './read-types.ts';
import type { SummaryBuilder } from './summary-builder.ts';
import type { SuppressionList } from './suppression.ts';

type Valid = Extract<NumberResult, { ok: true }>;

/** What the channel does with a recipient the duplicate index let through (record-rules). */
export interface AcceptRecipient {
  accept(line: number, k: number, result: Valid, msg: PreparedMessage, messageId: string | null): void;
}

export class RecipientStager {
  /** Items to yield: recipients, skipped records, warnings (emit only). */
  batch: ReadItem[] = [];
  readonly emit: boolean;
  /** The channel's acceptance (set when the first data line decides the channel). */
  channel: AcceptRecipient | null = null;
  /** Email addresses: keyed by two hashes (no numeric value), never on the suppression list. */
  keyed = false;
  readonly #summary: SummaryBuilder;
  readonly #suppression: SuppressionList | null;
  /** The consent list of the file's channel: recipients without consent are NO_CONSENT. */
  readonly #consent: ConsentCheck | null;
  readonly #recipients: RecipientIndex;
  readonly #lineEstimate: number;
  #messageIds: MessageIdIndex | null = null;
  // Recipients wait here, in line order, until INDEX_BATCH of them are checked against the
  // suppression list and the duplicate index together (hasBatch, RecipientIndex.addBatch:
  // the cache misses of a batch overlap). A suppressed recipient is not added to the
  // duplicate index.
  /** Each number's value (sentValue): the key of the list and of the duplicate index. */
  readonly #values = new Float64Array(INDEX_BATCH);
  readonly #hashes = new Uint32Array(INDEX_BATCH);
  readonly #lines = new Uint32Array(INDEX_BATCH);
  readonly #firsts = new Uint32Array(INDEX_BATCH);
  readonly #ks: number[] = [];
  readonly #raws: string[] = [];
  readonly #results: Valid[] = [];
  readonly #msgs: PreparedMessage[] = [];
  readonly #ids: (string | null)[] = [];
  #count = 0;
  /** 1: on the suppression list. */
  readonly #suppressed = new Uint8Array(INDEX_BATCH);
  // The batch without its suppressed recipients, for the duplicate index.
  readonly #keptValues = new Float64Array(INDEX_BATCH);
  readonly #keptHashes = new Uint32Array(INDEX_BATCH);
  readonly #keptLines = new Uint32Array(INDEX_BATCH);
  /** Email addresses (no value): the key's two 32-bit hashes (RecipientIndex.addKeys). */
  readonly #keyHi = new Uint32Array(INDEX_BATCH);
  readonly #keyLo = new Uint32Array(INDEX_BATCH);

  constructor(
    summary: SummaryBuilder,
    suppression: SuppressionList | null,
    lineEstimate: number,
    emit: boolean,
    consent: ConsentCheck | null = null,
  ) {
    this.#summary = summary;
    this.#suppression = suppression;
    this.#consent = consent;
    this.#lineEstimate = lineEstimate;
    this.emit = emit;
    // A summary alone never says which line a duplicate repeats: its index keeps no lines.
    this.#recipients = new RecipientIndex(lineEstimate, emit);
  }
  /** A recipient the channel accepted, into the batch to yield (emit only). */
  emitRecipient(
    line: number,
    k: number,
    result: Valid,
    country: string,
    text: string,
    messageId: string | null,
    segments: number,
    encoding: RecipientItem['encoding'],
  ): void {
    if (this.emit)
      this.batch.push({
        kind: 'recipient',
        line,
        k,
        number: result.number,
        country,
        text,
        messageId,
        segments,
        encoding,
      });
  }

  /** The items read since the last call. */
  take(): ReadItem[] {
    const batch = this.batch;
    this.batch = [];
    return batch;
  }

  /** A number was read: check it, then stage it (suppression, duplicates and emitting follow). */
  recipient(
    line: number,
    k: number,
    raw: string,
    result: NumberResult,
    msg: PreparedMessage,
    messageId: string | null,
    /** The text's hash for the duplicate index (msg.hash, unless msg is shared). */
    hash = msg.hash,
  ): void {
    if (!result.ok) {
      this.skip(
        'invalid',
        line,
        k,
        result.code,
        numberProblem(result, raw.trim()),
        raw,
        result.number ?? null,
      );
      return;
    }
    const i = this.#count++;
    if (this.keyed) {
      this.#keyHi[i] = hashString(result.number, 0x811c9dc5);
      this.#keyLo[i] = hashString(result.number, 0x01234567);
      this.#values[i] = 0;
    } else this.#values[i] = result.value;
    this.#hashes[i] = hash;
    this.#lines[i] = line;
    this.#ks[i] = k;
    this.#raws[i] = raw;
    this.#results[i] = result;
    this.#msgs[i] = msg;
    this.#ids[i] = messageId;
    if (this.#count === INDEX_BATCH) this.flush();
  }

  /** The staged recipients through the suppression list and the duplicate index, in order. */
  flush(): void {
    const n = this.#count;
    if (n === 0) return;
    this.#count = 0;
    const values = this.#values;
    const hashes = this.#hashes;
    const lines = this.#lines;
    const suppressed = this.#suppressed;
    const suppression = this.#suppression;
    const firsts = this.#firsts;
    if (this.keyed) {
      this.#recipients.addKeys(this.#keyHi, this.#keyLo, hashes, lines, n, firsts);
    } else if (suppression === null) {
      this.#recipients.addValues(values, hashes, lines, n, firsts);
    } else {
      if (suppression.hasValues) suppression.hasValues(values, n, suppressed);
      else for (let i = 0; i < n; i++) suppressed[i] = suppression.has(this.#results[i]!.number) ? 1 : 0;
      let kept = 0;
      for (let i = 0; i < n; i++) {
        if (suppressed[i] === 1) continue;
        this.#keptValues[kept] = values[i]!;
        this.#keptHashes[kept] = hashes[i]!;
        this.#keptLines[kept] = lines[i]!;
        kept++;
      }
      this.#recipients.addValues(this.#keptValues, this.#keptHashes, this.#keptLines, kept, firsts);
    }
    const checkSuppressed = suppression !== null && !this.keyed;
    let k = 0;
    for (let i = 0; i < n; i++) {
      const result = this.#results[i]!;
      if (checkSuppressed && suppressed[i] === 1) {
        this.skip(
          'suppressed',
          lines[i]!,
          this.#ks[i]!,
          'SUPPRESSED',
          REASONS.SUPPRESSED.message,
          this.#raws[i]!,
          result.number,
        );
        continue;
      }
      const first = firsts[k++]!;
      // Not suppressed, but nobody agreed to this channel: held back like SUPPRESSED.
      if (first === 0 && this.#consent !== null && !this.#consent.allows(result.number)) {
        const code = 'NO_CONSENT';
        this.skip(
          'suppressed',
          lines[i]!,
          this.#ks[i]!,
          code,
          REASONS[code].message,
          this.#raws[i]!,
          result.number,
        );
        continue;
      }
      this.#accept(lines[i]!, this.#ks[i]!, this.#raws[i]!, result, this.#msgs[i]!, this.#ids[i]!, first);
    }
  }

  /**
   * A staged recipient, once the duplicate index has answered (`first`: 0 new, else its
   * first line; 1 when items are not emitted, where that line is never shown).
   */
  #accept(
    line: number,
    k: number,
    raw: string,
    result: Valid,
    msg: PreparedMessage,
    messageId: string | null,
    first: number,
  ): void {
    if (first !== 0) {
      this.skip('duplicate', line, k, 'DUPLICATE', `already on line ${first}`, raw, result.number, first);
      return;
    }
    this.#summary.summary.valid++;
    this.channel!.accept(line, k, result, msg, messageId);
  }

  skip(
    kind: SkippedItem['kind'],
    line: number,
    k: number,
    code: ReasonCode,
    message: string,
    value: string,
    number: string | null = null,
    firstLine?: number,
  ): void {
    this.flush();
    if (this.emit) {
      const item: SkippedItem = { kind, line, k, code, message, value, number };
      if (firstLine !== undefined) item.firstLine = firstLine;
      this.batch.push(item);
    }
    const summary = this.#summary.summary;
    if (kind === 'invalid') {
      summary.invalid++;
      this.#summary.listIssue('errors', { line, code, message, hint: REASONS[code].hint, value });
    } else if (kind === 'duplicate') summary.duplicates++;
    else {
      summary.suppressed++;
      if (code === 'NO_CONSENT') summary.noConsent++;
    }
  }

  /** A record that is not read for recipients: counted, and an error. */
  recordError(line: number, code: ReasonCode, message: string, value: string): void {
    this.#summary.summary.records++;
    this.skip('invalid', line, 0, code, message, value);
  }

  /**
   * A message's warnings (`warnings`: msg's, or fewer: an RCS file's have no UCS2_MESSAGE);
   * `rcs`: LONG_MESSAGE as RCS has it (no segments).
   */
  warn(line: number, msg: PreparedMessage, warnings = msg.warnings, rcs = false): void {
    if (warnings === 0) return;
    this.flush();
    for (const [bit, code] of MESSAGE_WARNINGS) {
      if ((warnings & bit) === 0) continue;
      if (this.#summary.countedOnly(code, this.emit)) continue;
      const message = warningMessage(code, msg, rcs);
      if (this.emit) this.batch.push({ kind: 'warning', line, code, message });
      const hint = rcs && code === 'LONG_MESSAGE' ? RCS_LONG_HINT : REASONS[code].hint;
      this.#summary.listIssue('warnings', { line, code, message, hint });
    }
  }

  /** CONTROL_CHARS_REMOVED of an email record whose fields were made one line (oneLineFields). */
  warnFields(line: number): void {
    this.flush();
    const code = 'CONTROL_CHARS_REMOVED';
    if (this.#summary.countedOnly(code, this.emit)) return;
    const message =
      'line breaks and control characters were removed from the fields (an email subject is one line)';
    if (this.emit) this.batch.push({ kind: 'warning', line, code, message });
    this.#summary.listIssue('warnings', { line, code, message, hint: REASONS[code].hint });
  }

  /** The record's messageId column: false when it makes the record invalid (skipped). */
  idAccepted(line: number, id: string | null): boolean {
    if (id === null) return true;
    if (id.length > MESSAGE_ID_MAX) {
      this.skip(
        'invalid',
        line,
        0,
        'INVALID_MESSAGE_ID',
        `the messageId has ${id.length} characters (at most 64)`,
        id,
      );
      return false;
    }
    this.#messageIds ??= new MessageIdIndex(this.#lineEstimate);
    const first = this.#messageIds.add(id, line);
    if (first !== 0) {
      this.skip(
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
  }
}
