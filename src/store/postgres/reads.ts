// The PostgreSQL store's reads: files and their events, gauges, counts, reports owed, and the
// pages of recipients and report rows.

import { assembleCounts, type ChunkGroup, type OwnGroup } from '../counts.ts';
import {
  FILE_EVENTS_LIMIT,
  foldName,
  json,
  num,
  type Row,
  str,
  toFile,
  toFileEvent,
  toRecipient,
  toReportRow,
} from '../mapping.ts';
import { idRange } from '../message-ids.ts';
import {
  type ChunkState,
  type FileCounts,
  type FileEvent,
  type FileRecord,
  type IngestCounts,
  type ListFilesOptions,
  NOTHING_SENT,
  type RecipientOutcome,
  type RecipientRecord,
  type ReportRow,
  type StoreGauges,
  type StoreSummary,
} from '../store.ts';
import { textArray } from './arrays.ts';
import type { PgDb, Queryable } from './connection.ts';
import * as S from './sql.ts';

const NO_INGEST: IngestCounts = {
  records: 0,
  valid: 0,
  invalid: 0,
  duplicates: 0,
  suppressed: 0,
  segments: 0,
};

export async function getFile(db: PgDb, fileId: string): Promise<FileRecord | null> {
  const [r] = await db.rows(`reading ${fileId}`, S.FILE_BY_ID, { file_id: fileId });
  return r ? toFile(r) : null;
}

export async function listFiles(db: PgDb, options: ListFilesOptions = {}): Promise<FileRecord[]> {
  return (
    await db.rows('listing files', S.LIST_FILES, {
      source: options.source ?? null,
      states: options.states ?? null,
      search: options.search ? foldName(options.search) : null,
      before: options.before ?? null,
      limit: options.limit ?? null,
    })
  ).map(toFile);
}

export async function fileEvents(db: PgDb, fileId: string, limit = FILE_EVENTS_LIMIT): Promise<FileEvent[]> {
  return (
    await db.rows(`reading the events of ${fileId}`, S.FILE_EVENTS, {
      file_id: fileId,
      limit: Math.max(0, Math.trunc(limit)),
    })
  ).map(toFileEvent);
}

export async function gauges(db: PgDb): Promise<StoreGauges> {
  const files = await db.rows('counting files by state', S.GAUGE_FILES, {});
  const [doubt] = await db.rows('counting chunks in doubt', S.GAUGE_IN_DOUBT, {});
  return {
    files: Object.fromEntries(files.map((r) => [str(r.state), num(r.n)])),
    chunksInDoubt: num(doubt?.n ?? 0),
  };
}

export async function reportFailed(
  db: PgDb,
  fileId: string,
  backoff: { baseMs: number; maxMs: number },
): Promise<void> {
  await db.count(`recording reports owed by ${fileId}`, S.REPORT_FAILED, {
    file_id: fileId,
    base_ms: backoff.baseMs,
    max_ms: backoff.maxMs,
    now: db.now(),
  });
}

export async function oweReports(db: PgDb, fileId: string): Promise<void> {
  await db.count(`recording reports owed by ${fileId}`, S.OWE_REPORTS, {
    file_id: fileId,
    now: db.now(),
  });
}

export async function reportsWritten(db: PgDb, fileId: string): Promise<void> {
  await db.count(`recording the reports of ${fileId} written`, S.REPORTS_WRITTEN, { file_id: fileId });
}

export async function reportsDue(db: PgDb, limit: number): Promise<string[]> {
  const rows = await db.rows('listing reports owed', S.REPORTS_DUE, { limit, now: db.now() });
  return rows.map((r) => str(r.file_id));
}

export async function counts(db: PgDb, fileId: string): Promise<FileCounts> {
  return (await countsOf(db, [fileId])).get(fileId) ?? { ...NO_INGEST, ...NOTHING_SENT };
}

export async function countsOf(db: PgDb, fileIds: readonly string[]): Promise<Map<string, FileCounts>> {
  if (fileIds.length === 0) return new Map();
  // Two reads that see one state of the database, whatever the number of files.
  return db.tx('counting files', async (c) => {
    await c.query(S.READ_SNAPSHOT);
    return countsOn(db, c, fileIds);
  });
}

export async function summary(db: PgDb, since: string): Promise<StoreSummary> {
  return db.tx('reading the summary', async (c) => {
    await c.query(S.READ_SNAPSHOT);
    const [r] = await db.rows('reading the summary', S.SUMMARY, { since }, c);
    const files = await db.rows('reading the summary', S.SUMMARY_FILES, {}, c);
    let waiting = 0;
    for (const n of (
      await countsOn(
        db,
        c,
        files.map((f) => str(f.file_id)),
      )
    ).values())
      waiting += n.pendingDelivery;
    return {
      sending: num(r!.sending),
      sent: num(r!.sent),
      delivered: num(r!.delivered),
      undelivered: num(r!.undelivered),
      waiting,
    };
  });
}

