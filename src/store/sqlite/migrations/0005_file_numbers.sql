-- dropline store, version 5: a file's number is given with its row.
--
-- Until now files.file_no was given (max + 1) inside the transaction that recorded a file's
-- first recipients. When that transaction rolled back (SQLITE_FULL), the number was free
-- again in the database but not in the process that had cached it, so the next file got
-- the same number and the first file's retry deleted that file's rows. The UNIQUE index
-- could not see it: the database never held the number twice. Now the database numbers a
-- file when its row is inserted, in the same statement (max + 1 under the write lock; files
-- rows are never deleted, so a number is never reused). The PostgreSQL store uses a
-- sequence as the column default.

UPDATE files SET file_no = n.no
FROM (SELECT file_id, (SELECT coalesce(max(file_no), 0) FROM files) + row_number() OVER (ORDER BY rowid) AS no
      FROM files WHERE file_no IS NULL) AS n
WHERE files.file_id = n.file_id;

CREATE TRIGGER files_number AFTER INSERT ON files WHEN NEW.file_no IS NULL
BEGIN
  UPDATE files SET file_no = (SELECT coalesce(max(file_no), 0) + 1 FROM files) WHERE rowid = NEW.rowid;
END;
