-- A contact the service never took is given back when its chunk's result is recorded
-- (docs/campaign-rules.md "Contacts given back"). Its day's count is exact from the key's row;
-- its week's channel is given back only when that contact added the channel to the week's
-- list, so a key keeps `opened`: 1 when its latest contact did (0: it did not, it was given
-- back, or it was taken before this version). A flag, not the contact's id: no byte more a key.
ALTER TABLE contact_keys ADD COLUMN opened INTEGER NOT NULL DEFAULT 0;
