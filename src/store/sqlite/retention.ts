// The SQLite store's retention area: one prune step (the rule and the loop: ../retention.ts).

import type { SQLOutputValue } from 'node:sqlite';
import { str } from '../mapping.ts';
import { idRange } from '../message-ids.ts';
import { type PruneFile, pruneRule } from '../retention.ts';
import { runSync } from '../steps.ts';
import type { PruneStep } from '../store.ts';
import { changes, list, type SqliteDb } from './connection.ts';
import { keepContacts } from './ledger.ts';
import { countsNow } from './reads.ts';
import * as S from './sql.ts';

export async function prune(
  db: SqliteDb,
  options: { finishedBefore: string; maxRows: number },
): Promise<PruneStep> {
  const now = db.now();
  const file = (row: Record<string, SQLOutputValue> | undefined): PruneFile | null =>
    row ? { fileId: str(row.file_id), fileNo: db.readFileNo(str(row.file_id)) } : null;
  return db.tx(() =>
    runSync(pruneRule(options), {
      pruningFile: () => file(db.stmt(S.PRUNING_FILE).get()),
      prunableFile: (states, before) => file(db.stmt(S.PRUNABLE_FILE).get({ states: list(states), before })),
      markPruned: (f) =>
        void db.stmt(S.MARK_PRUNED).run(JSON.stringify(countsNow(db, f.fileId)), now, f.fileId),
      pruneOrphans: (before, maxRows) => changes(db.stmt(S.PRUNE_ORPHANS).run(before, maxRows)),
      pruneReplies: (before, maxRows) => {
        const ids = JSON.stringify(
          db
            .stmt(S.OLD_REPLIES)
            .all({ before, max_rows: maxRows })
            .map((r) => r.id),
        );
        db.stmt(S.PRUNE_REPLY_ANSWERS).run({ ids });
        return changes(db.stmt(S.PRUNE_REPLIES).run({ ids }));
      },
      pruneRecipients: (f, maxRows) => {
        if (f.fileNo === null) return { deleted: 0, tns: [], left: false };
        const { lo, hi } = idRange(f.fileNo);
        keepContacts(db, lo, hi, maxRows);
        const deleted = db.arrays(S.PRUNE_RECIPIENTS).all(lo, hi, maxRows) as unknown as SQLOutputValue[][];
        const tns: string[] = [];
        const numbers = new Set<string>();
        for (const [tn, number] of deleted) {
          if (tn !== null && tn !== undefined) tns.push(str(tn));
          if (number !== null && number !== undefined) numbers.add(str(number));
        }
        // Their reply targets (docs/replies.md "Retention"), when the file had a short code.
        const shortCode = db.stmt(S.SHORT_CODE).get(f.fileId)?.short_code;
        if (typeof shortCode === 'string' && numbers.size > 0)
          db.stmt(S.PRUNE_REPLY_TARGETS).run({
            short_code: shortCode,
            numbers: JSON.stringify([...numbers]),
            lo,
            hi,
          });
        return { deleted: deleted.length, tns, left: deleted.length >= maxRows };
      },
      finishFile: (f) => {
        const tns = db
          .stmt(S.CHUNK_TNS)
          .all(f.fileId)
          .map((c) => str(c.transaction_number));
        db.stmt(S.CLEAR_CHUNKS).run(f.fileId);
        db.stmt(S.CLEAR_ATTACHMENTS).run(f.fileId);
        if (f.fileNo !== null) db.stmt(S.CLEAR_SPANS).run(f.fileNo);
        db.stmt(S.PRUNE_DONE).run(f.fileId);
        return tns;
      },
      pruneEvents: (f, tns) => {
        const drop = db.stmt(S.PRUNE_EVENTS);
        let n = 0;
        for (const tn of tns) n += changes(drop.run(tn, f.fileId));
        return n;
      },
    }),
  );
}
