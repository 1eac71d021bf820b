// What the sandbox's POST /momessage accepted (GET /_sandbox/momessage/ledger): each two-way
// message once, with how often it was taken.

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

export class MoLedger {
  readonly #entries = new Map<string, MoLedgerEntry>();
  #accepted = 0;
  #duplicates = 0;

  record(entry: Omit<MoLedgerEntry, 'count'>): void {
    this.#accepted++;
    const key = JSON.stringify([entry.account, entry.shortCode, entry.phoneNumber, entry.text]);
    const found = this.#entries.get(key);
    if (found) {
      if (found.count === 1) this.#duplicates++;
      found.count++;
      found.id = entry.id;
      return;
    }
    this.#entries.set(key, { ...entry, count: 1 });
  }

  get accepted(): number {
    return this.#accepted;
  }

  /** Messages accepted more than once (same account, short code, number and text). */
  get duplicates(): number {
    return this.#duplicates;
  }

  entries(): MoLedgerEntry[] {
    return [...this.#entries.values()];
  }

  clear(): void {
    this.#entries.clear();
    this.#accepted = 0;
    this.#duplicates = 0;
  }
}
