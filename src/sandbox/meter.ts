// The sandbox's measures per account, for tests and benches that check dropline keeps an
// account's limits however many workers send with it: destinations accepted over time (GET
// /_sandbox/rates), and logins and the sends refused for a token a newer one replaced or
// that lapsed (GET /_sandbox/logins). The service itself shows none: the sandbox's own
// choice (docs/sandbox.md).

/** Accepted requests kept per account (the oldest are dropped beyond). */
const MAX_KEPT = 200_000;

export interface AccountRate {
  readonly requests: number;
  readonly destinations: number;
  /** ms since the epoch of the first and last accepted request. */
  readonly firstAt: number;
  readonly lastAt: number;
  /** Destinations per second between the first and the last request (0 for one request). */
  readonly meanPerSecond: number;
  /** The most destinations accepted within any one second (a window starting at a request). */
  readonly peakPerSecond: number;
}

export interface AccountLogins {
  /** grant_type=password answered 200. */
  readonly password: number;
  /** grant_type=refresh_token answered 200. */
  readonly refresh: number;
  /**
   * POST /mtmessage/massive (or /momessage) answered 401 for a token of the account that a newer one had
   * replaced (another login or refresh, or a revoke fault): a sender logged out by another.
   */
  readonly replaced: number;
  /** POST /mtmessage/massive (or /momessage) answered 401 for a token of the account past its lifetime. */
  readonly expired: number;
}

export class Meter {
  readonly #accepted = new Map<string, { at: number[]; n: number[] }>();
  readonly #logins = new Map<string, { -readonly [K in keyof AccountLogins]: number }>();

  accepted(account: string, destinations: number, at: number): void {
    let a = this.#accepted.get(account);
    if (!a) {
      a = { at: [], n: [] };
      this.#accepted.set(account, a);
    }
    a.at.push(at);
    a.n.push(destinations);
    if (a.at.length > MAX_KEPT) {
      a.at.splice(0, a.at.length - MAX_KEPT);
      a.n.splice(0, a.n.length - MAX_KEPT);
    }
  }

  login(account: string, grant: 'password' | 'refresh'): void {
    this.#count(account, grant);
  }

  /** A send refused (401) for a token of `account` that was replaced or had expired. */
  refused(account: string, why: 'replaced' | 'expired'): void {
    this.#count(account, why);
  }

  #count(account: string, what: keyof AccountLogins): void {
    const l = this.#logins.get(account) ?? { password: 0, refresh: 0, replaced: 0, expired: 0 };
    l[what]++;
    this.#logins.set(account, l);
  }

  rates(): Record<string, AccountRate> {
    const out: Record<string, AccountRate> = {};
    for (const [account, { at, n }] of this.#accepted) {
      let destinations = 0;
      let peak = 0;
      let window = 0;
      let j = 0;
      for (let i = 0; i < at.length; i++) {
        destinations += n[i]!;
        window += n[i]!;
        while (at[i]! - at[j]! >= 1000) window -= n[j++]!;
        peak = Math.max(peak, window);
      }
      const span = at.at(-1)! - at[0]!;
      out[account] = {
        requests: at.length,
        destinations,
        firstAt: at[0]!,
        lastAt: at.at(-1)!,
        // The last request's destinations go after the span.
        meanPerSecond: span > 0 ? ((destinations - n.at(-1)!) * 1000) / span : 0,
        peakPerSecond: peak,
      };
    }
    return out;
  }

  logins(): Record<string, AccountLogins> {
    return Object.fromEntries(this.#logins);
  }

  clear(): void {
    this.#accepted.clear();
    this.#logins.clear();
  }
}
