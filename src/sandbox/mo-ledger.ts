// What the sandbox's POST /momessage accepted (GET /_sandbox/momessage/ledger): each two-way
// message once, with how often it was taken.
import { AcceptedLedger } from './accepted-ledger.ts';

/** What the sandbox accepted, keyed by account, short code, number and text. */
export interface MoLedgerEntry {
  readonly account: string;
  readonly shortCode: string;
  readonly phoneNumber: string;
  readonly text: string;
  count: number;
  /** The last acceptance's `Id`. */
  id: string;
}

/** Duplicates: messages accepted more than once (same account, short code, number and text). */
export class MoLedger extends AcceptedLedger<MoLedgerEntry> {
  constructor() {
    super(
      (e) => [e.account, e.shortCode, e.phoneNumber, e.text],
      (found, e) => {
        found.id = e.id;
      },
    );
  }
}
