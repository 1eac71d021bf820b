// What the channels' record rules share: the parts of the reader they use, the bulk
// message (or its absence) and a line that lists numbers.
import type { ReasonCode, TextParams } from '../errors.ts';
import type { ParserState, ReadContext } from '../format/channel-rules.ts';
import type { LayoutChoice } from '../format/layout.ts';
import { NO_TEXT, type PreparedMessage } from '../format/message.ts';
import { type NumberRules, normalizeNumber } from '../format/numbers.ts';
import type { ReadOptions } from '../format/read-types.ts';
import type { RecipientStager } from '../format/recipient-stager.ts';
import { hasSeparatorOrQuote, splitNumbers } from '../format/records.ts';
import type { SummaryBuilder } from '../format/summary-builder.ts';

export abstract class BaseRules {
  protected readonly options: ReadOptions;
  protected readonly parser: ParserState;
  protected readonly stager: RecipientStager;
  protected readonly summary: SummaryBuilder;
  protected readonly numberRules: NumberRules;
  /** What every recipient of a bulk file is sent (null: not read yet). */
  protected bulkMessage: PreparedMessage | null = null;
  /** The values the last merged template inserted (reused: no allocation per record). */
  protected readonly inserted: string[] = [];

  constructor(ctx: ReadContext) {
    this.options = ctx.options;
    this.parser = ctx.parser;
    this.stager = ctx.stager;
    this.summary = ctx.summary;
    this.numberRules = ctx.options.numberRules;
  }

  layout(_text: string, choice: LayoutChoice): LayoutChoice {
    return choice;
  }

  noMessage(detail?: string, code: ReasonCode = 'NO_MESSAGE', hint?: string, params?: TextParams): void {
    this.parser.mode = 'records';
    this.bulkMessage = NO_TEXT;
    this.summary.reject(code, detail, hint, params);
  }

  /** A line of numbers, each sent the bulk message (docs/format.md "Bulk layout: one message, many numbers"). */
  numbers(line: number, text: string): void {
    this.summary.summary.records++;
    const msg = this.bulkMessage ?? NO_TEXT;
    const rules = this.numberRules;
    if (!hasSeparatorOrQuote(text)) {
      this.stager.recipient(line, 1, text, normalizeNumber(text, rules), msg, null);
      return;
    }
    if (this.parser.sep === null) this.parser.detectSeparator(text);
    const tokens = splitNumbers(text);
    for (let k = 0; k < tokens.length; k++) {
      const raw = tokens[k]!;
      this.stager.recipient(line, k + 1, raw, normalizeNumber(raw, rules), msg, null);
    }
  }
}
