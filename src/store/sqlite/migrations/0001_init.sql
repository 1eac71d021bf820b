-- dropline store, version 1. Written for SQLite; the PostgreSQL store uses the same tables
-- and columns (INTEGER → BIGINT/BOOLEAN where noted, no WITHOUT ROWID, jsonb for the JSON
-- text columns). Timestamps are ISO-8601 UTC text of one width, so text order is time order.

CREATE TABLE files (
  file_id             TEXT PRIMARY KEY,
  source              TEXT NOT NULL,
  name                TEXT NOT NULL,
  path                TEXT NOT NULL,
  sha256              TEXT NOT NULL,
  bytes               INTEGER NOT NULL,
  state               TEXT NOT NULL,
  layout              TEXT,
  encoding            TEXT,
  separator           TEXT,
  header              INTEGER NOT NULL DEFAULT 0,      -- boolean
  -- ingest counts (docs/format.md "What `validate` tells you"), written once the file is read
  records             INTEGER NOT NULL DEFAULT 0,
  valid               INTEGER NOT NULL DEFAULT 0,
  invalid             INTEGER NOT NULL DEFAULT 0,
  duplicates          INTEGER NOT NULL DEFAULT 0,
  suppressed          INTEGER NOT NULL DEFAULT 0,
  segments            INTEGER NOT NULL DEFAULT 0,
  rejection_code      TEXT,
  rejection_message   TEXT,
  reason              TEXT,
  forced              INTEGER NOT NULL DEFAULT 0,      -- boolean
  possible_duplicates INTEGER NOT NULL DEFAULT 0,
  errors              TEXT NOT NULL DEFAULT '[]',      -- JSON array of ListedIssue
  created_at          TEXT NOT NULL,
  updated_at          TEXT NOT NULL,
  timestamps          TEXT NOT NULL DEFAULT '{}',      -- JSON object: state → first entered
  delivery_deadline   TEXT,
  lease_owner         TEXT,
  lease_until         TEXT,
  UNIQUE (source, path, sha256)
);
-- acquireFile: a claimable file by state, oldest updated first
CREATE INDEX files_state_updated ON files (state, updated_at);
-- DUPLICATE_FILE checks and forced-resend numbering
CREATE INDEX files_source_sha ON files (source, sha256);
-- listFiles, newest first
CREATE INDEX files_created ON files (created_at);

CREATE TABLE chunks (
  file_id            TEXT NOT NULL REFERENCES files (file_id) ON DELETE CASCADE,
  seq                INTEGER NOT NULL,
  size               INTEGER NOT NULL,
  state              TEXT NOT NULL DEFAULT 'pending',
  attempts           INTEGER NOT NULL DEFAULT 0,
  transaction_number TEXT,
  error_code         TEXT,
  error_message      TEXT,
  updated_at         TEXT NOT NULL,
  PRIMARY KEY (file_id, seq)
) WITHOUT ROWID;

-- One row per record of the file, valid or not: the report is read from here in idx order.
CREATE TABLE recipients (
  file_id            TEXT NOT NULL REFERENCES files (file_id) ON DELETE CASCADE,
  idx                INTEGER NOT NULL,
  line               INTEGER NOT NULL,
  k                  INTEGER NOT NULL DEFAULT 0,
  number             TEXT,
  value              TEXT,
  message_id         TEXT,
  text               TEXT,
  chunk_seq          INTEGER,
  outcome            TEXT NOT NULL,
  code               TEXT,
  detail             TEXT,
  sms_count          INTEGER,
  status             TEXT NOT NULL DEFAULT 'pending',
  transaction_number TEXT,
  updated_at         TEXT NOT NULL,
  PRIMARY KEY (file_id, idx)
) WITHOUT ROWID;
-- delivery reports find their recipient by bulkId (= file_id) + messageId
CREATE INDEX recipients_message ON recipients (file_id, message_id);
-- a chunk's recipients (the index carries idx, so they come out in file order)
CREATE INDEX recipients_chunk ON recipients (file_id, chunk_seq);

-- Every delivery report ever received, as received; idempotency key (transaction_number, to).
-- Not tied to files by a foreign key: orphans (reports matching no recipient) are kept too.
CREATE TABLE delivery_events (
  transaction_number TEXT NOT NULL,
  to_number          TEXT NOT NULL,
  message_id         TEXT NOT NULL,
  bulk_id            TEXT NOT NULL,
  callback_data      TEXT,
  sms_count          INTEGER,
  status             TEXT NOT NULL,
  received_at        TEXT NOT NULL,
  recorded_at        TEXT NOT NULL,
  orphan             INTEGER NOT NULL DEFAULT 0,      -- boolean
  PRIMARY KEY (transaction_number, to_number)
) WITHOUT ROWID;
CREATE INDEX delivery_events_message ON delivery_events (bulk_id, message_id);
CREATE INDEX delivery_events_orphan ON delivery_events (orphan, recorded_at) WHERE orphan = 1;
