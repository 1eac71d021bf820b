-- The contacts a chunk took are recorded once for the chunk, not once per recipient (issue 35,
-- docs/campaign-rules.md "Size and speed"): a chunk begins only when every recipient still
-- pending took its contact (or held one of that day already), so the chunk's record and its
-- recipients are the contacts. contact_keys stays the rule (one row a key, one upsert a
-- recipient); contact_ledger stays, no longer written, for the contacts recorded before this
-- version (read by `dropline compliance` beside the records until its days are pruned).
DROP TRIGGER contact_taken;
DROP TRIGGER contact_taken_again;

-- Where a key stands, in fewer bytes (a row a key of the audience, updated at a random place
-- of the table for each recipient: the smaller the table, the fewer pages a chunk writes):
-- the day and the week's Monday as days since 1970-01-01, and no time of the latest contact
-- (a refusal's detail reads it from the record, or the old ledger's row, of `recipient`).
CREATE TABLE contact_keys_slim (
  entity    TEXT NOT NULL,
  key       TEXT NOT NULL,
  day       INTEGER NOT NULL,
  day_count INTEGER NOT NULL,
  week      INTEGER NOT NULL,
  channels  TEXT NOT NULL,
  channel   TEXT NOT NULL,
  recipient INTEGER NOT NULL,
  PRIMARY KEY (entity, key)
) WITHOUT ROWID;
INSERT INTO contact_keys_slim (entity, key, day, day_count, week, channels, channel, recipient)
  SELECT entity, key, unixepoch(day) / 86400, day_count, unixepoch(week) / 86400, channels, channel, recipient
  FROM contact_keys;
DROP TABLE contact_keys;
ALTER TABLE contact_keys_slim RENAME TO contact_keys;

-- A chunk's contacts of a local day: its rows (chunk `seq` within ids lo..hi) but `excluded`
-- (a JSON array of ids: the rows that were not pending when it began, or held a contact of
-- the day already; NULL: none), so that outcomes changed later never change who was a
-- contact. `contacts`: how many. A chunk begun again the same day with rows it left out
-- before has a second record. By (day, hi): a chunk's own records, and the ledger in the
-- recipients' order (chunks' id ranges never overlap).
CREATE TABLE contact_chunks (
  id       INTEGER PRIMARY KEY,
  day      TEXT NOT NULL,
  hi       INTEGER NOT NULL,
  lo       INTEGER NOT NULL,
  seq      INTEGER NOT NULL,
  entity   TEXT NOT NULL,
  channel  TEXT NOT NULL,
  at       TEXT NOT NULL,
  contacts INTEGER NOT NULL,
  excluded TEXT
);
CREATE INDEX contact_chunks_day ON contact_chunks (day, hi);
-- By chunk alone: a file's records, kept a row a contact in contact_ledger as retention
-- deletes the file's recipients (docs/campaign-rules.md "Retention of the ledger").
CREATE INDEX contact_chunks_hi ON contact_chunks (hi);

-- The slots that are not the first: a contact's slot is 1 and its week slot 1 unless a row
-- here says otherwise (a key's second contact of the day, a second channel of the week).
-- Written by the database as the key's row is updated, so the slots are those of the order
-- the contacts were really taken in.
CREATE TABLE contact_slots (
  day       TEXT NOT NULL,
  recipient INTEGER NOT NULL,
  slot      INTEGER NOT NULL,
  week_slot INTEGER NOT NULL,
  PRIMARY KEY (day, recipient)
) WITHOUT ROWID;

-- A key's row inserted is always a first slot of the day and week: no row to write.
CREATE TRIGGER contact_slot AFTER UPDATE ON contact_keys
WHEN NEW.day_count > 1 OR instr(NEW.channels, ',' || NEW.channel || ',') > 1 BEGIN
  INSERT INTO contact_slots (day, recipient, slot, week_slot)
  VALUES (date(NEW.day * 86400, 'unixepoch'), NEW.recipient, NEW.day_count,
          length(substr(NEW.channels, 1, instr(NEW.channels, ',' || NEW.channel || ',')))
            - length(replace(substr(NEW.channels, 1, instr(NEW.channels, ',' || NEW.channel || ',')), ',', '')));
END;
