// The SQLite store's SQL fragments and its one patch statement: the text, kept apart from the
// statements that run it (sqlite-store.ts). The rules they encode are the shared ones
// (../outcomes.ts): a valid recipient follows its chunk, its outcome the chunk's.

import type { SQLInputValue } from 'node:sqlite';
import { patchColumns } from '../mapping.ts';
import {
  acquisitionOrder,
  FOLLOWS_CHUNK,
  isDue,
  leaseFree,
  messageIdSql,
  ROW_OUTCOME,
  recipientColumns,
  TAKEN_OVER_FROM,
} from '../shared-sql.ts';
import { DELIVERED, type FilePatch } from '../store.ts';

/**
 * A report's status onto the recipient it names. VALUES rows are (line, k, status, smsCount,
 * transactionNumber, to) for a generated messageId, (messageId, NULL, status, …) for an own one.
 * A recipient delivered stays delivered: another of its sends (a resend after doubt) reported
 * failed, in whatever order the reports come (spec 6 rule 7), does not undo it.
 */
export const DELIVERY_SET = `SET status = CASE WHEN status = '${DELIVERED}' THEN status ELSE v.column3 END,
     sms_count = coalesce(v.column4, sms_count),
     transaction_number = coalesce(transaction_number, v.column5), updated_at = :now`;

/** The SQL form of readMessageId for matching a list of messageIds (:fid is the fileId). */
export const MESSAGE_ID_SQL = messageIdSql(':fid', '');

// A valid recipient follows its chunk (../shared-sql.ts FOLLOWS_CHUNK). `c` is its chunk,
// joined only for the rows that follow it (WITH_CHUNK).
export const WITH_CHUNK = `recipients r LEFT JOIN chunks c
  ON ${FOLLOWS_CHUNK} AND c.file_id = :fid AND c.seq = r.chunk_seq`;
export const OUTCOME_SQL = ROW_OUTCOME;
/** The later of two timestamps (ISO text), either NULL. */
const latest = (a: string, b: string) => `CASE WHEN ${a} > ${b} THEN ${a} ELSE ${b} END`;
/** A recipient row as it reads (toRecipient's columns). */
export const RECIPIENT_SQL = recipientColumns(true, latest);
/** reportPages' columns, in this order: what a report row needs, no text. */
export const REPORT_SQL = recipientColumns(false, latest);

// One statement for every transition and update: each patch field has a "set" flag, so
// the statement is prepared once whatever the patch holds, and the precondition (state,
// lease owner) sits in the same UPDATE as the change.
export const PATCH_SQL = `
UPDATE files SET
  state = coalesce(:to, state),
  timestamps = CASE WHEN :to IS NULL THEN timestamps ELSE json_insert(timestamps, '$.' || :to, :now) END,
  path = CASE WHEN :set_path THEN :path ELSE path END,
  layout = CASE WHEN :set_layout THEN :layout ELSE layout END,
  encoding = CASE WHEN :set_encoding THEN :encoding ELSE encoding END,
  separator = CASE WHEN :set_separator THEN :separator ELSE separator END,
  header = CASE WHEN :set_header THEN :header ELSE header END,
  priority = CASE WHEN :set_priority THEN :priority ELSE priority END,
  records = CASE WHEN :set_counts THEN :records ELSE records END,
  valid = CASE WHEN :set_counts THEN :valid ELSE valid END,
  invalid = CASE WHEN :set_counts THEN :invalid ELSE invalid END,
  duplicates = CASE WHEN :set_counts THEN :duplicates ELSE duplicates END,
  suppressed = CASE WHEN :set_counts THEN :suppressed ELSE suppressed END,
  segments = CASE WHEN :set_counts THEN :segments ELSE segments END,
  rejection_code = CASE WHEN :set_rejection THEN :rejection_code ELSE rejection_code END,
  rejection_message = CASE WHEN :set_rejection THEN :rejection_message ELSE rejection_message END,
  reason = CASE WHEN :set_reason THEN :reason ELSE reason END,
  errors = CASE WHEN :set_errors THEN :errors ELSE errors END,
  error_counts = CASE WHEN :set_error_counts THEN :error_counts ELSE error_counts END,
  delivery_deadline = CASE WHEN :set_deadline THEN :deadline ELSE delivery_deadline END,
  send_at = CASE WHEN :set_send_at THEN :send_at ELSE send_at END,
  scheduled_until = CASE WHEN :set_scheduled_until THEN :scheduled_until ELSE scheduled_until END,
  cost = CASE WHEN :set_cost THEN :cost ELSE cost END,
  content = CASE WHEN :set_content THEN :content ELSE content END,
  detail = CASE WHEN :set_detail THEN :detail ELSE detail END,
  updated_at = :now
WHERE file_id = :file_id
  AND (:from IS NULL OR state IN (SELECT value FROM json_each(:from)))
  AND (:owner IS NULL OR lease_owner = :owner)
RETURNING *`;

