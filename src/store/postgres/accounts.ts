// The PostgreSQL store's accounts area: settings, the shared service token, send budgets and
// permits (src/service/budget.ts decides; the budget row's lock and the database's clock).

import type pg from 'pg';
import {
  type BudgetView,
  budgetView,
  decidePermit,
  type PermitAnswer,
  type PermitRequest,
  slowedDown,
} from '../../core/budget.ts';
import { budgetColumns, num, type Row, str, toBudget, tokenColumns, toSharedToken } from '../mapping.ts';
import type { BudgetAccount, SharedToken } from '../store.ts';
import type { PgDb } from './connection.ts';
import * as S from './sql.ts';

export async function keepSetting(db: PgDb, key: string, value: string): Promise<string> {
  const read = async () => (await db.rows('reading a setting', S.SETTING, { key }))[0];
  // Read first: once kept, a setting costs no write.
  const kept = await read();
  if (kept) return String(kept.value);
  // Then a separate SELECT: its snapshot sees the row a concurrent first writer committed
  // (the INSERT … ON CONFLICT DO NOTHING waited for it), which one statement's would not.
  await db.count('keeping a setting', S.KEEP_SETTING, { key, value });
  return String((await read())!.value);
}

export async function settingsUnder(db: PgDb, prefix: string): Promise<{ key: string; value: string }[]> {
  const rows = await db.rows('reading settings', S.SETTINGS_UNDER, { prefix });
  return rows.map((r) => ({ key: String(r.key), value: String(r.value) }));
}

export async function sharedToken(db: PgDb, key: string): Promise<SharedToken | null> {
  const [r] = await db.rows('reading the shared service token', S.SHARED_TOKEN, { key });
  return r ? toSharedToken(r) : null;
}

export async function claimTokenRenewal(
  db: PgDb,
  key: string,
  owner: string,
  seen: number,
  ms: number,
): Promise<boolean> {
  const what = 'claiming the service token renewal';
  const params = { key, owner, seen, ms, now: db.now() };
  // No row yet (seen 0): the INSERT makes it claimed, or takes it over when it exists.
  if (seen === 0 && (await db.rows(what, S.CLAIM_TOKEN_RENEWAL, params)).length === 1) return true;
  return (await db.count(what, S.CLAIM_TOKEN_RENEWAL_EXISTING, params)) === 1;
}

export async function storeToken(
  db: PgDb,
  key: string,
  owner: string,
  token: { accessToken: string; refreshToken: string | null; renewAt: string },
): Promise<SharedToken | null> {
  const [r] = await db.rows('storing the service token', S.STORE_TOKEN, tokenColumns(key, owner, token));
  return r ? toSharedToken(r) : null;
}

export async function releaseTokenRenewal(db: PgDb, key: string, owner: string): Promise<void> {
  await db.count('releasing the service token renewal', S.RELEASE_TOKEN_RENEWAL, { key, owner });
}

/** The account's budget row locked in `c` (made when missing), with the clock and the live permits. */
async function lockBudget(db: PgDb, c: pg.PoolClient, what: string, account: BudgetAccount): Promise<Row> {
  const key = { key: account.key };
  if ((await db.count(what, S.LOCK_BUDGET, key, c)) === 0) {
    await db.count(what, S.NEW_BUDGET, { ...key, account: account.name }, c);
    await db.count(what, S.LOCK_BUDGET, key, c);
  }
  const [r] = await db.rows(what, S.READ_BUDGET, { ...key, now: db.now() }, c);
  return r!;
}

export async function takeSendPermit(
  db: PgDb,
  account: BudgetAccount,
  req: PermitRequest,
): Promise<PermitAnswer> {
  const what = 'taking a send permit';
  return db.tx(what, async (c) => {
    const r = await lockBudget(db, c, what, account);
    const now = num(r.now_ms);
    const { state, answer } = decidePermit(toBudget(r), now, num(r.live), req);
    if (answer.granted && state)
      await db.count(
        what,
        S.GRANT_PERMIT,
        {
          key: account.key,
          now_ms: now,
          permit_id: req.permitId,
          owner: req.owner,
          lease_until: now + answer.waitMs + req.leaseMs,
          next_at: state.nextAt,
        },
        c,
      );
    return answer;
  });
}

export async function releaseSendPermit(db: PgDb, accountKey: string, permitId: string): Promise<void> {
  await db.count('releasing a send permit', S.RELEASE_PERMIT, { key: accountKey, permit_id: permitId });
}

export async function slowSends(
  db: PgDb,
  account: BudgetAccount,
  trouble: { reason: string; retryAfterMs?: number | undefined },
): Promise<void> {
  const what = 'slowing the account down';
  await db.tx(what, async (c) => {
    const r = await lockBudget(db, c, what, account);
    const state = slowedDown(toBudget(r), num(r.now_ms), trouble);
    await db.count(what, S.UPDATE_BUDGET, { key: account.key, ...budgetColumns(state) }, c);
  });
}

export async function sendBudgets(db: PgDb): Promise<BudgetView[]> {
  const rows = await db.rows('reading the send budgets', S.SEND_BUDGETS, { now: db.now() });
  return rows.map((r) => budgetView(str(r.account), toBudget(r), num(r.now_ms), num(r.live)));
}
