// The PostgreSQL store's contact-ledger area: what compliance prints beside a file's
// contacts, and the contacts themselves (docs/campaign-rules.md "Compliance"). The slots are
// taken by holdBack (./campaign.ts).

import { contactsParams, fileCheckColumns, toContact } from '../ledger-rows.ts';
import type { ContactRecord, ContactsQuery, FileChecks } from '../store.ts';
import type { PgDb } from './connection.ts';
import * as L from './ledger-sql.ts';

export async function recordFileChecks(db: PgDb, fileId: string, checks: FileChecks): Promise<void> {
  await db.count(`recording the checks of ${fileId}`, L.RECORD_FILE_CHECKS, fileCheckColumns(fileId, checks));
}

export async function contacts(db: PgDb, query: ContactsQuery): Promise<ContactRecord[]> {
  const rows = await db.rows('reading the contact ledger', L.CONTACTS, contactsParams(query));
  return rows.map(toContact);
}
