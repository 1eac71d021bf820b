// The reader's summary (docs/format.md "The summary"): counts, countries, templates listed,
// errors and warnings listed up to a limit, and the verdict. The record parser and the
// recipient stager report to it; readDropFile yields what it holds at the end.
import { REASONS, type ReasonCode, type TextParams } from '../errors.ts';
import { noDirectives } from './directives.ts';
import type { PreparedMessage } from './message.ts';
import { type Issue, type ReadSummary, TEMPLATES_LISTED, type TransliterateMode } from './read-types.ts';
import type { Template } from './template.ts';

export class SummaryBuilder {
  readonly summary: ReadSummary;
  readonly #maxListed: number;
  readonly #countries = new Map<string, number>();
  readonly #countrySegments = new Map<string, number>();
  // Runs of the same country (a file is mostly one) are counted here and added to the map
  // when the country changes: two map operations a recipient were measurable.
  #runCountry = '';
  #runCount = 0;
  #runSegments = 0;
  /** Templates already listed in summary.templates (by text: a cleared cache forgets). */
  readonly #listedTemplates = new Set<string>();
  /** The template listed last: most records of a file use the one before them (no Set lookup). */
  #lastListed: Template | null = null;

  constructor(maxListed: number, mode: TransliterateMode) {
    this.#maxListed = maxListed;
    this.summary = {
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
      noConsent: 0,
      segments: 0,
      encodings: { gsm7: 0, ucs2: 0 },
      countries: {},
      segmentsByCountry: {},
      transliteration: { mode, segmentsAsWritten: 0, segmentsTransliterated: 0, recipientsChanged: 0 },
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
  }

  /**
   * The file is rejected: the first reason found is the one given. `params`: what `detail`
   * says beyond the code (its `line`, its figures), kept with the file's reason for a page to
   * word it (docs/dashboard.md "Codes and languages").
   */
  reject(code: ReasonCode, detail?: string, hint?: string, params: TextParams = {}): void {
    if (this.summary.rejection) return;
    const info = REASONS[code];
    this.summary.rejection = { code, message: detail ?? info.message, hint: hint ?? info.hint, params };
  }

  listIssue(list: 'errors' | 'warnings', issue: Issue): void {
    const summary = this.summary;
    const counts = list === 'errors' ? summary.errorCounts : summary.warningCounts;
    counts[issue.code] = (counts[issue.code] ?? 0) + 1;
    if (summary[list].length < this.#maxListed) summary[list].push(issue);
    else if (list === 'errors') summary.errorsTruncated = true;
    else summary.warningsTruncated = true;
  }

  /** Whether a warning is past the listed ones, then counted here (its text is never needed). */
  countedOnly(code: ReasonCode, emit: boolean): boolean {
    const summary = this.summary;
    if (emit || summary.warnings.length < this.#maxListed) return false;
    summary.warningCounts[code] = (summary.warningCounts[code] ?? 0) + 1;
    summary.warningsTruncated = true;
    return true;
  }

  /** A valid recipient of `country`, sent `segments` segments. */
  country(country: string, segments: number): void {
    if (country !== this.#runCountry) {
      this.#flushCountry();
      this.#runCountry = country;
    }
    this.#runCount++;
    this.#runSegments += segments;
  }

  /** A valid SMS recipient: its segments, encoding and transliteration counts, its country. */
  text(country: string, msg: PreparedMessage): void {
    const summary = this.summary;
    const translit = summary.transliteration;
    const segments = msg.segments.segments;
    summary.segments += segments;
    translit.segmentsAsWritten += msg.asWritten;
    translit.segmentsTransliterated += msg.transliterated;
    if (msg.changed) translit.recipientsChanged++;
    if (msg.segments.encoding === 'gsm7') summary.encodings.gsm7++;
    else summary.encodings.ucs2++;
    this.country(country, segments);
  }

  /** The first record that used a template gives its example (summary.templates): not yet given. */
  wantsExample(t: Template, fileTemplate: Template | null): boolean {
    return (
      t !== this.#lastListed &&
      this.summary.templates.length < TEMPLATES_LISTED &&
      !this.#listedTemplates.has(t.source) &&
      (t.placeholders > 0 || t === fileTemplate)
    );
  }

  addExample(t: Template, line: number, text: string): void {
    this.#lastListed = t;
    this.#listedTemplates.add(t.source);
    this.summary.templates.push({ line, template: t.source, example: text });
  }

  /** A count the file announced (trailer, `#! expect:`) against the records read. */
  checkCount(what: string, line: number, count: number | null): void {
    const records = this.summary.records;
    if (count !== null && count !== records)
      this.reject(
        'TRAILER_MISMATCH',
        `${what} on line ${line} says ${count} records, the file has ${records}`,
      );
  }

  /**
   * The end of the file: countries largest first, then the verdict (docs/format.md "When the whole
   * file is rejected (nothing is sent)").
   */
  finish(maxInvalidRatio: number): ReadSummary {
    const summary = this.summary;
    this.#flushCountry();
    summary.countries = Object.fromEntries([...this.#countries].sort((a, b) => b[1] - a[1]));
    summary.segmentsByCountry = Object.fromEntries([...this.#countrySegments].sort((a, b) => b[1] - a[1]));
    if (summary.records === 0 && !summary.rejection) this.reject('EMPTY_FILE');
    const judged = summary.valid + summary.invalid;
    if (judged > 0 && summary.invalid / judged > maxInvalidRatio) {
      const percent = ((100 * summary.invalid) / judged).toFixed(1);
      const limit = (100 * maxInvalidRatio).toFixed(1);
      this.reject(
        'TOO_MANY_INVALID',
        `${summary.invalid} of ${judged} recipients are invalid (${percent}%, the limit is ${limit}%)`,
        undefined,
        { invalid: summary.invalid, judged, percent: Number(percent), limit: Number(limit) },
      );
    }
    summary.accepted = summary.rejection === null;
    return summary;
  }

  #flushCountry(): void {
    if (this.#runCount > 0) {
      const c = this.#runCountry;
      this.#countries.set(c, (this.#countries.get(c) ?? 0) + this.#runCount);
      this.#countrySegments.set(c, (this.#countrySegments.get(c) ?? 0) + this.#runSegments);
    }
    this.#runCount = 0;
    this.#runSegments = 0;
  }
}
