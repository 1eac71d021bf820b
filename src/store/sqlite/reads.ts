// The SQLite store's reads: files and their events, gauges, counts, reports owed, and the pages
// of recipients and report rows.

import type { SQLOutputValue } from 'node:sqlite';
import { assembleCounts, type ChunkGroup, type OwnGroup } from '../counts.ts';
import {
  FILE_EVENTS_LIMIT,
  foldName,
  num,
  str,
  strOrNull,
  toFile,
  toFileEvent,
  toRecipient,
  toReportRow,
} from '../mapping.ts';
import { idRange } from '../message-ids.ts';
import { GAUGE_FILES, GAUGE_IN_DOUBT } from '../shared-sql.ts';
import {
  type ChunkState,
  type FileCounts,
  type FileEvent,
  type FileRecord,
  type FileState,
  type ListFilesOptions,
  NOTHING_SENT,
  type RecipientOutcome,
  type RecipientRecord,
  type ReportRow,
  type StoreGauges,
  type StoreSummary,
} from '../store.ts';
import { list, type SqliteDb } from './connection.ts';
import * as S from './sql.ts';

export async function getFile(db: SqliteDb, fileId: string): Promise<FileRecord | null> {
  const r = db.stmt(S.FILE_BY_ID).get(fileId);
  return r ? toFile(r) : null;
}

export async function listFiles(db: SqliteDb, options: ListFilesOptions = {}): Promise<FileRecord[]> {
  // rowid breaks ties between files registered within one millisecond (insertion order).
  // The search: the name folded by the store's own function (connection.ts: SQLite's lower()
  // folds ASCII only), instr and substr comparing text as it is (no LIKE: % and _ are
  // plain). A scan of the files newest first until the page is full: ~11 ms at 20,000 files
  // when none matches, no index needed.
  return db
    .stmt(S.LIST_FILES)
    .all({
      source: options.source ?? null,
      states: list(options.states),
      search: options.search ? foldName(options.search) : null,
      before: options.before ?? null,
      limit: options.limit ?? -1,
    })
    .map(toFile);
}

export async function fileEvents(
  db: SqliteDb,
  fileId: string,
  limit = FILE_EVENTS_LIMIT,
): Promise<FileEvent[]> {
  // The newest `limit` by the index (file_id, id), then oldest first.
  return db
    .stmt(S.FILE_EVENTS)
    .all(fileId, Math.max(0, Math.trunc(limit)))
    .map(toFileEvent);
}

export async function gauges(db: SqliteDb): Promise<StoreGauges> {
  const files = db.stmt(GAUGE_FILES).all() as { state: FileState; n: number }[];
  const doubt = db.stmt(GAUGE_IN_DOUBT).get() as { n: number };
  return {
    files: Object.fromEntries(files.map((r) => [r.state, Number(r.n)])),
    chunksInDoubt: Number(doubt.n),
  };
}

export async function reportFailed(
  db: SqliteDb,
  fileId: string,
  backoff: { baseMs: number; maxMs: number },
): Promise<void> {
  const now = db.now();
  db.tx(() => {
    const row = db.stmt(S.REPORT_FAILURES).get(fileId);
    if (!row) return;
    const delay = Math.min(backoff.baseMs * 2 ** Math.min(num(row.report_failures), 40), backoff.maxMs);
    db.stmt(S.REPORT_FAILED).run({
      now,
      retry: new Date(Date.parse(now) + delay).toISOString(),
      file_id: fileId,
    });
  });
}

export async function oweReports(db: SqliteDb, fileId: string): Promise<void> {
  const now = db.now();
  db.stmt(S.OWE_REPORTS).run({ now, file_id: fileId });
}

export async function reportsWritten(db: SqliteDb, fileId: string): Promise<void> {
  db.stmt(S.REPORTS_WRITTEN).run(fileId);
}

export async function reportsDue(db: SqliteDb, limit: number): Promise<string[]> {
  return db
    .stmt(S.REPORTS_DUE)
    .all(db.now(), limit)
    .map((r) => str(r.file_id));
}

export async function counts(db: SqliteDb, fileId: string): Promise<FileCounts> {
  return countsNow(db, fileId);
}

export async function countsOf(db: SqliteDb, fileIds: readonly string[]): Promise<Map<string, FileCounts>> {
  const out = new Map<string, FileCounts>();
  // In-process, a file's counts are a few indexed reads with no round trip; one read
  // transaction gives the whole page one snapshot.
  db.db.exec('BEGIN');
  try {
    for (const r of db.stmt(S.KNOWN_FILES).all(JSON.stringify(fileIds)))
      out.set(str(r.file_id), countsNow(db, str(r.file_id)));
  } finally {
    db.db.exec('COMMIT');
  }
  return out;
}

