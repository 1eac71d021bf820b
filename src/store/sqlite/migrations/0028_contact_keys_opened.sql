-- A contact the service never took is given back when its chunk's result is recorded
-- (docs/campaign-rules.md "Contacts given back"). Its day's count is exact from the key's row;
-- its week's channel is given back only when that contact opened the channel that week, so
-- a key keeps `opened`: the recipient whose contact added the latest channel to the week's
-- list (0: unknown, as for every key before this version, or given back already).
ALTER TABLE contact_keys ADD COLUMN opened INTEGER NOT NULL DEFAULT 0;
