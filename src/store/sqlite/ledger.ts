// The SQLite store's contact-ledger area: what compliance prints beside a file's contacts,
// and the contacts themselves (docs/campaign-rules.md "Compliance"). The slots are taken by
// holdBack (./campaign.ts).

import type { SQLInputValue } from 'node:sqlite';
import { contactsPage, contactsParams, fileCheckColumns, toContact } from '../ledger-rows.ts';
import type { ContactRecord, ContactsQuery, FileChecks } from '../store.ts';
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