export async function summary(db: SqliteDb, since: string): Promise<StoreSummary> {
  // One read transaction: the figures of one moment.
  db.db.exec('BEGIN');
  try {
    const r = db.stmt(S.SUMMARY).get(since)!;
    let waiting = 0;
    for (const f of db.stmt(S.SUMMARY_FILES).all()) waiting += countsNow(db, str(f.file_id)).pendingDelivery;
    return {
      sending: num(r.sending),
      sent: num(r.sent),
      delivered: num(r.delivered),
      undelivered: num(r.undelivered),
      waiting,
    };
  } finally {
    db.db.exec('COMMIT');
  }
}

/** counts(), synchronous: also read inside a transaction (prune keeps them). */
export function countsNow(db: SqliteDb, fileId: string): FileCounts {
  const file = db.stmt(S.FILE_COUNTS).get(fileId);
  // Counts pruned before a counter existed have none of it.
  if (file?.pruned_counts != null)
    return { ...NOTHING_SENT, ...(JSON.parse(str(file.pruned_counts)) as FileCounts) };
  const ingest = {
    records: num(file?.records ?? 0),
    valid: num(file?.valid ?? 0),
    invalid: num(file?.invalid ?? 0),
    duplicates: num(file?.duplicates ?? 0),
    suppressed: num(file?.suppressed ?? 0),
    segments: num(file?.segments ?? 0),
  };
  // One row per chunk state with the delivery counters of its chunks (migration 0006),
  // whatever the number of delivery reports.
  const n = db.fileNo(fileId);
  const chunks: ChunkGroup[] = db
    .stmt(S.CHUNK_COUNTS)
    .all({ fid: fileId, no: n })
    .map((r) => ({
      state: str(r.state) as ChunkState,
      chunks: num(r.n),
      size: num(r.size),
      reported: num(r.reported),
      delivered: num(r.delivered),
      unknown: num(r.unknown),
      accepted: num(r.accepted),
      reportedFollow: num(r.reported_follow),
      reportedSent: num(r.reported_sent),
    }));
  // Valid recipients only (chunk_seq set) with an outcome of their own: few (an index of
  // them), so a count of the file is a read of its chunks, not of a million rows.
  const { lo, hi } = n === null ? { lo: 1, hi: 0 } : idRange(n);
  const own: OwnGroup[] = db
    .stmt(S.OWN_COUNTS)
    .all(fileId, lo, hi)
    .map((r) => ({
      outcome: str(r.outcome),
      chunkState: strOrNull(r.state) as ChunkState | null,
      count: num(r.n),
    }));
  return assembleCounts(ingest, chunks, own);
}

export async function* reportPages(db: SqliteDb, fileId: string): AsyncGenerator<ReportRow[]> {
  const range = db.range(fileId);
  if (!range) return;
  const page = db.arrays(S.REPORT_PAGE);
  let after = range.lo - 1;
  for (;;) {
    // Keyset paging, as recipientPages.
    const rows = page.all({
      fid: fileId,
      after,
      hi: range.hi,
      limit: db.pageSize,
    }) as unknown as SQLOutputValue[][];
    if (rows.length > 0) {
      yield rows.map((r) => toReportRow(r, fileId));
      after = num(rows.at(-1)![0]);
    }
    if (rows.length < db.pageSize) return;
  }
}

export async function* recipients(
  db: SqliteDb,
  fileId: string,
  outcomes?: readonly RecipientOutcome[],
): AsyncGenerator<RecipientRecord> {
  for await (const page of recipientPages(db, fileId, outcomes)) yield* page;
}

export async function* recipientPages(
  db: SqliteDb,
  fileId: string,
  outcomes?: readonly RecipientOutcome[],
): AsyncGenerator<RecipientRecord[]> {
  const range = db.range(fileId);
  if (!range) return;
  const page = db.stmt(S.RECIPIENT_PAGE);
  const filter = list(outcomes);
  let after = range.lo - 1;
  for (;;) {
    // Keyset paging: each page is its own short read, so no read transaction (and no
    // WAL checkpoint block) is held while the consumer writes a report.
    const rows = page.all({ fid: fileId, after, hi: range.hi, outcomes: filter, limit: db.pageSize });
    if (rows.length > 0) yield rows.map((r) => toRecipient(r, fileId, range.lo));
    if (rows.length < db.pageSize) return;
    after = num(rows.at(-1)!.id);
  }
}
