// Every destination the sandbox accepted, keyed by (bulkId, messageId, to). `count` above 1 means
// the same recipient was accepted twice: the duplicate send dropline promises never to make
// outside its counted in-doubt set.

export interface LedgerEntry {
  readonly bulkId: string;
  readonly messageId: string;
  readonly to: string;
  readonly text: string;
  count: number;
  /** Transaction number of the latest acceptance. */
  transactionNumber: string;
}

export class Ledger {
  // Nested maps rather than one concatenated key: no string building per destination.
  readonly #byBulk = new Map<string, Map<string, LedgerEntry | LedgerEntry[]>>();
  #size = 0;
  #accepted = 0;
  #duplicates = 0;

  record(bulkId: string, messageId: string, to: string, text: string, transactionNumber: string): void {
    this.#accepted++;
    let byId = this.#byBulk.get(bulkId);
    if (byId === undefined) this.#byBulk.set(bulkId, (byId = new Map()));
    const found = byId.get(messageId);
    if (found === undefined) {
      byId.set(messageId, { bulkId, messageId, to, text, count: 1, transactionNumber });
      this.#size++;
      return;
    }
    // Rare: the same messageId for several numbers (an empty or reused id) keeps a small list.
    const list = Array.isArray(found) ? found : [found];
    const same = list.find((e) => e.to === to);
    if (same) {
      if (same.count === 1) this.#duplicates++;
      same.count++;
      same.transactionNumber = transactionNumber;
      return;
    }
    list.push({ bulkId, messageId, to, text, count: 1, transactionNumber });
    this.#size++;
    if (!Array.isArray(found)) byId.set(messageId, list);
  }

  /** Entries with a count above 1. */
  get duplicates(): number {
    return this.#duplicates;
  }

  /** Distinct destinations. */
  get size(): number {
    return this.#size;
  }

  /** Acceptances, duplicates included. */
  get accepted(): number {
    return this.#accepted;
  }

  *entries(filter?: { bulkId?: string | undefined; messageId?: string | undefined }): Generator<LedgerEntry> {
    for (const [bulkId, byId] of this.#byBulk) {
      if (filter?.bulkId !== undefined && filter.bulkId !== bulkId) continue;
      for (const [messageId, found] of byId) {
        if (filter?.messageId !== undefined && filter.messageId !== messageId) continue;
        if (Array.isArray(found)) yield* found;
        else yield found;
      }
    }
  }

  clear(): void {
    this.#byBulk.clear();
    this.#size = 0;
    this.#accepted = 0;
    this.#duplicates = 0;
  }
}
