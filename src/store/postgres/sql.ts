// The SQL of the PostgreSQL store, and nothing else (pg-boss's plans.ts): constants and
// builders of statement text; the areas (files.ts, sending.ts, …) execute them. Parameters are named
// (`:name`, compiled to $n once per statement); `:now` is the store's clock, or NULL for
// the database's own (NOW below), so timestamps and lease expiry come from one clock.
//
// Every name is unqualified: search_path is the store's schema on each connection.

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
  GAUGE_FILES as SHARED_GAUGE_FILES,
  GAUGE_IN_DOUBT as SHARED_GAUGE_IN_DOUBT,
  settleAnswerSql,
  skipAnswerSql,
  TAKEN_OVER_FROM,
} from '../shared-sql.ts';
import { DELIVERED, WORKER_SILENT_MS } from '../store.ts';

/** A statement with named parameters compiled to PostgreSQL's $n. */
export interface Statement {
  /** Name of the server-side prepared statement (one per text). */
  readonly name: string;
  readonly text: string;
  /** Parameter names in $n order. */
  readonly params: readonly string[];
}

let statements = 0;

/** Compiles `:name` parameters (never `::type` casts) into $1, $2… in order of first use. */
export function statement(sql: string): Statement {
  const params: string[] = [];
  const text = sql.replace(/(?<![:\w]):([a-z_][a-z0-9_]*)/g, (_, name: string) => {
    let i = params.indexOf(name);
    if (i < 0) i = params.push(name) - 1;
    return `$${i + 1}`;
  });
  return { name: `dropline_${++statements}`, text, params };
}

/** The values of a statement's parameters, in $n order; a missing one is an error, not NULL. */
export function values(s: Statement, params: Record<string, unknown>): unknown[] {
  return s.params.map((p) => {
    const v = params[p];
    if (v === undefined) throw new Error(`statement parameter :${p} missing`);
    return v;
  });
}

/** The store's clock, or the database's when :now is NULL. */
export const NOW = 'coalesce(:now::timestamptz, now())';
/** A lease of :lease_ms from now. */
const LEASE_UNTIL = `${NOW} + :lease_ms * interval '1 millisecond'`;

// ---- migrations ----

