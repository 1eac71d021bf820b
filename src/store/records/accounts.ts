// What the store keeps of a service account for every worker: its token and its send budget
// (docs/service.md "Token").

/** An account as its send budget is kept: `key` the account as the service knows it, `name` as configured. */
export interface BudgetAccount {
  readonly key: string;
  readonly name: string;
}

/**
 * A service account's token as the store keeps it for every worker (the service keeps one
 * active token per account: a worker that logged in on its own would expire the others').
 */
export interface SharedToken {
  readonly accessToken: string;
  readonly refreshToken: string | null;
  /** ISO-8601: when the token is to be renewed, ahead of its lapse (the renewing worker's clock). */
  readonly renewAt: string;
  /** 1 for the first token stored, then one more for each renewal. */
  readonly generation: number;
}
