// The SQLite store's deliveries area: delivery reports onto recipients, what they prove about
// their chunks, expiry, and the per-minute timeline.

import type { SQLInputValue, SQLOutputValue } from 'node:sqlite';
import { byBulk, firstOfEach, num, str, toDeliveryMinute } from '../mapping.ts';
import { parseGenerated, SPAN, sentForm } from '../message-ids.ts';
import {
  ACCEPTED_DELIVERY,
  DELIVERED,
  type DeliveryEvent,
  type DeliveryMinute,
  type DeliveryResult,
  PENDING_DELIVERY,
  UNKNOWN_DELIVERY,
} from '../store.ts';
import { changes, pieces, type SqliteDb } from './connection.ts';
import { writeReplyTargets } from './reply-targets.ts';
import * as S from './sql.ts';

/** A report and the recipient it names: `key` as the UPDATE returns it, `values` the two VALUES columns that find it. */
interface Target {
  readonly e: DeliveryEvent;
  readonly key: string;
  readonly values: SQLInputValue[];
}

/** Rows given a final delivery status, by delivery_minutes' category (migration 0011). */
export interface MinuteCounts {
  delivered: number;
  undelivered: number;
  unknown: number;
  accepted: number;
}

function countStatus(counts: MinuteCounts, status: SQLOutputValue | undefined): void {
  if (status === DELIVERED) counts.delivered++;
  else if (status === UNKNOWN_DELIVERY) counts.unknown++;
  else if (status === ACCEPTED_DELIVERY) counts.accepted++;
  else if (status !== PENDING_DELIVERY) counts.undelivered++;
}

/** The minute of an ISO-8601 UTC instant, as delivery_minutes keys it (2026-03-01T12:34:00.000Z). */
function minuteOf(iso: string): string {
  return `${iso.slice(0, 16)}:00.000Z`;
}

export async function recordDeliveries(
  db: SqliteDb,
  events: readonly DeliveryEvent[],
): Promise<DeliveryResult> {
  const result: DeliveryResult = { recorded: 0, duplicates: 0, orphans: 0, fileIds: [] };
  if (events.length === 0) return result;
  const now = db.now();
  const files = new Set<string>();
  db.tx(() => {
    const fresh = appendDeliveries(db, events, now);
    result.recorded = fresh.length;
    result.duplicates = events.length - fresh.length;
    const byFile = byBulk(fresh);
    const orphans: DeliveryEvent[] = [];
    for (const [fileId, list] of byFile) {
      const range = db.range(fileId);
      if (!range) {
        orphans.push(...list);
        continue;
      }
      const { rows, unmatched, first } = applyDeliveries(db, fileId, range, list, now);
      orphans.push(...unmatched);
      if (unmatched.length < list.length) files.add(fileId);
      addDeliveryMinute(db, range, now, first);
      settleByReports(db, fileId, rows, now);
    }
    const orphan = db.stmt(S.MARK_ORPHAN);
    for (const e of orphans) orphan.run(e.transactionNumber, e.to);
    result.orphans = orphans.length;
  });
  result.fileIds = [...files];
  return result;
}

/** Inside a transaction: appends the events, returning those new to the store, in order. */
function appendDeliveries(db: SqliteDb, events: readonly DeliveryEvent[], now: string): DeliveryEvent[] {
  const fresh: DeliveryEvent[] = [];
  for (const [from, to] of pieces(events.length)) {
    const values: SQLInputValue[] = [];
    for (let i = from; i < to; i++) {
      const e = events[i]!;
      values.push(
        e.transactionNumber,
        e.to,
        e.messageId,
        e.bulkId,
        e.callbackData,
        e.smsCount,
        e.status,
        e.receivedAt,
      );
    }
    const rows = db
      .rowsStatement('append', to - from, S.APPEND_ROW, S.appendEvents)
      .all({ now }, ...values) as unknown as SQLOutputValue[][];
    if (rows.length === to - from) {
      for (let i = from; i < to; i++) fresh.push(events[i]!);
      continue;
    }
    // Some were recorded before, or twice in this batch (the first one is the one inserted).
    const inserted = new Set(rows.map((r) => `${str(r[0])}\n${str(r[1])}`));
    for (let i = from; i < to; i++) {
      const e = events[i]!;
      if (inserted.delete(`${e.transactionNumber}\n${e.to}`)) fresh.push(e);
    }
  }
  return fresh;
}

