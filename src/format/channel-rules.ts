// What a channel's record rules are (docs/architecture.md "The reader"): the parts of
// reading a drop file that differ by channel. The record parser calls them at the file's
// start, at its header and for each record; the recipient stager calls `accept` for each
// recipient the duplicate index lets through.
import type { ReasonCode, TextParams } from '../errors.ts';
import type { Layout, LayoutChoice } from './layout.ts';
import type { ReadOptions } from './read-types.ts';
import type { AcceptRecipient, RecipientStager } from './recipient-stager.ts';
import type { SummaryBuilder } from './summary-builder.ts';
import type { TemplateColumns } from './template.ts';

/** What the record parser knows of the file so far (RecordParser implements it). */
export interface ParserState {
  /** start: before the first data line; message: a bulk file's message record is next. */
  mode: 'start' | 'message' | 'records';
  readonly layout: Layout;
  readonly sep: string | null;
  readonly messageCol: number;
  readonly idCol: number;
  readonly columns: TemplateColumns | null;
  /** Which fields of the last headed record were quoted, and where they start in its text. */
  readonly csvQuoted: readonly boolean[];
  readonly csvStarts: readonly number[];
  /** The record's bytes when its text is them exactly, the text starting at lineAt (else null). */
  readonly recordBytes: Uint8Array | null;
  readonly lineAt: number;
  /** The separator decided by `text` (docs/format.md "Separator and quotes"), as the summary gives it. */
  detectSeparator(text: string): void;
}

/** The reader's parts a channel's rules work with, for one file. */
export interface ReadContext {
  readonly options: ReadOptions;
  readonly parser: ParserState;
  readonly stager: RecipientStager;
  readonly summary: SummaryBuilder;
}

export interface RecordRules extends AcceptRecipient {
  /** Email addresses: the layout is told by an address column; keyed, never suppressed. */
  readonly addresses: boolean;
  /** A headless personalized line is read as CSV fields (WhatsApp: the number, its parameters). */
  readonly headlessCsv: boolean;
  /**
   * A header's message column: a text sent ('text'), a column `#! message:` may name like any
   * other ('named'), or not looked for ('none').
   */
  readonly messageColumn: 'text' | 'named' | 'none';
  /** The layout the file is read with, from the one chosen as docs/format.md "How dropline tells the layouts apart" says. */
  layout(text: string, choice: LayoutChoice): LayoutChoice;
  /** The first data line (its layout and header decided): what the file sends, the mode. */
  start(text: string, lineNo: number): void;
  /** After the parser has read the header's columns. */
  header(lineNo: number): void;
  /** A bulk file's message record (docs/format.md "Bulk layout: one message, many numbers"; only when start set the mode 'message'). */
  message(line: number, text: string, parsed: { message: string; quoted: boolean }): void;
  /** The bulk file has no usable message: rejected, its numbers still read for the counts. */
  noMessage(detail?: string, code?: ReasonCode, hint?: string, params?: TextParams): void;
  /** A line of a bulk file (a list of numbers or addresses). */
  numbers(line: number, text: string): void;
  /** A record of a personalized file without a header (records.ts parsed it). */
  headless(line: number, text: string, parsed: unknown): void;
  /** A record of a headed file: its fields and its messageId (null: none). */
  headed(line: number, fields: string[], id: string | null): void;
}
