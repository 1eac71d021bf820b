-- One contact ledger per entity (issue 35, docs/campaign-rules.md "Contact limit"): the
-- per-account slots of `contacts` become an entity's (a company: every account and channel
-- it sends with), keyed by the normalised number or the address in lower case, with the
-- channels a key was contacted by in the week (Monday to Sunday).

-- Where a key stands: its contacts on its latest local day, the channels of its latest week
-- (`,sms,whatsapp,`), and its latest contact. One row a key, updated in place by an upsert
-- whose condition is the rule: the primary key is what makes two workers unable to both take
-- the last contact (PostgreSQL locks the row; SQLite's writers take turns), and a contact
-- costs one look-up of one row whatever the ledger's length.
CREATE TABLE contact_keys (
  entity    TEXT NOT NULL,
  key       TEXT NOT NULL,
  day       TEXT NOT NULL,
  day_count INTEGER NOT NULL,
  week      TEXT NOT NULL,
  channels  TEXT NOT NULL,
  at        TEXT NOT NULL,
  channel   TEXT NOT NULL,
  recipient INTEGER NOT NULL,
  PRIMARY KEY (entity, key)
) WITHOUT ROWID;

-- Every contact made (a slot taken just before its chunk was sent), what `dropline
-- compliance` prints: by local day and recipient (its row id, whose upper bits are its file's
-- number), so that a recipient finds the contact it took already (a chunk stopped and sent
-- later takes no second one) and rows are written near the end of the table.
CREATE TABLE contact_ledger (
  day       TEXT NOT NULL,
  recipient INTEGER NOT NULL,
  entity    TEXT NOT NULL,
  key       TEXT NOT NULL,
  slot      INTEGER NOT NULL,
  week_slot INTEGER,
  channel   TEXT NOT NULL,
  at        TEXT NOT NULL,
  PRIMARY KEY (day, recipient)
) WITHOUT ROWID;

-- What `dropline compliance` prints beside a file's contacts and the store alone knows: the
-- file's account, channel and entity and the send window in force when it was sent, and the
-- sha256 of the suppression and consent lists it was read against (JSON).
CREATE TABLE file_checks (
  file_id     TEXT PRIMARY KEY,
  account     TEXT,
  channel     TEXT,
  entity      TEXT,
  send_window TEXT,
  lists       TEXT
) WITHOUT ROWID;

-- The per-account slots carried over under the default entity (a number an account reached
-- today stays reached); their time is unknown: the start of their day in Bogotá.
INSERT OR IGNORE INTO contact_ledger (day, recipient, entity, key, slot, channel, at)
  SELECT day, recipient, 'default', number, slot, 'sms', day || 'T05:00:00.000Z' FROM contacts;
INSERT INTO contact_keys (entity, key, day, day_count, week, channels, at, channel, recipient)
  SELECT 'default', number, day, count(*), date(day, 'weekday 0', '-6 days'), ',sms,',
         day || 'T05:00:00.000Z', 'sms', max(recipient)
  FROM contacts WHERE day = (SELECT max(day) FROM contacts) GROUP BY number;
DROP TABLE contacts;

-- A contact taken (a key's row inserted, or updated by the upsert whose rule allowed it) is
-- written to the ledger by the database, in the same statement: its day, recipient, slot
-- (the day's count) and the week slot its channel holds (its place among the week's).
CREATE TRIGGER contact_taken AFTER INSERT ON contact_keys BEGIN
  INSERT INTO contact_ledger (day, recipient, entity, key, slot, week_slot, channel, at)
  VALUES (NEW.day, NEW.recipient, NEW.entity, NEW.key, NEW.day_count,
          length(substr(NEW.channels, 1, instr(NEW.channels, ',' || NEW.channel || ',')))
            - length(replace(substr(NEW.channels, 1, instr(NEW.channels, ',' || NEW.channel || ',')), ',', '')),
          NEW.channel, NEW.at);
END;
CREATE TRIGGER contact_taken_again AFTER UPDATE ON contact_keys BEGIN
  INSERT INTO contact_ledger (day, recipient, entity, key, slot, week_slot, channel, at)
  VALUES (NEW.day, NEW.recipient, NEW.entity, NEW.key, NEW.day_count,
          length(substr(NEW.channels, 1, instr(NEW.channels, ',' || NEW.channel || ',')))
            - length(replace(substr(NEW.channels, 1, instr(NEW.channels, ',' || NEW.channel || ',')), ',', '')),
          NEW.channel, NEW.at);
END;
