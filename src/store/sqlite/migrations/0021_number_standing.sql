-- Keywords and a number's standing (issue 35; docs/opt-outs.md "A number's standing"): what a
-- reply asked, every change to a number's standing with who, what and when, and the
-- confirmation texts sent (at most one a number a local day).

-- What the reply asked: 'opt_out', 'opt_in', 'help', 'review' (looks like an opt-out, is no
-- keyword: flagged for a person), NULL (nothing); and the keyword matched, normalised.
ALTER TABLE replies ADD COLUMN intent TEXT;
ALTER TABLE replies ADD COLUMN keyword TEXT;
UPDATE replies SET intent = 'opt_out' WHERE opt_out = 1;
CREATE INDEX replies_review ON replies (id) WHERE intent = 'review';

-- A number's history: change 'opted_out' | 'opted_in' | 'kept_by_list' (an opt-in a
-- configured list overrides: detail names the lists), source 'reply' | 'list' | 'operator',
-- the reply that made it and its keyword. Kept whatever retentionDays says: it is the proof.
CREATE TABLE standing_changes (
  id      INTEGER PRIMARY KEY,
  number  TEXT NOT NULL,
  at      TEXT NOT NULL,
  change  TEXT NOT NULL,
  source  TEXT NOT NULL,
  reply   INTEGER,
  keyword TEXT,
  detail  TEXT
);
CREATE INDEX standing_changes_number ON standing_changes (number, id);
-- The opt-outs made before this version get the row they would have had.
INSERT INTO standing_changes (number, at, change, source, reply)
  SELECT number, at, 'opted_out', 'reply', reply FROM opt_outs ORDER BY at, number;

-- A confirmation text sent to a number on a local day: the primary key lets one through.
CREATE TABLE reply_confirmations (
  number TEXT NOT NULL,
  day    TEXT NOT NULL,
  PRIMARY KEY (number, day)
) WITHOUT ROWID;
CREATE INDEX reply_confirmations_day ON reply_confirmations (day);
