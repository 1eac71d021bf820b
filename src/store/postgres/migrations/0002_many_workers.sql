-- Several workers on one database. Each service account's sending budget, shared by every worker (src/service/budget.ts has the
-- rules). Times are ms since the epoch on the database's clock.
--   send_budgets   one row per account (account_key: a hash of its URL and user; account: its
--                  configured name): the rate's virtual clock (next_at), the pace since the last
--                  429/5xx (pace, paced_at) and a 429's hold (blocked_until)
--   send_permits   one row per request in flight, whichever worker sent it; a dead worker's
--                  rows stop counting at lease_until
CREATE TABLE send_budgets (
  account_key   text PRIMARY KEY,
  account       text NOT NULL,
  next_at       double precision NOT NULL DEFAULT 0,
  pace          double precision NOT NULL DEFAULT 1,
  paced_at      double precision NOT NULL DEFAULT 0,
  blocked_until double precision NOT NULL DEFAULT 0,
  reason        text
);
CREATE TABLE send_permits (
  permit_id   text PRIMARY KEY,
  account_key text NOT NULL,
  owner       text NOT NULL,
  lease_until double precision NOT NULL
);
CREATE INDEX send_permits_account ON send_permits (account_key, lease_until);

-- Every `dropline run` says it is alive every few seconds; `dropline
-- workers` and /api/workers list them, with the files each holds.
--   worker_id     the lease owner it writes (host:pid:random)
--   heartbeat_at  its last heartbeat (the store's clock); stopped_at when it stopped cleanly
CREATE TABLE workers (
  worker_id    text PRIMARY KEY,
  host         text NOT NULL,
  pid          integer NOT NULL,
  version      text NOT NULL,
  started_at   timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL,
  stopped_at   timestamptz
);

-- The worker whose expired lease the file's last acquisition took (null: it was free).
ALTER TABLE files ADD COLUMN taken_over_from text;
