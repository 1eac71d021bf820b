-- The contacts a chunk took are recorded once for the chunk, not once per recipient (issue 35,
-- docs/campaign-rules.md "Size and speed"): a chunk begins only when every recipient still
-- pending took its contact (or held one of that day already), so the chunk's record and its
-- recipients are the contacts. contact_keys stays the rule (one row a key, one upsert a
-- recipient); contact_ledger stays, no longer written, for the contacts recorded before this
-- version (read by `dropline compliance` beside the records until its days are pruned).

-- A chunk's contacts of a local day: its rows (chunk `seq` within ids lo..hi) but `excluded`
-- (the rows that were not pending when it began, or held a contact of the day already; NULL:
-- none), so that outcomes changed later never change who was a contact. `contacts`: how
-- many. A chunk begun again the same day with rows it left out before has a second record.
-- By (day, hi): a chunk's own records, and the ledger in the recipients' order (chunks' id
-- ranges never overlap).
CREATE TABLE contact_chunks (
  id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  day      date NOT NULL,
  hi       bigint NOT NULL,
  lo       bigint NOT NULL,
  seq      integer NOT NULL,
  entity   text NOT NULL,
  channel  text NOT NULL,
  at       timestamptz NOT NULL,
  contacts integer NOT NULL,
  excluded bigint[]
);
CREATE INDEX contact_chunks_day ON contact_chunks (day, hi);
-- By chunk alone: a file's records, kept a row a contact in contact_ledger as retention
-- deletes the file's recipients (docs/campaign-rules.md "Retention of the ledger").
CREATE INDEX contact_chunks_hi ON contact_chunks (hi);

-- The slots that are not the first: a contact's slot is 1 and its week slot 1 unless a row
-- here says otherwise (a key's second contact of the day, a second channel of the week),
-- written by the statement that takes the contacts, in the order they were really taken.
CREATE TABLE contact_slots (
  day       date NOT NULL,
  recipient bigint NOT NULL,
  slot      smallint NOT NULL,
  week_slot smallint NOT NULL,
  PRIMARY KEY (day, recipient)
);
