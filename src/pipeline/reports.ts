// What users read: the manifest (docs/contract.md "Manifest") and the CSV reports. Built from
// the store, streamed: a report of millions of rows never sits in memory.
import { type CodedText, hintOf } from '../errors.ts';
import type { Priority } from '../format/directives.ts';
import { baseName } from '../sources/source.ts';
import type {
  FileContent,
  FileCost,
  FileCounts,
  FileRecord,
  FileReply,
  ReportRow,
  StateDetail,
  Store,
} from '../store/store.ts';

export interface Manifest {
  fileId: string;
  source: string;
  path: string;
  name: string;
  sha256: string;
  bytes: number;
  bulkId: string;
  layout: string | null;
  encoding: string | null;
  separator: string | null;
  header: boolean;
  /** The file's `#! priority:` directive (docs/format.md "Directives"); null: its source's `priority` applies. */
  priority: Priority | null;
  state: string;
  reason: string | null;
  /**
   * The reason as its code and parameters (docs/dashboard.md "Codes and languages"); null
   * without a reason, or for one written before the store kept codes.
   */
  reasonCode: CodedText | null;
  forced: boolean;
  /**
   * The store's counts, in-flight chunks counted as pending, plus possibleDuplicates; and, for
   * a file sent from a short code, `replied`: its recipients who replied (docs/replies.md).
   */
  counts: Omit<FileCounts, 'chunksInflight'> & { possibleDuplicates: number; replied?: number };
  rejection: { code: string; message: string } | null;
  timestamps: Record<string, string>;
  deliveryDeadline: string | null;
  errors: { line: number; code: string; message: string; value?: string | undefined }[];
  /** Invalid records by code (every one, where `errors` lists the first 100). */
  errorCounts: Record<string, number>;
  /** When retention removed the file's rows (its counts are those of that moment); null: never. */
  prunedAt: string | null;
  /** The worker holding the file's lease (driving it, or checking its progress); null: none. */
  worker: string | null;
  /** The worker (dead or stalled) whose expired lease the file's last acquisition took. */
  takenOverFrom: string | null;
  /** The file's `#! sendAt:` (not before), ISO-8601; null: none. */
  sendAt: string | null;
  /** `scheduled`: when the file starts (the send window's next opening, or its sendAt). */
  scheduledUntil: string | null;
  /** The campaign's segments by country, and what transliteration to GSM-7 saves or would save. */
  cost: FileCost | null;
  /** An email file's shared attachments (attachments/<name>/ beside the inbox); null: none. */
  attachments: { name: string; bytes: number }[] | null;
  /** The channel the file is sent on (its source's, or its `#! channel:`); sms until it is read. */
  channel: FileContent['channel'];
  /** An sms file sent as flash SMS (`#! flash: true`). */
  flash: boolean;
  /** `sending`: what it waits on (a code and its parameters, docs/dashboard.md); else null. */
  detail: StateDetail | null;
  /**
   * Reports its source refused (reports/ unwritable, the server down), owed and tried again
   * with back-off until written; null: none owed (docs/runbook.md "Report pending").
   */
  reportPending: FileRecord['reportPending'];
}

function manifestCounts({ chunksInflight, ...c }: FileCounts): Omit<FileCounts, 'chunksInflight'> {
  return { ...c, chunksPending: c.chunksPending + chunksInflight };
}

/**
 * `replied`: the file's recipients who replied, counted for a file sent from a short code by
 * manifestOf; lists of manifests leave it out (one count a file is not worth a page).
 */