/** One key for every migrator of this schema (advisory locks are per database). */
export const MIGRATE_LOCK = statement(
  `SELECT pg_advisory_lock(hashtext('dropline.migrate'), hashtext(coalesce(:schema::text, current_schema(), '')))`,
);
export const MIGRATE_UNLOCK = statement(
  `SELECT pg_advisory_unlock(hashtext('dropline.migrate'), hashtext(coalesce(:schema::text, current_schema(), '')))`,
);
export const createSchema = (schema: string) => `CREATE SCHEMA IF NOT EXISTS ${schema}`;
export const CREATE_MIGRATIONS = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`;
/** Applied versions (negative ones are write probes). */
export const APPLIED = statement('SELECT version FROM schema_migrations WHERE version > 0 ORDER BY version');
export const RECORD_MIGRATION = statement(
  `INSERT INTO schema_migrations (version, name, applied_at) VALUES (:version, :name, ${NOW})`,
);
export const PING = statement('SELECT count(*) AS n FROM schema_migrations');
/** A row of this connection's own (two probes at once never collide), written and deleted. */
export const PROBE_INSERT = statement(
  `INSERT INTO schema_migrations (version, name, applied_at) VALUES (-1 - pg_backend_pid(), 'write-probe', ${NOW})`,
);
export const PROBE_DELETE = statement('DELETE FROM schema_migrations WHERE version = -1 - pg_backend_pid()');

// ---- files ----

export const FILE_BY_ID = statement('SELECT * FROM files WHERE file_id = :file_id');

/** The record registerFile finds: this very (source, path, content), else the same fileId. */
export const REGISTERED = statement(
  `SELECT * FROM files WHERE (source = :source AND path = :path AND sha256 = :sha256) OR file_id = :file_id
   ORDER BY file_id = :file_id LIMIT 1`,
);

const INSERT_FILE_COLUMNS = `file_id, source, name, name_folded, path, sha256, bytes, state, forced, rejection_code,
  rejection_message, reason, reason_code, reason_params, created_at, updated_at, timestamps`;
const INSERT_FILE_VALUES = `:file_id, :source, :name, :name_folded, :path, :sha256, :bytes, :state, :forced,
  :rejection_code, :rejection_message, :reason, :reason_code::text, :reason_params::jsonb, ${NOW}, ${NOW},
  jsonb_build_object(:state::text, iso_time(${NOW}))`;

/** Nothing on any conflict (same place and content, same fileId): the caller re-reads. */
export const INSERT_FILE = statement(
  `INSERT INTO files (${INSERT_FILE_COLUMNS}) VALUES (${INSERT_FILE_VALUES}) ON CONFLICT DO NOTHING RETURNING *`,
);

/**
 * claimFiles serialises decisions on one content of one source (its generation number, the
 * duplicate check) across workers: every (source, sha256) of the batch, in one order so two
 * batches never wait for each other in a cycle.
 */
export const CLAIM_LOCKS = statement(
  `SELECT pg_advisory_xact_lock(hashtext(:source::text), hashtext(s.sha))
   FROM (SELECT DISTINCT sha FROM unnest(:shas::text[]) AS sha ORDER BY sha) AS s`,
);

/**
 * claimFiles' view of one ready file: a row `same` when this very file was recorded, and a
 * row `count` with the number of files of this content (prior) and, unless forced, the file
 * it would duplicate (its columns; file_id NULL when none): `active` states, or `recent` ones
 * submitted or completed since :since.
 */
export const CLAIM_LOOKUP = statement(
  `SELECT 'same' AS kind, 0::bigint AS prior, f.* FROM files f
     WHERE f.source = :source AND f.sha256 = :sha256
       AND (f.path = :path OR (f.name = :name AND f.state = ANY(:active::text[])))
   UNION ALL
   SELECT 'count', c.n, d.* FROM (SELECT count(*) AS n FROM files WHERE source = :source AND sha256 = :sha256) c
   LEFT JOIN LATERAL (
     SELECT * FROM files
     WHERE source = :source AND sha256 = :sha256 AND NOT :force::boolean
       AND (state = ANY(:active::text[])
            OR (state = ANY(:recent::text[])
                AND (timestamps->>'submitted' >= :since::text OR timestamps->>'completed' >= :since::text)))
     ORDER BY created_at DESC, file_no DESC LIMIT 1) d ON true`,
);

/**
 * CLAIM_LOOKUP for a whole batch, one statement: a row `same` per file of the batch recorded
 * at this very place, and a row `count` per content of the batch (key: the sha256) with the number of files of it and the file it would duplicate (columns
 * NULL when none), as CLAIM_LOOKUP has them, and whether that file is newer than the files
 * this transaction records (a clock that went back: it stays the one a later file duplicates).
 */
export const CLAIM_BATCH_LOOKUP = statement(
  `SELECT 'same' AS kind, v.path AS key, 0::bigint AS prior, false AS newer, f.* FROM files f
     JOIN unnest(:paths::text[], :shas::text[], :names::text[]) AS v(path, sha, name)
       ON f.source = :source AND f.sha256 = v.sha
         AND (f.path = v.path OR (f.name = v.name AND f.state = ANY(:active::text[])))
   UNION ALL
   SELECT 'count', s.sha, c.n, coalesce(d.created_at > ${NOW}, false), d.* FROM (SELECT DISTINCT sha FROM unnest(:shas::text[]) AS sha) AS s
   CROSS JOIN LATERAL (SELECT count(*) AS n FROM files WHERE source = :source AND sha256 = s.sha) c
   LEFT JOIN LATERAL (
     SELECT * FROM files
     WHERE source = :source AND sha256 = s.sha AND NOT :force::boolean
       AND (state = ANY(:active::text[])
            OR (state = ANY(:recent::text[])
                AND (timestamps->>'submitted' >= :since::text OR timestamps->>'completed' >= :since::text)))
     ORDER BY created_at DESC, file_no DESC LIMIT 1) d ON true`,
);

/**
 * A batch of claimed files in the batch's order (file numbers in that order), nothing on any
 * conflict: the rows inserted come back, the caller sees which are missing.
 */
export const INSERT_CLAIMED = statement(
  `INSERT INTO files (file_id, source, name, name_folded, path, sha256, bytes, state, forced, rejection_code,
     rejection_message, reason, reason_code, reason_params, created_at, updated_at, timestamps)
   SELECT v.file_id, :source, v.name, v.folded, v.path, v.sha, v.bytes, v.state, :force::boolean, v.code, v.message,
     v.message, v.code, v.params::jsonb, ${NOW}, ${NOW}, jsonb_build_object(v.state, iso_time(${NOW}))
   FROM unnest(:file_ids::text[], :names::text[], :folded_names::text[], :paths::text[], :shas::text[],
     :bytes::bigint[], :states::text[], :codes::text[], :messages::text[], :params::text[])
     WITH ORDINALITY AS v(file_id, name, folded, path, sha, bytes, state, code, message, params, ord)
   ORDER BY v.ord
   ON CONFLICT DO NOTHING RETURNING *`,
);

export const SET_PATHS = statement(
  `UPDATE files f SET path = v.path, updated_at = ${NOW}
   FROM unnest(:file_ids::text[], :paths::text[], :froms::text[]) AS v(file_id, path, from_path)
   WHERE f.file_id = v.file_id AND ${pathStill('f.path', 'v.from_path')}`,
);

/**
 * :search is the text folded as the store folds names (mapping.ts foldName); strpos and
 * starts_with compare text as it is (no LIKE: % and _ are plain). A scan of the files newest
 * first until the page is full: ~5 ms at 20,000 files when none matches, no index needed.
 */
export const LIST_FILES = statement(
  `SELECT * FROM files
   WHERE (:source::text IS NULL OR source = :source::text)
     AND (:states::text[] IS NULL OR state = ANY(:states::text[]))
     AND (:search::text IS NULL OR strpos(coalesce(name_folded, lower(name)), :search::text) > 0
          OR starts_with(lower(file_id), :search::text))
     AND (:before::text IS NULL
          OR (created_at, file_no) < (SELECT created_at, file_no FROM files WHERE file_id = :before::text))
   ORDER BY created_at DESC, file_no DESC LIMIT :limit::bigint`,
);

/** The newest :limit states the file entered, oldest first. */
export const FILE_EVENTS = statement(
  `SELECT at, state, reason, reason_code, reason_params FROM (
     SELECT id, at, state, reason, reason_code, reason_params FROM file_events WHERE file_id = :file_id ORDER BY id DESC LIMIT :limit::bigint) e
   ORDER BY id`,
);

/** The file's minutes (a range of the primary key); one whose changes cancelled out is no change. */
export const DELIVERY_TIMELINE = statement(
  `SELECT minute, delivered, undelivered, unknown, accepted FROM delivery_minutes
   WHERE file_no = (SELECT file_no FROM files WHERE file_id = :file_id)
     AND (delivered, undelivered, unknown, accepted) <> (0, 0, 0, 0)
   ORDER BY minute`,
);

export const GAUGE_FILES = statement(SHARED_GAUGE_FILES);
export const GAUGE_IN_DOUBT = statement(SHARED_GAUGE_IN_DOUBT);

export const COUNT_BY_SHA = statement(
  'SELECT count(*) AS n FROM files WHERE source = :source AND sha256 = :sha256',
);

/**
 * Every transition and update: each patch field has a "set" flag, so one prepared statement
 * serves any patch, and the precondition (state, lease owner) sits in the same UPDATE.
 */
export const PATCH_FILE = statement(
  `UPDATE files SET
  state = coalesce(:to::text, state),
  timestamps = CASE WHEN :to::text IS NULL OR timestamps ? :to::text THEN timestamps
    ELSE timestamps || jsonb_build_object(:to::text, iso_time(${NOW})) END,
  path = CASE WHEN :set_path::boolean THEN :path::text ELSE path END,
  layout = CASE WHEN :set_layout::boolean THEN :layout::text ELSE layout END,
  encoding = CASE WHEN :set_encoding::boolean THEN :encoding::text ELSE encoding END,
  separator = CASE WHEN :set_separator::boolean THEN :separator::text ELSE separator END,
  header = CASE WHEN :set_header::boolean THEN :header::boolean ELSE header END,
  priority = CASE WHEN :set_priority::boolean THEN :priority::text ELSE priority END,
  records = CASE WHEN :set_counts::boolean THEN :records::bigint ELSE records END,
  valid = CASE WHEN :set_counts::boolean THEN :valid::bigint ELSE valid END,
  invalid = CASE WHEN :set_counts::boolean THEN :invalid::bigint ELSE invalid END,
  duplicates = CASE WHEN :set_counts::boolean THEN :duplicates::bigint ELSE duplicates END,
  suppressed = CASE WHEN :set_counts::boolean THEN :suppressed::bigint ELSE suppressed END,
  segments = CASE WHEN :set_counts::boolean THEN :segments::bigint ELSE segments END,
  rejection_code = CASE WHEN :set_rejection::boolean THEN :rejection_code::text ELSE rejection_code END,
  rejection_message = CASE WHEN :set_rejection::boolean THEN :rejection_message::text ELSE rejection_message END,
  reason = CASE WHEN :set_reason::boolean THEN :reason::text ELSE reason END,
  reason_code = CASE WHEN :set_reason::boolean THEN :reason_code::text ELSE reason_code END,
  reason_params = CASE WHEN :set_reason::boolean THEN :reason_params::jsonb ELSE reason_params END,
  errors = CASE WHEN :set_errors::boolean THEN :errors::jsonb ELSE errors END,
  error_counts = CASE WHEN :set_error_counts::boolean THEN :error_counts::jsonb ELSE error_counts END,
  delivery_deadline = CASE WHEN :set_deadline::boolean THEN :deadline::timestamptz ELSE delivery_deadline END,
  send_at = CASE WHEN :set_send_at::boolean THEN :send_at::timestamptz ELSE send_at END,
  scheduled_until = CASE WHEN :set_scheduled_until::boolean THEN :scheduled_until::timestamptz ELSE scheduled_until END,
  cost = CASE WHEN :set_cost::boolean THEN :cost::jsonb ELSE cost END,
  content = CASE WHEN :set_content::boolean THEN :content::jsonb ELSE content END,
  bulk_text = CASE WHEN :set_bulk_text::boolean THEN :bulk_text::text ELSE bulk_text END,
  detail = CASE WHEN :set_detail::boolean THEN :detail::jsonb ELSE detail END,
  short_code = CASE WHEN :set_short_code::boolean THEN :short_code::text ELSE short_code END,
  updated_at = ${NOW}
WHERE file_id = :file_id
  AND (:from::text[] IS NULL OR state = ANY(:from::text[]))
  AND (:owner::text IS NULL OR lease_owner = :owner::text)
