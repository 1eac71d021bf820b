import { num, str } from '../mapping.ts';
import { idRange } from '../message-ids.ts';
import { FINAL_FILE_STATES, type PruneStep } from '../store.ts';
import type { PgDb } from './connection.ts';
import { countsOn } from './reads.ts';
import * as S from './sql.ts';

export async function prune(
  db: PgDb,
  options: { finishedBefore: string; maxRows: number },
): Promise<PruneStep> {
  const maxRows = Math.max(1, Math.trunc(options.maxRows));
  const what = 'pruning';
  return db.tx(what, async (c): Promise<PruneStep> => {
    const now = db.now();
    const step: PruneStep = {
      fileId: null,
      marked: false,
      fileDone: false,
      recipients: 0,
      events: 0,
      idle: false,
    };
    // A file being pruned first, else the oldest finished file past the cutoff.
    let [row] = await db.rows(what, S.PRUNING_FILE, {}, c);
    if (!row) {
      [row] = await db.rows(
        what,
        S.PRUNABLE_FILE,
        { states: FINAL_FILE_STATES, before: options.finishedBefore },
        c,
      );
      if (row) {
        const fileId = str(row.file_id);
        // Its counts as they are now: what status shows once its rows are gone.
        const counts = (await countsOn(db, c, [fileId])).get(fileId);
        await db.count(what, S.MARK_PRUNED, { file_id: fileId, counts: JSON.stringify(counts), now }, c);
        step.marked = true;
      }
    }
    if (!row) {
      // No file left: orphan reports recorded before the cutoff, a batch at a time.
      step.events = await db.count(
        what,
        S.PRUNE_ORPHANS,
        { before: options.finishedBefore, max_rows: maxRows },
        c,
      );
      step.idle = step.events < maxRows;
      return step;
    }
    const fileId = str(row.file_id);
    const n = num(row.file_no);
    step.fileId = fileId;
    const tns = new Set<string>();
    const range = idRange(n);
    const [bounds] = await db.rows(what, S.ID_BOUNDS, range, c);
    if (bounds?.first != null) {
      const deleted = await db.rows(
        what,
        S.PRUNE_RECIPIENTS,
        { from: num(bounds.first), hi: range.hi, max_rows: maxRows },
        c,
      );
      step.recipients = deleted.length;
      for (const r of deleted) if (r.transaction_number != null) tns.add(str(r.transaction_number));
    }
    const [left] = await db.rows(what, S.ID_BOUNDS, range, c);
    if (left?.first == null) {
      for (const r of await db.rows(what, S.CHUNK_TNS, { file_id: fileId }, c))
        tns.add(str(r.transaction_number));
      await db.count(what, S.CLEAR_CHUNKS, { file_id: fileId }, c);
      await db.count(what, S.CLEAR_ATTACHMENTS, { file_id: fileId }, c);
      await db.count(what, S.CLEAR_SPANS, { file_no: n }, c);
      await db.count(what, S.PRUNE_DONE, { file_id: fileId }, c);
      step.fileDone = true;
    }
    if (tns.size > 0)
      step.events = await db.count(what, S.PRUNE_EVENTS, { tns: [...tns], file_id: fileId }, c);
    return step;
  });
}
