-- A key's row is found by its key first, then its entity (docs/campaign-rules.md "Size and
-- speed"): with the entity first, each comparison of the take's index look-ups began with an
-- entity that is the same on nearly every row. A million keys upserted in statements of 1000
-- (the take's shape): 5.5–6.1 s with (entity, key), 4.8 s with (key, entity). The rule's
-- look-ups name both columns, and one take holds one entity, so its keys still lock in the
-- statement's key order. The index is built again under an exclusive lock: chunk starts under
-- the limit wait for it while this migration runs (0.5–0.8 s for a million keys here).
ALTER TABLE contact_keys DROP CONSTRAINT contact_keys_pkey, ADD PRIMARY KEY (key, entity);
