// The contact ledger's rows as both backends read them (docs/campaign-rules.md "Compliance").

import { json, num, numOrNull, str, strOrNull } from './mapping.ts';
import type { CheckedList, ContactRecord, ContactsQuery, FileChecks } from './store.ts';

type Row = Record<string, unknown>;

export function toContact(r: Row): ContactRecord {
  return {
    entity: str(r.entity),
    day: str(r.day),
    key: str(r.key),
    slot: num(r.slot),
    channel: str(r.channel),
    at: new Date(str(r.at)).toISOString(),
    recipient: num(r.recipient),
    fileId: strOrNull(r.file_id),
    fileName: strOrNull(r.file_name),
    source: strOrNull(r.source),
    account: strOrNull(r.account),
    window: strOrNull(r.send_window),
    lists: r.lists == null ? null : json<CheckedList[]>(r.lists),
    weekSlot: numOrNull(r.week_slot),
  };
}

/** A FileChecks as columns: absent fields NULL (the statement keeps those recorded). */
export function fileCheckColumns(fileId: string, checks: FileChecks) {
  return {
    file_id: fileId,
    account: checks.account ?? null,
    channel: checks.channel ?? null,
    entity: checks.entity ?? null,
    send_window: checks.window ?? null,
    lists: checks.lists ? JSON.stringify(checks.lists) : null,
  };
}

/** A contacts query as parameters: no cursor starts before every row. */
export function contactsParams(q: ContactsQuery) {
  return {
    // The cursor's day, when later: the pages after the first start there in the day's index.
    from: q.after && q.after.day > q.from ? q.after.day : q.from,
    to: q.to,
    entity: q.entity,
    after_day: q.after?.day ?? '0001-01-01',
    after_recipient: q.after?.recipient ?? 0,
    limit: q.limit,
  };
}

/**
 * A page of contacts from the chunks' records and from the rows recorded one a contact
 * before them (each a page in the ledger's order): the first `limit` of both, in that order.
 */
export function contactsPage(a: ContactRecord[], b: ContactRecord[], limit: number): ContactRecord[] {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  const before = (x: ContactRecord, y: ContactRecord) =>
    x.day < y.day || (x.day === y.day && x.recipient < y.recipient);
  return [...a, ...b].sort((x, y) => (before(x, y) ? -1 : 1)).slice(0, limit);
}