RETURNING *`,
);

// ---- leases ----

/**
 * The pick and the take in one statement. Candidates: the oldest free file of each state (the
 * partial index files_free, one probe per state) and the oldest file whose lease expired
 * (files_leased: the few leases held, not every file); the oldest of those is taken. SKIP
 * LOCKED: concurrent callers each lock a different candidate instead of queueing behind the
 * oldest one and coming back empty; the lease condition is checked again on the row as
 * locked (another worker may have just committed its lease). (One ORDER BY over every
 * claimable file sorted all of them on every call: milliseconds each at 10,000 files.)
 */
export const ACQUIRE_FILE = statement(
  `UPDATE files SET lease_owner = :owner, lease_until = ${LEASE_UNTIL}, ${TAKEN_OVER_FROM}
   WHERE file_id = (
       SELECT c.file_id FROM (
         SELECT f.file_id, f.updated_at FROM unnest(:states::text[]) AS s(state)
         CROSS JOIN LATERAL (
           SELECT file_id, updated_at FROM files WHERE state = s.state AND lease_owner IS NULL
             AND ${isDue('s.state', NOW)}
           ${acquisitionOrder()} LIMIT 1 FOR UPDATE SKIP LOCKED) f
         UNION ALL
         SELECT e.file_id, e.updated_at FROM (
           SELECT file_id, updated_at FROM files
           WHERE lease_owner IS NOT NULL AND lease_until <= ${NOW} AND state = ANY(:states::text[])
             AND ${isDue('state', NOW)}
           ${acquisitionOrder()} LIMIT 1 FOR UPDATE SKIP LOCKED) e
       ) AS c ${acquisitionOrder('c.')} LIMIT 1)
     AND ${leaseFree(NOW)}
   RETURNING *`,
);

export const TAKE_LEASE = statement(
  `UPDATE files SET lease_owner = :owner::text, lease_until = ${LEASE_UNTIL}
   WHERE file_id = :file_id AND (lease_owner IS NULL OR lease_until <= ${NOW} OR lease_owner = :owner::text)`,
);

/**
 * Held by :owner: the lease is pushed out only once less than 2/3 of :lease_ms is left (a
 * write, a durable commit); before that, the owner is only confirmed, by a read that writes
 * nothing (no commit to flush). `held` false is not the last word: the read sees the row as
 * the statement began, so a renewal by another call of the same owner that committed meanwhile
 * (chunks in flight at once) makes this one's UPDATE find nothing to do and its read miss it;
 * RENEW_LEASE_NOW then decides on the row as it is.
 */
export const RENEW_LEASE = statement(
  `WITH renewed AS (
     UPDATE files SET lease_until = ${LEASE_UNTIL}
     WHERE file_id = :file_id AND lease_owner = :owner
       AND (lease_until IS NULL OR lease_until < ${NOW} + :lease_ms * interval '0.666 millisecond')
     RETURNING 1)
   SELECT EXISTS (SELECT 1 FROM renewed)
     OR EXISTS (SELECT 1 FROM files WHERE file_id = :file_id AND lease_owner = :owner
                AND lease_until >= ${NOW} + :lease_ms * interval '0.666 millisecond') AS held`,
);

/** The lease pushed out while :owner holds it, whatever is left of it (waits for a concurrent renewal). */
export const RENEW_LEASE_NOW = statement(
  `UPDATE files SET lease_until = ${LEASE_UNTIL} WHERE file_id = :file_id AND lease_owner = :owner`,
);

export const RELEASE_LEASE = statement(
  'UPDATE files SET lease_owner = NULL, lease_until = NULL WHERE file_id = :file_id AND lease_owner = :owner',
);

// ---- recipient ids ----

export const FILE_NO = statement('SELECT file_no FROM files WHERE file_id = :file_id');
export const FILE_NOS = statement(
  'SELECT file_id, file_no FROM files WHERE file_id = ANY(:file_ids::text[])',
);

// ---- ingest ----

export const CLEAR_RECIPIENTS = statement('DELETE FROM recipients WHERE id BETWEEN :lo AND :hi');
export const CLEAR_SPANS = statement('DELETE FROM chunk_spans WHERE file_no = :file_no');
/** Its delivery minutes count rows no longer there (as the spans' counters did). */
export const CLEAR_MINUTES = statement('DELETE FROM delivery_minutes WHERE file_no = :file_no');
export const CLEAR_CHUNKS = statement('DELETE FROM chunks WHERE file_id = :file_id');
export const CLEAR_ATTACHMENTS = statement('DELETE FROM file_attachments WHERE file_id = :file_id');
export const INSERT_ATTACHMENTS = statement(
  `INSERT INTO file_attachments (file_id, seq, name, content_type, content)
   SELECT :file_id::text, a.seq, a.name, a.content_type, a.content
   FROM unnest(:names::text[], :content_types::text[], :contents::text[]) WITH ORDINALITY
     AS a(name, content_type, content, seq)`,
);
export const ATTACHMENTS = statement(
  'SELECT name, content_type, content FROM file_attachments WHERE file_id = :file_id ORDER BY seq',
);

/** A batch of recipients as parallel arrays: one statement, whatever its size. */
const RECIPIENT_COLUMNS =
  'id, line, k, number, value, message_id, text, chunk_seq, outcome, code, detail, sms_count';
/** insertRecipients' rows (copy.ts text format); status and updated_at take their defaults. */
export const COPY_RECIPIENTS = `COPY recipients (${RECIPIENT_COLUMNS}) FROM STDIN`;
/** The same with updated_at given (the store's injected clock). */
export const COPY_RECIPIENTS_AT = `COPY recipients (${RECIPIENT_COLUMNS}, updated_at) FROM STDIN`;

/** The id range of each chunk in a batch, widened by later batches. */
export const UPSERT_SPANS = statement(
  `INSERT INTO chunk_spans (file_no, seq, first_id, last_id)
   SELECT :file_no, * FROM unnest(:seqs::int[], :firsts::bigint[], :lasts::bigint[])
   ON CONFLICT (file_no, seq) DO UPDATE SET first_id = least(chunk_spans.first_id, excluded.first_id),
     last_id = greatest(chunk_spans.last_id, excluded.last_id)`,
);

export const INSERT_CHUNKS = statement(
  `INSERT INTO chunks (file_id, seq, size, state, attempts, updated_at)
   SELECT :file_id, s, n, 'pending', 0, ${NOW} FROM unnest(:seqs::int[], :sizes::int[]) AS v(s, n)`,
);

// ---- reading recipients ----

/** A row's columns as it reads (../shared-sql.ts), the later timestamp by greatest(). */
const recipientRow = (withText: boolean) => recipientColumns(withText, (a, b) => `greatest(${a}, ${b})`);

/** The chunk a row follows (../shared-sql.ts FOLLOWS_CHUNK). */
export const FOLLOWED_CHUNK = `LEFT JOIN chunks c ON ${FOLLOWS_CHUNK} AND c.file_id = :file_id AND c.seq = r.chunk_seq`;

const OUTCOME_FILTER = `(:outcomes::text[] IS NULL OR (${ROW_OUTCOME}) = ANY(:outcomes::text[]))`;

/** The span of a chunk of a file (no row: the chunk has no recipients). */
const SPAN_OF = `chunk_spans s ON s.file_no = (SELECT file_no FROM files WHERE file_id = :file_id) AND s.seq = :seq`;
/** The rows of the chunk whose span is `s`. */
const CHUNK_ROWS =
  'chunk_spans s JOIN recipients r ON r.id BETWEEN s.first_id AND s.last_id AND r.chunk_seq = s.seq';
export const THIS_CHUNK = 's.file_no = (SELECT file_no FROM files WHERE file_id = :file_id) AND s.seq = :seq';

export const CHUNK_RECIPIENTS = statement(
  `SELECT ${recipientRow(true)}
   FROM ${CHUNK_ROWS} ${FOLLOWED_CHUNK}
   WHERE ${THIS_CHUNK} AND ${OUTCOME_FILTER}
   ORDER BY r.id`,
);

// Pages of a file's rows: windows of ids [:from, :to] (idx is dense within a file, so a
// window of pageSize ids is a page), joined to the few chunks whose spans meet the window.
// Never `ORDER BY id LIMIT n` over the file's range nor a join of all the file's chunks: right
// after a million rows went in, the planner's statistics still describe a small table, and
// it sorted the whole range (and compared each row with every chunk) for every page.

/** The window's chunks (MATERIALIZED: a handful of rows, read once), and the rows that follow one. */
const WINDOW_CHUNKS = `WITH wc AS MATERIALIZED (
    SELECT c.* FROM chunk_spans s JOIN chunks c ON c.file_id = :file_id AND c.seq = s.seq
    WHERE s.file_no = :file_no AND s.first_id <= :to AND s.last_id >= :from)`;
const FOLLOWED_WINDOW_CHUNK = `LEFT JOIN wc c ON ${FOLLOWS_CHUNK} AND c.seq = r.chunk_seq`;

/** The first and last ids of a file's rows (the primary key's ends: no scan). */
export const ID_BOUNDS = statement(
  `SELECT (SELECT min(id) FROM recipients WHERE id BETWEEN :lo AND :hi) AS first,
     (SELECT max(id) FROM recipients WHERE id BETWEEN :lo AND :hi) AS last`,
);

/** A window of the file's rows; with :outcomes, only rows of those outcomes. */
export const RECIPIENT_PAGE = statement(
  `${WINDOW_CHUNKS}
   SELECT ${recipientRow(true)} FROM recipients r ${FOLLOWED_WINDOW_CHUNK}
   WHERE r.id BETWEEN :from AND :to AND ${OUTCOME_FILTER} ORDER BY r.id`,
);

/** reportPages: what a report row needs, no text. */
export const REPORT_PAGE = statement(
  `${WINDOW_CHUNKS}
   SELECT ${recipientRow(false)} FROM recipients r ${FOLLOWED_WINDOW_CHUNK}
   WHERE r.id BETWEEN :from AND :to ORDER BY r.id`,
);

// ---- sending ----

export const LIST_CHUNKS = statement(
  `SELECT * FROM chunks WHERE file_id = :file_id AND (:states::text[] IS NULL OR state = ANY(:states::text[]))
   ORDER BY seq`,
);

/** A chunk's pending recipients, while the chunk's own state leaves them pending. */
export const CHUNK_DESTINATIONS = statement(
  `SELECT r.number, r.message_id, r.text, r.line, r.k
   FROM ${CHUNK_ROWS}
   WHERE ${THIS_CHUNK} AND r.outcome = 'pending'
     AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.file_id = :file_id AND c.seq = :seq
                     AND NOT c.state = ANY(:pending_states::text[]))
   ORDER BY r.id`,
);

/** With :owner, only while that owner holds the file's lease (fencing), in the same statement. */
export const SET_CHUNK_STATE = statement(
  `UPDATE chunks SET state = :to::text, attempts = attempts + (:to::text = 'inflight')::int, updated_at = ${NOW}
   WHERE file_id = :file_id AND seq = :seq AND state = ANY(:from::text[])
     AND (:owner::text IS NULL AND :file_state::text IS NULL
          OR EXISTS (SELECT 1 FROM files WHERE file_id = :file_id
            AND (:owner::text IS NULL OR (lease_owner = :owner::text AND lease_until > ${NOW}))
            AND (:file_state::text IS NULL OR state = :file_state::text)))`,
);

/**
 * recordChunkResult's first statement: the chunk's row locked (a delivery report for the
 * chunk waits, or is waited for: the two never decide on a state the other has not seen)
 * and its id range.
 */
export const LOCK_CHUNK = statement(
  `WITH locked AS (SELECT seq, state, updated_at FROM chunks WHERE file_id = :file_id AND seq = :seq FOR UPDATE)
   SELECT s.first_id, s.last_id, (SELECT count(*) FROM locked) AS locked, (SELECT state FROM locked) AS state,
     (SELECT updated_at::text FROM locked) AS started_at,
     (SELECT lease_owner FROM files WHERE file_id = :file_id) AS lease_owner
   FROM (SELECT 1) AS one LEFT JOIN ${SPAN_OF}`,
);

/** A recipient's messageId as it reads (readMessageId), for matching a list of them. */
const MESSAGE_ID = messageIdSql(':file_id::text', 'r.');

const IN_CHUNK = 'r.id BETWEEN :lo AND :hi AND r.chunk_seq = :seq';

/**
 * The chunk's recipients among :numbers, number and messageId (chunkMessageIds), in idx order;
 * '' (recorded without a messageId) reads NULL.
 */
export const CHUNK_MESSAGE_IDS = statement(
  `SELECT r.number, ${MESSAGE_ID}
   FROM ${CHUNK_ROWS}
   WHERE ${THIS_CHUNK} AND r.number = ANY(:numbers::text[])
   ORDER BY r.id`,
);

/** A delivery report already in for one of the listed recipients (all when :ids is NULL). */
export const REPORTED_PART = statement(
  `SELECT 1 FROM recipients r WHERE ${IN_CHUNK}
     AND (:ids::text[] IS NULL OR ${MESSAGE_ID} = ANY(:ids::text[])) AND r.status <> 'pending' LIMIT 1`,
);

/** … for one of the chunk's unsettled recipients (a whole-chunk part). */
export const REPORTED_WHOLE = statement(
  `SELECT 1 FROM recipients r WHERE ${IN_CHUNK}
     AND r.outcome IN ('pending', 'in_doubt') AND r.status <> 'pending' LIMIT 1`,
);

const SET_OUTCOME = `outcome = :outcome::text, code = :code::text, detail = :detail::text,
  transaction_number = coalesce(:tn::text, transaction_number), updated_at = ${NOW}`;

/** Rows by messageId (:ids), each with its transaction number (:tns, parallel; null: kept). */
export const SET_PART = statement(
  `UPDATE recipients r SET outcome = :outcome::text, code = :code::text, detail = :detail::text,
     transaction_number = coalesce(m.tn, r.transaction_number), updated_at = ${NOW}
   FROM unnest(:ids::text[], :tns::text[]) AS m(id, tn)
   WHERE ${IN_CHUNK} AND ${MESSAGE_ID} = m.id`,
);

/** The chunk's own row after a result. */
const UPDATE_CHUNK = `UPDATE chunks SET state = :state::text, attempts = :attempts,
  transaction_number = coalesce(:chunk_tn::text, transaction_number),
  error_code = :error_code::text, error_message = :error_message::text, updated_at = ${NOW}
  WHERE file_id = :file_id AND seq = :seq`;

export const FINISH_CHUNK = statement(UPDATE_CHUNK);

/** The chunk's rows found by its span (no span: none), for a result in one statement. */
const IN_CHUNK_SPAN = `r.id BETWEEN (SELECT first_id FROM chunk_spans WHERE file_no = :file_no AND seq = :seq)
  AND (SELECT last_id FROM chunk_spans WHERE file_no = :file_no AND seq = :seq) AND r.chunk_seq = :seq`;

/** A whole-chunk part recorded on the chunk's unsettled rows (those `within`), and the chunk's row. */
const setWhole = (within: string) =>
  `WITH whole AS (UPDATE recipients r SET ${SET_OUTCOME}
     WHERE ${within} AND r.outcome IN ('pending', 'in_doubt') RETURNING 1)
   ${UPDATE_CHUNK}`;
/**
 * A whole-chunk part with the chunk's own result: its rows (those `within`) follow the chunk
 * again; only rows an earlier result marked (in doubt, held back) are touched.
 */
const followWhole = (within: string) =>
  `WITH whole AS (UPDATE recipients r SET outcome = 'pending', code = NULL, detail = NULL, updated_at = ${NOW}
     WHERE ${within} AND (r.outcome = 'in_doubt' OR (r.outcome = 'pending' AND r.code IS NOT NULL)) RETURNING 1)
   ${UPDATE_CHUNK}`;

/**
 * ChunkResult.finalStatus, after the parts: the chunk's sent rows (sent themselves, or
 * following it when it is accepted) take their final status.
 */
export const SET_FINAL_STATUS = statement(
  `UPDATE recipients r SET status = :status::text, updated_at = ${NOW}
   WHERE ${IN_CHUNK} AND r.status = 'pending'
     AND (r.outcome = 'sent' OR (:follows::boolean AND r.outcome = 'pending' AND r.code IS NULL))`,
);

/** Inside recordChunkResult's transaction, the chunk's span read (:lo, :hi). */
export const FINISH_CHUNK_SET_WHOLE = statement(setWhole(IN_CHUNK));
export const FINISH_CHUNK_FOLLOW_WHOLE = statement(followWhole(IN_CHUNK));
/**
 * The same as one statement on their own, for a result that asks nothing of delivery
 * reports: the chunk's row is locked by its UPDATE, its rows found by its span.
 */
export const FINISH_CHUNK_SET_WHOLE_ALONE = statement(setWhole(IN_CHUNK_SPAN));
export const FINISH_CHUNK_FOLLOW_WHOLE_ALONE = statement(followWhole(IN_CHUNK_SPAN));

/** markInflightInDoubt: the file's inflight chunks, locked. */
export const LOCK_INFLIGHT = statement(
  `SELECT seq FROM chunks WHERE file_id = :file_id AND state = 'inflight' ORDER BY seq FOR UPDATE`,
);

/** Which of these chunks have a delivery report for one of their rows (read after the lock). */
export const CHUNKS_REPORTED = statement(
  `SELECT s.seq FROM chunk_spans s
   WHERE s.file_no = :file_no AND s.seq = ANY(:seqs::int[])
     AND EXISTS (SELECT 1 FROM recipients r WHERE r.id BETWEEN s.first_id AND s.last_id
                 AND r.chunk_seq = s.seq AND r.status <> 'pending')`,
);

/** The chunks' new states, and their rows held back (403) follow them again: they were in the request. */
export const SET_INFLIGHT_STATES = statement(
  `WITH v AS (SELECT * FROM unnest(:seqs::int[], :states::text[]) AS v(seq, state)),
   held AS (UPDATE recipients r SET code = NULL, detail = NULL, updated_at = ${NOW}
     FROM chunk_spans s
     WHERE s.file_no = :file_no AND s.seq = ANY(:seqs::int[]) AND r.id BETWEEN s.first_id AND s.last_id
       AND r.chunk_seq = s.seq AND r.outcome = 'pending' AND r.code IS NOT NULL RETURNING 1)
   UPDATE chunks c SET state = v.state, updated_at = ${NOW} FROM v WHERE c.file_id = :file_id AND c.seq = v.seq`,
);

/** Chunks in :states back to pending, and their rows whose outcome is one of :outcomes. */
export const REQUEUE_CHUNKS = statement(
  `WITH moved AS (
     UPDATE chunks SET state = 'pending', error_code = NULL, error_message = NULL, updated_at = ${NOW}
     WHERE file_id = :file_id AND state = ANY(:states::text[]) RETURNING seq),
   rows AS (
     UPDATE recipients r SET outcome = 'pending', code = NULL, detail = NULL, updated_at = ${NOW}
     FROM chunk_spans s
     WHERE s.file_no = (SELECT file_no FROM files WHERE file_id = :file_id) AND s.seq IN (SELECT seq FROM moved)
       AND r.id BETWEEN s.first_id AND s.last_id AND r.chunk_seq = s.seq AND r.outcome = ANY(:outcomes::text[])
     RETURNING 1),
   counted AS (
     UPDATE files SET possible_duplicates = possible_duplicates + :add_pd::bigint, updated_at = ${NOW}
     WHERE file_id = :file_id AND :add_pd::bigint > 0 AND EXISTS (SELECT 1 FROM moved)
     RETURNING 1)
   SELECT count(*) AS n FROM moved`,
);

/** Store.reportFailed: owed since now (unless already), one failure more, the next try backed off. */
export const REPORT_FAILED = statement(
  `UPDATE files SET report_owed_at = coalesce(report_owed_at, ${NOW}), report_failures = report_failures + 1,
     report_retry_at = ${NOW} + least(:base_ms::float8 * power(2, least(report_failures, 40)), :max_ms::float8) * interval '1 millisecond'
   WHERE file_id = :file_id`,
);

export const OWE_REPORTS = statement(
  `UPDATE files SET report_owed_at = coalesce(report_owed_at, ${NOW}), report_retry_at = ${NOW}
   WHERE file_id = :file_id`,
);

export const REPORTS_WRITTEN = statement(
  `UPDATE files SET report_owed_at = NULL, report_failures = 0, report_retry_at = NULL
   WHERE file_id = :file_id AND report_owed_at IS NOT NULL`,
);

export const REPORTS_DUE = statement(
  `SELECT file_id FROM files WHERE report_retry_at IS NOT NULL AND report_retry_at <= ${NOW}
   ORDER BY report_retry_at LIMIT :limit::int`,
);

/** Store.cancelUnsent: a cancelled file's pending chunks, and their unsent rows held back on their own. */
export const CANCEL_UNSENT = statement(
  `WITH f AS (SELECT file_no FROM files WHERE file_id = :file_id AND state = 'cancelled'),
   moved AS (
     UPDATE chunks SET state = 'cancelled', error_code = NULL, error_message = :detail::text, updated_at = ${NOW}
     WHERE file_id = :file_id AND state = 'pending' AND EXISTS (SELECT 1 FROM f) RETURNING seq),
   rows AS (
     UPDATE recipients r SET outcome = 'cancelled', code = NULL, detail = :detail::text, updated_at = ${NOW}
     FROM chunk_spans s
     WHERE s.file_no = (SELECT file_no FROM f) AND s.seq IN (SELECT seq FROM moved)
       AND r.id BETWEEN s.first_id AND s.last_id AND r.chunk_seq = s.seq
       AND r.outcome = 'pending' AND r.code IS NOT NULL
     RETURNING 1)
   SELECT count(*) AS n FROM moved`,
);

// ---- delivery reports ----

/** New events kept, in the batch's order (the first of two alike is the one kept). */
const INSERT_EVENTS_SQL = `INSERT INTO delivery_events (transaction_number, to_number, message_id, bulk_id, callback_data, sms_count,
     status, received_at, recorded_at)
   SELECT tn, to_number, message_id, bulk_id, callback_data, sms_count, status, received_at, ${NOW}
   FROM unnest(:tns::text[], :tos::text[], :message_ids::text[], :bulk_ids::text[], :callbacks::text[],
     :sms_counts::int[], :statuses::text[], :received::text[])
     WITH ORDINALITY AS v(tn, to_number, message_id, bulk_id, callback_data, sms_count, status, received_at, ord)
   ORDER BY ord
   ON CONFLICT (transaction_number, to_number) DO NOTHING
   RETURNING transaction_number, to_number`;
export const INSERT_EVENTS = statement(INSERT_EVENTS_SQL);

// Reports find their recipients from the report's side: each (line, k) or messageId of the
// batch looks up its one row through the index (LATERAL … LIMIT 1: a key names at most one
// sent recipient, and the limit keeps the lookup a per-report index probe), whatever the
// planner believes of a table that grew by a million rows since it was last analysed. (A
// plain join let it scan the file's whole id range once per report: seconds per batch.)

/** What a report writes, beside what finds its recipient. */
const REPORT_COLUMNS = ':statuses::text[], :sms_counts::int[], :tns::text[]';

/** The recipient of each generated messageId: (line, k) within the file's ids, valid, with that number. */
const GENERATED_TARGETS = `unnest(:lines::int[], :ks::int[], :numbers::text[], ${REPORT_COLUMNS})
    AS v(line, k, number, status, sms_count, tn)
  CROSS JOIN LATERAL (SELECT r.id, r.chunk_seq FROM recipients r
    WHERE r.line = v.line AND r.k = v.k AND r.id BETWEEN :lo AND :hi
      AND r.message_id IS NULL AND r.chunk_seq IS NOT NULL AND r.number = v.number LIMIT 1) AS m`;
/** The recipient of each own messageId (chunk_seq: invalid and duplicate rows were never sent). */
const OWN_TARGETS = `unnest(:message_ids::text[], :numbers::text[], ${REPORT_COLUMNS})
    AS v(message_id, number, status, sms_count, tn)
  CROSS JOIN LATERAL (SELECT r.id, r.chunk_seq FROM recipients r
    WHERE r.message_id = v.message_id AND r.id BETWEEN :lo AND :hi AND r.chunk_seq IS NOT NULL
      AND r.number = v.number LIMIT 1) AS m`;

/**
 * The chunks of reported rows that follow their chunk or are in doubt, locked in seq order
 * whatever their state, and held to the commit: a chunk result (which locks its chunk before
 * it looks for reports) either commits before, and the settlement below sees its state, or
 * waits, and then sees these reports.
 */
export const LOCK_CHUNKS = statement(
  'SELECT seq, state FROM chunks WHERE file_id = :file_id AND seq = ANY(:seqs::int[]) ORDER BY seq FOR UPDATE',
);

/** A recipient delivered stays delivered (sqlite/sql.ts DELIVERY_SET says why). */
const DELIVERY_SET = `status = CASE WHEN r.status = '${DELIVERED}' THEN r.status ELSE t.status END,
  sms_count = coalesce(t.sms_count, r.sms_count),
  transaction_number = coalesce(r.transaction_number, t.tn), updated_at = ${NOW}`;

/** Reports onto recipients by generated messageId; returns [key, chunk_seq, outcome, code]. */
export const DELIVER_GENERATED = statement(
  `UPDATE recipients r SET ${DELIVERY_SET}
   FROM (SELECT m.id, v.line, v.k, v.status, v.sms_count, v.tn FROM ${GENERATED_TARGETS}) AS t
   WHERE r.id = t.id
   RETURNING t.line || '-' || t.k AS key, r.chunk_seq, r.outcome, r.code`,
);

/**
 * A CTE after a `delivered` one (rows key, chunk_seq, outcome, code): the chunks of the rows
 * that follow their chunk or are in doubt, locked in seq order once the rows are written.
 */
const LOCK_DELIVERED = `locked AS (
     SELECT seq, state FROM chunks
     WHERE file_id = :file_id AND seq IN (
       SELECT chunk_seq FROM delivered
       WHERE chunk_seq IS NOT NULL AND (outcome = 'in_doubt' OR (outcome = 'pending' AND code IS NULL)))
     ORDER BY seq FOR UPDATE)`;

/**
 * DELIVER_GENERATED and LOCK_CHUNKS in one statement (one round trip fewer per commit): the
 * chunks of the rows it reports that follow their chunk or are in doubt, locked in seq order
 * once the rows are written, their states as locked (a chunk result that held the lock has
 * committed: its state is the one returned). Rows `row` (key, chunk_seq, outcome, code) and
 * `lock` (chunk_seq: the seq, state).
 */
export const DELIVER_GENERATED_LOCK = statement(
  `WITH delivered AS (
     UPDATE recipients r SET ${DELIVERY_SET}
     FROM (SELECT m.id, v.line, v.k, v.status, v.sms_count, v.tn FROM ${GENERATED_TARGETS}) AS t
     WHERE r.id = t.id
     RETURNING t.line || '-' || t.k AS key, r.chunk_seq, r.outcome, r.code),
   ${LOCK_DELIVERED}
   SELECT 'row' AS kind, key, chunk_seq, outcome, code, NULL::text AS state FROM delivered
   UNION ALL
   SELECT 'lock', NULL, seq, NULL, NULL, state FROM locked`,
);

/**
 * A whole commit's work in one statement, for a batch of one file's generated messageIds with
 * no report or recipient twice: INSERT_EVENTS, then DELIVER_GENERATED_LOCK on the events kept
 * (a duplicate report writes nothing). Rows `event` (tn, to_number of an event kept), `row`
 * and `lock` as DELIVER_GENERATED_LOCK.
 */
export const RECORD_GENERATED = statement(
  `WITH kept AS (${INSERT_EVENTS_SQL}),
   delivered AS (
     UPDATE recipients r SET ${DELIVERY_SET}
     FROM (SELECT m.id, v.line, v.k, v.status, v.sms_count, v.tn
       FROM unnest(:lines::int[], :ks::int[], :numbers::text[], :statuses::text[], :sms_counts::int[],
         :tns::text[], :tos::text[]) AS v(line, k, number, status, sms_count, tn, to_number)
       JOIN kept ON kept.transaction_number = v.tn AND kept.to_number = v.to_number
       CROSS JOIN LATERAL (SELECT r.id, r.chunk_seq FROM recipients r
         WHERE r.line = v.line AND r.k = v.k AND r.id BETWEEN :lo AND :hi
           AND r.message_id IS NULL AND r.chunk_seq IS NOT NULL AND r.number = v.number LIMIT 1) AS m) AS t
     WHERE r.id = t.id
     RETURNING t.line || '-' || t.k AS key, r.chunk_seq, r.outcome, r.code),
   ${LOCK_DELIVERED}
   SELECT 'event' AS kind, NULL::text AS key, NULL::int AS chunk_seq, NULL::text AS outcome, NULL::text AS code,
     NULL::text AS state, transaction_number AS tn, to_number FROM kept
   UNION ALL
   SELECT 'row', key, chunk_seq, outcome, code, NULL, NULL, NULL FROM delivered
   UNION ALL
   SELECT 'lock', NULL, seq, NULL, NULL, state, NULL, NULL FROM locked`,
);

/** Reports onto recipients by the file's own messageIds. */
export const DELIVER_OWN = statement(
  `UPDATE recipients r SET ${DELIVERY_SET}
   FROM (SELECT m.id, v.status, v.sms_count, v.tn FROM ${OWN_TARGETS}) AS t
   WHERE r.id = t.id
   RETURNING r.message_id AS key, r.chunk_seq, r.outcome, r.code`,
);

/**
 * What reported rows prove, first: in-doubt chunks among :seqs become accepted, or pending
 * when they hold rows a 403 held back (never sent: they still go out). Returns those settled.
 */
export const SETTLE_CHUNKS = statement(
  `UPDATE chunks c SET state = CASE WHEN EXISTS (
       SELECT 1 FROM chunk_spans s JOIN recipients r ON r.id BETWEEN s.first_id AND s.last_id AND r.chunk_seq = s.seq
       WHERE s.file_no = :file_no AND s.seq = c.seq AND r.outcome = 'pending' AND r.code IS NOT NULL)
     THEN 'pending' ELSE 'accepted' END,
     error_code = NULL, error_message = NULL, updated_at = ${NOW}
   WHERE c.file_id = :file_id AND c.seq = ANY(:seqs::int[]) AND c.state = 'in_doubt'
   RETURNING c.seq`,
);

/** …then the in-doubt rows of the chunks settled, and of chunks with reported rows in doubt of their own, are sent. */
export const SEND_DOUBTFUL = statement(
  `UPDATE recipients r SET outcome = 'sent', updated_at = ${NOW}
   FROM chunk_spans s
   WHERE s.file_no = :file_no AND s.seq = ANY(:seqs::int[])
     AND r.id BETWEEN s.first_id AND s.last_id AND r.chunk_seq = s.seq AND r.outcome = 'in_doubt'`,
);

export const MARK_ORPHANS = statement(
  `UPDATE delivery_events e SET orphan = true FROM unnest(:tns::text[], :tos::text[]) AS v(tn, to_number)
   WHERE e.transaction_number = v.tn AND e.to_number = v.to_number`,
);

/** Sent recipients (their own outcome, or their accepted chunk's) still without a report. */
export const EXPIRE_DELIVERIES = statement(
  `UPDATE recipients r SET status = 'UNKNOWN', updated_at = ${NOW}
   WHERE r.id BETWEEN :lo AND :hi AND r.status = 'pending' AND r.chunk_seq IS NOT NULL
     AND (r.outcome = 'sent' OR (r.outcome = 'pending' AND r.code IS NULL
       AND r.chunk_seq IN (SELECT seq FROM chunks WHERE file_id = :file_id AND state = 'accepted')))`,
);

// ---- counts ----

/** Store.summary (docs/dashboard.md "The header"); the files whose reports may be waiting. */
export const SUMMARY = statement(
  `SELECT (SELECT count(*) FROM files WHERE state = 'sending') AS sending,
     (SELECT coalesce(sum(size), 0) FROM chunks WHERE state = 'accepted' AND updated_at >= :since) AS sent,
     (SELECT coalesce(sum(delivered), 0) FROM delivery_minutes WHERE minute >= :since) AS delivered,
     (SELECT coalesce(sum(undelivered), 0) FROM delivery_minutes WHERE minute >= :since) AS undelivered`,
);
export const SUMMARY_FILES = statement(
  `SELECT file_id FROM files WHERE state IN ('sending', 'submitted', 'paused', 'partial')`,
);

/** A read of several statements that sees one state of the database. */
export const READ_SNAPSHOT = 'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY';

export const COUNTS_FILES = statement(
  `SELECT file_id, file_no, records, valid, invalid, duplicates, suppressed, segments, pruned_counts
   FROM files WHERE file_id = ANY(:file_ids::text[])`,
);

/**
 * For files not pruned, two kinds of rows: per file and chunk state (`chunk`: chunks, their
 * sizes, the delivery counters of their spans), and the valid rows with an outcome of their
 * own by file, outcome and the state of their chunk (`own`): a read of the chunks and of the
 * few settled rows (recipients_settled), never of every row.
 */
export const COUNTS_ROWS = statement(
  `WITH f AS (SELECT file_id, file_no FROM files WHERE file_id = ANY(:file_ids::text[]) AND pruned_counts IS NULL)
   SELECT 'chunk' AS kind, f.file_id, c.state, NULL::text AS outcome, count(*) AS n,
     coalesce(sum(c.size), 0) AS size, coalesce(sum(s.reported), 0) AS reported,
     coalesce(sum(s.delivered), 0) AS delivered, coalesce(sum(s.unknown), 0) AS unknown,
     coalesce(sum(s.accepted), 0) AS accepted,
     coalesce(sum(s.reported_follow), 0) AS reported_follow, coalesce(sum(s.reported_sent), 0) AS reported_sent
   FROM f JOIN chunks c ON c.file_id = f.file_id
   LEFT JOIN chunk_spans s ON s.file_no = f.file_no AND s.seq = c.seq
   GROUP BY f.file_id, c.state
   UNION ALL
   SELECT 'own', f.file_id, c.state, r.outcome, count(*), 0, 0, 0, 0, 0, 0, 0
   FROM f JOIN recipients r ON r.id BETWEEN f.file_no * 4294967296 AND f.file_no * 4294967296 + 4294967295
   LEFT JOIN chunks c ON c.file_id = f.file_id AND c.seq = r.chunk_seq
   WHERE r.chunk_seq IS NOT NULL AND (r.outcome <> 'pending' OR r.code IS NOT NULL)
   GROUP BY f.file_id, c.state, r.outcome`,
);

// ---- retention ----

export const PRUNING_FILE = statement(
  'SELECT file_id, file_no FROM files WHERE pruning LIMIT 1 FOR UPDATE SKIP LOCKED',
);
export const PRUNABLE_FILE = statement(
  `SELECT file_id, file_no FROM files WHERE state = ANY(:states::text[]) AND updated_at < :before::timestamptz
     AND pruned_at IS NULL ORDER BY updated_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
);
export const MARK_PRUNED = statement(
  `UPDATE files SET pruned_counts = :counts::jsonb, pruned_at = ${NOW}, pruning = true
   WHERE file_id = :file_id AND pruned_at IS NULL`,
);
export const PRUNE_ORPHANS = statement(
  `DELETE FROM delivery_events WHERE (transaction_number, to_number) IN (
     SELECT transaction_number, to_number FROM delivery_events
     WHERE orphan AND recorded_at < :before::timestamptz LIMIT :max_rows)`,
);
/** At most :max_rows of the file's rows, from its first one left (a window of ids: see ID_BOUNDS). */
export const PRUNE_RECIPIENTS = statement(
  `DELETE FROM recipients WHERE id BETWEEN :from AND least(:from::bigint + :max_rows - 1, :hi)
   RETURNING transaction_number, number`,
);
export const CHUNK_TNS = statement(
  'SELECT transaction_number FROM chunks WHERE file_id = :file_id AND transaction_number IS NOT NULL',
);
export const PRUNE_DONE = statement('UPDATE files SET pruning = false WHERE file_id = :file_id');
/** A report names its request's transactionNumber: the file's reports by those and its bulkId. */
export const PRUNE_EVENTS = statement(
  'DELETE FROM delivery_events WHERE transaction_number = ANY(:tns::text[]) AND bulk_id = :file_id',
);

