// The SQL of the SQLite store, and nothing else (as postgres/sql.ts): the statements its areas
// (files.ts, sending.ts, …) run, kept apart from the code that runs them. The rules both
// backends share are built once in ../shared-sql.ts (a valid recipient follows its chunk, the
// messageId scheme, which file next) and ../campaign-rules.ts, ../retention.ts.

import {
  abandonAnswersSql,
  acquisitionOrder,
  answersOwedSql,
  claimAnswerSql,
  FOLLOWS_CHUNK,
  fileRepliesSql,
  insertReplyTargets,
  isDue,
  leaseFree,
  messageIdSql,
  oldRepliesSql,
  oweAnswerSql,
  type Param,
  pathStill,
  pruneRepliesSql,
  pruneReplyAnswersSql,
  pruneReplyTargetsSql,
  ROW_OUTCOME,
  recipientColumns,
  recordReplySql,
  replyAnswerSql,
  replyCountsSql,
  settleAnswerSql,
  skipAnswerSql,
  TAKEN_OVER_FROM,
} from '../shared-sql.ts';
import { DELIVERED, PENDING_DELIVERY } from '../store.ts';

/**
 * A report's status onto the recipient it names. VALUES rows are (line, k, status, smsCount,
 * transactionNumber, to) for a generated messageId, (messageId, NULL, status, …) for an own one.
 * A recipient delivered stays delivered: another of its sends (a resend after doubt) reported
 * failed, in whatever order the reports come (docs/service.md "Status notifications"), does not undo it.
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
  reason_code = CASE WHEN :set_reason THEN :reason_code ELSE reason_code END,
  reason_params = CASE WHEN :set_reason THEN :reason_params ELSE reason_params END,
  errors = CASE WHEN :set_errors THEN :errors ELSE errors END,
  error_counts = CASE WHEN :set_error_counts THEN :error_counts ELSE error_counts END,
  delivery_deadline = CASE WHEN :set_deadline THEN :deadline ELSE delivery_deadline END,
  send_at = CASE WHEN :set_send_at THEN :send_at ELSE send_at END,
  scheduled_until = CASE WHEN :set_scheduled_until THEN :scheduled_until ELSE scheduled_until END,
  cost = CASE WHEN :set_cost THEN :cost ELSE cost END,
  content = CASE WHEN :set_content THEN :content ELSE content END,
  bulk_text = CASE WHEN :set_bulk_text THEN :bulk_text ELSE bulk_text END,
  detail = CASE WHEN :set_detail THEN :detail ELSE detail END,
  short_code = CASE WHEN :set_short_code THEN :short_code ELSE short_code END,
  updated_at = :now
WHERE file_id = :file_id
  AND (:from IS NULL OR state IN (SELECT value FROM json_each(:from)))
  AND (:owner IS NULL OR lease_owner = :owner)
RETURNING *`;

/** An account's budget written whole (under the transaction that read it). */
export const UPDATE_BUDGET = `UPDATE send_budgets SET next_at = :next_at, pace = :pace, paced_at = :paced_at,
  blocked_until = :blocked_until, reason = :reason WHERE account_key = :key`;

// ---- campaign rules (the rule: ../campaign-rules.ts; the contact ledger: ./ledger-sql.ts) ----

