-- dropline store, version 16: settings every process on the store shares (issue 32). The first
-- is the notify token dropline generates when none is configured: kept here, not in a file
-- beside one process, so every receiver on the store takes every report (docs/notify.md).
--   key    the setting's name (`notify.token`)
--   value  written once, by the first process that needed it; read by every other
CREATE TABLE settings (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
