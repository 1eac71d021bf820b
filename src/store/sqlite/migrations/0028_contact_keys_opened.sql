-- A contact the service never took is given back when its chunk's result is recorded
-- (docs/campaign-rules.md "Contacts given back"). Its day's count is exact from the key's row;
-- its week's channel is given back only when that contact added the channel to the week's
-- list, so a key keeps `opened`: 1 when its latest contact did (0: it did not, it was given
-- back, or it was taken before this version). A flag, not the contact's id: no byte more a key.
ALTER TABLE contact_keys ADD COLUMN opened INTEGER NOT NULL DEFAULT 0;

-- The slot trigger fires on a take only (the key's day changed, or its count went up), never
-- on a give-back, which lowers a count and may leave a slot of the key's in contact_slots.
DROP TRIGGER contact_slot;
CREATE TRIGGER contact_slot AFTER UPDATE ON contact_keys
WHEN (NEW.day <> OLD.day OR NEW.day_count > OLD.day_count)
  AND (NEW.day_count > 1 OR instr(NEW.channels, ',' || NEW.channel || ',') > 1) BEGIN
  INSERT INTO contact_slots (day, recipient, slot, week_slot)
  VALUES (date(NEW.day * 86400, 'unixepoch'), NEW.recipient, NEW.day_count,
          length(substr(NEW.channels, 1, instr(NEW.channels, ',' || NEW.channel || ',')))
            - length(replace(substr(NEW.channels, 1, instr(NEW.channels, ',' || NEW.channel || ',')), ',', '')));
END;
