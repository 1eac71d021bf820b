-- A bulk file's message kept on the file (issue 34): files.bulk_text is what every recipient
-- of a bulk file is sent, set when the file is read; its recipient rows carry no text. Files
-- read before kept it on their first valid recipient row: it is copied from the file's first
-- row with a text (its rows are one id range, file_no * 2^32 + idx), so a file recorded
-- before the upgrade, mid-send, sends the rest with its message.
ALTER TABLE files ADD COLUMN bulk_text TEXT;
UPDATE files SET bulk_text = (
  SELECT r.text FROM recipients r
  WHERE r.id BETWEEN files.file_no * 4294967296 AND files.file_no * 4294967296 + 4294967295
    AND r.chunk_seq IS NOT NULL AND r.text IS NOT NULL
  ORDER BY r.id LIMIT 1)
WHERE layout = 'bulk' AND file_no IS NOT NULL;

-- A file's reason as a code and its parameters (issue 34, docs/dashboard.md "Codes and
-- languages") beside its English `reason`, on the file and on each event, for a page to word
-- it in its language. Reasons written before have none: the page reads those back from their
-- English (src/ops/wording.ts).
ALTER TABLE files ADD COLUMN reason_code TEXT;
ALTER TABLE files ADD COLUMN reason_params TEXT;
ALTER TABLE file_events ADD COLUMN reason_code TEXT;
ALTER TABLE file_events ADD COLUMN reason_params TEXT;

DROP TRIGGER IF EXISTS files_event_recorded;
CREATE TRIGGER files_event_recorded AFTER INSERT ON files
BEGIN
  INSERT INTO file_events (file_id, at, state, reason, reason_code, reason_params)
  VALUES (NEW.file_id, NEW.updated_at, NEW.state, NEW.reason, NEW.reason_code, NEW.reason_params);
END;

-- The reason only when the move gave one: a move that keeps the old reason (sending →
-- submitted after a resume) does not repeat it.
DROP TRIGGER IF EXISTS files_event_moved;
CREATE TRIGGER files_event_moved AFTER UPDATE OF state ON files WHEN NEW.state IS NOT OLD.state
BEGIN
  INSERT INTO file_events (file_id, at, state, reason, reason_code, reason_params)
  VALUES (NEW.file_id, NEW.updated_at, NEW.state,
    CASE WHEN NEW.reason IS NOT OLD.reason THEN NEW.reason END,
    CASE WHEN NEW.reason IS NOT OLD.reason THEN NEW.reason_code END,
    CASE WHEN NEW.reason IS NOT OLD.reason THEN NEW.reason_params END);
END;
