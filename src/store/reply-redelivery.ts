// A reply delivered again without the SMSC's message id (docs/opt-outs.md "A reply delivered
// again"), written once for both backends. A deliver_sm carries no time of its own (SMPP 3.4
// and 5.0 leave schedule_delivery_time and validity_period empty in it), so what tells an SMSC's
// second delivery of a message from a person's second message is the sender, the short code, the
// text and when dropline received it: the same three less than REDELIVERY_WINDOW_MS after one
// kept are the same reply. The store refuses it by a unique index on the three (their digest)
// and a cell of time, on two grids half a cell apart, so two transactions that record the same
// delivery at once cannot both keep it; a NOT EXISTS in the insert makes the rule exact (less
// than the window apart, wherever the cells fall) for replies recorded one after the other.
import { createHash } from 'node:crypto';

/**
 * Less than this apart, the same text from the same number to the same short code is one
 * reply. Above an SMSC's wait for an answer and dropline's reconnection (1 s after a connection
 * that worked), below a person's same answer sent again a minute later.
 */
export const REDELIVERY_WINDOW_MS = 60_000;

/** The columns and bounds a reply without a message id is recorded with; all null with one. */
export interface RedeliveryKey {
  /** sha256 (base64url) of the sender, the short code and the text. */
  fingerprint: string | null;
  /** receivedAt's cell on the grid of REDELIVERY_WINDOW_MS. */
  cellA: number | null;
  /** Its cell on the same grid moved half a cell. */
  cellB: number | null;
  /** ISO-8601: the replies kept strictly between these are this one delivered again. */
  after: string | null;
  before: string | null;
}

const NONE: RedeliveryKey = { fingerprint: null, cellA: null, cellB: null, after: null, before: null };

export function redeliveryKey(reply: {
  receivedAt: string;
  from: string;
  to: string;
  text: string;
  messageId: string | null;
}): RedeliveryKey {
  // The SMSC's id says which message it is; two ids are two replies, however close.
  if (reply.messageId !== null) return NONE;
  const at = Date.parse(reply.receivedAt);
  if (!Number.isFinite(at)) return NONE;
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([reply.from, reply.to, reply.text]))
    .digest('base64url');
  const w = REDELIVERY_WINDOW_MS;
  return {
    fingerprint,
    cellA: Math.floor(at / w),
    cellB: Math.floor((at + w / 2) / w),
    after: new Date(at - w).toISOString(),
    before: new Date(at + w).toISOString(),
  };
}

/** recordReplySql's parameters for it. */
export function redeliveryColumns(reply: Parameters<typeof redeliveryKey>[0]): {
  fingerprint: string | null;
  cell_a: number | null;
  cell_b: number | null;
  after: string | null;
  before: string | null;
} {
  const k = redeliveryKey(reply);
  return { fingerprint: k.fingerprint, cell_a: k.cellA, cell_b: k.cellB, after: k.after, before: k.before };
}
