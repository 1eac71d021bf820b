-- dropline store, version 2: a leaner recipients table (a million rows per file).
--
-- - files.file_no: a small integer for the file, given when its first recipients are
--   recorded (max + 1); recipients carry it instead of the 16+ character file_id.
-- - recipients is a rowid table keyed by id = file_no * 2^32 + idx: the primary key is the
--   rowid itself (no second copy of the key), a file's rows are one id range in idx order.
-- - message_id is NULL for a valid recipient whose messageId is the generated
--   `<fileId>-<line>[-<k>]` (derived on read; '' stands for a valid recipient without one):
--   the messageId index holds only ids from the file's own column, and delivery reports for
--   generated ids find their recipient by (line, k) within the file's id range.
-- - no chunk index: chunk_spans holds each chunk's id range.

ALTER TABLE files ADD COLUMN file_no INTEGER;
UPDATE files SET file_no = rowid;
CREATE UNIQUE INDEX files_no ON files (file_no);

CREATE TABLE recipients_v2 (
  id                 INTEGER PRIMARY KEY,             -- file_no * 4294967296 + idx
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
  updated_at         TEXT NOT NULL
);

INSERT INTO recipients_v2 (id, line, k, number, value, message_id, text, chunk_seq, outcome, code, detail,
  sms_count, status, transaction_number, updated_at)
SELECT f.file_no * 4294967296 + r.idx, r.line, r.k, r.number, r.value,
  CASE
    WHEN r.chunk_seq IS NULL THEN r.message_id
    WHEN r.message_id IS NULL THEN ''
    WHEN r.message_id = r.file_id || '-' || r.line || CASE WHEN r.k > 0 THEN '-' || r.k ELSE '' END THEN NULL
    ELSE r.message_id
  END,
  r.text, r.chunk_seq, r.outcome, r.code, r.detail, r.sms_count, r.status, r.transaction_number, r.updated_at
FROM recipients r JOIN files f ON f.file_id = r.file_id
ORDER BY f.file_no, r.idx;

DROP INDEX recipients_message;
DROP INDEX recipients_chunk;
DROP TABLE recipients;
ALTER TABLE recipients_v2 RENAME TO recipients;

-- delivery reports with a messageId of the file's own column
CREATE INDEX recipients_message ON recipients (message_id) WHERE message_id IS NOT NULL;
-- delivery reports with a generated messageId: (line, k) of a valid recipient
CREATE INDEX recipients_line ON recipients (line, k) WHERE message_id IS NULL AND chunk_seq IS NOT NULL;

-- A chunk's recipients: valid recipients are planned into chunks in idx order, so a chunk's
-- rows lie within one id range (invalid rows between them have no chunk_seq). Kept per
-- batch of recipients recorded, instead of an index entry per recipient.
CREATE TABLE chunk_spans (
  file_no  INTEGER NOT NULL,
  seq      INTEGER NOT NULL,
  first_id INTEGER NOT NULL,
  last_id  INTEGER NOT NULL,
  PRIMARY KEY (file_no, seq)
) WITHOUT ROWID;
INSERT INTO chunk_spans (file_no, seq, first_id, last_id)
SELECT id / 4294967296, chunk_seq, min(id), max(id) FROM recipients
WHERE chunk_seq IS NOT NULL GROUP BY id / 4294967296, chunk_seq;
