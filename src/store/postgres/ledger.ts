// The PostgreSQL store's contact-ledger area: what compliance prints beside a file's
// contacts, and the contacts themselves (docs/campaign-rules.md "Compliance"). The slots are
// taken by holdBack (./campaign.ts).

import type pg from 'pg';
import { contactsPage, contactsParams, fileCheckColumns, toContact } from '../ledger-rows.ts';
import type { ChunkState, ContactRecord, ContactsQuery, FileChecks } from '../store.ts';
import type { PgDb } from './connection.ts';
import * as L from './ledger-sql.ts';

export async function recordFileChecks(db: PgDb, fileId: string, checks: FileChecks): Promise<void> {
  await db.count(`recording the checks of ${fileId}`, L.RECORD_FILE_CHECKS, fileCheckColumns(fileId, checks));
}

export async function contacts(db: PgDb, query: ContactsQuery): Promise<ContactRecord[]> {
  const what = 'reading the contact ledger';
  const params = contactsParams(query);
  const chunks = (await db.rows(what, L.CONTACTS, params)).map(toContact);
  return contactsPage(chunks, (await db.rows(what, L.OLD_CONTACTS, params)).map(toContact), query.limit);
}

/**
 * Before a prune step deletes recipients `first` to `last` of a file ending at `hi`, the
 * contacts their chunks took are kept a row each (docs/campaign-rules.md "Retention of the
 * ledger"), in the step's transaction `c`.
 */
export async function keepContacts(
  db: PgDb,
  c: pg.PoolClient,
  what: string,
  ids: { first: number; last: number; hi: number },
): Promise<void> {
  await db.count(what, L.KEEP_CONTACTS, ids, c);
}

/**
 * In a chunk result's transaction `c` (its new state `state`): the contacts of its latest
 * start that the service never took are given back (docs/campaign-rules.md "Contacts given back").
 */
export async function giveBackContacts(
  db: PgDb,
  c: pg.PoolClient,
  what: string,
  chunk: { hi: number; state: ChunkState; started_at: unknown },
): Promise<void> {
  const untaken = await db.rows(what, L.UNTAKEN, chunk, c);
  const first = untaken[0];
  if (!first) return;
  const { record, day, entity, channel } = first;
  await db.rows(what, L.LOCK_KEYS, { entity, keys: [...new Set(untaken.map((r) => r.key))].sort() }, c);
  await db.count(what, L.GIVE_BACK, { record, day, entity, channel, ids: untaken.map((r) => r.id) }, c);
}
