// The SQLite store's reply targets (docs/replies.md "The join"): a chunk's recipients become
// them when they are settled as sent, whichever way (../shared-sql.ts insertReplyTargets).

import type { SqliteDb } from './connection.ts';
import * as S from './sql.ts';

/**
 * The chunk's recipients now sent become the reply targets of the file's short code, sent at
 * `now` (docs/replies.md "The join"): with the chunk's result, and when delivery reports settle
 * a chunk in doubt as sent. The one place both write them, inside their transaction.
 */
export function writeReplyTargets(
  db: SqliteDb,
  fileId: string,
  seq: number,
  now: string,
  span: { lo: number; hi: number } = db.span(fileId, seq),
): void {
  const shortCode = db.stmt(S.SHORT_CODE).get(fileId)?.short_code;
  if (typeof shortCode !== 'string') return;
  db.stmt(S.INSERT_REPLY_TARGETS).run({ short_code: shortCode, now, file_id: fileId, ...span, seq });
}