export function buildManifest(file: FileRecord, c: FileCounts, replied?: number): Manifest {
  return {
    fileId: file.fileId,
    source: file.source,
    path: file.path,
    name: file.name,
    sha256: file.sha256,
    bytes: file.bytes,
    bulkId: file.fileId,
    layout: file.layout,
    encoding: file.encoding,
    separator: file.separator,
    header: file.header,
    priority: file.priority,
    state: file.state,
    reason: file.reason,
    reasonCode: file.reasonCode,
    forced: file.forced,
    counts: {
      ...manifestCounts(c),
      // The ingest counts are the file's own (the caller may pass counts made before them),
      // less those held back when their chunk was sent (Store.holdBack).
      ...file.counts,
      valid: file.counts.valid - c.optedOut - c.contactLimited,
      suppressed: file.counts.suppressed + c.optedOut,
      possibleDuplicates: file.possibleDuplicates,
      // Only a file with a short code can be replied to: other manifests stay as they were.
      ...(file.shortCode === null || replied === undefined ? {} : { replied }),
    },
    rejection: file.rejection,
    timestamps: file.timestamps as Record<string, string>,
    deliveryDeadline: file.deliveryDeadline,
    errors: file.errors.map(maskIssue),
    errorCounts: file.errorCounts,
    prunedAt: file.prunedAt,
    worker: file.leaseOwner,
    takenOverFrom: file.takenOverFrom,
    sendAt: file.sendAt,
    scheduledUntil: file.state === 'scheduled' ? file.scheduledUntil : null,
    cost: file.cost,
    attachments: (file.content && 'attachments' in file.content && file.content.attachments) || null,
    channel: file.content?.channel ?? 'sms',
    flash: file.content !== null && 'flash' in file.content && file.content.flash === true,
    detail: file.state === 'sending' ? file.detail : null,
    reportPending: file.reportPending,
  };
}

/** A manifest's state detail in words, for status (the dashboard has its own, in two languages). */
export function detailText(d: StateDetail): string {
  return `service unreachable since ${d.since}, retrying (${d.error})`;
}

/**
 * `300 123 4567x` → `300 12* **567x`: every digit but the first five and the last three
 * masked, wherever spaces, letters or signs sit between them (the log form `57300****567`).
 */
export function maskDigits(text: string): string {
  const total = text.replace(/\D/g, '').length;
  if (total < 6) return text;
  let i = 0;
  return text.replace(/\d/g, (d) => {
    i++;
    return i <= 5 || i > total - 3 ? d : '*';
  });
}

/**
 * Raw invalid lines are personal data: the manifest (API, `status --json`, the dashboard,
 * reports/*.manifest.json) shows them masked. report.csv and errors.csv keep them whole:
 * they are the per-line account a campaign team fixes its file from.
 */
export function maskIssue<T extends { message: string; value?: string | undefined }>(e: T): T {
  if (e.value === undefined || e.value === null || e.value === '') return e;
  const value = maskDigits(e.value);
  return { ...e, value, message: maskNumbersIn(e.message.replaceAll(e.value, value)) };
}

/** Phone-number-shaped runs (8 digits or more, spaces and dashes allowed) in free text. */
function maskNumbersIn(text: string): string {
  return text.replace(/\+?\d[\d -]{6,}\d/g, (run) => maskDigits(run));
}

export async function manifestOf(store: Store, fileId: string): Promise<Manifest | null> {
  const file = await store.getFile(fileId);
  if (!file) return null;
  const replied = file.shortCode === null ? undefined : (await store.replyCounts(fileId)).replied;
  return buildManifest(file, await store.counts(fileId), replied);
}

/** What a spreadsheet would evaluate as a formula (OWASP "CSV injection"). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One CSV cell. A text that a spreadsheet would run as a formula gets a leading `'`
 * (docs/contract.md "Reports": every value starting with `= + - @`, TAB or CR, so a partner's
 * line can never execute in whoever opens the report; `+57 300…` as written in a file too).
 */
