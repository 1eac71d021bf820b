-- dropline store, version 9: several workers on one store. Each service account's sending
-- budget, shared by every process on the store (src/service/budget.ts has the rules); each
-- worker's heartbeat; and who a file was taken over from.
--   send_budgets   one row per account: the rate's virtual clock and the pace after trouble
--     account_key    the account as the service knows it (a hash of its URL and user)
--     account        its name in the configuration (what status shows)
--     next_at        ms since the epoch: when the next destination may go
--     pace           0.1..1: the share of the rate and concurrency in use since the last 429/5xx
--     paced_at       ms: when the pace was last lowered (it recovers from there)
--     blocked_until  ms: no request before this (a 429's Retry-After)
--   send_permits   one row per request in flight, whichever process sent it; a dead
--                  process's rows stop counting at lease_until (ms)
CREATE TABLE send_budgets (
  account_key   TEXT PRIMARY KEY,
  account       TEXT NOT NULL,
  next_at       REAL NOT NULL DEFAULT 0,
  pace          REAL NOT NULL DEFAULT 1,
  paced_at      REAL NOT NULL DEFAULT 0,
  blocked_until REAL NOT NULL DEFAULT 0,
  reason        TEXT
);
CREATE TABLE send_permits (
  permit_id   TEXT PRIMARY KEY,
  account_key TEXT NOT NULL,
  owner       TEXT NOT NULL,
  lease_until REAL NOT NULL
);
CREATE INDEX send_permits_account ON send_permits (account_key, lease_until);

-- Every `dropline run` says it is alive every few seconds; `dropline
-- workers` and /api/workers list them, with the files each holds.
--   worker_id     the lease owner it writes (host:pid:random)
--   heartbeat_at  its last heartbeat (the store's clock); stopped_at when it stopped cleanly
CREATE TABLE workers (
  worker_id    TEXT PRIMARY KEY,
  host         TEXT NOT NULL,
  pid          INTEGER NOT NULL,
  version      TEXT NOT NULL,
  started_at   TEXT NOT NULL,
  heartbeat_at TEXT NOT NULL,
  stopped_at   TEXT
);

-- The worker whose expired lease the file's last acquisition took (null: it was free).
ALTER TABLE files ADD COLUMN taken_over_from TEXT;