/** The counts of these files (absent: unknown), on a transaction's connection (prune keeps them). */
export async function countsOn(
  db: PgDb,
  on: Queryable,
  fileIds: readonly string[],
): Promise<Map<string, FileCounts>> {
  const what = 'counting files';
  const out = new Map<string, FileCounts>();
  const live = new Map<string, { ingest: IngestCounts; chunks: ChunkGroup[]; own: OwnGroup[] }>();
  for (const f of await db.rows(what, S.COUNTS_FILES, { file_ids: textArray(fileIds) }, on)) {
    const fileId = str(f.file_id);
    // A pruned file's counts are those it had when it was pruned.
    // Counts pruned before a counter existed have none of it.
    if (f.pruned_counts != null) out.set(fileId, { ...NOTHING_SENT, ...json<FileCounts>(f.pruned_counts) });
    else
      live.set(fileId, {
        ingest: {
          records: num(f.records),
          valid: num(f.valid),
          invalid: num(f.invalid),
          duplicates: num(f.duplicates),
          suppressed: num(f.suppressed),
          segments: num(f.segments),
        },
        chunks: [],
        own: [],
      });
  }
  if (live.size > 0) {
    for (const r of await db.rows(what, S.COUNTS_ROWS, { file_ids: textArray([...live.keys()]) }, on)) {
      const file = live.get(str(r.file_id));
      if (!file) continue;
      if (r.kind === 'chunk')
        file.chunks.push({
          state: str(r.state) as ChunkState,
          chunks: num(r.n),
          size: num(r.size),
          reported: num(r.reported),
          delivered: num(r.delivered),
          unknown: num(r.unknown),
          accepted: num(r.accepted),
          reportedFollow: num(r.reported_follow),
          reportedSent: num(r.reported_sent),
        });
      else
        file.own.push({
          outcome: str(r.outcome) as RecipientOutcome,
          chunkState: r.state === null ? null : (str(r.state) as ChunkState),
          count: num(r.n),
        });
    }
  }
  for (const [fileId, f] of live) out.set(fileId, assembleCounts(f.ingest, f.chunks, f.own));
  return out;
}

export async function* reportPages(db: PgDb, fileId: string): AsyncGenerator<ReportRow[]> {
  for await (const rows of pages(db, fileId, S.REPORT_PAGE, {}, 'array'))
    yield (rows as unknown[][]).map((r) => toReportRow(r, fileId));
}

export async function* recipients(
  db: PgDb,
  fileId: string,
  outcomes?: readonly RecipientOutcome[],
): AsyncGenerator<RecipientRecord> {
  for await (const page of recipientPages(db, fileId, outcomes)) yield* page;
}

export async function* recipientPages(
  db: PgDb,
  fileId: string,
  outcomes?: readonly RecipientOutcome[],
): AsyncGenerator<RecipientRecord[]> {
  const base = (await db.fileNo(fileId)) ?? 0;
  for await (const rows of pages(db, fileId, S.RECIPIENT_PAGE, { outcomes: outcomes ?? null }, 'object'))
    yield (rows as Row[]).map((r) => toRecipient(r, fileId, idRange(base).lo));
}

/**
 * The file's rows in id order, a window of pageSize ids at a time (idx is dense: a window is
 * a page), each its own short read: no cursor stays open while the consumer writes a report.
 * An empty window (a gap, or no row passing the filter) jumps to the next row there is.
 */
async function* pages(
  db: PgDb,
  fileId: string,
  s: S.Statement,
  params: Record<string, unknown>,
  mode: 'array' | 'object',
): AsyncGenerator<Row[] | unknown[][]> {
  const fileNo = await db.fileNo(fileId);
  if (fileNo === null) return;
  const range = idRange(fileNo);
  const what = `reading the recipients of ${fileId}`;
  const [bounds] = await db.rows(what, S.ID_BOUNDS, range);
  if (bounds?.first == null || bounds.last == null) return;
  const last = num(bounds.last);
  let from: number | null = num(bounds.first);
  while (from !== null && from <= last) {
    const to = Math.min(from + db.pageSize - 1, last);
    const values = { ...params, file_id: fileId, file_no: fileNo, from, to };
    const rows = mode === 'array' ? await db.arrays(what, s, values) : await db.rows(what, s, values);
    if (rows.length > 0) {
      yield rows;
      from = to + 1;
    } else {
      const [next] = await db.rows(what, S.ID_BOUNDS, { lo: to + 1, hi: last });
      from = next?.first == null ? null : num(next.first);
    }
  }
}
