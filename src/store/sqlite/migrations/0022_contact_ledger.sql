-- One contact ledger per entity (issue 35, docs/campaign-rules.md "Contact limit"): the
-- per-account slots of `contacts` become slots of an entity (a company: every account and
-- channel it sends with), keyed by the normalised number or address, and a second set of
-- slots keeps the channels a key was contacted by in a week (Monday to Sunday).

-- A contact: one of the perDay slots of (entity, local day, key); in that order, so that
-- `dropline compliance` reads an entity's days in order. The primary key is what makes two
-- workers unable to take the same slot. The recipient (its row id,
-- whose upper bits are its file's number) may take its slot again (a chunk stopped and sent
-- later), found by its key: no index on `recipient`, the ledger being the largest table the
-- limit adds. `at`: when the slot was taken on the store's clock (just before its chunk was
-- sent); `channel`: what sent it.
CREATE TABLE contact_ledger (
  entity    TEXT NOT NULL,
  key       TEXT NOT NULL,
  day       TEXT NOT NULL,
  slot      INTEGER NOT NULL,
  channel   TEXT NOT NULL,
  recipient INTEGER NOT NULL,
  at        TEXT NOT NULL,
  PRIMARY KEY (entity, day, key, slot)
) WITHOUT ROWID;

-- channelsPerWeek: a channel takes one of the slots of (entity, key, week) the first time it
-- contacts the key that week; the unique (…, channel) lets its later contacts through
-- without a second slot. `week`: the Monday of the local week.
CREATE TABLE contact_weeks (
  entity    TEXT NOT NULL,
  key       TEXT NOT NULL,
  week      TEXT NOT NULL,
  slot      INTEGER NOT NULL,
  channel   TEXT NOT NULL,
  recipient INTEGER NOT NULL,
  at        TEXT NOT NULL,
  PRIMARY KEY (entity, week, key, slot),
  UNIQUE (entity, week, key, channel)
) WITHOUT ROWID;

-- What `dropline compliance` prints beside a contact and the store alone knows: the file's
-- account, channel and entity and the send window in force when it was sent, and the
-- sha256 of the suppression and consent lists it was checked against at its read (JSON).
CREATE TABLE file_checks (
  file_id TEXT PRIMARY KEY,
  account TEXT,
  channel TEXT,
  entity  TEXT,
  send_window TEXT,
  lists   TEXT
) WITHOUT ROWID;

-- The slots of the per-account limit carried over, under the default entity (a number an
-- account reached today stays reached); their time is unknown: the start of their day.
INSERT OR IGNORE INTO contact_ledger (entity, key, day, slot, channel, recipient, at)
  SELECT 'default', number, day, slot, 'sms', recipient, day || 'T00:00:00.000-05:00' FROM contacts;
DROP TABLE contacts;
