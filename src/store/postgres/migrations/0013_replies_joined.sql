-- Replies joined to their campaign (issue 35, docs/replies.md).

-- The short code a file is sent from (its source's shortCode, else its account's); NULL: none,
-- and its replies are never joined to it.
ALTER TABLE files ADD COLUMN short_code text;

-- Who was sent what from a short code, and when: one row per recipient whose chunk the
-- service accepted, written with the chunk's result. A reply from `number` to `short_code`
-- finds the latest one within the window by this key alone (a lookup, not a scan of
-- recipients, which have no index by number).
CREATE TABLE reply_targets (
  short_code text NOT NULL,
  number     text NOT NULL,
  sent_at    timestamptz NOT NULL,
  recipient  bigint NOT NULL,
  PRIMARY KEY (short_code, number, sent_at, recipient)
);
-- No other index: retention finds a pruned recipient's targets by its short code and number
-- (the primary key), so a send keeps one index, not two.

-- A reply joined: the recipient row it answers and that row's file.
ALTER TABLE replies ADD COLUMN recipient bigint;
ALTER TABLE replies ADD COLUMN file_id text;
CREATE INDEX replies_file ON replies (file_id, id) WHERE file_id IS NOT NULL;
