// The account's bearer token (docs/service.md "Tokens"). The service keeps one active
// token per account and a new login expires the previous one, so every send in the process shares
// one token, at most one token request is in flight (single-flight), and a 401 triggers a renewal
// only when it was answered to the token we still hold (a late 401 for an already-replaced token
// must not log in again: that would expire the fresh one). The HTTP call itself is injected: the
// only I/O of this folder lives in client.ts.
import { setTimeout as sleep } from 'node:timers/promises';
import { DroplineError } from '../errors.ts';
import type { Token, TokenGrant } from './wire.ts';

export type TokenAnswer =
  | { readonly kind: 'ok'; readonly token: Token }
  /** 400 or 401: the grant was refused (bad credentials, or a refresh token that is no longer valid). */
  | { readonly kind: 'refused'; readonly status: number; readonly reason: string }
  | { readonly kind: 'forbidden'; readonly reason: string }
  /** The token endpoint stayed unreachable or failing through every retry. */
  | { readonly kind: 'unavailable'; readonly reason: string };

export type TokenRequester = (grant: TokenGrant) => Promise<TokenAnswer>;

/** The token as shared (the store's SharedToken). */
export interface SharedToken {
  readonly accessToken: string;
  readonly refreshToken: string | null;
  /** ISO-8601: when it is to be renewed. */
  readonly renewAt: string;
  readonly generation: number;
}

/**
 * The account's token kept where every worker sending with it finds it (the store): the
 * service keeps one active token per account, so workers that each logged in would expire
 * each other's tokens. One worker renews at a time (a claim the store grants); the others
 * adopt what it stored.
 */
export interface TokenShare {
  read(): Promise<SharedToken | null>;
  /** The right to renew, while the stored generation is still `seen` (0: none). */
  claim(seen: number): Promise<boolean>;
  store(token: {
    accessToken: string;
    refreshToken: string | null;
    renewAt: string;
  }): Promise<SharedToken | null>;
  release(): Promise<void>;
}

export interface TokenManagerOptions {
  readonly request: TokenRequester;
  readonly now: () => number;
  /** Renew this long before the token's expiry (at most half its lifetime). */
  readonly renewBeforeMs: number;
  /** Several workers on one account: the token shared through the store. */
  readonly share?: TokenShare | undefined;
}

/** How often a worker waiting for another's renewal looks again, and how long it waits at most. */
const SHARE_POLL_MS = 100;
const SHARE_WAIT_MS = 60_000;

interface Held {
  readonly token: Token;
  readonly renewAt: number;
  /** The shared generation this token is (0: not shared). */
  readonly generation: number;
  stale: boolean;
}

export class TokenManager {
  readonly #opts: TokenManagerOptions;
  #held: Held | null = null;
  #flight: Promise<string> | null = null;

  constructor(opts: TokenManagerOptions) {
    this.#opts = opts;
  }

  /** A usable access token; logs in or renews when needed, sharing one request among all callers. */
  get(): Promise<string> {
    if (this.#flight) return this.#flight;
    const held = this.#held;
    if (held && !held.stale && this.#opts.now() < held.renewAt)
      return Promise.resolve(held.token.accessToken);
    this.#flight = this.#obtain().finally(() => {
      this.#flight = null;
    });
    return this.#flight;
  }

  /** get() would answer at once with the token held: none is being obtained, and it is not due. */
  fresh(): boolean {
    const held = this.#held;
    return !this.#flight && held !== null && !held.stale && this.#opts.now() < held.renewAt;
  }

  /** The service answered 401 to `accessToken`: renew on the next get(), unless it was already replaced. */
  invalidate(accessToken: string): void {
    if (this.#held && this.#held.token.accessToken === accessToken) this.#held.stale = true;
  }

  /** Forget the token (for example after the account was paused). */
  clear(): void {
    this.#held = null;
  }

  async #obtain(): Promise<string> {
    const share = this.#opts.share;
    if (share) {
      try {
        return await this.#obtainShared(share);
      } catch (err) {
        // The store cannot be reached: this worker logs in alone rather than stop sending.
        if (!(err instanceof ShareFailed)) throw err;
      }
    }
    return this.#keep(await this.#grant(this.#held?.token.refreshToken ?? null), 0);
  }