/** A FilePatch as PATCH_SQL's parameters (flags 0/1: node:sqlite takes no booleans). */
export function patchParams(patch: FilePatch | undefined): Record<string, SQLInputValue> {
  return patchColumns(patch, (b) => (b ? 1 : 0));
}

/** An account's budget written whole (under the transaction that read it). */
export const UPDATE_BUDGET = `UPDATE send_budgets SET next_at = :next_at, pace = :pace, paced_at = :paced_at,
  blocked_until = :blocked_until, reason = :reason WHERE account_key = :key`;

// ---- campaign rules (the rule: ../campaign-rules.ts) ----

/** The chunk's pending rows whose number opted out by a reply: held back (:code, :detail). */
export const HOLD_BACK_OPT_OUTS = `UPDATE recipients SET outcome = 'suppressed', code = :code, detail = :detail, updated_at = :now
  WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq AND outcome = 'pending'
    AND number IN (SELECT number FROM opt_outs)`;

/** One slot round of the account's local day (:day) for the chunk's pending rows without one. */
export const TAKE_CONTACT_SLOTS = `INSERT INTO contacts (account, day, number, slot, recipient)
  SELECT :account, :day, r.number, :slot, r.id FROM recipients r
  WHERE r.id BETWEEN :lo AND :hi AND r.chunk_seq = :seq AND r.outcome = 'pending'
    AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.recipient = r.id AND c.account = :account AND c.day = :day)
  ORDER BY r.id
  ON CONFLICT DO NOTHING`;

/** The chunk's pending rows left without a slot: held back (:code, :detail). */
export const HOLD_BACK_CONTACTS = `UPDATE recipients SET outcome = 'contact_limit', code = :code, detail = :detail, updated_at = :now
  WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq AND outcome = 'pending'
    AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.recipient = recipients.id AND c.account = :account AND c.day = :day)`;

// ---- retention (the rule: ../retention.ts) ----

export const PRUNING_FILE = 'SELECT file_id FROM files WHERE pruning = 1 LIMIT 1';
export const PRUNABLE_FILE = `SELECT file_id FROM files WHERE state IN (SELECT value FROM json_each(:states))
    AND updated_at < :before AND pruned_at IS NULL ORDER BY updated_at LIMIT 1`;
export const MARK_PRUNED =
  'UPDATE files SET pruned_counts = ?, pruned_at = ?, pruning = 1 WHERE file_id = ? AND pruned_at IS NULL';
export const PRUNE_ORPHANS = `DELETE FROM delivery_events WHERE (transaction_number, to_number) IN (
    SELECT transaction_number, to_number FROM delivery_events WHERE orphan = 1 AND recorded_at < ? LIMIT ?)`;
/** At most ? of the file's rows (its id range), their transaction numbers returned. */
export const PRUNE_RECIPIENTS = `DELETE FROM recipients WHERE id IN (SELECT id FROM recipients WHERE id BETWEEN ? AND ? LIMIT ?)
  RETURNING transaction_number`;
export const CHUNK_TNS =
  'SELECT transaction_number FROM chunks WHERE file_id = ? AND transaction_number IS NOT NULL';
export const CLEAR_CHUNKS = 'DELETE FROM chunks WHERE file_id = ?';
export const CLEAR_ATTACHMENTS = 'DELETE FROM file_attachments WHERE file_id = ?';
export const CLEAR_SPANS = 'DELETE FROM chunk_spans WHERE file_no = ?';
export const PRUNE_DONE = 'UPDATE files SET pruning = 0 WHERE file_id = ?';
/** A report names its request's transactionNumber: the file's reports by those and its bulkId. */
export const PRUNE_EVENTS = 'DELETE FROM delivery_events WHERE transaction_number = ? AND bulk_id = ?';

// ---- leases ----

/**
 * Which file next, taken in one statement: the pick and the take cannot be split by another
 * writer (SQLite serialises writers; the repeated lease condition states the rule all the same).
 */
export const ACQUIRE_FILE = `UPDATE files SET lease_owner = :owner, lease_until = :until, ${TAKEN_OVER_FROM}
  WHERE file_id = (
      SELECT file_id FROM files
      WHERE state IN (SELECT value FROM json_each(:states)) AND ${leaseFree(':now')} AND ${isDue('state', ':now')}
      ${acquisitionOrder()} LIMIT 1)
    AND ${leaseFree(':now')}
  RETURNING *`;
