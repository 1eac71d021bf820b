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
} from '../../core/budget.ts';
import { budgetColumns, num, str, toBudget, tokenColumns, toSharedToken } from '../mapping.ts';
import { type BudgetAccount, type SharedToken, WORKER_SILENT_MS } from '../store.ts';
import { changes, type SqliteDb } from './connection.ts';
import * as S from './sql.ts';

export async function keepSetting(db: SqliteDb, key: string, value: string): Promise<string> {
  // Read first: a store that is only read (status on a read-only file) writes nothing.
  const read = () => db.stmt(S.SETTING).get(key);
  const kept = read();
  if (kept) return String(kept.value);
  db.stmt(S.KEEP_SETTING).run(key, value);
  return String(read()!.value);
}

export async function settingsUnder(db: SqliteDb, prefix: string): Promise<{ key: string; value: string }[]> {
  return db
    .stmt(S.SETTINGS_UNDER)
    .all(prefix)
    .map((r) => ({ key: String(r.key), value: String(r.value) }));
}

export async function sharedToken(db: SqliteDb, key: string): Promise<SharedToken | null> {
  const r = db.stmt(S.SHARED_TOKEN).get(key);
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
    db.stmt(S.NEW_TOKEN_ROW).run(key);
    const r = db.stmt(S.CLAIM_TOKEN_RENEWAL).run({ key, owner, until, seen, now });
    return changes(r) === 1;
  });
}

export async function storeToken(
  db: SqliteDb,
  key: string,
  owner: string,
  token: { accessToken: string; refreshToken: string | null; renewAt: string },
): Promise<SharedToken | null> {
  const [r] = db.stmt(S.STORE_TOKEN).all(tokenColumns(key, owner, token));
  return r ? toSharedToken(r) : null;
}

export async function releaseTokenRenewal(db: SqliteDb, key: string, owner: string): Promise<void> {
  db.stmt(S.RELEASE_TOKEN_RENEWAL).run(key, owner);
}

/** The account's budget row (made when missing), inside a write transaction. */
function budgetRow(db: SqliteDb, account: BudgetAccount): Record<string, SQLOutputValue> {
  db.stmt(S.NEW_BUDGET).run(account.key, account.name);
  return db.stmt(S.READ_BUDGET).get(account.key)!;
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
    db.stmt(S.DROP_DEAD_PERMITS).run(key, now, new Date(now - WORKER_SILENT_MS).toISOString());
    const live = num(db.stmt(S.LIVE_PERMITS).get(key)!.n);
    const { state, answer } = decidePermit(toBudget(row), now, live, req);
    if (state) db.stmt(S.UPDATE_BUDGET).run({ key, ...budgetColumns(state) });
    if (answer.granted)
      db.stmt(S.GRANT_PERMIT).run(req.permitId, key, req.owner, now + answer.waitMs + req.leaseMs);
    return answer;
  });
}

export async function releaseSendPermit(db: SqliteDb, accountKey: string, permitId: string): Promise<void> {
  db.stmt(S.RELEASE_PERMIT).run(permitId, accountKey);
}

export async function slowSends(
  db: SqliteDb,
  account: BudgetAccount,
  trouble: { reason: string; retryAfterMs?: number | undefined },
): Promise<void> {
  db.tx(() => {
    const now = Date.parse(db.now());
    const row = budgetRow(db, account);
    db.stmt(S.UPDATE_BUDGET).run({
      key: account.key,
      ...budgetColumns(slowedDown(toBudget(row), now, trouble)),
    });
  });
}

export async function sendBudgets(db: SqliteDb): Promise<BudgetView[]> {
  const now = Date.parse(db.now());
  return db
    .stmt(S.SEND_BUDGETS)
    .all(now, new Date(now - WORKER_SILENT_MS).toISOString())
    .map((r) => budgetView(str(r.account), toBudget(r), now, num(r.live)));
}
