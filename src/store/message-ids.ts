// Recipient ids and messageIds: one scheme, the same on every backend.
//
// A recipient's id is file_no * 2^32 + idx, so a file's rows are one id range and every
// query of a file is a range scan. A valid recipient whose messageId is the generated one
// (<fileId>-<line>[-<k>]) stores NULL in message_id: millions of rows need not repeat their
// fileId, and a delivery report naming such an id is found by (line, k).

import { messageIdFor } from '../plan/ids.ts';
import type { RecipientInsert } from './store.ts';

export const SPAN = 4294967296;
/** File numbers stay below this, so ids stay safe integers. */
export const MAX_FILE_NO = 2 ** 21;

/** The id range [lo, hi] of a file's recipients. */
export function idRange(fileNo: number): { lo: number; hi: number } {
  return { lo: fileNo * SPAN, hi: fileNo * SPAN + SPAN - 1 };
}

/** What message_id holds: NULL for a valid recipient's generated id, '' for a valid one without any. */
export function storedMessageId(fileId: string, r: RecipientInsert): string | null {
  if (r.chunkSeq === null) return r.messageId;
  if (r.generatedMessageId === true) return null;
  if (r.messageId === null) return '';
  return r.messageId === messageIdFor(fileId, r.line, r.k) ? null : r.messageId;
}

/** The messageId back from message_id (storedMessageId's inverse). */
export function readMessageId(
  stored: string | null,
  fileId: string,
  line: number,
  k: number,
  chunkSeq: number | null,
): string | null {
  if (chunkSeq === null) return stored;
  if (stored === null) return messageIdFor(fileId, line, k);
  return stored === '' ? null : stored;
}

const GENERATED_PART = /^[1-9][0-9]{0,9}$/;
const MAX_PART = 2 ** 31 - 1;

/** (line, k) of a generated messageId of this file, or null. */
export function parseGenerated(fileId: string, messageId: string): { line: number; k: number } | null {
  if (
    messageId.length <= fileId.length + 1 ||
    !messageId.startsWith(fileId) ||
    messageId[fileId.length] !== '-'
  ) {
    return null;
  }
  const rest = messageId.slice(fileId.length + 1).split('-');
  if (rest.length > 2 || !rest.every((p) => GENERATED_PART.test(p))) return null;
  const line = Number(rest[0]);
  const k = rest.length === 2 ? Number(rest[1]) : 0;
  // No file has a line or part past a 32-bit integer (the columns on PostgreSQL): such an id is
  // not one dropline generated, and must not fail a batch of reports by overflowing.
  if (line > MAX_PART || k > MAX_PART) return null;
  return { line, k };
}

/**
 * A report's `to` in the form numbers are stored and sent (digits only, country code first):
 * a report names its recipient by bulkId + messageId AND number; one whose `to` is another
 * number is an orphan, never a status change (issue 10, item 17).
 */
export function sentForm(to: string): string {
  return to.replace(/\D/g, '');
}

/** The largest chunk seq the chunks tables hold (an integer column); a larger one names no chunk. */
export const MAX_SEQ = 2 ** 31 - 1;

/** A chunk seq that can name a chunk: an integer from 0 to MAX_SEQ (anything else, none). */
export function isChunkSeq(seq: unknown): seq is number {
  return typeof seq === 'number' && Number.isInteger(seq) && seq >= 0 && seq <= MAX_SEQ;
}
