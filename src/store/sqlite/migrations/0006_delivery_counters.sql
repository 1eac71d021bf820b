-- dropline store, version 6: delivery counts kept with the reports, per chunk.
--
-- counts() used to read every recipient with a delivery report (the recipients_reported
-- index): 0.32 s of a blocked event loop at ~1M reports, at every progress check, so the
-- receiver slowed down as a campaign grew. Now each chunk's span carries counters of its
-- reported rows, kept by a trigger in the same statement (so the same transaction) as every
-- change of a recipient's status, outcome or code: counts() adds up one row per chunk,
-- whatever the number of reports. Rows with no report (status 'pending') never count, so
-- the trigger does nothing for the updates of sending (chunk results on unreported rows).
--
--   reported         rows with a delivery status (status <> 'pending')
--   delivered        … DELIVERED_TO_HANDSET
--   unknown          … UNKNOWN (the delivery deadline passed)
--   reported_follow  … whose row follows its chunk (outcome 'pending' without a code): sent
--                    when the chunk is accepted (migration 0003)
--   reported_sent    … whose row says 'sent' itself

ALTER TABLE chunk_spans ADD COLUMN reported INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chunk_spans ADD COLUMN delivered INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chunk_spans ADD COLUMN unknown INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chunk_spans ADD COLUMN reported_follow INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chunk_spans ADD COLUMN reported_sent INTEGER NOT NULL DEFAULT 0;

UPDATE chunk_spans SET reported = x.reported, delivered = x.delivered, unknown = x.unknown,
  reported_follow = x.reported_follow, reported_sent = x.reported_sent
FROM (SELECT id / 4294967296 AS file_no, chunk_seq AS seq, count(*) AS reported,
        total(status = 'DELIVERED_TO_HANDSET') AS delivered, total(status = 'UNKNOWN') AS unknown,
        total(outcome = 'pending' AND code IS NULL) AS reported_follow, total(outcome = 'sent') AS reported_sent
      FROM recipients INDEXED BY recipients_reported
      WHERE status <> 'pending' AND chunk_seq IS NOT NULL
      GROUP BY id / 4294967296, chunk_seq) AS x
WHERE chunk_spans.file_no = x.file_no AND chunk_spans.seq = x.seq;

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
END;