// ---- settings ----

export const KEEP_SETTING = statement(
  'INSERT INTO settings (key, value) VALUES (:key, :value) ON CONFLICT (key) DO NOTHING',
);
export const SETTING = statement('SELECT value FROM settings WHERE key = :key');
export const SETTINGS_UNDER = statement(
  'SELECT key, value FROM settings WHERE starts_with(key, :prefix) ORDER BY key',
);

// ---- service tokens ----

export const SHARED_TOKEN = statement(
  `SELECT access_token, refresh_token, renew_at, generation FROM service_tokens
   WHERE account_key = :key AND generation > 0`,
);

/** The right to renew: the row made when missing; taken only at generation :seen and when free. */
export const CLAIM_TOKEN_RENEWAL = statement(
  `INSERT INTO service_tokens AS t (account_key, renewing_owner, renewing_until)
   SELECT :key, :owner::text, ${NOW} + :ms * interval '1 millisecond' WHERE :seen::bigint = 0
   ON CONFLICT (account_key) DO UPDATE SET renewing_owner = excluded.renewing_owner,
     renewing_until = excluded.renewing_until
   WHERE t.generation = :seen::bigint
     AND (t.renewing_owner IS NULL OR t.renewing_until <= ${NOW} OR t.renewing_owner = :owner::text)
   RETURNING 1`,
);

