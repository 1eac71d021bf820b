// The PostgreSQL store's deliveries area: delivery reports onto recipients, what they prove
// about their chunks, expiry, and the per-minute timeline.

import type pg from 'pg';
import { byBulk, firstOfEach, num, type Row, str, toDeliveryMinute } from '../mapping.ts';
import { idRange, parseGenerated, sentForm } from '../message-ids.ts';
import type { DeliveryEvent, DeliveryMinute, DeliveryResult } from '../store.ts';
import { intArray, textArray } from './arrays.ts';
import type { PgDb } from './connection.ts';
import { writeReplyTargets } from './reply-targets.ts';
import * as S from './sql.ts';

/** The delivery events as the array parameters of the statements that keep them. */
function eventColumns(events: readonly DeliveryEvent[]): Record<string, unknown> {
  return {
    tns: textArray(events.map((e) => e.transactionNumber)),
    tos: textArray(events.map((e) => e.to)),
    message_ids: textArray(events.map((e) => e.messageId)),
    bulk_ids: textArray(events.map((e) => e.bulkId)),
    callbacks: textArray(events.map((e) => e.callbackData)),
    sms_counts: intArray(events.map((e) => e.smsCount)),
    statuses: textArray(events.map((e) => e.status)),
    received: textArray(events.map((e) => e.receivedAt)),
  };
}

/** A report and the recipient it names. */
interface Target {
  readonly e: DeliveryEvent;
  /** As the UPDATE returns it: `line-k` (generated) or the messageId (own). */
  readonly key: string;
  readonly line: number;
  readonly k: number;
}

export async function recordDeliveries(db: PgDb, events: readonly DeliveryEvent[]): Promise<DeliveryResult> {
  const result: DeliveryResult = { recorded: 0, duplicates: 0, orphans: 0, fileIds: [] };
  if (events.length === 0) return result;
  const what = 'recording delivery reports';
  const one = oneFileBatch(db, events);
  if (one) {
    result.fileIds = await db.tx(what, (c) => recordGenerated(db, c, one, events, result));
    return result;
  }
  /** File numbers read in the transaction: remembered once it committed. */
  const read = new Map<string, number>();
  const files = await db.tx(what, async (c) => {
    read.clear();
    const now = db.now();
    const files: string[] = [];
    const inserted = await db.rows(
      what,
      S.INSERT_EVENTS,
      {
        ...eventColumns(events),
        now,
      },
      c,
    );
    // The new ones, in order (of two alike in the batch, the first is the one kept).
    let fresh: DeliveryEvent[];
    if (inserted.length === events.length) fresh = [...events];
    else {
      const keys = new Set(inserted.map((r) => `${str(r.transaction_number)}\n${str(r.to_number)}`));
      fresh = events.filter((e) => keys.delete(`${e.transactionNumber}\n${e.to}`));
    }
    result.recorded = fresh.length;
    result.duplicates = events.length - fresh.length;
    const byFile = byBulk(fresh);
    const orphans: DeliveryEvent[] = [];
    const fileNos = new Map<string, number>();
    const unknown: string[] = [];
    for (const fileId of byFile.keys()) {
      const n = db.fileNos.get(fileId);
      if (n === undefined) unknown.push(fileId);
      else fileNos.set(fileId, n);
    }
    if (unknown.length > 0) {
      for (const r of await db.rows(what, S.FILE_NOS, { file_ids: unknown }, c)) {
        fileNos.set(str(r.file_id), num(r.file_no));
        read.set(str(r.file_id), num(r.file_no));
      }
    }
    for (const [fileId, list] of byFile) {
      const fileNo = fileNos.get(fileId);
      if (fileNo === undefined) {
        orphans.push(...list);
        continue;
      }
      const unmatched = await applyDeliveries(db, c, fileId, fileNo, list, now);
      orphans.push(...unmatched);
      if (unmatched.length < list.length) files.push(fileId);
    }
    await markOrphans(db, c, orphans);
    result.orphans = orphans.length;
    return files;
  });
  for (const [fileId, n] of read) db.rememberFileNo(fileId, n);
  result.fileIds = files;
  return result;
}

/**
 * The batch the receiver usually commits: reports of one file whose number is known, every
 * messageId generated, no report and no recipient twice. Null for any other batch.
 */
function oneFileBatch(
  db: PgDb,
  events: readonly DeliveryEvent[],
): { fileId: string; fileNo: number; targets: Target[] } | null {
  const fileId = events[0]!.bulkId;
  const fileNo = db.fileNos.get(fileId);
  if (fileNo === undefined) return null;
  const keys = new Set<string>();
  const reports = new Set<string>();
  const targets: Target[] = [];
  for (const e of events) {
    if (e.bulkId !== fileId) return null;
    const at = parseGenerated(fileId, e.messageId);
    if (!at) return null;
    const key = `${at.line}-${at.k}`;
    const report = `${e.transactionNumber}\n${e.to}`;
    if (keys.has(key) || reports.has(report)) return null;
    keys.add(key);
    reports.add(report);
    targets.push({ e, key, line: at.line, k: at.k });
  }
  return { fileId, fileNo, targets };
}

