-- A contact the service never took is given back when its chunk's result is recorded
-- (docs/campaign-rules.md "Contacts given back"). Its day's count is exact from the key's row;
-- its week's channel is given back only when that contact added the channel to the week's
-- list, so a key keeps `opened`: true when its latest contact did (false: it did not, it was
-- given back, or it was taken before this version).
ALTER TABLE contact_keys ADD COLUMN opened boolean NOT NULL DEFAULT false;