/** A claim when the row exists and :seen > 0 (the INSERT above inserts nothing then). */
export const CLAIM_TOKEN_RENEWAL_EXISTING = statement(
  `UPDATE service_tokens SET renewing_owner = :owner::text, renewing_until = ${NOW} + :ms * interval '1 millisecond'
   WHERE account_key = :key AND generation = :seen::bigint
     AND (renewing_owner IS NULL OR renewing_until <= ${NOW} OR renewing_owner = :owner::text)`,
);

export const STORE_TOKEN = statement(
  `UPDATE service_tokens SET access_token = :access, refresh_token = :refresh, renew_at = :renew_at,
     generation = generation + 1, renewing_owner = NULL, renewing_until = NULL
   WHERE account_key = :key AND renewing_owner = :owner::text
   RETURNING access_token, refresh_token, renew_at, generation`,
);

export const RELEASE_TOKEN_RENEWAL = statement(
  `UPDATE service_tokens SET renewing_owner = NULL, renewing_until = NULL
   WHERE account_key = :key AND renewing_owner = :owner::text`,
);

// ---- send budgets (src/service/budget.ts decides; the database's clock and row lock) ----

/**
 * The budget's clock: the time of the statement, not of the transaction's start (now()): a
 * decision taken after waiting for the row lock must not be dated before the wait, or the
 * rate's virtual clock would lag and let requests through early.
 */
