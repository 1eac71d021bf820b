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
