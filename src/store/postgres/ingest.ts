// The PostgreSQL store's ingest area: a file's recipients (COPY), chunks and attachments as read.

import { DroplineError } from '../../errors.ts';
import { str } from '../mapping.ts';
import { idRange, MAX_FILE_NO, SPAN, storedMessageId } from '../message-ids.ts';
import type { ChunkInsert, FileAttachment, RecipientInsert } from '../store.ts';
import { type PgDb, storeError } from './connection.ts';
import { copyIn, copyValue } from './copy.ts';
import * as S from './sql.ts';

export async function clearRecipients(db: PgDb, fileId: string): Promise<void> {
  const what = `clearing the recipients of ${fileId}`;
  await db.tx(what, async (c) => {
    const n = await db.fileNo(fileId, c);
    if (n !== null) {
      await db.count(what, S.CLEAR_RECIPIENTS, idRange(n), c);
      await db.count(what, S.CLEAR_SPANS, { file_no: n }, c);
      await db.count(what, S.CLEAR_MINUTES, { file_no: n }, c);
    }
    await db.count(what, S.CLEAR_CHUNKS, { file_id: fileId }, c);
    await db.count(what, S.CLEAR_ATTACHMENTS, { file_id: fileId }, c);
  });
}

export async function setAttachments(
  db: PgDb,
  fileId: string,
  attachments: readonly FileAttachment[],
): Promise<void> {
  const what = `recording the attachments of ${fileId}`;
  await db.tx(what, async (c) => {
    await db.count(what, S.CLEAR_ATTACHMENTS, { file_id: fileId }, c);
    if (attachments.length > 0)
      await db.count(
        what,
        S.INSERT_ATTACHMENTS,
        {
          file_id: fileId,
          names: attachments.map((a) => a.name),
          content_types: attachments.map((a) => a.contentType),
          contents: attachments.map((a) => a.content),
        },
        c,
      );
  });
}

export async function attachments(db: PgDb, fileId: string): Promise<FileAttachment[]> {
  const rows = await db.rows(`reading the attachments of ${fileId}`, S.ATTACHMENTS, { file_id: fileId });
  return rows.map((r) => ({
    name: str(r.name),
    contentType: str(r.content_type),
    content: str(r.content),
  }));
}

export async function insertRecipients(
  db: PgDb,
  fileId: string,
  rows: readonly RecipientInsert[],
): Promise<void> {
  if (rows.length === 0) return;
  const what = `recording recipients of ${fileId}`;
  for (const r of rows) {
    if (!(Number.isInteger(r.idx) && r.idx >= 0 && r.idx < SPAN))
      throw new DroplineError('DROPLINE_ERR_STORE', `${what}: idx ${r.idx} out of range`);
  }
  // each chunk's id range in this batch (idx; made ids below)
  const spans = new Map<number, [number, number]>();
  for (const r of rows) {
    if (r.chunkSeq === null) continue;
    const span = spans.get(r.chunkSeq);
    if (!span) spans.set(r.chunkSeq, [r.idx, r.idx]);
    else {
      if (r.idx < span[0]) span[0] = r.idx;
      if (r.idx > span[1]) span[1] = r.idx;
    }
  }
  // status takes its default ('pending'); updated_at the database's now() unless a clock is injected
  const now = db.now();
  const tail = now === null ? '\n' : `\t${now}\n`;
  await db.tx(what, async (c) => {
    // The file's number as committed, read inside the write: its rows are its own.
    const fileNo = await db.fileNo(fileId, c);
    if (fileNo === null)
      throw new DroplineError('DROPLINE_ERR_STORE', `recipients of unknown file ${fileId}`);
    if (fileNo >= MAX_FILE_NO)
      throw new DroplineError('DROPLINE_ERR_STORE', `file number ${fileNo} out of range`);
    const base = fileNo * SPAN;
    let data = '';
    for (const r of rows) {
      data += `${base + r.idx}\t${r.line}\t${r.k}\t${copyValue(r.number)}\t${copyValue(r.value)}\t${copyValue(
        storedMessageId(fileId, r),
      )}\t${copyValue(r.text)}\t${copyValue(r.chunkSeq)}\t${copyValue(r.outcome)}\t${copyValue(
        r.code,
      )}\t${copyValue(r.detail)}\t${copyValue(r.smsCount)}${tail}`;
    }
    try {
      await copyIn(c, now === null ? S.COPY_RECIPIENTS : S.COPY_RECIPIENTS_AT, data);
    } catch (err) {
      throw storeError(err, what);
    }
    if (spans.size > 0) {
      const seqs = [...spans.keys()];
      await db.count(
        what,
        S.UPSERT_SPANS,
        {
          file_no: fileNo,
          seqs,
          firsts: seqs.map((s) => base + spans.get(s)![0]),
          lasts: seqs.map((s) => base + spans.get(s)![1]),
        },
        c,
      );
    }
  });
}

export async function insertChunks(db: PgDb, fileId: string, chunks: readonly ChunkInsert[]): Promise<void> {
  if (chunks.length === 0) return;
  await db.count(`recording chunks of ${fileId}`, S.INSERT_CHUNKS, {
    file_id: fileId,
    seqs: chunks.map((c) => c.seq),
    sizes: chunks.map((c) => c.size),
    now: db.now(),
  });
}
