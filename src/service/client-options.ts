// ServiceClient's options and their defaults (docs/service.md "Use", "Retry schedule", "Token").
import type { BudgetSource, Flow } from './dispatch.ts';
import type { TokenShare } from './token.ts';

export interface RetryOptions {
  /** First backoff delay (default 5 s); doubles each retry. */
  readonly baseMs: number;
  /** Backoff ceiling (default 5 min). */
  readonly maxMs: number;
  /** Tries in all, the first included, for 5xx and requests that never left (default 8). */
  readonly maxAttempts: number;
  /** 429 answers tolerated per part before it fails (default 20); they do not use up maxAttempts. */
  readonly maxRateLimited: number;
  /** Longest Retry-After honoured (default 15 min); longer ones are cut to this. */
  readonly maxRetryAfterMs: number;
}

export interface TokenOptions {
  /** Milliseconds per unit of `expires_in` (default 1000: seconds; docs/service.md "Interpretations"). */
  readonly expiresInUnitMs: number;
  /** Cap on the token lifetime whatever `expires_in` says (default 14400 s: the documented 4 h). */
  readonly maxLifetimeS: number;
  /** Renew this long before expiry (default 60 s; at most half the lifetime). */
  readonly renewBeforeS: number;
}

export interface ServiceClientOptions {
  /** Origin of the service (`https://host[:port]`, an optional path prefix is kept). */
  readonly baseUrl: string;
  readonly username: string;
  readonly password: string;
  /** Receiver URL for status notifications, used exactly as given (its query string carries a token). */
  readonly notifyUrl?: string | undefined;
  readonly notifyContentType?: string | undefined;
  /** Requests in flight at once, for the account as a whole (default 4). */
  readonly concurrency?: number | undefined;
  /** Destinations per second across all requests, retries included; 0 = unlimited (default). */
  readonly ratePerSecond?: number | undefined;
  /** Where the account's budget (concurrency, rate, pace) is kept: the store, shared by every
   * worker on the account (default: this client only). */
  readonly budget?: BudgetSource | undefined;
  /** This worker, as the budget's permits name it (default: the process id). */
  readonly owner?: string | undefined;
  /** A budget write that failed (it is not retried: the permit's lease ends it). */
  readonly onBudgetError?: ((err: unknown, what: string) => void) | undefined;
  /** Pool sockets (default concurrency + 1, so a token request never queues behind sends). */
  readonly connections?: number | undefined;
  readonly connectTimeoutMs?: number | undefined;
  /** Default for both headersTimeoutMs and bodyTimeoutMs (default 30 s). */
  readonly timeoutMs?: number | undefined;
  readonly headersTimeoutMs?: number | undefined;
  readonly bodyTimeoutMs?: number | undefined;
  readonly keepAliveTimeoutMs?: number | undefined;
  readonly retry?: Partial<RetryOptions> | undefined;
  readonly token?: Partial<TokenOptions> | undefined;
  /** Several workers on this account: its token kept in the store for all of them (token.ts). */
  readonly tokenShare?: TokenShare | undefined;
  /** Clock for token expiry (tests move it); sleeps use real timers. */
  readonly now?: (() => number) | undefined;
  /** Source of jitter in [0, 1). */
  readonly random?: (() => number) | undefined;
}

export interface SendOptions {
  readonly signal?: AbortSignal | undefined;
  /** The file the chunk belongs to, and its weight (default: its bulkId, weight 1). */
  readonly flow?: Flow | undefined;
  /** Called when the chunk's turn comes, before its first request; false: do not send. */
  readonly start?: (() => Promise<boolean>) | undefined;
}

/** The retry options, each given one or its default. */
export function retryOptions(given: Partial<RetryOptions> | undefined): RetryOptions {
  return {
    baseMs: given?.baseMs ?? 5_000,
    maxMs: given?.maxMs ?? 300_000,
    maxAttempts: Math.max(1, given?.maxAttempts ?? 8),
    maxRateLimited: given?.maxRateLimited ?? 20,
    maxRetryAfterMs: given?.maxRetryAfterMs ?? 15 * 60_000,
  };
}

/** The token options, each given one or its default. */
export function tokenOptions(given: Partial<TokenOptions> | undefined): TokenOptions {
  return {
    expiresInUnitMs: given?.expiresInUnitMs ?? 1000,
    maxLifetimeS: given?.maxLifetimeS ?? 14_400,
    renewBeforeS: given?.renewBeforeS ?? 60,
  };
}
