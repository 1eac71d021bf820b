-- Reports owed (issue 32): a report.csv, manifest or errors.csv a worker could not write to
-- its source (reports/ unwritable, the server down) is written again later, with back-off,
-- by whichever worker finds it due, also after a restart. report_owed_at: since when
-- (NULL: nothing owed); report_failures: failed writes since; report_retry_at: when next.
ALTER TABLE files ADD COLUMN report_owed_at timestamptz;
ALTER TABLE files ADD COLUMN report_failures integer NOT NULL DEFAULT 0;
ALTER TABLE files ADD COLUMN report_retry_at timestamptz;
CREATE INDEX files_reports_owed ON files (report_retry_at) WHERE report_retry_at IS NOT NULL;
