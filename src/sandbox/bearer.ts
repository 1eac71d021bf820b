// The Bearer check of the SMS host's send endpoints (POST /mtmessage/massive, POST /momessage:
// docs/sandbox.md): the token's account, a replaced or expired token metered as a refusal, and
// a fired `revoke` fault applied after the check (the token revoked, 401).
import type { Accounts, TokenCheck } from './accounts.ts';
import type { Fired } from './faults.ts';
import type { Meter } from './meter.ts';

/** The 401 to answer instead of the request, and the fault it is (revoke). */
export interface BearerRefusal {
  readonly message: string;
  readonly fault?: string | undefined;
}

export type BearerAccount =
  | { readonly username: string; readonly refusal: null }
  /** `username`: the token's account when it was valid (a revoke fault refused it). */
  | { readonly username: string | undefined; readonly refusal: BearerRefusal };

export function bearerAccount(
  check: TokenCheck | null,
  fired: Fired | null,
  deps: { readonly accounts: Accounts; readonly meter: Meter },
): BearerAccount {
  if (!check) return { username: undefined, refusal: { message: 'a Bearer token is required' } };
  if (!check.ok) {
    if (check.username !== undefined && check.why !== 'unknown')
      deps.meter.refused(check.username, check.why);
    return { username: undefined, refusal: { message: check.reason } };
  }
  if (fired?.kind === 'revoke') {
    deps.accounts.revoke(check.username);
    return {
      username: check.username,
      refusal: { message: 'the token is unknown or was replaced by a newer one', fault: 'revoke' },
    };
  }
  return { username: check.username, refusal: null };
}