  async #obtainShared(via: TokenShare): Promise<string> {
    const share = shareOrFail(via);
    const deadline = Date.now() + SHARE_WAIT_MS;
    for (;;) {
      const stored = await share.read();
      // Another worker's token, newer than the one this worker holds and not due: adopted,
      // never a login of its own (that would expire the token every other worker uses).
      if (
        stored &&
        stored.generation !== (this.#held?.generation ?? 0) &&
        this.#opts.now() < Date.parse(stored.renewAt)
      )
        return this.#adopt(stored);
      const seen = stored?.generation ?? 0;
      if (await share.claim(seen)) {
        let token: Token;
        try {
          token = await this.#grant(stored?.refreshToken ?? this.#held?.token.refreshToken ?? null);
        } catch (err) {
          await share.release().catch(() => {});
          throw err;
        }
        const renewAt = this.#renewAt(token);
        // A store that fails now: the token is kept all the same (a second login would expire
        // it), and the claim given back. Held, it would keep every other worker, whose token
        // this renewal expired, waiting for it to lapse (TOKEN_CLAIM_MS) instead of renewing.
        const kept = await share
          .store({
            accessToken: token.accessToken,
            refreshToken: token.refreshToken,
            renewAt: new Date(renewAt).toISOString(),
          })
          .catch(async () => {
            await share.release().catch(() => {});
            return null;
          });
        // Null: the claim lapsed while the service answered; this token is still the newest
        // the service issued, and a newer stored one is adopted after the next 401.
        // Due when the stored token is, to the millisecond: a renewAt of its own read later
        // would keep this worker on the token after another worker renewed it.
        return this.#keep(token, kept?.generation ?? seen, renewAt);
      }
      if (Date.now() >= deadline)
        throw new DroplineError(
          'DROPLINE_ERR_SERVICE_UNAVAILABLE',
          `POST /token: another worker has been renewing the account's token for ${SHARE_WAIT_MS / 1000} s`,
        );
      await sleep(SHARE_POLL_MS);
    }
  }

  /** A token from the service: refreshed when a refresh token is known, else by the credentials. */
  async #grant(refreshToken: string | null): Promise<Token> {
    if (refreshToken) {
      const answer = await this.#opts.request({ grant: 'refresh_token', refreshToken });
      if (answer.kind === 'ok') return answer.token;
      // A refused refresh (revoked by another login, or unknown) falls back to the credentials.
      if (answer.kind !== 'refused') throw toError(answer);
    }
    const answer = await this.#opts.request({ grant: 'password' });
    if (answer.kind === 'ok') return answer.token;
    this.#held = null;
    throw toError(answer);
  }

  #renewAt(token: Token): number {
    const margin = Math.min(this.#opts.renewBeforeMs, token.lifetimeMs / 2);
    return this.#opts.now() + token.lifetimeMs - margin;
  }

  #keep(token: Token, generation: number, renewAt = this.#renewAt(token)): string {
    this.#held = { token, renewAt, generation, stale: false };
    return token.accessToken;
  }

  #adopt(stored: SharedToken): string {
    const renewAt = Date.parse(stored.renewAt);
    const token: Token = {
      accessToken: stored.accessToken,
      refreshToken: stored.refreshToken,
      tokenType: 'bearer',
      lifetimeMs: Math.max(0, renewAt - this.#opts.now()),
    };
    this.#held = { token, renewAt, generation: stored.generation, stale: false };
    return token.accessToken;
  }
}

/** The store behind a TokenShare failed (not the service). */
class ShareFailed extends Error {}

/** The share's calls, their failures as ShareFailed. */
function shareOrFail(share: TokenShare): TokenShare {
  const wrap =
    <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      try {
        return await fn(...a);
      } catch (err) {
        throw new ShareFailed((err as Error).message);
      }
    };
  return {
    read: wrap(() => share.read()),
    claim: wrap((seen: number) => share.claim(seen)),
    store: wrap((t: Parameters<TokenShare['store']>[0]) => share.store(t)),
    release: wrap(() => share.release()),
  };
}

function toError(answer: Exclude<TokenAnswer, { kind: 'ok' }>): DroplineError {
  switch (answer.kind) {
    case 'refused':
      return new DroplineError(
        'DROPLINE_ERR_SERVICE_AUTH',
        `POST /token answered ${answer.status}: ${answer.reason}`,
      );
    case 'forbidden':
      return new DroplineError('DROPLINE_ERR_SERVICE_FORBIDDEN', `POST /token: ${answer.reason}`);
    case 'unavailable':
      return new DroplineError('DROPLINE_ERR_SERVICE_UNAVAILABLE', `POST /token: ${answer.reason}`);
  }
}
