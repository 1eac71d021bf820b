-- Settings every worker on the store shares (issue 32). The first is the notify token dropline
-- generates when none is configured: kept here, not in a file beside one worker, so every
-- receiver behind notify.publicUrl takes every report (docs/notify.md).
--   key    the setting's name (`notify.token`)
--   value  written once, by the first worker that needed it; read by every other
CREATE TABLE settings (
  key   text PRIMARY KEY,
  value text NOT NULL
);
