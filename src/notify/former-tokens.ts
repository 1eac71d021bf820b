// Notify tokens of hosts' older `notify-token` files (docs/notify.md "The token"). Before the
// token lived in the store each host generated its own file; after the upgrade the store keeps
// one, and the reports of chunks sent before it still carry the host's older token and may
// reach any receiver behind the shared URL. Each host adopts its older token into the store
// (a setting of its own, with the time it stops being accepted) and every receiver accepts
// those too, until then. A 401 is never retried by the service: a receiver that does not know
// a token reads the store again before refusing, at most once each REREAD_MS.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Store } from '../store/store.ts';

const PREFIX = 'notify.formerToken.';
/** Reports of messages sent before an upgrade come within days (an SMSC keeps trying for 72 h). */
export const FORMER_TOKEN_GRACE_MS = 7 * 24 * 3_600_000;
const REREAD_MS = 2_000;

const sha256 = (s: string) => createHash('sha256').update(s).digest();

/** Keeps `token` (a host's older file's) accepted by every receiver for the grace period. */
export async function adoptFormerToken(store: Store, token: string, now: Date): Promise<Date> {
  const until = new Date(now.getTime() + FORMER_TOKEN_GRACE_MS);
  const key = `${PREFIX}${sha256(token).toString('hex').slice(0, 16)}`;
  const kept = await store.keepSetting(key, JSON.stringify({ token, until: until.toISOString() }));
  return new Date((JSON.parse(kept) as { until: string }).until);
}

/** The former tokens a receiver accepts, read from the store. */
export class FormerTokens {
  readonly #store: Store;
  readonly #now: () => Date;
  #hashes: { hash: Buffer; until: number }[] = [];
  #readAt = Number.NEGATIVE_INFINITY;
  #reading: Promise<void> | null = null;

  constructor(store: Store, now: () => Date = () => new Date()) {
    this.#store = store;
    this.#now = now;
  }

  /** Whether `token` is a former token still accepted (the store read again when it may be new). */
  async accepts(token: string): Promise<boolean> {
    const hash = sha256(token);
    if (this.#known(hash)) return true;
    if (this.#now().getTime() - this.#readAt < REREAD_MS) return false;
    await this.read();
    return this.#known(hash);
  }

  /** Reads the adopted tokens (one read at a time; a failed read keeps the last list). */
  read(): Promise<void> {
    this.#reading ??= (async () => {
      try {
        const rows = await this.#store.settingsUnder(PREFIX);
        this.#hashes = rows.map((r) => {
          const v = JSON.parse(r.value) as { token: string; until: string };
          return { hash: sha256(v.token), until: Date.parse(v.until) };
        });
      } finally {
        this.#readAt = this.#now().getTime();
        this.#reading = null;
      }
    })();
    return this.#reading;
  }

  #known(hash: Buffer): boolean {
    const now = this.#now().getTime();
    return this.#hashes.some((f) => f.until > now && timingSafeEqual(f.hash, hash));
  }
}
