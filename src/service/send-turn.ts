// A request's turn on the account (docs/service.md "Token"): its send permit, which paces the
// account's requests (concurrency, rate, slow-downs: dispatch.ts), and the token it goes with.
import type { Dispatcher, Flow, Permit } from './dispatch.ts';
import type { TokenManager } from './token.ts';

/** A send permit's lease beyond the request's own time-outs. */
const PERMIT_LEASE_MARGIN_MS = 10_000;

/** A permit outlives a worker that died holding it by one request's time at most. */
export function permitLeaseMs(headersTimeoutMs: number, bodyTimeoutMs: number): number {
  return headersTimeoutMs + bodyTimeoutMs + PERMIT_LEASE_MARGIN_MS;
}

/** A request's turn: its permit on the account, and the token it goes with. */
export interface Turn {
  readonly permit: Permit;
  readonly token: Promise<string>;
}

/**
 * A request's turn on the account, its token got (or renewed) before it waits: a request
 * that waited for a login after its turn came would go late and bunch with the next ones,
 * past the account's rate. The token is settled, not awaited: its failure is the request's
 * to report after its turn (one login asked, not two).
 *
 * Once the turn came, the request takes the token in force: a renewal while it waited (by
 * this worker or another) replaced the one it got. Not due, that is the token held now,
 * without I/O. Due, the turn is given back and taken again after the renewal (adopted
 * from the store, or made by this worker once per renewal): no login while a permit is
 * held. The token is settled before the caller records the chunk in flight: between that
 * record and the request, only the request.
 */
export async function takeTurn(
  tokens: TokenManager,
  dispatcher: Dispatcher,
  flow: Flow,
  destinations: number,
  signal: AbortSignal,
): Promise<Turn> {
  for (let turns = 1; ; turns++) {
    const got = tokens.get();
    const failed = await got.then(
      () => false,
      () => true,
    );
    const permit = await dispatcher.acquire(flow, destinations, signal);
    // A failed login is the request's to report; a token that fell due again during a
    // second wait (a lifetime shorter than the waits) goes as it is, a 401 renews it.
    const fresh = tokens.fresh();
    if (failed || fresh || turns === 2) {
      const token = fresh ? tokens.get() : got;
      await token.catch(() => {});
      return { permit, token };
    }
    permit.release();
  }
}