/** Inside the transaction: oneFileBatch's batch, RECORD_GENERATED, then as applyDeliveries. Returns fileIds. */
async function recordGenerated(
  db: PgDb,
  c: pg.PoolClient,
  batch: { fileId: string; fileNo: number; targets: Target[] },
  events: readonly DeliveryEvent[],
  result: DeliveryResult,
): Promise<string[]> {
  const what = 'recording delivery reports';
  const { fileId, fileNo, targets } = batch;
  const now = db.now();
  const { lo, hi } = idRange(fileNo);
  const out = await db.rows(
    what,
    S.RECORD_GENERATED,
    {
      ...eventColumns(events),
      numbers: textArray(events.map((e) => sentForm(e.to))),
      lines: intArray(targets.map((t) => t.line)),
      ks: intArray(targets.map((t) => t.k)),
      file_id: fileId,
      lo,
      hi,
      now,
    },
    c,
  );
  const kept = new Set<string>();
  const rows: Row[] = [];
  const locked = new Map<number, string>();
  for (const r of out) {
    if (r.kind === 'event') kept.add(`${str(r.tn)}\n${str(r.to_number)}`);
    else if (r.kind === 'lock') locked.set(num(r.chunk_seq), str(r.state));
    else rows.push(r);
  }
  const fresh = targets.filter((t) => kept.has(`${t.e.transactionNumber}\n${t.e.to}`));
  result.recorded = fresh.length;
  result.duplicates = events.length - fresh.length;
  // A generated-looking id that names no valid row may be a file's own id.
  const found = new Set(rows.map((r) => str(r.key)));
  const own = fresh
    .filter((t) => !found.has(t.key))
    .map((t): Target => ({ e: t.e, key: t.e.messageId, line: 0, k: 0 }));
  const unmatched = (await deliver(db, c, 'own', own, lo, hi, now, rows, fileId, locked)).map((t) => t.e);
  await settleByReports(db, c, fileId, fileNo, rows, now, locked);
  await markOrphans(db, c, unmatched);
  result.orphans = unmatched.length;
  return unmatched.length < fresh.length ? [fileId] : [];
}

/** Inside the transaction: events that matched no recipient kept as orphans. */
async function markOrphans(db: PgDb, c: pg.PoolClient, orphans: readonly DeliveryEvent[]): Promise<void> {
  if (orphans.length === 0) return;
  await db.count(
    'recording delivery reports',
    S.MARK_ORPHANS,
    { tns: orphans.map((e) => e.transactionNumber), tos: orphans.map((e) => e.to) },
    c,
  );
}

/**
 * Inside the transaction: one file's new events onto its recipients, then what they prove.
 * A generated messageId is looked up by (line, k), an own one by itself ('' matches nobody).
 * Returns the events that matched no recipient.
 */
async function applyDeliveries(
  db: PgDb,
  c: pg.PoolClient,
  fileId: string,
  fileNo: number,
  events: readonly DeliveryEvent[],
  now: string | null,
): Promise<DeliveryEvent[]> {
  const { lo, hi } = idRange(fileNo);
  const generated: Target[] = [];
  const own: DeliveryEvent[] = [];
  const unmatched: DeliveryEvent[] = [];
  for (const e of events) {
    const at = parseGenerated(fileId, e.messageId);
    if (at) generated.push({ e, key: `${at.line}-${at.k}`, line: at.line, k: at.k });
    else if (e.messageId !== '') own.push(e);
    else unmatched.push(e);
  }
  const rows: Row[] = [];
  /** Chunks locked so far (settleByReports), with their states as locked. */
  const locked = new Map<number, string>();
  // A generated-looking id that names no valid row may be a file's own id.
  for (const t of await deliver(db, c, 'generated', generated, lo, hi, now, rows, fileId, locked))
    own.push(t.e);
  const byId = own.map((e): Target => ({ e, key: e.messageId, line: 0, k: 0 }));
  for (const t of await deliver(db, c, 'own', byId, lo, hi, now, rows, fileId, locked)) unmatched.push(t.e);
  await settleByReports(db, c, fileId, fileNo, rows, now, locked);
  return unmatched;
}

/**
 * One UPDATE per round of targets; a recipient named twice in one batch is updated once per
 * report, in order (rounds), as one UPDATE would apply only one of them. Returns the targets
 * that matched no row; appends the rows changed to `rows`.
 */
