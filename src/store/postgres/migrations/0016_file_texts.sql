-- A bulk file's message kept on the file (issue 34): files.bulk_text is what every recipient
-- of a bulk file is sent, set when the file is read; its recipient rows carry no text. Files
-- read before kept it on their first valid recipient row: it is copied from the file's first
-- row with a text (its rows are one id range, file_no * 2^32 + idx), so a file recorded
-- before the upgrade, mid-send, sends the rest with its message.
ALTER TABLE files ADD COLUMN bulk_text text;
UPDATE files f SET bulk_text = (
  SELECT r.text FROM recipients r
  WHERE r.id BETWEEN f.file_no * 4294967296 AND f.file_no * 4294967296 + 4294967295
    AND r.chunk_seq IS NOT NULL AND r.text IS NOT NULL
  ORDER BY r.id LIMIT 1)
WHERE f.layout = 'bulk' AND f.file_no IS NOT NULL;

-- A file's reason as a code and its parameters (issue 34, docs/dashboard.md "Codes and
-- languages") beside its English `reason`, on the file and on each event, for a page to word
-- it in its language. Reasons written before have none: the page reads those back from their
-- English (src/ops/wording.ts).
ALTER TABLE files ADD COLUMN reason_code text;
ALTER TABLE files ADD COLUMN reason_params jsonb;
ALTER TABLE file_events ADD COLUMN reason_code text;
ALTER TABLE file_events ADD COLUMN reason_params jsonb;

CREATE OR REPLACE FUNCTION files_recorded_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO file_events (file_id, at, state, reason, reason_code, reason_params)
  SELECT file_id, updated_at, state, reason, reason_code, reason_params FROM new_files ORDER BY file_no;
  RETURN NULL;
END $$;

-- The reason only when the move gave one: a move that keeps the old reason (sending →
-- submitted after a resume) does not repeat it.
CREATE OR REPLACE FUNCTION files_moved_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO file_events (file_id, at, state, reason, reason_code, reason_params)
  VALUES (NEW.file_id, NEW.updated_at, NEW.state,
    CASE WHEN NEW.reason IS DISTINCT FROM OLD.reason THEN NEW.reason END,
    CASE WHEN NEW.reason IS DISTINCT FROM OLD.reason THEN NEW.reason_code END,
    CASE WHEN NEW.reason IS DISTINCT FROM OLD.reason THEN NEW.reason_params END);
  RETURN NULL;
END $$;
