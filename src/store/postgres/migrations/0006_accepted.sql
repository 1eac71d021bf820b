-- The ACCEPTED delivery status (issue 15); the same as SQLite's migration 0013. Email and
-- WhatsApp have no delivery reports: the service's acceptance of a recipient is final,
-- recorded with the chunk's result (ChunkResult.finalStatus). It is a final status like a
-- report's, but neither delivered nor undelivered: its own counter in each chunk's span and
-- in each minute.
--
--   chunk_spans.accepted       reported rows whose status is ACCEPTED
--   delivery_minutes.accepted  rows given ACCEPTED in that minute

-- files.email: what an email file sends (templateId, or subject and html), from its read, for
-- whichever worker sends it; NULL for the other channels.
ALTER TABLE files ADD COLUMN email jsonb;

ALTER TABLE chunk_spans ADD COLUMN accepted bigint NOT NULL DEFAULT 0;
ALTER TABLE delivery_minutes ADD COLUMN accepted bigint NOT NULL DEFAULT 0;

-- 0004's function, with the accepted counter, and ACCEPTED no longer counted undelivered.
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
      accepted = s.accepted + d.accepted,
      reported_follow = s.reported_follow + d.reported_follow,
      reported_sent = s.reported_sent + d.reported_sent
    FROM (
      SELECT file_no, seq, sum(sign) AS reported,
        sum(sign * (status = 'DELIVERED_TO_HANDSET')::int) AS delivered,
        sum(sign * (status = 'UNKNOWN')::int) AS unknown,
        sum(sign * (status = 'ACCEPTED')::int) AS accepted,
        sum(sign * (outcome = 'pending' AND code IS NULL)::int) AS reported_follow,
        sum(sign * (outcome = 'sent')::int) AS reported_sent
      FROM x GROUP BY file_no, seq
    ) AS d
    WHERE s.file_no = d.file_no AND s.seq = d.seq
      AND (d.reported, d.delivered, d.unknown, d.accepted, d.reported_follow, d.reported_sent)
        <> (0, 0, 0, 0, 0, 0)
  )
  INSERT INTO delivery_minutes AS m (file_no, minute, delivered, undelivered, unknown, accepted)
  SELECT g.file_no, (SELECT date_trunc('minute', max(updated_at), 'UTC') FROM new_rows), g.d, g.u, g.k, g.a
  FROM (
    SELECT file_no, sum(sign * (status = 'DELIVERED_TO_HANDSET')::int) AS d,
      sum(sign * (status NOT IN ('DELIVERED_TO_HANDSET', 'UNKNOWN', 'ACCEPTED'))::int) AS u,
      sum(sign * (status = 'UNKNOWN')::int) AS k,
      sum(sign * (status = 'ACCEPTED')::int) AS a
    FROM x GROUP BY file_no
  ) AS g
  WHERE (g.d, g.u, g.k, g.a) <> (0, 0, 0, 0)
  ON CONFLICT (file_no, minute) DO UPDATE SET delivered = m.delivered + excluded.delivered,
    undelivered = m.undelivered + excluded.undelivered, unknown = m.unknown + excluded.unknown,
    accepted = m.accepted + excluded.accepted;
  RETURN NULL;
END $$;
