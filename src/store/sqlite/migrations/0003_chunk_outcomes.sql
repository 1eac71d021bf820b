-- dropline store, version 3: a valid recipient's outcome follows its chunk.
--
-- A valid recipient whose row says `pending` (without a code) takes its outcome from its chunk's state
-- (pending/inflight → pending, accepted → sent, rejected, failed, in_doubt), and its code,
-- message and transaction number from the chunk: a chunk's result is one chunk row, not a
-- thousand recipient rows rewritten. Rows say otherwise only where they differ from their
-- chunk (the parts of a bisected chunk, in-doubt recipients proven by a report, ...).
-- Rows written by version 2 all carry their own outcome, which still wins.

-- valid recipients whose row carries its own outcome (counts read these and the chunks);
-- `pending` with a code is a row held back on its own (a 403 part beside others)
CREATE INDEX recipients_settled ON recipients (id) WHERE chunk_seq IS NOT NULL AND (outcome <> 'pending' OR code IS NOT NULL);
-- recipients with a delivery report (delivery counts read these, not every row)
CREATE INDEX recipients_reported ON recipients (id) WHERE status <> 'pending';
