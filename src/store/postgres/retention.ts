// The PostgreSQL store's retention area: one prune step (the rule and the loop: ../retention.ts).

import type pg from 'pg';
import { num, type Row, str } from '../mapping.ts';
import { idRange } from '../message-ids.ts';
import { type PruneFile, pruneRule } from '../retention.ts';
import { runAsync } from '../steps.ts';
import type { PruneStep } from '../store.ts';
import { textArray } from './arrays.ts';
import type { PgDb } from './connection.ts';
import { keepContacts } from './ledger.ts';
import { countsOn } from './reads.ts';
import * as S from './sql.ts';

export async function prune(
  db: PgDb,
  options: { finishedBefore: string; maxRows: number },
): Promise<PruneStep> {
  const what = 'pruning';
  const file = (row: Row | undefined): PruneFile | null =>
    row ? { fileId: str(row.file_id), fileNo: num(row.file_no) } : null;
  return db.tx(what, async (c) => {
    const now = db.now();
    return runAsync(pruneRule(options), {
      pruningFile: async () => file((await db.rows(what, S.PRUNING_FILE, {}, c))[0]),
      prunableFile: async (states, before) =>
        file((await db.rows(what, S.PRUNABLE_FILE, { states, before }, c))[0]),
      markPruned: async (f) => {
        const counts = (await countsOn(db, c, [f.fileId])).get(f.fileId);
        await db.count(what, S.MARK_PRUNED, { file_id: f.fileId, counts: JSON.stringify(counts), now }, c);
      },
      pruneOrphans: (before, maxRows) => db.count(what, S.PRUNE_ORPHANS, { before, max_rows: maxRows }, c),
      pruneReplies: async (before, maxRows) => {
        const ids = (await db.rows(what, S.OLD_REPLIES, { before, max_rows: maxRows }, c)).map((r) => r.id);
        if (ids.length === 0) return 0;
        await db.count(what, S.PRUNE_REPLY_ANSWERS, { ids }, c);
        return db.count(what, S.PRUNE_REPLIES, { ids }, c);
      },
      pruneRecipients: async (f, maxRows) => {
        const range = idRange(f.fileNo ?? 0);
        const tns: string[] = [];
        let deleted = 0;
        const [bounds] = await db.rows(what, S.ID_BOUNDS, range, c);
        if (bounds?.first != null) {
          const first = num(bounds.first);
          await keepContacts(db, c, what, {
            first,
            last: Math.min(first + maxRows - 1, range.hi),
            hi: range.hi,
          });
          const rows = await db.rows(
            what,
            S.PRUNE_RECIPIENTS,
            { from: num(bounds.first), hi: range.hi, max_rows: maxRows },
            c,
          );
          deleted = rows.length;
          for (const r of rows) if (r.transaction_number != null) tns.push(str(r.transaction_number));
          await pruneReplyTargets(db, c, f.fileId, range, rows);
        }
        const [left] = await db.rows(what, S.ID_BOUNDS, range, c);
        return { deleted, tns, left: left?.first != null };
      },
      finishFile: async (f) => {
        const tns = (await db.rows(what, S.CHUNK_TNS, { file_id: f.fileId }, c)).map((r) =>
          str(r.transaction_number),
        );
        await db.count(what, S.CLEAR_CHUNKS, { file_id: f.fileId }, c);
        await db.count(what, S.CLEAR_ATTACHMENTS, { file_id: f.fileId }, c);
        await db.count(what, S.CLEAR_SPANS, { file_no: f.fileNo }, c);
        await db.count(what, S.PRUNE_DONE, { file_id: f.fileId }, c);
        return tns;
      },
      pruneEvents: (f, tns) => db.count(what, S.PRUNE_EVENTS, { tns: [...tns], file_id: f.fileId }, c),
    });
  });
}

/** The reply targets of recipients just pruned (docs/replies.md "Retention"), when the file had a short code. */
async function pruneReplyTargets(
  db: PgDb,
  c: pg.PoolClient,
  fileId: string,
  range: { lo: number; hi: number },
  rows: readonly Row[],
): Promise<void> {
  const numbers = new Set<string>();
  for (const r of rows) if (r.number != null) numbers.add(str(r.number));
  if (numbers.size === 0) return;
  const [file] = await db.rows('pruning', S.SHORT_CODE, { file_id: fileId }, c);
  if (file?.short_code == null) return;
  await db.count(
    'pruning',
    S.PRUNE_REPLY_TARGETS,
    { short_code: str(file.short_code), numbers: textArray([...numbers]), ...range },
    c,
  );
}
