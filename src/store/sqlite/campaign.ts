import { localDate } from '../../plan/send-window.ts';
import { num, toReply } from '../mapping.ts';
import type { HeldBack, HoldBackOptions, NewReply, ReplyRecord } from '../store.ts';
import { changes, type SqliteDb } from './connection.ts';

export async function holdBack(
  db: SqliteDb,
  fileId: string,
  seq: number,
  options: HoldBackOptions,
): Promise<HeldBack> {
  const now = db.now();
  const { lo, hi } = db.span(fileId, seq);
  const chunk = { lo, hi, seq, now };
  return db.tx((): HeldBack => {
    const held: HeldBack = { suppressed: 0, contactLimited: 0 };
    if (options.optOuts)
      held.suppressed = changes(
        db
          .stmt(
            `UPDATE recipients SET outcome = 'suppressed', code = 'SUPPRESSED', updated_at = :now,
             detail = 'opted out by a reply after the file was read'
           WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq AND outcome = 'pending'
             AND number IN (SELECT number FROM opt_outs)`,
          )
          .run(chunk),
      );
    const limit = options.contactLimit;
    if (!limit) return held;
    // The local day on the store's clock: SQLite is one process's, so that process's clock.
    const day = localDate(new Date(now), limit.timezone);
    const slots = { lo, hi, seq, account: limit.account, day };
    // A slot per round: a number twice in the chunk takes two slots, or is held back.
    for (let slot = 1; slot <= limit.perDay; slot++)
      db.stmt(
        `INSERT INTO contacts (account, day, number, slot, recipient)
         SELECT :account, :day, r.number, :slot, r.id FROM recipients r
         WHERE r.id BETWEEN :lo AND :hi AND r.chunk_seq = :seq AND r.outcome = 'pending'
           AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.recipient = r.id AND c.account = :account AND c.day = :day)
         ORDER BY r.id
         ON CONFLICT DO NOTHING`,
      ).run({ ...slots, slot });
    held.contactLimited = changes(
      db
        .stmt(
          `UPDATE recipients SET outcome = 'contact_limit', code = 'CONTACT_LIMIT', updated_at = :now,
           detail = 'already sent a message this day by the account (contactLimit ' || :per_day || ' a day)'
         WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq AND outcome = 'pending'
           AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.recipient = recipients.id AND c.account = :account AND c.day = :day)`,
        )
        .run({ ...slots, now, per_day: limit.perDay }),
    );
    return held;
  });
}

export async function pruneContacts(db: SqliteDb, timezone: string): Promise<number> {
  const yesterday = localDate(new Date(Date.parse(db.now()) - 86_400_000), timezone);
  return changes(db.stmt('DELETE FROM contacts WHERE day < ?').run(yesterday));
}

export async function recordReply(db: SqliteDb, reply: NewReply): Promise<boolean> {
  return db.tx(() => {
    const r = db
      .stmt(
        `INSERT INTO replies (received_at, from_number, to_number, text, opt_out, message_id)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING RETURNING id`,
      )
      .get(reply.receivedAt, reply.from, reply.to, reply.text, reply.optOut ? 1 : 0, reply.messageId);
    if (!r) return false;
    if (reply.optOut)
      db.stmt('INSERT INTO opt_outs (number, at, reply) VALUES (?, ?, ?) ON CONFLICT DO NOTHING').run(
        reply.from,
        reply.receivedAt,
        num(r.id),
      );
    return true;
  });
}

export async function replies(
  db: SqliteDb,
  options: {
    since?: string | undefined;
    afterId?: number;
    limit: number;
  },
): Promise<ReplyRecord[]> {
  return db
    .stmt(`SELECT * FROM replies WHERE id > ? AND received_at >= ? ORDER BY id LIMIT ?`)
    .all(options.afterId ?? 0, options.since ?? '', options.limit)
    .map(toReply);
}
