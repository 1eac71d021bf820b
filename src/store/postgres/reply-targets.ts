// The PostgreSQL store's reply targets (docs/replies.md "The join"): a chunk's recipients
// become them when they are settled as sent, whichever way (../shared-sql.ts insertReplyTargets).

import type pg from 'pg';
import { num } from '../mapping.ts';
import type { PgDb } from './connection.ts';
import * as S from './sql.ts';

/**
 * The chunk's recipients now sent become the reply targets of the file's short code, sent at
 * `now` (docs/replies.md "The join"): with the chunk's result, and when delivery reports settle
 * a chunk in doubt as sent. The one place both write them, inside their transaction `c` (which
 * holds the chunk's lock). `known`: the file's short code and the chunk's id range when the
 * caller has them; else read on `c` (never the pool: the transaction holds a connection).
 */
export async function writeReplyTargets(
  db: PgDb,
  c: pg.PoolClient,
  fileId: string,
  seq: number,
  now: string | null,
  known?: { shortCode: string | null; lo: number; hi: number },
): Promise<void> {
  const what = `keeping the reply targets of chunk ${seq} of ${fileId}`;
  let target = known;
  if (!target) {
    const [f] = await db.rows(what, S.SHORT_CODE, { file_id: fileId }, c);
    if (f?.short_code == null) return;
    const [s] = await db.rows(what, S.LOCK_CHUNK, { file_id: fileId, seq }, c);
    if (s?.first_id == null) return;
    target = { shortCode: String(f.short_code), lo: num(s.first_id), hi: num(s.last_id) };
  }
  if (target.shortCode === null) return;
  const { shortCode, lo, hi } = target;
  await db.count(
    what,
    S.INSERT_REPLY_TARGETS,
    { file_id: fileId, seq, lo, hi, short_code: shortCode, now },
    c,
  );
}
