-- dropline store, version 7: retention (retentionDays, `dropline prune`).
--
-- A finished file older than the retention loses its recipients, chunks and delivery reports;
-- its files row (the manifest) stays, with the counts it had when it was pruned.
--   pruned_at      when its rows began to be removed (NULL: never pruned)
--   pruned_counts  counts() of the file at that moment (JSON), what `status` shows after
--   pruning        1 while rows are left to remove (a prune runs in small batches)

ALTER TABLE files ADD COLUMN pruned_at TEXT;
ALTER TABLE files ADD COLUMN pruned_counts TEXT;
ALTER TABLE files ADD COLUMN pruning INTEGER NOT NULL DEFAULT 0;
CREATE INDEX files_pruning ON files (file_id) WHERE pruning = 1;