const NOW_MS = `extract(epoch from coalesce(:now::timestamptz, clock_timestamp())) * 1000`;

/**
 * The account's budget row locked for the decision (0 rows: none yet), and its transaction's
 * commit made without waiting for the WAL flush (synchronous_commit off, for this transaction
 * only): permits, the rate's clock and the pace are the account's passing state, not records.
 * A database crash may forget the last of them: a request or two over the account's limits
 * once, or a 429's hold that the service's next 429 sets again; never a recipient lost or
 * sent twice (those are written by durable transactions of their own). The flush was a
 * millisecond or more a request, most of what permits cost.
 */
export const LOCK_BUDGET = statement(
  `SELECT set_config('synchronous_commit', 'off', true) FROM send_budgets WHERE account_key = :key FOR UPDATE`,
);

/**
 * A permit that holds its account's concurrency: its lease runs, and its worker is not silent
 * past WORKER_SILENT_MS (killed). `at` is the clock in milliseconds.
 */
const LIVE_PERMIT = (at: string) => `p.lease_until > ${at} AND NOT EXISTS (
  SELECT 1 FROM workers w WHERE w.worker_id = p.owner
    AND w.heartbeat_at < to_timestamp((${at}) / 1000.0) - interval '${WORKER_SILENT_MS} milliseconds')`;

