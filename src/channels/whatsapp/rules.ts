// WhatsApp files' record rules (docs/format.md "WhatsApp files"): numbers
// and an approved template's parameters, from `#! message:`, the numbered columns of a
// header, or the fields after the number of a headless line.

import type { RecordRules } from '../../format/channel-rules.ts';
import { hashString } from '../../format/dedupe.ts';
import { type LayoutChoice, layoutFromName } from '../../format/layout.ts';
import { isNumber, NO_TEXT, type PreparedMessage } from '../../format/message.ts';
import { type NumberResult, normalizeNumber } from '../../format/numbers.ts';
import { splitNumbers } from '../../format/records.ts';
import {
  compileTemplate,
  joinTemplate,
  type Template,
  type TemplateColumns,
  templateValues,
} from '../../format/template.ts';
import { numberedColumns, splitParameters } from '../../format/whatsapp.ts';
import { BaseRules } from '../base-rules.ts';

export class WhatsAppRules extends BaseRules implements RecordRules {
  readonly addresses = false;
  readonly headlessCsv = true;
  readonly messageColumn = 'named';
  /** A WhatsApp file's `#! message:` parameters, each a template (null: numbered columns or fields). */
  #params: Template[] | null = null;
  /** Otherwise the column of each parameter: the header's `1` … `n`, or fields 2 … of a headless line. */
  #cols: number[] = [];
  /** A headless WhatsApp file: the parameters of every line, as many as its first line has (-1: not yet). */
  #count = -1;
  /** How the parameters are read (summary.templates), and whether its example is given. */
  #description = '';
  #exampleGiven = false;
  /** The parameters of the last record (reused). */
  readonly #values: string[] = [];

  /**
   * docs/format.md "How dropline tells the layouts apart", for a WhatsApp file, which has no message record: a first line whose every
   * field is a number is a list of numbers (bulk), not a number and its parameters, unless the
   * source's layout or the file's name says personalized.
   */
  override layout(text: string, choice: LayoutChoice): LayoutChoice {
    if (choice.layout !== 'personalized' || choice.header) return choice;
    if ((this.options.layout ?? layoutFromName(this.options.name)) !== null) return choice;
    const tokens = splitNumbers(text);
    return tokens.length > 0 && tokens.every((t) => isNumber(normalizeNumber(t, this.numberRules)))
      ? { layout: 'bulk', header: false }
      : choice;
  }

