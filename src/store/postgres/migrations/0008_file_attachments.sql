-- An email file's shared attachments (issue 15): the files of `attachments/<file base name>/`
-- beside the inbox, read with the file and kept here (base64, as the service takes them) so
-- that whichever worker sends a chunk sends the same attachments, whatever happens to the
-- folder meanwhile. Removed with the file's rows (retention) and when the file is read again.
CREATE TABLE file_attachments (
  file_id text NOT NULL,
  seq integer NOT NULL,
  name text NOT NULL,
  content_type text NOT NULL,
  content text NOT NULL,
  PRIMARY KEY (file_id, seq)
);