/** The locked budget, with the clock read after the lock and the permits live now. */
export const READ_BUDGET = statement(
  `SELECT b.*, ${NOW_MS} AS now_ms,
     (SELECT count(*) FROM send_permits p
      WHERE p.account_key = b.account_key AND ${LIVE_PERMIT(NOW_MS)}) AS live
   FROM send_budgets b WHERE b.account_key = :key`,
);

export const NEW_BUDGET = statement(
  `INSERT INTO send_budgets (account_key, account) VALUES (:key, :account) ON CONFLICT DO NOTHING`,
);

/** The budget written whole, under the lock LOCK_BUDGET took. */
export const UPDATE_BUDGET = statement(
  `UPDATE send_budgets SET next_at = :next_at, pace = :pace, paced_at = :paced_at,
     blocked_until = :blocked_until, reason = :reason
   WHERE account_key = :key`,
);

/** A permit granted: expired ones of the account cleared, the new one recorded, the budget moved. */
export const GRANT_PERMIT = statement(
  `WITH gone AS (DELETE FROM send_permits p WHERE p.account_key = :key AND NOT (${LIVE_PERMIT(':now_ms::float8')})),
        permit AS (INSERT INTO send_permits (permit_id, account_key, owner, lease_until)
                   VALUES (:permit_id, :key, :owner, :lease_until))
   UPDATE send_budgets SET next_at = :next_at WHERE account_key = :key`,
);

