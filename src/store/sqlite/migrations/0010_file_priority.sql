-- A file's own `#! priority:` directive (docs/format.md "Directives"): high, normal or low; null:
-- its source's.
ALTER TABLE files ADD COLUMN priority TEXT;
