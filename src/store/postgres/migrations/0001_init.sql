-- dropline store on PostgreSQL, version 1: one initial schema, equivalent to the SQLite schema
-- after its migration 0007 (its own lineage: SQLite's history is not replayed here). Every
-- name is unqualified: the store sets search_path to its schema on each connection.
--
-- Timestamps are timestamptz, compared by the database (leases, retention cutoffs); the
-- store reads them back as ISO-8601 UTC strings of millisecond precision. files.timestamps
-- (state → first entered) holds those strings, as the SQLite store does.

-- The ISO-8601 form the Store interface speaks (2026-03-01T12:00:00.000Z).
CREATE FUNCTION iso_time(t timestamptz) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');

-- A file's number: recipients carry it in their id (file_no * 2^32 + idx). From a sequence,
-- never max() + 1: two workers recording files at once never get the same one.
CREATE SEQUENCE files_file_no;

CREATE TABLE files (
  file_id             text PRIMARY KEY,
  file_no             bigint NOT NULL DEFAULT nextval('files_file_no') UNIQUE,
  source              text NOT NULL,
  name                text NOT NULL,
  path                text NOT NULL,
  sha256              text NOT NULL,
  bytes               bigint NOT NULL,
  state               text NOT NULL,
  layout              text,
  encoding            text,
  separator           text,
  header              boolean NOT NULL DEFAULT false,
  records             bigint NOT NULL DEFAULT 0,
  valid               bigint NOT NULL DEFAULT 0,
  invalid             bigint NOT NULL DEFAULT 0,
  duplicates          bigint NOT NULL DEFAULT 0,
  suppressed          bigint NOT NULL DEFAULT 0,
  segments            bigint NOT NULL DEFAULT 0,
  rejection_code      text,
  rejection_message   text,
  reason              text,
  forced              boolean NOT NULL DEFAULT false,
  possible_duplicates bigint NOT NULL DEFAULT 0,
  errors              jsonb NOT NULL DEFAULT '[]',
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  timestamps          jsonb NOT NULL DEFAULT '{}',
  delivery_deadline   timestamptz,
  lease_owner         text,
  lease_until         timestamptz,
  -- retention: when the file's rows began to be removed, its counts at that moment, and
  -- whether rows are left to remove
  pruned_at           timestamptz,
  pruned_counts       jsonb,
  pruning             boolean NOT NULL DEFAULT false,
  UNIQUE (source, path, sha256)
);
ALTER SEQUENCE files_file_no OWNED BY files.file_no;
-- listFiles and prune by state, oldest updated first
CREATE INDEX files_state_updated ON files (state, updated_at, file_id);
-- acquireFile: the oldest free file of a state, one index probe
CREATE INDEX files_free ON files (state, updated_at, file_id) WHERE lease_owner IS NULL;
-- acquireFile: leases that may have expired (only the files leased now)
CREATE INDEX files_leased ON files (lease_until) WHERE lease_owner IS NOT NULL;
-- DUPLICATE_FILE checks and the generation count of a content
CREATE INDEX files_source_sha ON files (source, sha256);
-- listFiles, newest first (file_no breaks ties: insertion order)
CREATE INDEX files_created ON files (created_at, file_no);
CREATE INDEX files_pruning ON files (file_id) WHERE pruning;

CREATE TABLE chunks (
  file_id            text NOT NULL REFERENCES files (file_id) ON DELETE CASCADE,
  seq                integer NOT NULL,
  size               integer NOT NULL,
  state              text NOT NULL DEFAULT 'pending',
  attempts           integer NOT NULL DEFAULT 0,
  transaction_number text,
  error_code         text,
  error_message      text,
  updated_at         timestamptz NOT NULL,
  PRIMARY KEY (file_id, seq)
);

-- One row per record of the file, valid or not, keyed by id = file_no * 2^32 + idx: a file's
-- rows are one id range in idx order. message_id is NULL for a valid recipient whose
-- messageId is the generated <fileId>-<line>[-<k>] ('' for a valid one without any). A valid
-- row saying `pending` without a code follows its chunk's state (see the store).
CREATE TABLE recipients (
  id                 bigint PRIMARY KEY,
  line               integer NOT NULL,
  k                  integer NOT NULL DEFAULT 0,
  number             text,
  value              text,
  message_id         text,
  text               text,
  chunk_seq          integer,
  outcome            text NOT NULL,
  code               text,
  detail             text,
  sms_count          integer,
  status             text NOT NULL DEFAULT 'pending',
  transaction_number text,
  -- the default serves insertRecipients' COPY (the database's clock, as now() elsewhere)
  updated_at         timestamptz NOT NULL DEFAULT now()
);
-- delivery reports with a messageId of the file's own column
CREATE INDEX recipients_message ON recipients (message_id, id) WHERE message_id IS NOT NULL;
-- delivery reports with a generated messageId: (line, k) of a valid recipient within a file
CREATE INDEX recipients_line ON recipients (line, k, id) WHERE message_id IS NULL AND chunk_seq IS NOT NULL;
-- valid recipients whose row carries its own outcome (counts read these and the chunks)
CREATE INDEX recipients_settled ON recipients (id)
  WHERE chunk_seq IS NOT NULL AND (outcome <> 'pending' OR code IS NOT NULL);

