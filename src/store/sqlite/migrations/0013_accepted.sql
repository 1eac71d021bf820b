-- The ACCEPTED delivery status (issue 15): email and WhatsApp have no delivery reports; the
-- service's acceptance of a recipient is final, recorded with the chunk's result
-- (ChunkResult.finalStatus). It is a final status like a report's, but neither delivered nor
-- undelivered: its own counter in each chunk's span (0006) and in each minute (0011).
--
--   chunk_spans.accepted       reported rows whose status is ACCEPTED
--   delivery_minutes.accepted  rows given ACCEPTED in that minute (counted by the store in the
--                              transaction that records them, as the other first statuses)

-- files.email: what an email file sends (templateId, or subject and html; JSON), from its
-- read, for whichever worker sends it; NULL for the other channels.
ALTER TABLE files ADD COLUMN email TEXT;

ALTER TABLE chunk_spans ADD COLUMN accepted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE delivery_minutes ADD COLUMN accepted INTEGER NOT NULL DEFAULT 0;

-- 0011's trigger, now with the accepted counter, and ACCEPTED no longer counted undelivered.
DROP TRIGGER recipients_delivery_counters;
CREATE TRIGGER recipients_delivery_counters AFTER UPDATE OF status, outcome, code ON recipients
WHEN NEW.chunk_seq IS NOT NULL AND (OLD.status <> 'pending' OR NEW.status <> 'pending')
BEGIN
  UPDATE chunk_spans SET
    reported = reported + (NEW.status <> 'pending') - (OLD.status <> 'pending'),
    delivered = delivered + (NEW.status = 'DELIVERED_TO_HANDSET') - (OLD.status = 'DELIVERED_TO_HANDSET'),
    unknown = unknown + (NEW.status = 'UNKNOWN') - (OLD.status = 'UNKNOWN'),
    accepted = accepted + (NEW.status = 'ACCEPTED') - (OLD.status = 'ACCEPTED'),
    reported_follow = reported_follow
      + (NEW.status <> 'pending' AND NEW.outcome = 'pending' AND NEW.code IS NULL)
      - (OLD.status <> 'pending' AND OLD.outcome = 'pending' AND OLD.code IS NULL),
    reported_sent = reported_sent
      + (NEW.status <> 'pending' AND NEW.outcome = 'sent')
      - (OLD.status <> 'pending' AND OLD.outcome = 'sent')
  WHERE file_no = NEW.id / 4294967296 AND seq = NEW.chunk_seq;
  INSERT INTO delivery_minutes (file_no, minute, delivered, undelivered, unknown, accepted)
  SELECT * FROM (SELECT NEW.id / 4294967296, substr(NEW.updated_at, 1, 16) || ':00.000Z',
      (NEW.status = 'DELIVERED_TO_HANDSET') - (OLD.status = 'DELIVERED_TO_HANDSET') AS d,
      (NEW.status NOT IN ('pending', 'DELIVERED_TO_HANDSET', 'UNKNOWN', 'ACCEPTED'))
        - (OLD.status NOT IN ('DELIVERED_TO_HANDSET', 'UNKNOWN', 'ACCEPTED')) AS u,
      (NEW.status = 'UNKNOWN') - (OLD.status = 'UNKNOWN') AS k,
      (NEW.status = 'ACCEPTED') - (OLD.status = 'ACCEPTED') AS a)
  WHERE OLD.status <> 'pending' AND (d <> 0 OR u <> 0 OR k <> 0 OR a <> 0)
  ON CONFLICT (file_no, minute) DO UPDATE SET delivered = delivered + excluded.delivered,
    undelivered = undelivered + excluded.undelivered, unknown = unknown + excluded.unknown,
    accepted = accepted + excluded.accepted;
END;
