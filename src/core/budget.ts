// An account's sending budget: how many requests may be in flight (`concurrency`) and how many
// destinations may go per second (`ratePerSecond`), for the account as a whole, however many
// workers send with it. The rules here are pure; the state lives in the store (one row per
// account, one row per request in flight), so every worker draws on the same budget.
//
// - Rate: virtual scheduling (GCRA's "theoretical arrival time"): a request of n destinations
//   may start at max(now, nextAt) and moves nextAt on by n / rate. The reservation is made
//   when the request is granted, so a worker that waits is never overtaken by one that asked
//   later, and nothing bursts after an idle spell beyond one request.
// - Concurrency: a request holds a permit (a row with a lease) while it is in flight; a worker
//   that dies leaves its permits to expire with their lease.
// - Pacing: a 429 or a 5xx halves the account's pace (at most once a second, never below
//   PACE_FLOOR); the pace then recovers linearly to 1 over PACE_RECOVERY_MS. The pace scales
//   both the rate and the concurrency. A 429's Retry-After holds every request of the account.

/** The account's budget as the store keeps it (times in ms since the epoch). */
export interface BudgetState {
  /** When the next destination may go (virtual scheduling). */
  readonly nextAt: number;
  /** The share of the configured rate and concurrency in use, after the last slow-down. */
  readonly pace: number;
  /** When the pace was last lowered (it recovers from there). */
  readonly pacedAt: number;
  /** No request of the account starts before this (a 429's Retry-After). */
  readonly blockedUntil: number;
  /** Why the account was last slowed down (an HTTP status and reason). */
  readonly reason: string | null;
}

export const NEW_BUDGET: BudgetState = { nextAt: 0, pace: 1, pacedAt: 0, blockedUntil: 0, reason: null };

/** The lowest pace: a tenth of the configured rate and concurrency (at least one request). */
export const PACE_FLOOR = 0.1;
/** From a pace of 0 back to 1 takes this long without trouble (from 0.5: half of it). */
export const PACE_RECOVERY_MS = 30_000;
/** Trouble within this long of the last slow-down does not slow down again (one burst, one step). */
export const SLOW_DOWN_GAP_MS = 1000;
/** A worker told the account has no free permit asks again after about this long. */
export const PERMIT_RETRY_MS = 25;

/** What a request asks of the account's budget. */
export interface PermitRequest {
  /** A permit id, unique while it lives (the request's row). */
  readonly permitId: string;
  readonly owner: string;
  readonly destinations: number;
  /** 0: no limit. */
  readonly ratePerSecond: number;
  readonly concurrency: number;
  /** The permit expires this long after the request may start (a dead worker's permits). */
  readonly leaseMs: number;
}

export type PermitAnswer =
  | { readonly granted: true; readonly waitMs: number }
  | { readonly granted: false; readonly retryInMs: number };

/** The pace at `now`: recovered linearly since the last slow-down. */
export function paceAt(state: BudgetState, now: number): number {
  if (state.pace >= 1) return 1;
  return Math.min(1, state.pace + Math.max(0, now - state.pacedAt) / PACE_RECOVERY_MS);
}

/** Requests in flight allowed at this pace (at least one). */
export function capacityAt(concurrency: number, pace: number): number {
  return Math.max(1, Math.floor(concurrency * pace));
}

/**
 * The decision on one request, given the permits of the account in flight now: the new state
 * to store and the answer. `state` is null when the answer writes nothing.
 */
export function decidePermit(
  state: BudgetState,
  now: number,
  live: number,
  req: PermitRequest,
): { state: BudgetState | null; answer: PermitAnswer } {
  const pace = paceAt(state, now);
  if (live >= capacityAt(req.concurrency, pace))
    return { state: null, answer: { granted: false, retryInMs: PERMIT_RETRY_MS } };
  const start = Math.max(now, state.nextAt, state.blockedUntil);
  const nextAt =
    req.ratePerSecond > 0 ? start + (req.destinations * 1000) / (req.ratePerSecond * pace) : start;
  return { state: { ...state, nextAt }, answer: { granted: true, waitMs: start - now } };
}

/** The state after trouble: the pace halved (once per burst), and held for a Retry-After. */
export function slowedDown(
  state: BudgetState,
  now: number,
  trouble: { readonly reason: string; readonly retryAfterMs?: number | undefined },
): BudgetState {
  const recent = now - state.pacedAt < SLOW_DOWN_GAP_MS;
  const pace = recent ? state.pace : Math.max(PACE_FLOOR, paceAt(state, now) / 2);
  return {
    ...state,
    pace,
    pacedAt: recent ? state.pacedAt : now,
    blockedUntil: Math.max(state.blockedUntil, now + (trouble.retryAfterMs ?? 0)),
    reason: trouble.reason,
  };
}

/** An account's budget as `dropline status` and `/api/workers` show it. */
export interface BudgetView {
  readonly account: string;
  /** 0..1: 1 is full speed. */
  readonly pace: number;
  readonly reason: string | null;
  /** ISO-8601, when the pace was last lowered; null when never. */
  readonly slowedAt: string | null;
  /** ISO-8601, while a Retry-After holds the account. */
  readonly blockedUntil: string | null;
  /** Requests in flight now, all workers. */
  readonly inFlight: number;
}

export function budgetView(account: string, state: BudgetState, now: number, inFlight: number): BudgetView {
  return {
    account,
    pace: Math.round(paceAt(state, now) * 100) / 100,
    reason: state.reason,
    slowedAt: state.pacedAt > 0 ? new Date(state.pacedAt).toISOString() : null,
    blockedUntil: state.blockedUntil > now ? new Date(state.blockedUntil).toISOString() : null,
    inFlight,
  };
}
