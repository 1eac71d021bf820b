// The account's bearer token (service-interface.md 2.1, 2.2, 3, 5). The service keeps one active
// token per account and a new login expires the previous one, so every send in the process shares
// one token, at most one token request is in flight (single-flight), and a 401 triggers a renewal
// only when it was answered to the token we still hold (a late 401 for an already-replaced token
// must not log in again: that would expire the fresh one). The HTTP call itself is injected: the
// only I/O of this folder lives in client.ts.
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

export interface TokenManagerOptions {
  readonly request: TokenRequester;
  readonly now: () => number;
  /** Renew this long before the token's expiry (at most half its lifetime). */
  readonly renewBeforeMs: number;
}

interface Held {
  readonly token: Token;
  readonly renewAt: number;
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

  /** The service answered 401 to `accessToken`: renew on the next get(), unless it was already replaced. */
  invalidate(accessToken: string): void {
    if (this.#held && this.#held.token.accessToken === accessToken) this.#held.stale = true;
  }

  /** Forget the token (for example after the account was paused). */
  clear(): void {
    this.#held = null;
  }

  async #obtain(): Promise<string> {
    const refreshToken = this.#held?.token.refreshToken;
    if (refreshToken) {
      const answer = await this.#opts.request({ grant: 'refresh_token', refreshToken });
      if (answer.kind === 'ok') return this.#keep(answer.token);
      // A refused refresh (revoked by another login, or unknown) falls back to the credentials.
      if (answer.kind !== 'refused') throw toError(answer);
    }
    const answer = await this.#opts.request({ grant: 'password' });
    if (answer.kind === 'ok') return this.#keep(answer.token);
    this.#held = null;
    throw toError(answer);
  }

  #keep(token: Token): string {
    const margin = Math.min(this.#opts.renewBeforeMs, token.lifetimeMs / 2);
    this.#held = { token, renewAt: this.#opts.now() + token.lifetimeMs - margin, stale: false };
    return token.accessToken;
  }
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
