// The campaign rules a store applies to a chunk before it is sent (Store.holdBack), written
// once for both backends (./steps.ts): numbers that opted out by a reply since the file was
// read, then the contact limit (docs/campaign-rules.md "Contact limit"). The texts a user
// reads come from src/errors.ts (HELD_BACK_DETAILS), not from SQL.

import { HELD_BACK_DETAILS } from '../errors.ts';
import { asker, type Rule } from './steps.ts';
import type { HeldBack, HoldBackOptions } from './store.ts';

/** What a backend does for holdBack, inside its one transaction, on the chunk's pending rows. */
export type HoldBackOperations = {
  /** Rows whose number is on the opt-out list become `suppressed` with this code and detail: how many. */
  holdOptOuts(code: 'SUPPRESSED', detail: string): number;
  /**
   * A contact slot `slot` of the account's local day for each row without one (in id order):
   * a number twice in the chunk takes two slots, or is held back.
   */
  takeSlots(slot: number): void;
  /** Rows left without a slot become `contact_limit` with this code and detail: how many. */
  holdUnslotted(code: 'CONTACT_LIMIT', detail: string): number;
};

const ask = asker<HoldBackOperations>();

export function* holdBackRule(options: HoldBackOptions): Rule<HoldBackOperations, HeldBack> {
  const held: HeldBack = { suppressed: 0, contactLimited: 0 };
  if (options.optOuts)
    held.suppressed = yield* ask('holdOptOuts', 'SUPPRESSED', HELD_BACK_DETAILS.SUPPRESSED);
  const limit = options.contactLimit;
  if (!limit) return held;
  // A slot per round: a number twice in the chunk takes two slots, or is held back.
  for (let slot = 1; slot <= limit.perDay; slot++) yield* ask('takeSlots', slot);
  held.contactLimited = yield* ask(
    'holdUnslotted',
    'CONTACT_LIMIT',
    HELD_BACK_DETAILS.CONTACT_LIMIT(limit.perDay),
  );
  return held;
}
