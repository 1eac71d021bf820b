-- Campaign rules (issue 14): send windows and `#! sendAt:`, the cost of a file, the contact
-- limit, and users' replies that opt out.

-- `#! sendAt:` (not before), and when a `scheduled` file starts (the window's next opening).
ALTER TABLE files ADD COLUMN send_at TEXT;
ALTER TABLE files ADD COLUMN scheduled_until TEXT;
-- Segments by country and what transliteration saves (JSON), from the read.
ALTER TABLE files ADD COLUMN cost TEXT;
-- The scheduled files coming due: acquireFile asks for those whose time has come.
CREATE INDEX files_scheduled ON files (scheduled_until) WHERE state = 'scheduled';

-- contactLimit: a recipient contacted by an account on a local day takes one of its perDay
-- slots; the primary key is what makes two workers unable to take the same slot. The
-- recipient holding it (its row id) may take it again (a chunk stopped and sent later).
CREATE TABLE contacts (
  account   TEXT NOT NULL,
  day       TEXT NOT NULL,
  number    TEXT NOT NULL,
  slot      INTEGER NOT NULL,
  recipient INTEGER NOT NULL,
  PRIMARY KEY (account, day, number, slot)
) WITHOUT ROWID;
CREATE INDEX contacts_holder ON contacts (recipient);

-- Users' replies (SMPP deliver_sm), every one kept; those whose text is an opt-out keyword
-- put the sender on opt_outs, which every file's chunks not yet sent are checked against.
CREATE TABLE replies (
  id          INTEGER PRIMARY KEY,
  received_at TEXT NOT NULL,
  from_number TEXT NOT NULL,
  to_number   TEXT NOT NULL,
  text        TEXT NOT NULL,
  opt_out     INTEGER NOT NULL,
  -- the service's id of the reply when it gives one: a redelivered reply is kept once
  message_id  TEXT UNIQUE
);
CREATE INDEX replies_received ON replies (received_at);
CREATE TABLE opt_outs (
  number TEXT PRIMARY KEY,
  at     TEXT NOT NULL,
  reply  INTEGER
) WITHOUT ROWID;
