-- dropline store, version 11: what the dashboard shows of a file (issue 13).
--
--   files.error_counts  rows of the file with each error code (JSON object code → count), all of
--                       them, beside `errors` (the first ones); written by a patch as `errors` is
--   file_events         every state a file entered: when (its updated_at, which each statement
--                       that moves a file sets from the store's clock), the state, its reason
--                       then. Written by triggers in the statement that records or moves the
--                       file, so no code path can miss one. Retention keeps them.
--   delivery_minutes    per file and minute of the store's clock, the recipients whose final
--                       delivery status was recorded then: delivered (DELIVERED_TO_HANDSET),
--                       undelivered (any other but UNKNOWN), unknown (UNKNOWN). Kept like the
--                       chunk_spans counters (migration 0006): +1 for the new status and -1 for
--                       the old one when a row's status changes, in the same transaction, so
--                       over all minutes they add up to counts(). Retention keeps them too: no
--                       personal data, a few rows a file, and the chart outlives the recipients.

ALTER TABLE files ADD COLUMN error_counts TEXT NOT NULL DEFAULT '{}';

CREATE TABLE file_events (
  id      INTEGER PRIMARY KEY,
  file_id TEXT NOT NULL REFERENCES files (file_id) ON DELETE CASCADE,
  at      TEXT NOT NULL,
  state   TEXT NOT NULL,
  reason  TEXT
);
CREATE INDEX file_events_file ON file_events (file_id, id);

-- Files recorded before this version: the first time they entered each state (files.timestamps),
-- in time order; the reason they have now on the event of the state they are in.
INSERT INTO file_events (file_id, at, state, reason)
SELECT f.file_id, t.value, t.key, CASE WHEN t.key = f.state THEN f.reason END
FROM files f, json_each(f.timestamps) t
ORDER BY f.created_at, f.file_no, t.value,
  instr('waiting validating rejected duplicate scheduled sending paused submitted completed partial cancelled', t.key);

CREATE TRIGGER files_event_recorded AFTER INSERT ON files
BEGIN
  INSERT INTO file_events (file_id, at, state, reason) VALUES (NEW.file_id, NEW.updated_at, NEW.state, NEW.reason);
END;

-- The reason only when the move gave one: a move that keeps the old reason (sending →
-- submitted after a resume) does not repeat it.
CREATE TRIGGER files_event_moved AFTER UPDATE OF state ON files WHEN NEW.state IS NOT OLD.state
BEGIN
  INSERT INTO file_events (file_id, at, state, reason)
  VALUES (NEW.file_id, NEW.updated_at, NEW.state, CASE WHEN NEW.reason IS NOT OLD.reason THEN NEW.reason END);
END;

CREATE TABLE delivery_minutes (
  file_no     INTEGER NOT NULL,
  minute      TEXT NOT NULL,                  -- 2026-03-01T12:34:00.000Z
  delivered   INTEGER NOT NULL DEFAULT 0,
  undelivered INTEGER NOT NULL DEFAULT 0,
  unknown     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (file_no, minute)
) WITHOUT ROWID;

-- Reports recorded before this version: each reported row in the minute of its updated_at.
INSERT INTO delivery_minutes (file_no, minute, delivered, undelivered, unknown)
SELECT id / 4294967296, substr(updated_at, 1, 16) || ':00.000Z',
  total(status = 'DELIVERED_TO_HANDSET'), total(status NOT IN ('DELIVERED_TO_HANDSET', 'UNKNOWN')),
  total(status = 'UNKNOWN')
FROM recipients INDEXED BY recipients_reported
WHERE status <> 'pending' AND chunk_seq IS NOT NULL
GROUP BY 1, 2;

-- A row's first final status (its row was `pending`: nearly every report, and every UNKNOWN)
-- is counted by the store in the transaction that records it, one upsert a batch
-- (recordDeliveries, expireDeliveries): an upsert by a trigger for each row cost 2.4 µs of a
-- report's 6 µs in recordDeliveries (+40%), and even a second trigger doing nothing for those
-- rows cost +8% (one more trigger program a row). A status replaced (a second report, a report
-- after UNKNOWN: rare) moves between categories in the trigger that keeps the chunk counters
-- (0006, its body unchanged), in the minute of the row's updated_at, which the statement that
-- changes a status sets from the store's clock; a change within a category (NO_SUCCESS to
-- EXPIRED) moves nothing.
DROP TRIGGER recipients_delivery_counters;
CREATE TRIGGER recipients_delivery_counters AFTER UPDATE OF status, outcome, code ON recipients
WHEN NEW.chunk_seq IS NOT NULL AND (OLD.status <> 'pending' OR NEW.status <> 'pending')
BEGIN
  UPDATE chunk_spans SET
    reported = reported + (NEW.status <> 'pending') - (OLD.status <> 'pending'),
    delivered = delivered + (NEW.status = 'DELIVERED_TO_HANDSET') - (OLD.status = 'DELIVERED_TO_HANDSET'),
    unknown = unknown + (NEW.status = 'UNKNOWN') - (OLD.status = 'UNKNOWN'),
    reported_follow = reported_follow
      + (NEW.status <> 'pending' AND NEW.outcome = 'pending' AND NEW.code IS NULL)
      - (OLD.status <> 'pending' AND OLD.outcome = 'pending' AND OLD.code IS NULL),
    reported_sent = reported_sent
      + (NEW.status <> 'pending' AND NEW.outcome = 'sent')
      - (OLD.status <> 'pending' AND OLD.outcome = 'sent')
  WHERE file_no = NEW.id / 4294967296 AND seq = NEW.chunk_seq;
  INSERT INTO delivery_minutes (file_no, minute, delivered, undelivered, unknown)
  SELECT * FROM (SELECT NEW.id / 4294967296, substr(NEW.updated_at, 1, 16) || ':00.000Z',
      (NEW.status = 'DELIVERED_TO_HANDSET') - (OLD.status = 'DELIVERED_TO_HANDSET') AS d,
      (NEW.status NOT IN ('pending', 'DELIVERED_TO_HANDSET', 'UNKNOWN'))
        - (OLD.status NOT IN ('DELIVERED_TO_HANDSET', 'UNKNOWN')) AS u,
      (NEW.status = 'UNKNOWN') - (OLD.status = 'UNKNOWN') AS k)
  WHERE OLD.status <> 'pending' AND (d <> 0 OR u <> 0 OR k <> 0)
  ON CONFLICT (file_no, minute) DO UPDATE SET delivered = delivered + excluded.delivered,
    undelivered = undelivered + excluded.undelivered, unknown = unknown + excluded.unknown;
END;