/**
 * Inside a transaction: the events' statuses onto the file's recipients. A generated messageId
 * (<fileId>-<line>[-<k>], most reports) is looked up by (line, k) alone; an id from the file's
 * own column (or one that only looks generated) by the id itself; '' stands for "no messageId"
 * (storedMessageId) and matches nobody. Returns the rows changed ([key, chunk_seq, outcome,
 * code, status]), the events that matched no recipient (orphans), and the first final
 * statuses of rows (their row was `pending`) by delivery_minutes' category.
 */
function applyDeliveries(
  db: SqliteDb,
  fileId: string,
  range: { lo: number; hi: number },
  events: readonly DeliveryEvent[],
  now: string,
): { rows: SQLOutputValue[][]; unmatched: DeliveryEvent[]; first: MinuteCounts } {
  const rows: SQLOutputValue[][] = [];
  const first: MinuteCounts = { delivered: 0, undelivered: 0, unknown: 0, accepted: 0 };
  const generated: Target[] = [];
  const own: DeliveryEvent[] = [];
  const unmatched: DeliveryEvent[] = [];
  for (const e of events) {
    const at = parseGenerated(fileId, e.messageId);
    if (at) generated.push({ e, key: `${at.line}-${at.k}`, values: [at.line, at.k] });
    else if (e.messageId !== '') own.push(e);
    else unmatched.push(e);
  }
  // A generated-looking id that names no valid row may be a file's own id.
  for (const t of updateRecipients(db, 'generated', generated, range, now, rows, first)) own.push(t.e);
  const byId = own.map((e) => ({ e, key: e.messageId, values: [e.messageId, null] }));
  for (const t of updateRecipients(db, 'own', byId, range, now, rows, first)) unmatched.push(t.e);
  return { rows, unmatched, first };
}

/**
 * Reports onto recipients, in rounds: a recipient named twice in one batch is updated once
 * per report, in order, as one UPDATE would apply only one of them. Each round first onto
 * rows without a report yet (`pending`: nearly every report), whose new statuses are counted
 * into `first`; the targets left then onto rows that had one (a second report, one after
 * UNKNOWN), which the trigger recipients_delivery_counters moves between categories (migration
 * 0011). Returns the targets that matched no row.
 */
function updateRecipients(
  db: SqliteDb,
  kind: 'generated' | 'own',
  targets: Target[],
  range: { lo: number; hi: number },
  now: string,
  rows: SQLOutputValue[][],
  first: MinuteCounts,
): Target[] {
  const missed: Target[] = [];
  let round = targets;
  while (round.length > 0) {
    const [current, later] = firstOfEach(round);
    const found = deliverRound(db, kind, true, current, range, now);
    for (const r of found) countStatus(first, r[4]);
    rows.push(...found);
    // A key names at most one sent recipient: as many rows as targets is every one found.
    if (found.length < current.length) {
      const matched = new Set(found.map((r) => str(r[0])));
      const rest = current.filter((t) => !matched.has(t.key));
      const again = deliverRound(db, kind, false, rest, range, now);
      rows.push(...again);
      const matchedAgain = new Set(again.map((r) => str(r[0])));
      for (const t of rest) if (!matchedAgain.has(t.key)) missed.push(t);
    }
    round = later;
  }
  return missed;
}

/**
 * One UPDATE … FROM (VALUES …) per piece of targets, onto the rows still `pending` (`fresh`)
 * or onto those with a status already; returns the rows changed.
 */
function deliverRound(
  db: SqliteDb,
  kind: 'generated' | 'own',
  fresh: boolean,
  current: readonly Target[],
  range: { lo: number; hi: number },
  now: string,
): SQLOutputValue[][] {
  const found: SQLOutputValue[][] = [];
  for (const [from, to] of pieces(current.length)) {
    const values: SQLInputValue[] = [];
    for (let i = from; i < to; i++) {
      const { e, values: match } = current[i]!;
      values.push(...match, e.status, e.smsCount, e.transactionNumber, sentForm(e.to));
    }
    const statement = db.rowsStatement(`${kind}${fresh ? '' : '-again'}`, to - from, S.DELIVER_ROW, (list) =>
      (kind === 'generated' ? S.deliverGenerated : S.deliverOwn)(list, fresh),
    );
    for (const r of statement.all(
      { now, lo: range.lo, hi: range.hi },
      ...values,
    ) as unknown as SQLOutputValue[][])
      found.push(r);
  }
  return found;
}

