// The SQLite store's accounts area: settings, the shared service token, send budgets and permits
// (src/service/budget.ts decides; this runs the reads and writes under one write lock).

import type { SQLOutputValue } from 'node:sqlite';
import {
  type BudgetView,
  budgetView,
  decidePermit,
  type PermitAnswer,
  type PermitRequest,
  slowedDown,
} from '../../service/budget.ts';
import { budgetColumns, num, str, toBudget, tokenColumns, toSharedToken } from '../mapping.ts';
import { type BudgetAccount, type SharedToken, WORKER_SILENT_MS } from '../store.ts';
import { changes, type SqliteDb } from './connection.ts';
import { UPDATE_BUDGET } from './sql.ts';

export async function keepSetting(db: SqliteDb, key: string, value: string): Promise<string> {
  // Read first: a store that is only read (status on a read-only file) writes nothing.
  const read = () => db.stmt('SELECT value FROM settings WHERE key = ?').get(key);
  const kept = read();
  if (kept) return String(kept.value);
  db.stmt('INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)').run(key, value);
  return String(read()!.value);
}

export async function sharedToken(db: SqliteDb, key: string): Promise<SharedToken | null> {
  const r = db
    .stmt(
      `SELECT access_token, refresh_token, renew_at, generation FROM service_tokens
     WHERE account_key = ? AND generation > 0`,
    )
    .get(key);
  return r ? toSharedToken(r) : null;
}

export async function claimTokenRenewal(
  db: SqliteDb,
  key: string,
  owner: string,
  seen: number,
  ms: number,
): Promise<boolean> {
  const now = db.now();
  const until = new Date(Date.parse(now) + ms).toISOString();
  return db.tx(() => {
    db.stmt('INSERT OR IGNORE INTO service_tokens (account_key) VALUES (?)').run(key);
    const r = db
      .stmt(
        `UPDATE service_tokens SET renewing_owner = :owner, renewing_until = :until
       WHERE account_key = :key AND generation = :seen
         AND (renewing_owner IS NULL OR renewing_until <= :now OR renewing_owner = :owner)`,
      )
      .run({ key, owner, until, seen, now });
    return changes(r) === 1;
  });
}

export async function storeToken(
  db: SqliteDb,
  key: string,
  owner: string,
  token: { accessToken: string; refreshToken: string | null; renewAt: string },
): Promise<SharedToken | null> {
  const [r] = db
    .stmt(
      `UPDATE service_tokens SET access_token = :access, refresh_token = :refresh, renew_at = :renew_at,
       generation = generation + 1, renewing_owner = NULL, renewing_until = NULL
     WHERE account_key = :key AND renewing_owner = :owner
     RETURNING access_token, refresh_token, renew_at, generation`,
    )
    .all(tokenColumns(key, owner, token));
  return r ? toSharedToken(r) : null;
}

export async function releaseTokenRenewal(db: SqliteDb, key: string, owner: string): Promise<void> {
  db.stmt(
    'UPDATE service_tokens SET renewing_owner = NULL, renewing_until = NULL WHERE account_key = ? AND renewing_owner = ?',
  ).run(key, owner);
}

/** The account's budget row (made when missing), inside a write transaction. */
function budgetRow(db: SqliteDb, account: BudgetAccount): Record<string, SQLOutputValue> {
  db.stmt('INSERT OR IGNORE INTO send_budgets (account_key, account) VALUES (?, ?)').run(
    account.key,
    account.name,
  );
  return db.stmt('SELECT * FROM send_budgets WHERE account_key = ?').get(account.key)!;
}

export async function takeSendPermit(
  db: SqliteDb,
  account: BudgetAccount,
  req: PermitRequest,
): Promise<PermitAnswer> {
  return db.tx(() => {
    // Read once the write lock is held: a decision is never dated before its wait.
    const now = Date.parse(db.now());
    const key = account.key;
    const row = budgetRow(db, account);
    // Expired, or held by a worker silent past WORKER_SILENT_MS (killed): they no longer count.
    db.stmt(
      `DELETE FROM send_permits WHERE account_key = ? AND (lease_until <= ? OR owner IN
         (SELECT worker_id FROM workers WHERE heartbeat_at < ?))`,
    ).run(key, now, new Date(now - WORKER_SILENT_MS).toISOString());
    const live = num(db.stmt('SELECT count(*) AS n FROM send_permits WHERE account_key = ?').get(key)!.n);
    const { state, answer } = decidePermit(toBudget(row), now, live, req);
    if (state) db.stmt(UPDATE_BUDGET).run({ key, ...budgetColumns(state) });
    if (answer.granted)
      db.stmt(
        'INSERT INTO send_permits (permit_id, account_key, owner, lease_until) VALUES (?, ?, ?, ?)',
      ).run(req.permitId, key, req.owner, now + answer.waitMs + req.leaseMs);
    return answer;
  });
}

export async function releaseSendPermit(db: SqliteDb, accountKey: string, permitId: string): Promise<void> {
  db.stmt('DELETE FROM send_permits WHERE permit_id = ? AND account_key = ?').run(permitId, accountKey);
}

export async function slowSends(
  db: SqliteDb,
  account: BudgetAccount,
  trouble: { reason: string; retryAfterMs?: number | undefined },
): Promise<void> {
  db.tx(() => {
    const now = Date.parse(db.now());
    const row = budgetRow(db, account);
    db.stmt(UPDATE_BUDGET).run({
      key: account.key,
      ...budgetColumns(slowedDown(toBudget(row), now, trouble)),
    });
  });
}

export async function sendBudgets(db: SqliteDb): Promise<BudgetView[]> {
  const now = Date.parse(db.now());
  return db
    .stmt(
      `SELECT b.*, (SELECT count(*) FROM send_permits p WHERE p.account_key = b.account_key
                   AND p.lease_until > ? AND p.owner NOT IN
                     (SELECT worker_id FROM workers WHERE heartbeat_at < ?)) AS live
     FROM send_budgets b ORDER BY b.account`,
    )
    .all(now, new Date(now - WORKER_SILENT_MS).toISOString())
    .map((r) => budgetView(str(r.account), toBudget(r), now, num(r.live)));
}