async function deliver(
  db: PgDb,
  c: pg.PoolClient,
  kind: 'generated' | 'own',
  targets: readonly Target[],
  lo: number,
  hi: number,
  now: string | null,
  rows: Row[],
  fileId: string,
  locked: Map<number, string>,
): Promise<Target[]> {
  const missed: Target[] = [];
  let round = targets;
  let first = true;
  while (round.length > 0) {
    const [current, later] = firstOfEach(round);
    const common = {
      lo,
      hi,
      now,
      statuses: textArray(current.map((t) => t.e.status)),
      sms_counts: intArray(current.map((t) => t.e.smsCount)),
      tns: textArray(current.map((t) => t.e.transactionNumber)),
      numbers: textArray(current.map((t) => sentForm(t.e.to))),
    };
    // The usual batch (generated ids, each recipient once): its chunks locked in the same
    // statement. Any later round or lookup locks what it adds in settleByReports.
    const withLock = kind === 'generated' && first && later.length === 0;
    first = false;
    const found = withLock
      ? await deliverLocking(db, c, fileId, common, current, locked)
      : kind === 'generated'
        ? await db.rows(
            'recording delivery reports',
            S.DELIVER_GENERATED,
            {
              ...common,
              lines: intArray(current.map((t) => t.line)),
              ks: intArray(current.map((t) => t.k)),
            },
            c,
          )
        : await db.rows(
            'recording delivery reports',
            S.DELIVER_OWN,
            { ...common, message_ids: textArray(current.map((t) => t.e.messageId)) },
            c,
          );
    rows.push(...found);
    // A key names at most one sent recipient: as many rows as targets is every one found.
    if (found.length < current.length) {
      const matched = new Set(found.map((r) => str(r.key)));
      for (const t of current) if (!matched.has(t.key)) missed.push(t);
    }
    round = later;
  }
  return missed;
}

/** DELIVER_GENERATED_LOCK: the rows written (as DELIVER_GENERATED), the chunks locked into `locked`. */
async function deliverLocking(
  db: PgDb,
  c: pg.PoolClient,
  fileId: string,
  common: Record<string, unknown>,
  current: readonly Target[],
  locked: Map<number, string>,
): Promise<Row[]> {
  const out = await db.rows(
    'recording delivery reports',
    S.DELIVER_GENERATED_LOCK,
    {
      ...common,
      file_id: fileId,
      lines: intArray(current.map((t) => t.line)),
      ks: intArray(current.map((t) => t.k)),
    },
    c,
  );
  const rows: Row[] = [];
  for (const r of out) {
    if (r.kind === 'lock') locked.set(num(r.chunk_seq), str(r.state));
    else rows.push(r);
  }
  return rows;
}

/**
 * What the reported rows prove: the request that carried a reported recipient reached the
 * service. Chunks with a reported row that follows it or is in doubt are looked at; rows
 * already `sent` (an accepted part of a mixed chunk) prove nothing more.
 */
async function settleByReports(
  db: PgDb,
  c: pg.PoolClient,
  fileId: string,
  fileNo: number,
  rows: readonly Row[],
  now: string | null,
  locked: Map<number, string>,
): Promise<void> {
  const seqs = new Set<number>();
  const doubt = new Set<number>();
  for (const r of rows) {
    if (r.chunk_seq === null || r.chunk_seq === undefined) continue;
    const follows = r.outcome === 'pending' && r.code === null;
    if (r.outcome !== 'in_doubt' && !follows) continue;
    const seq = num(r.chunk_seq);
    seqs.add(seq);
    if (r.outcome === 'in_doubt') doubt.add(seq);
  }
  if (seqs.size === 0) return;
  const what = `recording delivery reports of ${fileId}`;
  const ordered = [...seqs].sort((a, b) => a - b);
  const missing = ordered.filter((s) => !locked.has(s));
  if (missing.length > 0)
    for (const r of await db.rows(what, S.LOCK_CHUNKS, { file_id: fileId, seqs: missing }, c))
      locked.set(num(r.seq), str(r.state));
  // States as locked (after any chunk result that held the lock committed): no chunk in
  // doubt, nothing for SETTLE_CHUNKS to settle.
  if (ordered.some((s) => locked.get(s) === 'in_doubt')) {
    const settled = await db.rows(
      what,
      S.SETTLE_CHUNKS,
      { file_id: fileId, file_no: fileNo, seqs: ordered, now },
      c,
    );
    for (const r of settled) doubt.add(num(r.seq));
  }
  if (doubt.size === 0) return;
  await db.count(what, S.SEND_DOUBTFUL, { file_no: fileNo, seqs: [...doubt], now }, c);
  // Their recipients settled as sent can be replied to now, once: a later report finds none in doubt.
  for (const seq of [...doubt].sort((a, b) => a - b)) await writeReplyTargets(db, c, fileId, seq, now);
}

export async function expireDeliveries(db: PgDb, fileId: string): Promise<number> {
  const range = await db.range(fileId);
  if (!range) return 0;
  return db.count(`expiring deliveries of ${fileId}`, S.EXPIRE_DELIVERIES, {
    ...range,
    file_id: fileId,
    now: db.now(),
  });
}

export async function deliveryTimeline(db: PgDb, fileId: string): Promise<DeliveryMinute[]> {
  // Kept by the chunk counters' trigger (migration 0004), in the statements that change statuses.
  return (
    await db.rows(`reading the delivery timeline of ${fileId}`, S.DELIVERY_TIMELINE, { file_id: fileId })
  ).map(toDeliveryMinute);
}
