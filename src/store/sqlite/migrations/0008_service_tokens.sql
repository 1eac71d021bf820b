-- dropline store, version 8: the service accounts' tokens, shared by every process on the store.
--
-- The service keeps one active token per account and a new one expires the previous, so the
-- processes sending with one account keep one token here: one of them renews it under a
-- lease (renewing_owner, renewing_until), the others adopt it (generation).
--   account_key     the account as the service knows it (a hash of its URL, user and password)
--   generation      0 before the first token; +1 at each token stored
CREATE TABLE service_tokens (
  account_key    TEXT PRIMARY KEY,
  access_token   TEXT,
  refresh_token  TEXT,
  renew_at     TEXT,
  generation     INTEGER NOT NULL DEFAULT 0,
  renewing_owner TEXT,
  renewing_until TEXT
);
