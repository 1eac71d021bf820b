-- A file's own `#! priority:` directive (FORMAT.md 8.1): high, normal or low; null: its source's.
ALTER TABLE files ADD COLUMN priority TEXT;