/** The chunk's pending rows whose number opted out by a reply: held back (:code, :detail). */
export const HOLD_BACK_OPT_OUTS = `UPDATE recipients SET outcome = 'suppressed', code = :code, detail = :detail, updated_at = :now
  WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq AND outcome = 'pending'
    AND number IN (SELECT number FROM opt_outs)`;

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
  RETURNING transaction_number, number`;
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

// ---- the statements of the areas (files, leases, ingest, sending, deliveries, campaign, accounts, reads) ----

export const SETTING = 'SELECT value FROM settings WHERE key = ?';

export const KEEP_SETTING = 'INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)';

export const SETTINGS_UNDER =
  'SELECT key, value FROM settings WHERE substr(key, 1, length(?1)) = ?1 ORDER BY key';

export const SHARED_TOKEN = `SELECT access_token, refresh_token, renew_at, generation FROM service_tokens
  WHERE account_key = ? AND generation > 0`;

export const NEW_TOKEN_ROW = 'INSERT OR IGNORE INTO service_tokens (account_key) VALUES (?)';

export const CLAIM_TOKEN_RENEWAL = `UPDATE service_tokens SET renewing_owner = :owner, renewing_until = :until
  WHERE account_key = :key AND generation = :seen
    AND (renewing_owner IS NULL OR renewing_until <= :now OR renewing_owner = :owner)`;

export const STORE_TOKEN = `UPDATE service_tokens SET access_token = :access, refresh_token = :refresh, renew_at = :renew_at,
    generation = generation + 1, renewing_owner = NULL, renewing_until = NULL
  WHERE account_key = :key AND renewing_owner = :owner
  RETURNING access_token, refresh_token, renew_at, generation`;

export const RELEASE_TOKEN_RENEWAL =
  'UPDATE service_tokens SET renewing_owner = NULL, renewing_until = NULL WHERE account_key = ? AND renewing_owner = ?';

export const NEW_BUDGET = 'INSERT OR IGNORE INTO send_budgets (account_key, account) VALUES (?, ?)';

export const READ_BUDGET = 'SELECT * FROM send_budgets WHERE account_key = ?';

export const DROP_DEAD_PERMITS = `DELETE FROM send_permits WHERE account_key = ? AND (lease_until <= ? OR owner IN
  (SELECT worker_id FROM workers WHERE heartbeat_at < ?))`;

export const LIVE_PERMITS = 'SELECT count(*) AS n FROM send_permits WHERE account_key = ?';

export const GRANT_PERMIT =
  'INSERT INTO send_permits (permit_id, account_key, owner, lease_until) VALUES (?, ?, ?, ?)';

export const RELEASE_PERMIT = 'DELETE FROM send_permits WHERE permit_id = ? AND account_key = ?';

export const SEND_BUDGETS = `SELECT b.*, (SELECT count(*) FROM send_permits p WHERE p.account_key = b.account_key
                AND p.lease_until > ? AND p.owner NOT IN
                  (SELECT worker_id FROM workers WHERE heartbeat_at < ?)) AS live
  FROM send_budgets b ORDER BY b.account`;

export const HEARTBEAT = `INSERT INTO workers (worker_id, host, pid, version, started_at, heartbeat_at)
  VALUES (:worker_id, :host, :pid, :version, :now, :now)
  ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = :now, stopped_at = NULL`;

export const DROP_OLD_WORKERS = 'DELETE FROM workers WHERE heartbeat_at < ?';

export const WORKER_STOPPED = 'UPDATE workers SET stopped_at = ? WHERE worker_id = ?';

export const LIST_WORKERS =
  'SELECT * FROM workers WHERE heartbeat_at >= ? ORDER BY started_at DESC, worker_id';

export const HELD_FILES = `SELECT file_id, name, state, lease_owner, taken_over_from FROM files
  WHERE lease_owner IS NOT NULL AND lease_until > ? ORDER BY file_no`;

export const TAKE_LEASE = `UPDATE files SET lease_owner = :owner, lease_until = :until
  WHERE file_id = :file_id AND (lease_owner IS NULL OR lease_until <= :now OR lease_owner = :owner)`;

export const RENEW_LEASE = 'UPDATE files SET lease_until = ? WHERE file_id = ? AND lease_owner = ?';

export const RELEASE_LEASE =
  'UPDATE files SET lease_owner = NULL, lease_until = NULL WHERE file_id = ? AND lease_owner = ?';

const insertFile = (
  coded: boolean,
) => `INSERT INTO files (file_id, source, name, path, sha256, bytes, state, forced,
    rejection_code, rejection_message, reason, ${coded ? 'reason_code, reason_params, ' : ''}created_at, updated_at, timestamps)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${coded ? '?, ?, ' : ''}?, ?, json_object(?, ?))
  ON CONFLICT DO NOTHING RETURNING *`;

/**
 * registerFile's insert: only the columns every schema since version 1 has (the migration
 * tests record files at older versions through it), and INSERT_FILE_CODED for a file
 * recorded rejected with its rejection's parameters (its reason's code).
 */
export const INSERT_FILE = insertFile(false);
export const INSERT_FILE_CODED = insertFile(true);

export const REGISTERED = `SELECT * FROM files WHERE (source = ? AND path = ? AND sha256 = ?) OR file_id = ?
  ORDER BY file_id = ? LIMIT 1`;

export const CLAIM_SAME = `SELECT * FROM files WHERE source = :source AND sha256 = :sha
    AND (path = :path OR (name = :name AND state IN (SELECT value FROM json_each(:active))))
  ORDER BY path = :path DESC LIMIT 1`;

export const COUNT_BY_SHA = 'SELECT count(*) AS n FROM files WHERE source = ? AND sha256 = ?';

export const CLAIM_DUPLICATE_OF = `SELECT * FROM files WHERE source = :source AND sha256 = :sha
    AND (state IN (SELECT value FROM json_each(:active))
         OR (state IN (SELECT value FROM json_each(:recent))
             AND (json_extract(timestamps, '$.submitted') >= :since OR json_extract(timestamps, '$.completed') >= :since)))
  ORDER BY created_at DESC, rowid DESC LIMIT 1`;

export const INSERT_CLAIMED = `INSERT INTO files (file_id, source, name, path, sha256, bytes, state, forced, rejection_code, rejection_message,
    reason, reason_code, reason_params, created_at, updated_at, timestamps)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, json_object(?, ?))
  ON CONFLICT DO NOTHING RETURNING *`;

export const SET_PATH = `UPDATE files SET path = :path, updated_at = :now
  WHERE file_id = :file_id AND ${pathStill('path', ':from')}`;

export const CLEAR_RECIPIENTS = 'DELETE FROM recipients WHERE id BETWEEN ? AND ?';

export const CLEAR_MINUTES = 'DELETE FROM delivery_minutes WHERE file_no = ?';

export const INSERT_ATTACHMENT =
  'INSERT INTO file_attachments (file_id, seq, name, content_type, content) VALUES (?, ?, ?, ?, ?)';

export const ATTACHMENTS =
  'SELECT name, content_type, content FROM file_attachments WHERE file_id = ? ORDER BY seq';

export const INSERT_RECIPIENT = `INSERT INTO recipients (id, line, k, number, value, message_id, text, chunk_seq, outcome, code,
    detail, sms_count, status, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

export const UPSERT_SPAN = `INSERT INTO chunk_spans (file_no, seq, first_id, last_id) VALUES (?, ?, ?, ?)
  ON CONFLICT (file_no, seq) DO UPDATE SET first_id = min(first_id, excluded.first_id),
    last_id = max(last_id, excluded.last_id)`;

export const INSERT_CHUNK = `INSERT INTO chunks (file_id, seq, size, state, attempts, updated_at) VALUES (?, ?, ?, 'pending', 0, ?)`;

export const LIST_CHUNKS = `SELECT * FROM chunks WHERE file_id = :file_id
    AND (:states IS NULL OR state IN (SELECT value FROM json_each(:states)))
  ORDER BY seq`;

export const CHUNK_RECIPIENTS = `SELECT ${RECIPIENT_SQL} FROM ${WITH_CHUNK}
  WHERE r.id BETWEEN :lo AND :hi AND r.chunk_seq = :seq
    AND (:outcomes IS NULL OR ${OUTCOME_SQL} IN (SELECT value FROM json_each(:outcomes)))
  ORDER BY r.id`;

export const CHUNK_STATE = 'SELECT state FROM chunks WHERE file_id = ? AND seq = ?';
/**
 * A chunk's state, when it last changed (an inflight chunk: when its latest start was), and
 * who holds its file's lease (lapsed or not: nobody took it over).
 */
export const CHUNK_STARTED = `SELECT c.state, c.updated_at, f.lease_owner FROM chunks c JOIN files f ON f.file_id = c.file_id
  WHERE c.file_id = ? AND c.seq = ?`;

export const CHUNK_DESTINATIONS = `SELECT number, message_id, text, line, k FROM recipients
  WHERE id BETWEEN ? AND ? AND chunk_seq = ? AND outcome = 'pending' ORDER BY id`;

export const CHUNK_MESSAGE_IDS = `SELECT number, ${MESSAGE_ID_SQL} FROM recipients
  WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq AND number IN (SELECT value FROM json_each(:numbers))
  ORDER BY id`;

export const SET_CHUNK_STATE = `UPDATE chunks SET state = :to, attempts = attempts + (:to = 'inflight'), updated_at = :now
  WHERE file_id = :file_id AND seq = :seq AND state IN (SELECT value FROM json_each(:from))
    AND (:owner IS NULL AND :file_state IS NULL
         OR EXISTS (SELECT 1 FROM files WHERE file_id = :file_id
           AND (:owner IS NULL OR (lease_owner = :owner AND lease_until > :now))
           AND (:file_state IS NULL OR state = :file_state)))`;

export const REPORTED_PART = `SELECT 1 FROM recipients WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq
  AND (:ids IS NULL OR ${MESSAGE_ID_SQL} IN (SELECT value FROM json_each(:ids)))
  AND status <> '${PENDING_DELIVERY}' LIMIT 1`;

export const SET_PART = `WITH r AS MATERIALIZED (
    SELECT id AS rid, ${MESSAGE_ID_SQL} AS mid FROM recipients
    WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq)
  UPDATE recipients SET outcome = :outcome, code = :code, detail = :detail,
    transaction_number = coalesce(m.value, transaction_number), updated_at = :now
  FROM json_each(:ids) AS m JOIN r ON r.mid = m.key
  WHERE recipients.id = r.rid`;

export const REPORTED_WHOLE = `SELECT 1 FROM recipients WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq
  AND outcome IN ('pending', 'in_doubt') AND status <> '${PENDING_DELIVERY}' LIMIT 1`;

export const SET_WHOLE = `UPDATE recipients SET outcome = :outcome, code = :code, detail = :detail,
    transaction_number = coalesce(:tn, transaction_number), updated_at = :now
  WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq AND outcome IN ('pending', 'in_doubt')`;

export const FOLLOW_WHOLE = `UPDATE recipients SET outcome = 'pending', code = NULL, detail = NULL, updated_at = :now
  WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq
    AND (outcome = 'in_doubt' OR (outcome = 'pending' AND code IS NOT NULL))`;

export const SET_FINAL_STATUS = `UPDATE recipients SET status = :status, updated_at = :now
  WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq AND status = '${PENDING_DELIVERY}'
    AND (outcome = 'sent' OR (:follows AND outcome = 'pending' AND code IS NULL))`;

export const FINISH_CHUNK = `UPDATE chunks SET state = :state, attempts = :attempts, transaction_number = coalesce(:tn, transaction_number),
    error_code = :code, error_message = :message, updated_at = :now
  WHERE file_id = :file_id AND seq = :seq`;

export const INFLIGHT_CHUNKS = `SELECT seq FROM chunks WHERE file_id = ? AND state = 'inflight' ORDER BY seq`;

export const CHUNK_REPORTED = `SELECT 1 FROM recipients WHERE id BETWEEN ? AND ? AND chunk_seq = ? AND status <> '${PENDING_DELIVERY}' LIMIT 1`;

export const SET_ABANDONED_STATE =
  'UPDATE chunks SET state = ?, updated_at = ? WHERE file_id = ? AND seq = ?';

export const UNHOLD_ROWS = `UPDATE recipients SET code = NULL, detail = NULL, updated_at = ?
  WHERE id BETWEEN ? AND ? AND chunk_seq = ? AND outcome = 'pending' AND code IS NOT NULL`;

export const REQUEUE_ROWS = `UPDATE recipients SET outcome = 'pending', code = NULL, detail = NULL, updated_at = ?
  WHERE id BETWEEN ? AND ? AND chunk_seq = ? AND outcome IN (SELECT value FROM json_each(?))`;

export const CHUNKS_IN_STATES = `SELECT seq FROM chunks WHERE file_id = ? AND state IN (SELECT value FROM json_each(?)) ORDER BY seq`;

export const REQUEUE_CHUNKS = `UPDATE chunks SET state = 'pending', error_code = NULL, error_message = NULL, updated_at = :now
  WHERE file_id = :file_id AND state IN (SELECT value FROM json_each(:states))`;

export const ADD_POSSIBLE_DUPLICATES =
  'UPDATE files SET possible_duplicates = possible_duplicates + ?, updated_at = ? WHERE file_id = ?';

export const FILE_CANCELLED = "SELECT 1 FROM files WHERE file_id = ? AND state = 'cancelled'";
export const PENDING_CHUNKS = "SELECT seq FROM chunks WHERE file_id = ? AND state = 'pending' ORDER BY seq";

export const CANCEL_HELD_ROWS = `UPDATE recipients SET outcome = 'cancelled', code = NULL, detail = ?, updated_at = ?
  WHERE id BETWEEN ? AND ? AND chunk_seq = ? AND outcome = 'pending' AND code IS NOT NULL`;

export const CANCEL_UNSENT = `UPDATE chunks SET state = 'cancelled', error_code = NULL, error_message = ?, updated_at = ?
  WHERE file_id = ? AND state = 'pending'`;

export const MARK_ORPHAN =
  'UPDATE delivery_events SET orphan = 1 WHERE transaction_number = ? AND to_number = ?';

export const ADD_DELIVERY_MINUTE = `INSERT INTO delivery_minutes (file_no, minute, delivered, undelivered, unknown, accepted)
  VALUES (?, ?, ?, ?, ?, ?)
  ON CONFLICT (file_no, minute) DO UPDATE SET delivered = delivered + excluded.delivered,
    undelivered = undelivered + excluded.undelivered, unknown = unknown + excluded.unknown,
    accepted = accepted + excluded.accepted`;

export const SETTLE_CHUNK = `UPDATE chunks SET state = CASE WHEN EXISTS (SELECT 1 FROM chunk_spans s JOIN recipients r
      ON r.id BETWEEN s.first_id AND s.last_id AND r.chunk_seq = s.seq
      WHERE s.file_no = :no AND s.seq = :seq AND r.outcome = 'pending' AND r.code IS NOT NULL)
    THEN 'pending' ELSE 'accepted' END,
    error_code = NULL, error_message = NULL, updated_at = :now
  WHERE file_id = :fid AND seq = :seq AND state = 'in_doubt'`;

export const SEND_DOUBTFUL = `UPDATE recipients SET outcome = 'sent', updated_at = ? WHERE id BETWEEN ? AND ? AND chunk_seq = ? AND outcome = 'in_doubt'`;

export const EXPIRE_DELIVERIES = `UPDATE recipients SET status = :unknown, updated_at = :now
  WHERE id BETWEEN :lo AND :hi AND status = :pending AND chunk_seq IS NOT NULL
    AND (outcome = 'sent' OR (outcome = 'pending' AND code IS NULL
      AND chunk_seq IN (SELECT seq FROM chunks WHERE file_id = :fid AND state = 'accepted')))`;

export const DELIVERY_TIMELINE = `SELECT minute, delivered, undelivered, unknown, accepted FROM delivery_minutes
  WHERE file_no = ? AND (delivered <> 0 OR undelivered <> 0 OR unknown <> 0 OR accepted <> 0)
  ORDER BY minute`;

const param: Param = (name) => `:${name}`;
export const RECORD_REPLY = recordReplySql(param);
export const FILE_REPLIES = fileRepliesSql(param);
export const REPLY_COUNTS = replyCountsSql(param);
export const INSERT_REPLY_TARGETS = insertReplyTargets(param, ':now');
export const PRUNE_REPLY_TARGETS = pruneReplyTargetsSql(param, 'SELECT value FROM json_each(:numbers)');
// The whole row: a store at an older schema (its migration tests) has no short_code column.
export const SHORT_CODE = 'SELECT * FROM files WHERE file_id = ?';

export const OPT_OUT = 'INSERT INTO opt_outs (number, at, reply) VALUES (?, ?, ?) ON CONFLICT DO NOTHING';

export const REPLIES = `SELECT * FROM replies WHERE id > ? AND received_at >= ? ORDER BY id LIMIT ?`;

export const FILE_BY_ID = 'SELECT * FROM files WHERE file_id = ?';

export const LIST_FILES = `SELECT * FROM files
  WHERE (:source IS NULL OR source = :source)
    AND (:states IS NULL OR state IN (SELECT value FROM json_each(:states)))
    AND (:search IS NULL OR instr(dropline_fold(name), :search) > 0
         OR substr(lower(file_id), 1, length(:search)) = :search)
    AND (:before IS NULL OR (created_at, rowid) < (SELECT created_at, rowid FROM files WHERE file_id = :before))
  ORDER BY created_at DESC, rowid DESC LIMIT :limit`;

export const FILE_EVENTS = `SELECT at, state, reason, reason_code, reason_params FROM (
    SELECT id, at, state, reason, reason_code, reason_params FROM file_events WHERE file_id = ? ORDER BY id DESC LIMIT ?)
  ORDER BY id`;

export const REPORT_FAILURES = 'SELECT report_failures FROM files WHERE file_id = ?';

export const REPORT_FAILED = `UPDATE files SET report_owed_at = coalesce(report_owed_at, :now), report_failures = report_failures + 1,
  report_retry_at = :retry WHERE file_id = :file_id`;

export const OWE_REPORTS = `UPDATE files SET report_owed_at = coalesce(report_owed_at, :now), report_retry_at = :now
  WHERE file_id = :file_id`;

export const REPORTS_WRITTEN = `UPDATE files SET report_owed_at = NULL, report_failures = 0, report_retry_at = NULL
  WHERE file_id = ? AND report_owed_at IS NOT NULL`;

export const REPORTS_DUE = `SELECT file_id FROM files WHERE report_retry_at IS NOT NULL AND report_retry_at <= ?
  ORDER BY report_retry_at LIMIT ?`;

export const KNOWN_FILES = 'SELECT file_id FROM files WHERE file_id IN (SELECT value FROM json_each(?))';

export const FILE_COUNTS =
  'SELECT records, valid, invalid, duplicates, suppressed, segments, pruned_counts FROM files WHERE file_id = ?';

export const CHUNK_COUNTS = `SELECT c.state, count(*) AS n, total(c.size) AS size, total(s.reported) AS reported,
    total(s.delivered) AS delivered, total(s.unknown) AS unknown, total(s.accepted) AS accepted,
    total(s.reported_follow) AS reported_follow, total(s.reported_sent) AS reported_sent
  FROM chunks c LEFT JOIN chunk_spans s ON s.file_no = :no AND s.seq = c.seq
  WHERE c.file_id = :fid GROUP BY c.state`;

export const OWN_COUNTS = `SELECT r.outcome, c.state, count(*) AS n
  FROM recipients r INDEXED BY recipients_settled LEFT JOIN chunks c ON c.file_id = ? AND c.seq = r.chunk_seq
  WHERE r.id BETWEEN ? AND ? AND r.chunk_seq IS NOT NULL AND (r.outcome <> 'pending' OR r.code IS NOT NULL)
  GROUP BY r.outcome, c.state`;

export const REPORT_PAGE = `SELECT ${REPORT_SQL} FROM ${WITH_CHUNK} WHERE r.id > :after AND r.id <= :hi ORDER BY r.id LIMIT :limit`;

export const RECIPIENT_PAGE = `SELECT ${RECIPIENT_SQL} FROM ${WITH_CHUNK} WHERE r.id > :after AND r.id <= :hi
    AND (:outcomes IS NULL OR ${OUTCOME_SQL} IN (SELECT value FROM json_each(:outcomes)))
  ORDER BY r.id LIMIT :limit`;

// ---- statements over rows of values (SqliteDb.rowsStatement: `list` is the rows' VALUES) ----

/** A pending valid recipient's row of values (insertPending), 7 parameters. */
export const PENDING_ROW = `(?, ?, ?, ?, ?, ?, ?, 'pending', ?, '${PENDING_DELIVERY}', :now)`;
export const insertPending = (list: string) =>
  `INSERT INTO recipients (id, line, k, number, message_id, text, chunk_seq, outcome, sms_count, status, updated_at)
  VALUES ${list}`;

/** A delivery report's row of values (appendEvents). */
export const APPEND_ROW = '(?, ?, ?, ?, ?, ?, ?, ?, :now, 0)';
export const appendEvents = (list: string) =>
  `INSERT INTO delivery_events (transaction_number, to_number, message_id, bulk_id, callback_data,
    sms_count, status, received_at, recorded_at, orphan) VALUES ${list}
  ON CONFLICT (transaction_number, to_number) DO NOTHING RETURNING transaction_number, to_number`;

/** A report onto its recipient: (line, k | messageId, NULL, status, smsCount, transactionNumber, to). */
export const DELIVER_ROW = '(?, ?, ?, ?, ?, ?)';
/** Onto the rows still `pending` (`fresh`), or onto those with a status already. */
const withStatus = (fresh: boolean) =>
  fresh ? `status = '${PENDING_DELIVERY}'` : `status <> '${PENDING_DELIVERY}'`;

// chunk_seq IS NOT NULL: invalid and duplicate rows were never sent. INDEXED BY: without
// statistics SQLite may pick the id range and scan every recipient of the file for each
// report (~20 ms a report at 100k recipients).

/** Reports naming a generated messageId, by (line, k). */
export const deliverGenerated = (list: string, fresh: boolean) =>
  `UPDATE recipients INDEXED BY recipients_line ${DELIVERY_SET} FROM (VALUES ${list}) AS v
  WHERE line = v.column1 AND k = v.column2 AND id BETWEEN :lo AND :hi
    AND message_id IS NULL AND chunk_seq IS NOT NULL AND number = v.column6 AND ${withStatus(fresh)}
  RETURNING line || '-' || k, chunk_seq, outcome, code, status`;

/** Reports naming a messageId of the file's own. */
export const deliverOwn = (list: string, fresh: boolean) =>
  `UPDATE recipients INDEXED BY recipients_message ${DELIVERY_SET} FROM (VALUES ${list}) AS v
  WHERE message_id = v.column1 AND id BETWEEN :lo AND :hi AND chunk_seq IS NOT NULL
    AND number = v.column6 AND ${withStatus(fresh)}
  RETURNING message_id, chunk_seq, outcome, code, status`;

/** Store.summary (docs/dashboard.md "The header"); the files whose reports may be waiting. */
export const SUMMARY = `SELECT (SELECT count(*) FROM files WHERE state = 'sending') AS sending,
     (SELECT total(size) FROM chunks WHERE state = 'accepted' AND updated_at >= ?1) AS sent,
     (SELECT total(delivered) FROM delivery_minutes WHERE minute >= ?1) AS delivered,
     (SELECT total(undelivered) FROM delivery_minutes WHERE minute >= ?1) AS undelivered`;
export const SUMMARY_FILES = `SELECT file_id FROM files WHERE state IN ('sending', 'submitted', 'paused', 'partial')`;

// ---- a number's standing (../standing-rules.ts) ----

export const LIFT_OPT_OUT = 'DELETE FROM opt_outs WHERE number = ?';

export const STANDING_CHANGE = `INSERT INTO standing_changes (number, at, change, source, reply, keyword, detail)
  VALUES (:number, :at, :change, :source, :reply, :keyword, :detail)`;

export const OPTED_OUT = 'SELECT at, reply FROM opt_outs WHERE number = ?';

export const STANDING_HISTORY = 'SELECT * FROM standing_changes WHERE number = ? ORDER BY id';

export const TAKE_CONFIRMATION =
  'INSERT INTO reply_confirmations (number, day) VALUES (?, ?) ON CONFLICT DO NOTHING';

export const PRUNE_CONFIRMATIONS = 'DELETE FROM reply_confirmations WHERE day < ?';

export const REPLIES_TO_REVIEW = `SELECT * FROM replies WHERE intent = 'review' AND id > ? ORDER BY id LIMIT ?`;

export const COUNT_REPLIES_TO_REVIEW = `SELECT count(*) AS n FROM replies WHERE intent = 'review'`;

// ---- answers owed to replies (../standing-rules.ts, docs/opt-outs.md "Answers") ----

export const OWE_ANSWER = oweAnswerSql(param, ':now');
export const CLAIM_ANSWER = claimAnswerSql(param, ':now', ':stale');
export const SKIP_ANSWER = skipAnswerSql(param, ':now');
export const SETTLE_ANSWER = settleAnswerSql(param, ':now');
export const ANSWERS_OWED = answersOwedSql(param);
export const OLD_REPLIES = oldRepliesSql(param);
export const PRUNE_REPLY_ANSWERS = pruneReplyAnswersSql('SELECT value FROM json_each(:ids)');
export const PRUNE_REPLIES = pruneRepliesSql('SELECT value FROM json_each(:ids)');
export const ABANDON_ANSWERS = abandonAnswersSql(param, ':now', ':before');
export const REPLY_ANSWER = replyAnswerSql(param);
export const ANSWER_DAY = 'UPDATE reply_answers SET day = :day WHERE reply = :reply';
