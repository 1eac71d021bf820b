// The PostgreSQL store's retention area: one prune step (the rule and the loop: ../retention.ts).

import { num, type Row, str } from '../mapping.ts';
import { idRange } from '../message-ids.ts';
import { type PruneFile, pruneRule } from '../retention.ts';
import { runAsync } from '../steps.ts';
import type { PruneStep } from '../store.ts';
import type { PgDb } from './connection.ts';
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
      pruneRecipients: async (f, maxRows) => {
        const range = idRange(f.fileNo ?? 0);
        const tns: string[] = [];
        let deleted = 0;
        const [bounds] = await db.rows(what, S.ID_BOUNDS, range, c);
        if (bounds?.first != null) {
          const rows = await db.rows(
            what,
            S.PRUNE_RECIPIENTS,
            { from: num(bounds.first), hi: range.hi, max_rows: maxRows },
            c,
          );
          deleted = rows.length;
          for (const r of rows) if (r.transaction_number != null) tns.push(str(r.transaction_number));
        }
        const [left] = await db.rows(what, S.ID_BOUNDS, range, c);
        const targets = await db.count(what, S.PRUNE_REPLY_TARGETS, { ...range, max_rows: maxRows }, c);
        return { deleted, tns, left: left?.first != null || targets >= maxRows };
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
