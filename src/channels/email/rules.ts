// Email files' record rules (docs/format.md "Email files"): addresses, a
// header whose other columns are each recipient's fields, and the content from the file's
// directives or its source: a stored template, or a subject and an HTML body.

import type { RecordRules } from '../../format/channel-rules.ts';
import { hashString } from '../../format/dedupe.ts';
import { normalizeEmail } from '../../format/email.ts';
import { NO_TEXT, oneLineFields, type PreparedMessage } from '../../format/message.ts';
import type { NumberResult } from '../../format/numbers.ts';
import { hasSeparatorOrQuote, splitNumbers } from '../../format/records.ts';
import { compileTemplate, joinTemplate, type Template, templateValues } from '../../format/template.ts';
import { BaseRules } from '../base-rules.ts';

export class EmailRules extends BaseRules implements RecordRules {
  readonly addresses = true;
  readonly headlessCsv = false;
  readonly messageColumn = 'none';
  /** The subject and HTML body templates that have placeholders (MISSING_FIELD). */
  readonly #templates: Template[] = [];
  /** The first of #templates is the subject. */
  #subjectMerged = false;

  /** A header with its fields, or lists of addresses (no message record). */
  start(text: string, _lineNo: number): void {
    const d = this.summary.summary.directives;
    if (d.message)
      this.summary.reject(
        'BAD_DIRECTIVE',
        `line ${d.message.line}: an email file is sent \`#! subject:\` with its source's html body, or \`#! templateId:\`; \`#! message:\` is for sms`,
        undefined,
        { line: d.message.line },
      );
    this.parser.mode = 'records';
    if (this.summary.summary.header) {
      this.parser.detectSeparator(text);
    } else {
      this.bulkMessage = NO_TEXT;
      this.#content();
    }
  }

  header(_lineNo: number): void {
    this.#content();
  }

  /** Never called: an email file has no message record (start sets the mode 'records'). */
  message(): void {}

  override numbers(line: number, text: string): void {
    this.summary.summary.records++;
    const tokens = hasSeparatorOrQuote(text) ? splitNumbers(text) : [text];
    for (let k = 0; k < tokens.length; k++) this.#recipient(line, k + 1, tokens[k]!, null, null);
  }

  /** Never called: an email file is headed or lists addresses (chooseLayout). */
  headless(line: number, text: string): void {
    this.numbers(line, text);
  }

  headed(line: number, fields: string[], id: string | null): void {
    this.summary.summary.records++;
    if (this.stager.idAccepted(line, id)) this.#recipient(line, 0, fields[0] ?? '', id, fields);
  }

  /** No segments or encodings: an email's text is the recipient's fields; no country. */
  accept(
    line: number,
    k: number,
    result: Extract<NumberResult, { ok: true }>,
    msg: PreparedMessage,
    messageId: string | null,
  ): void {
    this.stager.emitRecipient(line, k, result, '', msg.text, messageId, 0, 'gsm7');
  }

  /**
   * One address. `fields`: the headed record's, sent as the recipient's `fields` (every
   * column but the address and the messageId, by header name as written; the leftmost column
   * wins a name), which the subject's and body's placeholders need non-empty
   * (MISSING_FIELD); null on an address list.
   */
  #recipient(
    line: number,
    k: number,
    raw: string,
    id: string | null,
    fields: readonly string[] | null,
  ): void {
    const stager = this.stager;
    const r = normalizeEmail(raw);
    if (!r.ok) {
      stager.skip('invalid', line, k, 'INVALID_EMAIL', r.message, raw);
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
        stager.warnFields(line);
      }
      const csvQuoted = this.parser.csvQuoted;
      for (const t of this.#templates) {
        const missing = templateValues(t, fields, csvQuoted, this.inserted);
        if (missing >= 0) {
          const column = this.parser.columns?.names[t.cols[missing]!] ?? '';
          const placeholder = t.written[missing]!;
          const message = `the email uses ${placeholder} but this line has no value in column ${column}`;
          stager.skip('invalid', line, k, 'MISSING_FIELD', message, placeholder, r.address);
          return;
        }
        // The subject merged, as an example (the body may be long).
        if (t === this.#templates[0] && this.#subjectMerged && this.summary.wantsExample(t, null))
          this.summary.addExample(t, line, joinTemplate(t, this.inserted));
      }
      const names = this.summary.summary.columns ?? [];
      const idCol = this.parser.idCol;
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
    // An address has no numeric value: its key is two hashes of it (RecipientStager.recipient).
    stager.recipient(line, k, raw, { ok: true, number: r.address, country: '', value: -1 }, msg, id, hash);
  }

  /**
   * What an email file sends: the file's `#! templateId:`, else its `#! subject:` with the
   * source's html body, else the source's templateId, or its subject and html. Placeholders of
   * the subject and body must name columns (UNKNOWN_PLACEHOLDER); none sent: NO_MESSAGE.
   */
  #content(): void {
    const summary = this.summary;
    const d = summary.summary.directives;
    const o = this.options.email ?? {};
    if (d.templateId && d.subject)
      summary.reject(
        'BAD_DIRECTIVE',
        `line ${d.subject.line}: \`#! subject:\` does nothing with \`#! templateId:\` (the template's own subject applies)`,
        undefined,
        { line: d.subject.line },
      );
    const templateId = d.templateId?.id ?? (d.subject ? null : (o.templateId ?? null));
    if (templateId !== null) {
      summary.summary.email = { templateId, subject: null, html: null };
      return;
    }
    const subject = d.subject?.template ?? o.subject ?? null;
    const html = o.html ?? null;
    if (subject === null || html === null) {
      summary.reject(
        'NO_MESSAGE',
        "an email file needs `#! templateId:`, or a subject (`#! subject:` or its source's `email.subject`) and its source's `email.html` body",
        'add `#! templateId: <id>` (a template stored on the service), or `#! subject:` with an html body in the source settings',
      );
      return;
    }
    summary.summary.email = { templateId: null, subject, html };
    const parts: [string, string, number | undefined][] = [
      ['the subject', subject, d.subject?.line],
      ["the source's html body", html, undefined],
    ];
    for (const [what, source, line] of parts) {
      const t = compileTemplate(source, this.parser.columns);
      if (t.problem !== null)
        summary.reject(
          'UNKNOWN_PLACEHOLDER',
          `${line === undefined ? '' : `line ${line}: `}${what}: ${t.problem}`,
          t.hint ?? undefined,
          line === undefined ? {} : { line },
        );
      if (t.placeholders > 0) {
        if (this.#templates.length === 0 && source === subject) this.#subjectMerged = true;
        this.#templates.push(t);
      }
    }
  }
}
