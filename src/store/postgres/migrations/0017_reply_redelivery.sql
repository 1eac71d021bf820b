-- Replies delivered again without the SMSC's message id (docs/opt-outs.md "A reply delivered
-- again"): the same text from the same number to the same short code within a minute is one
-- reply. fingerprint: the digest of the three (src/store/reply-redelivery.ts); cell_a, cell_b:
-- the reception's minute on two grids half a minute apart. NULL for a reply with a message id
-- (message_id UNIQUE decides) and for replies kept before this version.
ALTER TABLE replies ADD COLUMN fingerprint text;
ALTER TABLE replies ADD COLUMN cell_a bigint;
ALTER TABLE replies ADD COLUMN cell_b bigint;
CREATE UNIQUE INDEX replies_redelivery_a ON replies (fingerprint, cell_a) WHERE fingerprint IS NOT NULL;
CREATE UNIQUE INDEX replies_redelivery_b ON replies (fingerprint, cell_b) WHERE fingerprint IS NOT NULL;

-- Answers owed to replies (docs/opt-outs.md "Answers"): the help text or confirmation a reply
-- is owed, written in the transaction that keeps the reply, so a crash before it is sent does
-- not lose it. state: owed (to send) → sending (claimed by one process: the UPDATE decides) →
-- sent | failed (not sent again: it may have been taken) | skipped (the number's confirmation
-- of the day was sent already, or owed for more than a day); back to owed after a refusal that
-- took nothing (attempts counts the claims). day: the confirmation day it took.
CREATE TABLE reply_answers (
  reply        bigint PRIMARY KEY,
  number       text NOT NULL,
  short_code   text NOT NULL,
  text         text NOT NULL,
  what         text NOT NULL,
  confirmation boolean NOT NULL,
  state        text NOT NULL,
  attempts     integer NOT NULL DEFAULT 0,
  day          date,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  detail       text
);
CREATE INDEX reply_answers_owed ON reply_answers (reply) WHERE state = 'owed';