/** As LOCK_BUDGET, committed without waiting for the flush: a forgotten release expires with its lease. */
export const RELEASE_PERMIT = statement(
  `WITH nosync AS (SELECT set_config('synchronous_commit', 'off', true))
   DELETE FROM send_permits WHERE permit_id = :permit_id AND account_key = :key AND EXISTS (SELECT 1 FROM nosync)`,
);

export const SEND_BUDGETS = statement(
  `SELECT b.*, ${NOW_MS} AS now_ms,
     (SELECT count(*) FROM send_permits p
      WHERE p.account_key = b.account_key AND ${LIVE_PERMIT(NOW_MS)}) AS live
   FROM send_budgets b ORDER BY b.account`,
);

// ---- workers ----

export const HEARTBEAT = statement(
  `INSERT INTO workers (worker_id, host, pid, version, started_at, heartbeat_at)
   VALUES (:worker_id, :host, :pid, :version, ${NOW}, ${NOW})
   ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = ${NOW}, stopped_at = NULL`,
);

export const DROP_OLD_WORKERS = statement(
  `DELETE FROM workers WHERE heartbeat_at < ${NOW} - :kept_ms * interval '1 millisecond'`,
);

export const WORKER_STOPPED = statement(
  `UPDATE workers SET stopped_at = ${NOW} WHERE worker_id = :worker_id`,
);

export const LIST_WORKERS = statement(
  `SELECT *, extract(epoch from ${NOW} - heartbeat_at) * 1000 AS age_ms FROM workers
   WHERE heartbeat_at >= ${NOW} - :shown_ms * interval '1 millisecond'
   ORDER BY started_at DESC, worker_id`,
);

export const HELD_FILES = statement(
  `SELECT file_id, name, state, lease_owner, taken_over_from FROM files
   WHERE lease_owner IS NOT NULL AND lease_until > ${NOW} ORDER BY file_no`,
);

// ---- campaign rules ----

/** The chunk's pending rows whose number opted out by a reply: held back (the rule: ../campaign-rules.ts). */
export const HOLD_BACK_OPT_OUTS = statement(
  `UPDATE recipients SET outcome = 'suppressed', code = :code::text, detail = :detail::text, updated_at = ${NOW}
   FROM chunk_spans s
   WHERE ${THIS_CHUNK} AND recipients.id BETWEEN s.first_id AND s.last_id AND recipients.chunk_seq = s.seq
     AND recipients.outcome = 'pending' AND recipients.number IN (SELECT number FROM opt_outs)`,
);

const param: Param = (name, type) => `:${name}::${type}`;
export const RECORD_REPLY = statement(recordReplySql(param));

export const OPT_OUT = statement(
  `INSERT INTO opt_outs (number, at, reply) VALUES (:number::text, :at::timestamptz, :reply::bigint)
   ON CONFLICT DO NOTHING`,
);

const REPLY_COLUMNS =
  'id, iso_time(received_at) AS received_at, from_number, to_number, text, opt_out, message_id, intent, keyword, file_id';

export const REPLIES = statement(
  `SELECT ${REPLY_COLUMNS} FROM replies
   WHERE id > :after_id::bigint AND (:since::timestamptz IS NULL OR received_at >= :since::timestamptz)
   ORDER BY id LIMIT :limit::int`,
);

export const FILE_REPLIES = statement(fileRepliesSql(param));
export const REPLY_COUNTS = statement(replyCountsSql(param));
export const INSERT_REPLY_TARGETS = statement(insertReplyTargets(param, NOW));
export const PRUNE_REPLY_TARGETS = statement(pruneReplyTargetsSql(param, 'SELECT unnest(:numbers::text[])'));
export const SHORT_CODE = statement('SELECT short_code FROM files WHERE file_id = :file_id');

// ---- a number's standing (../standing-rules.ts) ----

export const LIFT_OPT_OUT = statement('DELETE FROM opt_outs WHERE number = :number::text');

/** :at NULL: the store's clock (an operator's change). */
export const STANDING_CHANGE = statement(
  `INSERT INTO standing_changes (number, at, change, source, reply, keyword, detail)
   VALUES (:number::text, coalesce(:at::timestamptz, ${NOW}), :change::text, :source::text, :reply::bigint,
     :keyword::text, :detail::text)`,
);

/** An operator's opt-out, at the store's clock, by no reply. */
export const OPT_OUT_BY_HAND = statement(
  `INSERT INTO opt_outs (number, at, reply) VALUES (:number::text, ${NOW}, NULL) ON CONFLICT DO NOTHING`,
);

export const OPTED_OUT = statement(
  'SELECT iso_time(at) AS at, reply FROM opt_outs WHERE number = :number::text',
);

export const STANDING_HISTORY = statement(
  `SELECT id, number, iso_time(at) AS at, change, source, reply, keyword, detail FROM standing_changes
   WHERE number = :number::text ORDER BY id`,
);

/** The confirmation's local day, in its timezone, on the store's clock (as the contact limit's). */
const CONFIRMATION_DAY = `(${NOW} AT TIME ZONE :timezone::text)::date`;

export const TAKE_CONFIRMATION = statement(
  `INSERT INTO reply_confirmations (number, day) VALUES (:number::text, ${CONFIRMATION_DAY})
   ON CONFLICT DO NOTHING`,
);

/** Days before yesterday decide nothing any more. */
export const PRUNE_CONFIRMATIONS = statement(
  `DELETE FROM reply_confirmations WHERE day < ${CONFIRMATION_DAY} - 1`,
);

export const REPLIES_TO_REVIEW = statement(
  `SELECT ${REPLY_COLUMNS} FROM replies WHERE intent = 'review' AND id > :after_id::bigint
   ORDER BY id LIMIT :limit::int`,
);

export const COUNT_REPLIES_TO_REVIEW = statement(`SELECT count(*) AS n FROM replies WHERE intent = 'review'`);

// ---- answers owed to replies (../standing-rules.ts, docs/opt-outs.md "Answers") ----

export const OWE_ANSWER = statement(oweAnswerSql(param, NOW));
export const CLAIM_ANSWER = statement(claimAnswerSql(param, NOW, `${NOW} - interval '1 day'`));
export const SKIP_ANSWER = statement(skipAnswerSql(param, NOW));
export const SETTLE_ANSWER = statement(settleAnswerSql(param, NOW));
export const ANSWERS_OWED = statement(answersOwedSql(param));
export const OLD_REPLIES = statement(oldRepliesSql(param));
export const PRUNE_REPLY_ANSWERS = statement(pruneReplyAnswersSql('SELECT unnest(:ids::bigint[])'));
export const PRUNE_REPLIES = statement(pruneRepliesSql('SELECT unnest(:ids::bigint[])'));
export const ABANDON_ANSWERS = statement(
  abandonAnswersSql(param, NOW, `${NOW} - :limit_ms * interval '1 millisecond'`),
);
export const REPLY_ANSWER = statement(replyAnswerSql(param));
/** The number's confirmation day taken, kept on the answer (CONFIRMATION_DAY's day). */
export const ANSWER_DAY = statement(
  `UPDATE reply_answers SET day = ${CONFIRMATION_DAY} WHERE reply = :reply::bigint`,
);