  /**
   * A header (the number column, then the parameters' columns), a headless personalized file
   * (the number, then its parameters), or lists of numbers (no message record: every
   * recipient gets the same parameters, from `#! message:` or none).
   */
  start(text: string, lineNo: number): void {
    const summary = this.summary.summary;
    const d = summary.directives;
    this.#content();
    this.parser.mode = 'records';
    if (summary.header) {
      // The header (header()) says where the parameters come from.
      this.parser.detectSeparator(text);
      return;
    }
    if (this.parser.layout === 'bulk') {
      const values: string[] = [];
      if (d.message) {
        // No columns: a placeholder is UNKNOWN_PLACEHOLDER; the constant parts are the parameters.
        for (const t of this.#parameters(d.message, null)) values.push(t.literals.join(''));
      }
      const json = JSON.stringify(values);
      this.bulkMessage = { ...NO_TEXT, text: json, empty: false };
      this.#exampleGiven = true;
      summary.templates.push({ line: lineNo, template: this.#description, example: json });
      return;
    }
    if (d.message)
      this.summary.reject(
        'BAD_DIRECTIVE',
        `line ${d.message.line}: \`#! message:\` maps the columns of a WhatsApp file with a header line (number column, then the columns its placeholders name), or gives a list of numbers its parameters; in this file without a header the fields after the number are the parameters`,
        undefined,
        { line: d.message.line },
      );
    this.parser.detectSeparator(text);
  }

  /** The header: `#! message:`'s columns, else the numbered columns. */
  header(lineNo: number): void {
    const summary = this.summary.summary;
    const d = summary.directives;
    const names = summary.columns ?? [];
    if (d.message) {
      this.#params = this.#parameters(d.message, this.parser.columns);
      return;
    }
    const messageCol = this.parser.messageCol;
    if (messageCol >= 0) {
      const origin = d.channel
        ? `\`#! channel: whatsapp\` on line ${d.channel.line}`
        : 'its source sends whatsapp';
      this.summary.reject(
        'BAD_DIRECTIVE',
        `line ${lineNo}: column ${messageCol + 1} \`${names[messageCol]}\` is a message text, which a WhatsApp file never sends (${origin}): it sends an approved template and its parameters`,
        'name the parameter columns 1, 2, … in the order of the template, or map columns to parameters with `#! message: {{nombre}} | {{saldo}}` (docs/format.md "WhatsApp files")',
        { line: lineNo },
      );
    }
    const numbered = numberedColumns(names);
    if (numbered.problem !== null)
      this.summary.reject(
        'UNKNOWN_PLACEHOLDER',
        `line ${lineNo}: ${numbered.problem}`,
        "name the parameter columns 1, 2, … n without a gap (the template's {{1}} … {{n}}), or map columns to parameters with `#! message:`",
        { line: lineNo },
      );
    this.#cols = numbered.cols;
    this.#description = this.#cols.map((_, p) => `{{${p + 1}}}`).join(' | ');
  }

  /** Never called: a WhatsApp file has no message record (start sets the mode 'records'). */
  message(): void {}

  /**
   * A headless line: its fields after the number are the parameters; the first line sets how
   * many every line has (more: TOO_MANY_FIELDS; fewer: MISSING_FIELD). One trailing SEP is
   * dropped, as docs/format.md "Separator and quotes" drops it from a message.
   */
  headless(line: number, text: string, parsed: unknown): void {
    const fields = parsed as string[];
    const last = fields.length - 1;
    if (last > 0 && fields[last] === '' && this.parser.csvQuoted[last] !== true) fields.pop();
    const n = fields.length - 1;
    if (this.#count < 0) {
      this.#count = n;
      this.#cols = Array.from({ length: n }, (_, p) => p + 1);
      this.#description =
        n === 0 ? '' : n === 1 ? 'field 2 of each line' : `fields 2 to ${n + 1} of each line`;
    }
    if (n > this.#count) {
      this.stager.recordError(
        line,
        'TOO_MANY_FIELDS',
        `the line has ${n} parameters after the number, the first line ${this.#count} (quote a parameter that holds the separator)`,
        text.slice(0, 40),
      );
      return;
    }
    this.headed(line, fields, null);
  }

  /**
   * A record with its fields (a headed line, or a headless one: the number, then its
   * parameters). Its parameters, in the template's order: the `#! message:` parameters
   * merged with the line's columns, or the numbered columns (headed), or the fields after the
   * number (headless). Check order as a headed SMS line: the messageId, then the number, then
   * MISSING_FIELD (a parameter without a value).
   */
  headed(line: number, fields: string[], id: string | null): void {
    const summary = this.summary.summary;
    summary.records++;
    const number = fields[0] ?? '';
    const csvQuoted = this.parser.csvQuoted;
    const columns = this.parser.columns;
    const values = this.#values;
    values.length = 0;
    let missing: string | null = null;
    let missingValue = '';
    const params = this.#params;
    if (params !== null) {
      for (let p = 0; p < params.length && missing === null; p++) {
        const t = params[p]!;
        const m = templateValues(t, fields, csvQuoted, this.inserted);
        if (m >= 0) {
          missingValue = t.written[m]!;
          missing = `parameter ${p + 1} uses ${missingValue} but this line has no value in column ${columns?.names[t.cols[m]!] ?? ''}`;
        } else values.push(joinTemplate(t, this.inserted));
      }
    } else {
      const cols = this.#cols;
      for (let p = 0; p < cols.length; p++) {
        const c = cols[p]!;
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
    const stager = this.stager;
    if (!stager.idAccepted(line, id)) return;
    const result = normalizeNumber(number, this.numberRules);
    if (result.ok && missing !== null) {
      stager.skip('invalid', line, 0, 'MISSING_FIELD', missing, missingValue, result.number);
      return;
    }
    if (missing !== null || !result.ok) {
      stager.recipient(line, 0, number, result, NO_TEXT, id, 0);
      return;
    }
    const text = JSON.stringify(values);
    if (!this.#exampleGiven) {
      this.#exampleGiven = true;
      summary.templates.push({ line, template: this.#description, example: text });
    }
    stager.recipient(line, 0, number, result, { ...NO_TEXT, text, empty: false }, id, hashString(text) || 1);
  }

  /** No segments or encodings: a template (its text is the parameters); its country is counted. */
  accept(
    line: number,
    k: number,
    result: Extract<NumberResult, { ok: true }>,
    msg: PreparedMessage,
    messageId: string | null,
  ): void {
    this.summary.country(result.country, 0);
    this.stager.emitRecipient(line, k, result, result.country, msg.text, messageId, 0, 'gsm7');
  }

  /**
   * What the file sends: its `#! templateId:` (else its source's), from its `#! source:`
   * number (else its source's, else the account's own: null). No template: NO_MESSAGE.
   */
  #content(): void {
    const d = this.summary.summary.directives;
    const o = this.options.whatsapp ?? {};
    const templateId = d.templateId?.id ?? (o.templateId || null);
    const source = d.source?.number ?? (o.source ? o.source.replace(/^\+/, '') : null);
    if (templateId === null) {
      this.summary.reject(
        'NO_MESSAGE',
        "a WhatsApp file needs a template: `#! templateId:` or its source's `whatsapp.templateId`",
        'add `#! templateId: <id>` (a template approved for the WhatsApp account), or set whatsapp.templateId in the source settings',
      );
      return;
    }
    this.summary.summary.whatsapp = { templateId, source };
  }

  /**
   * `#! message:`: its parameters separated by `|` (`||` a literal `|`), each a template
   * (docs/format.md "Templates") whose placeholders must name columns (UNKNOWN_PLACEHOLDER).
   */
  #parameters(directive: { line: number; template: string }, cols: TemplateColumns | null): Template[] {
    this.#description = directive.template;
    const out: Template[] = [];
    const parts = splitParameters(directive.template);
    for (let p = 0; p < parts.length; p++) {
      if (parts[p]!.length === 0)
        this.summary.reject(
          'BAD_DIRECTIVE',
          `line ${directive.line}: parameter ${p + 1} of \`#! message:\` is empty (parameters are separated by |; a literal | is written ||)`,
          undefined,
          { line: directive.line },
        );
      const t = compileTemplate(parts[p]!, cols);
      if (t.problem !== null)
        this.summary.reject(
          'UNKNOWN_PLACEHOLDER',
          `line ${directive.line}: parameter ${p + 1}: ${t.problem}`,
          t.hint ?? undefined,
          { line: directive.line },
        );
      out.push(t);
    }
    return out;
  }
}