-- Each chunk's id range (its recipients lie within it: valid rows are planned into chunks in
-- idx order) and the delivery counters of its reported rows, kept by recipients_counters:
--   reported         rows with a delivery status (status <> 'pending')
--   delivered        … DELIVERED_TO_HANDSET
--   unknown          … UNKNOWN (the delivery deadline passed)
--   reported_follow  … whose row follows its chunk (outcome 'pending' without a code)
--   reported_sent    … whose row says 'sent' itself
CREATE TABLE chunk_spans (
  file_no         bigint NOT NULL,
  seq             integer NOT NULL,
  first_id        bigint NOT NULL,
  last_id         bigint NOT NULL,
  reported        bigint NOT NULL DEFAULT 0,
  delivered       bigint NOT NULL DEFAULT 0,
  unknown         bigint NOT NULL DEFAULT 0,
  reported_follow bigint NOT NULL DEFAULT 0,
  reported_sent   bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (file_no, seq)
);

-- The counters change in the statement that changes a row's status, outcome or code: one
-- statement-level trigger adds up, per chunk, what the new rows count less what the old rows
-- counted (one UPDATE of chunk_spans per statement, not one per row; two sums, no join of the
-- old and new rows). Only rows with a report count, so the updates of sending (chunk results
-- on unreported rows) add nothing.
CREATE FUNCTION recipients_counters() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE chunk_spans s SET
    reported = s.reported + d.reported,
    delivered = s.delivered + d.delivered,
    unknown = s.unknown + d.unknown,
    reported_follow = s.reported_follow + d.reported_follow,
    reported_sent = s.reported_sent + d.reported_sent
  FROM (
    SELECT file_no, seq, sum(sign) AS reported,
      sum(sign * (status = 'DELIVERED_TO_HANDSET')::int) AS delivered,
      sum(sign * (status = 'UNKNOWN')::int) AS unknown,
      sum(sign * (outcome = 'pending' AND code IS NULL)::int) AS reported_follow,
      sum(sign * (outcome = 'sent')::int) AS reported_sent
    FROM (
      SELECT n.id / 4294967296 AS file_no, n.chunk_seq AS seq, 1 AS sign, n.status, n.outcome, n.code
      FROM new_rows n WHERE n.chunk_seq IS NOT NULL AND n.status <> 'pending'
      UNION ALL
      SELECT o.id / 4294967296, o.chunk_seq, -1, o.status, o.outcome, o.code
      FROM old_rows o WHERE o.chunk_seq IS NOT NULL AND o.status <> 'pending'
    ) AS x
    GROUP BY file_no, seq
  ) AS d
  WHERE s.file_no = d.file_no AND s.seq = d.seq
    AND (d.reported, d.delivered, d.unknown, d.reported_follow, d.reported_sent) <> (0, 0, 0, 0, 0);
  RETURN NULL;
END $$;
CREATE TRIGGER recipients_counters AFTER UPDATE ON recipients
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION recipients_counters();

-- Every delivery report ever received, as received; idempotency key (transaction_number, to).
-- Not tied to files: orphans (reports matching no recipient) are kept too.
CREATE TABLE delivery_events (
  transaction_number text NOT NULL,
  to_number          text NOT NULL,
  message_id         text NOT NULL,
  bulk_id            text NOT NULL,
  callback_data      text,
  sms_count          integer,
  status             text NOT NULL,
  received_at        text NOT NULL,
  recorded_at        timestamptz NOT NULL,
  orphan             boolean NOT NULL DEFAULT false,
  PRIMARY KEY (transaction_number, to_number)
);
CREATE INDEX delivery_events_orphan ON delivery_events (recorded_at) WHERE orphan;

-- The service accounts' tokens, shared by every worker (the service keeps one active token
-- per account: a new one expires the previous). One worker renews under a lease
-- (renewing_owner, renewing_until); the others adopt the new generation.
CREATE TABLE service_tokens (
  account_key    text PRIMARY KEY,
  access_token   text,
  refresh_token  text,
  renew_at     text,
  generation     bigint NOT NULL DEFAULT 0,
  renewing_owner text,
  renewing_until timestamptz
);
