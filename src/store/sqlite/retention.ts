// The SQLite store's retention area: one prune step (the loop: ../retention.ts).

import type { SQLOutputValue } from 'node:sqlite';
import { str } from '../mapping.ts';
import { SPAN } from '../message-ids.ts';
import { FINAL_FILE_STATES, type PruneStep } from '../store.ts';
import { changes, type SqliteDb } from './connection.ts';
import { countsNow } from './reads.ts';

export async function prune(
  db: SqliteDb,
  options: { finishedBefore: string; maxRows: number },
): Promise<PruneStep> {
  const now = db.now();
  const maxRows = Math.max(1, Math.trunc(options.maxRows));
  return db.tx((): PruneStep => {
    const step: PruneStep = {
      fileId: null,
      marked: false,
      fileDone: false,
      recipients: 0,
      events: 0,
      idle: false,
    };
    // A file being pruned first, else the oldest finished file past the cutoff.
    let row = db.stmt('SELECT file_id FROM files WHERE pruning = 1 LIMIT 1').get();
    if (!row) {
      row = db
        .stmt(
          `SELECT file_id FROM files WHERE state IN (SELECT value FROM json_each(:states))
           AND updated_at < :before AND pruned_at IS NULL ORDER BY updated_at LIMIT 1`,
        )
        .get({ states: JSON.stringify(FINAL_FILE_STATES), before: options.finishedBefore });
      if (row) {
        const fileId = str(row.file_id);
        // Its counts as they are now: what status shows once its rows are gone.
        db.stmt(
          'UPDATE files SET pruned_counts = ?, pruned_at = ?, pruning = 1 WHERE file_id = ? AND pruned_at IS NULL',
        ).run(JSON.stringify(countsNow(db, fileId)), now, fileId);
        step.marked = true;
      }
    }
    if (!row) {
      // No file left: orphan reports recorded before the cutoff, a batch at a time.
      step.events = changes(
        db
          .stmt(
            `DELETE FROM delivery_events WHERE (transaction_number, to_number) IN (
             SELECT transaction_number, to_number FROM delivery_events
             WHERE orphan = 1 AND recorded_at < ? LIMIT ?)`,
          )
          .run(options.finishedBefore, maxRows),
      );
      step.idle = step.events < maxRows;
      return step;
    }
    const fileId = str(row.file_id);
    step.fileId = fileId;
    // A report names its request's transactionNumber: the file's reports are found by the
    // transaction numbers of its rows and chunks (and bulkId), not by a scan of every report.
    const dropEvents = db.stmt('DELETE FROM delivery_events WHERE transaction_number = ? AND bulk_id = ?');
    const tns = new Set<string>();
    const n = db.readFileNo(fileId);
    if (n !== null) {
      const deleted = db
        .arrays(
          `DELETE FROM recipients WHERE id IN (SELECT id FROM recipients WHERE id BETWEEN ? AND ? LIMIT ?)
         RETURNING transaction_number`,
        )
        .all(n * SPAN, n * SPAN + SPAN - 1, maxRows) as unknown as SQLOutputValue[][];
      step.recipients = deleted.length;
      for (const [tn] of deleted) if (tn !== null && tn !== undefined) tns.add(str(tn));
    }
    if (step.recipients < maxRows) {
      for (const c of db
        .stmt('SELECT transaction_number FROM chunks WHERE file_id = ? AND transaction_number IS NOT NULL')
        .all(fileId))
        tns.add(str(c.transaction_number));
      db.stmt('DELETE FROM chunks WHERE file_id = ?').run(fileId);
      db.stmt('DELETE FROM file_attachments WHERE file_id = ?').run(fileId);
      if (n !== null) db.stmt('DELETE FROM chunk_spans WHERE file_no = ?').run(n);
      db.stmt('UPDATE files SET pruning = 0 WHERE file_id = ?').run(fileId);
      step.fileDone = true;
    }
    for (const tn of tns) step.events += changes(dropEvents.run(tn, fileId));
    return step;
  });
}
