// The SQLite store's contact-ledger area: what compliance prints beside a file's contacts,
// and the contacts themselves (docs/campaign-rules.md "Compliance"). The slots are taken by
// holdBack (./campaign.ts).

import type { SQLInputValue } from 'node:sqlite';
import { contactsPage, contactsParams, fileCheckColumns, toContact } from '../ledger-rows.ts';
import type { ChunkState, ContactRecord, ContactsQuery, FileChecks } from '../store.ts';
import type { SqliteDb } from './connection.ts';
import * as L from './ledger-sql.ts';

export async function recordFileChecks(db: SqliteDb, fileId: string, checks: FileChecks): Promise<void> {
  db.tx(() => void db.stmt(L.RECORD_FILE_CHECKS).run(fileCheckColumns(fileId, checks)));
}

export async function contacts(db: SqliteDb, query: ContactsQuery): Promise<ContactRecord[]> {
  const params = contactsParams(query) as Record<string, SQLInputValue>;
  const chunks = db.stmt(L.CONTACTS).all(params).map(toContact);
  return contactsPage(chunks, db.stmt(L.OLD_CONTACTS).all(params).map(toContact), query.limit);
}

/**
 * Before a prune step deletes the next `maxRows` recipients of ids lo..hi (a file's), the
 * contacts their chunks took are kept a row each (docs/campaign-rules.md "Retention of the
 * ledger"), inside the step's transaction.
 */
export function keepContacts(db: SqliteDb, lo: number, hi: number, maxRows: number): void {
  const batch = db.stmt(L.PRUNE_BATCH).get({ lo, hi, max_rows: maxRows });
  if (batch?.first == null) return;
  const kept = { first: batch.first, last: batch.last ?? batch.first, hi } as Record<string, SQLInputValue>;
  db.stmt(L.KEEP_CONTACTS).run(kept);
  db.stmt(L.DROP_KEPT).run(kept);
}

/**
 * In a chunk result's transaction (its new state `state`): the contacts of its latest start
 * that the service never took are given back (docs/campaign-rules.md "Contacts given back").
 */
export function giveBackContacts(db: SqliteDb, chunk: { hi: number; state: ChunkState; startedAt: string }) {
  const record = db.stmt(L.LATEST_RECORD).get({ hi: chunk.hi, started_at: chunk.startedAt });
  if (!record) return;
  const untaken = db
    .stmt(L.UNTAKEN)
    .all({ record: record.id, state: chunk.state } as Record<string, SQLInputValue>);
  if (untaken.length === 0) return;
  const day = String(record.day);
  const dayNo = dayNumber(day);
  const all: Record<string, unknown> = {
    record: record.id,
    ids: JSON.stringify(untaken.map((r) => r.id)),
    day,
    day_no: dayNo,
    // Its Monday: 1970-01-01 was a Thursday.
    week_no: dayNo - ((dayNo + 3) % 7),
    entity: record.entity,
    channel: record.channel,
  };
  for (const sql of [L.GIVE_BACK_RECORD, L.GIVE_BACK_SLOTS, L.GIVE_BACK_KEYS])
    db.stmt(sql).run(named(sql, all) as Record<string, SQLInputValue>);
}

/** A local date (`YYYY-MM-DD`) as contact_keys keeps it: days since 1970-01-01. */
export function dayNumber(date: string): number {
  return Date.parse(`${date}T00:00:00Z`) / 86_400_000;
}

const namesOf = new Map<string, string[]>();

/** The parameters `sql` names (node:sqlite refuses any other). */
export function named(sql: string, all: Record<string, unknown>): Record<string, unknown> {
  let names = namesOf.get(sql);
  if (!names) {
    names = [...new Set(Array.from(sql.matchAll(/(?<![:\w]):([a-z_][a-z0-9_]*)/g), (m) => m[1]!))];
    namesOf.set(sql, names);
  }
  const out: Record<string, unknown> = {};
  for (const n of names) out[n] = all[n];
  return out;
}