/**
 * Inside the transaction that recorded them: first final statuses of the file's rows into
 * its minute of the store's clock (delivery_minutes, migration 0011), one statement a batch.
 */
export function addDeliveryMinute(db: SqliteDb, range: { lo: number }, now: string, add: MinuteCounts): void {
  if (add.delivered === 0 && add.undelivered === 0 && add.unknown === 0 && add.accepted === 0) return;
  db.stmt(S.ADD_DELIVERY_MINUTE).run(
    range.lo / SPAN,
    minuteOf(now),
    add.delivered,
    add.undelivered,
    add.unknown,
    add.accepted,
  );
}

/**
 * Inside a transaction: what the reported rows ([key, chunk_seq, outcome, code]) prove. The
 * request that carried a reported recipient reached the service: an in-doubt chunk is
 * accepted (its pending rows follow it), or pending again when it holds rows a 403 held
 * back, and rows of its own in doubt are sent. Recipients already `sent` (an accepted part
 * of a mixed chunk) prove nothing more.
 */
function settleByReports(db: SqliteDb, fileId: string, rows: readonly SQLOutputValue[][], now: string): void {
  // A part held back by a 403 (rows `pending` with a code) was never sent: its chunk goes back
  // to pending rather than accepted, so those rows still go out (the rest are settled here).
  const settleChunk = db.stmt(S.SETTLE_CHUNK);
  const no = db.fileNo(fileId);
  const sendDoubtful = db.stmt(S.SEND_DOUBTFUL);
  // Reports come in runs of one chunk: its state is looked at once per group.
  const checked = new Set<number>();
  for (const [, chunkSeq, outcome, code] of rows) {
    const follows = outcome === 'pending' && code === null;
    if ((outcome !== 'in_doubt' && !follows) || chunkSeq === null || chunkSeq === undefined) continue;
    const seq = num(chunkSeq);
    if (follows && checked.has(seq)) continue;
    checked.add(seq);
    const settled = changes(settleChunk.run({ no, seq, now, fid: fileId })) > 0;
    if (!settled && outcome !== 'in_doubt') continue;
    const { lo, hi } = db.span(fileId, seq);
    const sent = changes(sendDoubtful.run(now, lo, hi, seq)) > 0;
    // Its recipients settled as sent can be replied to now, once: a later report finds none in doubt.
    if (settled || sent) writeReplyTargets(db, fileId, seq, now, { lo, hi });
  }
}

export async function expireDeliveries(db: SqliteDb, fileId: string): Promise<number> {
  const range = db.range(fileId);
  if (!range) return 0;
  const now = db.now();
  // Sent recipients: their own outcome, or that of their accepted chunk. Rows still
  // `pending`: each is a first final status of its row, counted in this minute with it.
  const expire = db.stmt(S.EXPIRE_DELIVERIES);
  return db.tx(() => {
    const expired = changes(
      expire.run({
        unknown: UNKNOWN_DELIVERY,
        now,
        lo: range.lo,
        hi: range.hi,
        pending: PENDING_DELIVERY,
        fid: fileId,
      }),
    );
    addDeliveryMinute(db, range, now, { delivered: 0, undelivered: 0, unknown: expired, accepted: 0 });
    return expired;
  });
}

export async function deliveryTimeline(db: SqliteDb, fileId: string): Promise<DeliveryMinute[]> {
  // One row per minute (the primary key's range of the file), kept with the statuses
  // (addDeliveryMinute, and the trigger of migration 0011); a minute whose changes cancelled
  // out is no change.
  const n = db.fileNo(fileId);
  if (n === null) return [];
  return db.stmt(S.DELIVERY_TIMELINE).all(n).map(toDeliveryMinute);
}
