-- What the dashboard shows of a file (issue 13); the same as SQLite's migration 0011.
--
--   files.error_counts  rows of the file with each error code (code → count), all of them,
--                       beside `errors` (the first ones); written by a patch as `errors` is
--   files.name_folded   the name as the store folds it (lowercased the Unicode way, whatever
--                       the database's locale: lower() under the C locale folds ASCII only);
--                       listFiles' search matches within it. NULL in rows a store before this
--                       version records (several workers: one may not be upgraded yet), which
--                       the search reads as lower(name)
--   file_events         every state a file entered: when (its updated_at, which each statement
--                       that moves a file sets from the store's clock), the state, its reason
--                       then. Written by triggers in the statement that records or moves the
--                       file, so no code path can miss one. Retention keeps them.
--   delivery_minutes    per file and minute of the store's clock, the recipients whose final
--                       delivery status was recorded then: delivered (DELIVERED_TO_HANDSET),
--                       undelivered (any other but UNKNOWN), unknown (UNKNOWN). Kept by the
--                       statement-level trigger of the chunk counters (0001) from the same scan
--                       of the changed rows: +1 for the new status and -1 for the old one, so
--                       over all minutes they add up to counts(). Retention keeps them too: no
--                       personal data, a few rows a file, and the chart outlives the recipients.

ALTER TABLE files ADD COLUMN error_counts jsonb NOT NULL DEFAULT '{}';

ALTER TABLE files ADD COLUMN name_folded text;
UPDATE files SET name_folded = lower(name);

CREATE TABLE file_events (
  id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  file_id text NOT NULL REFERENCES files (file_id) ON DELETE CASCADE,
  at      timestamptz NOT NULL,
  state   text NOT NULL,
  reason  text
);
CREATE INDEX file_events_file ON file_events (file_id, id);

-- Files recorded before this version: the first time they entered each state (files.timestamps),
-- in time order; the reason they have now on the event of the state they are in.
INSERT INTO file_events (file_id, at, state, reason)
SELECT f.file_id, t.value::timestamptz, t.key, CASE WHEN t.key = f.state THEN f.reason END
FROM files f CROSS JOIN LATERAL jsonb_each_text(f.timestamps) AS t
ORDER BY f.created_at, f.file_no, t.value::timestamptz,
  array_position(ARRAY['waiting', 'validating', 'rejected', 'duplicate', 'scheduled', 'sending', 'paused',
    'submitted', 'completed', 'partial', 'cancelled'], t.key);

-- Files recorded: one statement for a batch of claimed files (in their numbers' order).
CREATE FUNCTION files_recorded_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO file_events (file_id, at, state, reason)
  SELECT file_id, updated_at, state, reason FROM new_files ORDER BY file_no;
  RETURN NULL;
END $$;
CREATE TRIGGER files_event_recorded AFTER INSERT ON files
  REFERENCING NEW TABLE AS new_files
  FOR EACH STATEMENT EXECUTE FUNCTION files_recorded_events();

-- A state changed: a row trigger (transition tables take no column list, so a statement
-- trigger would run for every lease renewal); updates that leave the state never fire it.
-- The reason only when the move gave one: a move that keeps the old reason (sending →
-- submitted after a resume) does not repeat it.
CREATE FUNCTION files_moved_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO file_events (file_id, at, state, reason) VALUES (NEW.file_id, NEW.updated_at, NEW.state,
    CASE WHEN NEW.reason IS DISTINCT FROM OLD.reason THEN NEW.reason END);
  RETURN NULL;
END $$;
CREATE TRIGGER files_event_moved AFTER UPDATE OF state ON files
  FOR EACH ROW WHEN (NEW.state IS DISTINCT FROM OLD.state) EXECUTE FUNCTION files_moved_event();

CREATE TABLE delivery_minutes (
  file_no     bigint NOT NULL,
  minute      timestamptz NOT NULL,
  delivered   bigint NOT NULL DEFAULT 0,
  undelivered bigint NOT NULL DEFAULT 0,
  unknown     bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (file_no, minute)
);

-- Reports recorded before this version: each reported row in the minute of its updated_at.
INSERT INTO delivery_minutes (file_no, minute, delivered, undelivered, unknown)
SELECT id / 4294967296, date_trunc('minute', updated_at, 'UTC'),
  count(*) FILTER (WHERE status = 'DELIVERED_TO_HANDSET'),
  count(*) FILTER (WHERE status NOT IN ('DELIVERED_TO_HANDSET', 'UNKNOWN')),
  count(*) FILTER (WHERE status = 'UNKNOWN')
FROM recipients WHERE status <> 'pending' AND chunk_seq IS NOT NULL
GROUP BY 1, 2;

-- The chunk counters' trigger (0001), its counters unchanged, now also the minutes: one scan
-- of the changed rows (x) feeds both. One minute a statement, of its rows' updated_at (each
-- statement that changes a status sets it from the store's clock to one value), so a row's +1
-- and -1 land in one minute and a statement that leaves statuses as they were adds nothing.
CREATE OR REPLACE FUNCTION recipients_counters() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH x AS MATERIALIZED (
    SELECT n.id / 4294967296 AS file_no, n.chunk_seq AS seq, 1 AS sign, n.status, n.outcome, n.code
    FROM new_rows n WHERE n.chunk_seq IS NOT NULL AND n.status <> 'pending'
    UNION ALL
    SELECT o.id / 4294967296, o.chunk_seq, -1, o.status, o.outcome, o.code
    FROM old_rows o WHERE o.chunk_seq IS NOT NULL AND o.status <> 'pending'
  ), spans AS (
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
      FROM x GROUP BY file_no, seq
    ) AS d
    WHERE s.file_no = d.file_no AND s.seq = d.seq
      AND (d.reported, d.delivered, d.unknown, d.reported_follow, d.reported_sent) <> (0, 0, 0, 0, 0)
  )
  INSERT INTO delivery_minutes AS m (file_no, minute, delivered, undelivered, unknown)
  SELECT g.file_no, (SELECT date_trunc('minute', max(updated_at), 'UTC') FROM new_rows), g.d, g.u, g.k
  FROM (
    SELECT file_no, sum(sign * (status = 'DELIVERED_TO_HANDSET')::int) AS d,
      sum(sign * (status NOT IN ('DELIVERED_TO_HANDSET', 'UNKNOWN'))::int) AS u,
      sum(sign * (status = 'UNKNOWN')::int) AS k
    FROM x GROUP BY file_no
  ) AS g
  WHERE (g.d, g.u, g.k) <> (0, 0, 0)
  ON CONFLICT (file_no, minute) DO UPDATE SET delivered = m.delivered + excluded.delivered,
    undelivered = m.undelivered + excluded.undelivered, unknown = m.unknown + excluded.unknown;
  RETURN NULL;
END $$;