export function csvCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  let s = String(value);
  if (typeof value === 'string' && FORMULA_START.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** The contract's columns, then `detail` (what the code means for this row: `already on line 8`). */
export const REPORT_HEADER =
  'line,number,messageId,outcome,code,status,transactionNumber,smsCount,updatedAt,detail';
/** The contract's columns, then `hint` (what to do about the code, as docs/errors.md says). */
export const ERRORS_HEADER = 'line,code,message,value,hint';

function reportLine(r: ReportRow): string {
  const status = r.outcome === 'sent' || r.outcome === 'in_doubt' ? r.status : '';
  return [
    r.line,
    csvCell(r.number ?? r.value),
    csvCell(r.messageId),
    r.outcome,
    csvCell(r.code),
    csvCell(status),
    csvCell(r.transactionNumber),
    r.smsCount ?? '',
    r.updatedAt,
    csvCell(r.detail),
  ].join(',');
}

/**
 * `<name>.<fileId>.report.csv`: one row per record of the file, in file order. `includeText`
 * (the configuration's `report.includeText`: texts may be personal) adds the text sent to each
 * valid recipient, merged, as a column `text`. A file sent from a short code ends each row with
 * its recipient's first reply and when it came, `reply` and `repliedAt` (docs/replies.md).
 */
export async function* reportCsv(
  store: Store,
  fileId: string,
  options: { includeText?: boolean } = {},
): AsyncGenerator<string> {
  const file = await store.getFile(fileId);
  const replies = file?.shortCode == null ? null : await firstReplies(store, fileId);
  const replyCells = (r: ReportRow): string => {
    if (replies === null) return '';
    // The row the reply was joined to: sent, on its line, to the number that replied.
    const first = r.outcome === 'sent' ? replies.get(`${r.line}:${r.number}`) : undefined;
    return first ? `,${csvCell(first.text)},${first.receivedAt}` : ',,';
  };
  const replyHeader = replies === null ? '' : ',reply,repliedAt';
  if (!options.includeText) {
    yield `${REPORT_HEADER}${replyHeader}\n`;
    for await (const page of store.reportPages(fileId)) {
      let buf = '';
      for (const r of page) buf += `${reportLine(r)}${replyCells(r)}\n`;
      yield buf;
    }
    return;
  }
  yield `${REPORT_HEADER},text${replyHeader}\n`;
  const bulk = file?.layout === 'bulk';
  // A bulk file's one message is kept on the file, not on its rows.
  const message = bulk ? file.bulkText : null;
  for await (const page of store.recipientPages(fileId)) {
    let buf = '';
    for (const r of page) {
      const text = r.chunkSeq === null ? null : bulk ? message : r.text;
      buf += `${reportLine(r)},${csvCell(text)}${replyCells(r)}\n`;
    }
    yield buf;
  }
}

/** Each replying recipient's first reply, by `line:number`: as many entries as recipients replied. */
async function firstReplies(store: Store, fileId: string): Promise<Map<string, FileReply>> {
  const first = new Map<string, FileReply>();
  for (const r of await store.fileReplies(fileId)) {
    const key = `${r.line}:${r.from}`;
    if (!first.has(key)) first.set(key, r);
  }
  return first;
}

/**
 * `<name>.<fileId>.errors.csv`: the file-level rejection first (line 0) when there is one, then
 * every invalid record.
 */
export async function* errorsCsv(store: Store, file: FileRecord): AsyncGenerator<string> {
  yield `${ERRORS_HEADER}\n`;
  const { rejection } = file;
  if (rejection)
    yield `0,${rejection.code},${csvCell(rejection.message)},,${csvCell(hintOf(rejection.code))}\n`;
  for await (const page of store.recipientPages(file.fileId, ['invalid'])) {
    let buf = '';
    for (const r of page)
      buf += `${r.line},${csvCell(r.code)},${csvCell(r.detail)},${csvCell(r.value)},${csvCell(hintOf(r.code))}\n`;
    yield buf;
  }
}

export type ReportKind = 'report.csv' | 'manifest.json' | 'errors.csv';

/**
 * Longest report name, in bytes: NAME_MAX (255) less what the sources add for the temp
 * name they write first (`.` + `.<pid>.<8 hex>.tmp`, 22 bytes at most).
 */
const REPORT_NAME_MAX = 230;

/**
 * `<name>.<fileId>.report.csv` (or `.manifest.json`, `.errors.csv`): the fileId makes two
 * campaigns of one name (or of names a case-insensitive store folds together) never share a
 * report. A name too long for that is cut at a character boundary; the fileId is kept.
 */
export function reportFileName(name: string, fileId: string, kind: ReportKind): string {
  const tail = `.${fileId}.${kind}`;
  return `${cutToBytes(baseName(name), REPORT_NAME_MAX - Buffer.byteLength(tail))}${tail}`;
}

/** `text` cut to at most `max` UTF-8 bytes at a character boundary. */
export function cutToBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  let cut = '';
  let bytes = 0;
  for (const ch of text) {
    bytes += Buffer.byteLength(ch);
    if (bytes > max) break;
    cut += ch;
  }
  return cut;
}
