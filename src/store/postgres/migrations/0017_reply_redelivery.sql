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
