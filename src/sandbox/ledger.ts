// Every destination the sandbox accepted, keyed by (bulkId, messageId, to). `count` above 1 means
// the same recipient was accepted twice: the duplicate send dropline promises never to make
// outside its counted in-doubt set.
//
// The send path only appends one batch per accepted request: the raw request body, outside the
// JS heap (O(1), no per-destination work, nothing for the GC to copy). The index that counts
// duplicates is built from those bodies when someone reads the ledger. A Map insert per
// destination cost ~1 µs, and keeping the parsed objects alive made every GC slower: together
// more than parsing the request.

export interface LedgerEntry {
  readonly bulkId: string;
  readonly messageId: string;
  readonly to: string;
  readonly text: string;
  count: number;
  /** Transaction number of the latest acceptance. */
  transactionNumber: string;
}

interface LedgerMessage {
  readonly text: string;
  readonly destinations: readonly { readonly to: string; readonly messageId?: string | undefined }[];
}

interface Batch {
  readonly transactionNumber: string;
  /** A POST /mtmessage/massive body that passed validation. */
  readonly body: Buffer;
}

export class Ledger {
  #batches: Batch[] = [];
  #indexed = 0;
  readonly #byBulk = new Map<string, Map<string, LedgerEntry | LedgerEntry[]>>();
  #size = 0;
  #accepted = 0;
  #duplicates = 0;

  /** Records every destination of one accepted request: its validated body, kept as bytes. */
  recordBatch(transactionNumber: string, body: Buffer): void {
    this.#batches.push({ transactionNumber, body });
  }

  /** Entries with a count above 1. */
  get duplicates(): number {
    this.#index();
    return this.#duplicates;
  }

  /** Distinct destinations. */
  get size(): number {
    this.#index();
    return this.#size;
  }

  /** Acceptances, duplicates included. */
  get accepted(): number {
    this.#index();
    return this.#accepted;
  }

  *entries(filter?: { bulkId?: string | undefined; messageId?: string | undefined }): Generator<LedgerEntry> {
    this.#index();
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
    this.#batches = [];
    this.#indexed = 0;
    this.#byBulk.clear();
    this.#size = 0;
    this.#accepted = 0;
    this.#duplicates = 0;
  }

  #index(): void {
    for (; this.#indexed < this.#batches.length; this.#indexed++) {
      const batch = this.#batches[this.#indexed]!;
      const parsed = JSON.parse(batch.body.toString('utf8')) as {
        bulkId?: string;
        messages: LedgerMessage[];
      };
      const bulkId = parsed.bulkId ?? '';
      let byId = this.#byBulk.get(bulkId);
      if (byId === undefined) this.#byBulk.set(bulkId, (byId = new Map()));
      for (const m of parsed.messages) {
        for (const d of m.destinations) this.#record(byId, bulkId, batch, d.messageId ?? '', d.to, m.text);
      }
    }
    // The batches are indexed: drop them so memory holds the entries once.
    if (this.#indexed > 0) {
      this.#batches = [];
      this.#indexed = 0;
    }
  }

  #record(
    byId: Map<string, LedgerEntry | LedgerEntry[]>,
    bulkId: string,
    batch: Batch,
    messageId: string,
    to: string,
    text: string,
  ): void {
    this.#accepted++;
    const found = byId.get(messageId);
    if (found === undefined) {
      byId.set(messageId, {
        bulkId,
        messageId,
        to,
        text,
        count: 1,
        transactionNumber: batch.transactionNumber,
      });
      this.#size++;
      return;
    }
    // Rare: the same messageId for several numbers (an empty or reused id) keeps a small list.
    const list = Array.isArray(found) ? found : [found];
    const same = list.find((e) => e.to === to);
    if (same) {
      if (same.count === 1) this.#duplicates++;
      same.count++;
      same.transactionNumber = batch.transactionNumber;
      return;
    }
    list.push({
      bulkId,
      messageId,
      to,
      text,
      count: 1,
      transactionNumber: batch.transactionNumber,
    });
    this.#size++;
    if (!Array.isArray(found)) byId.set(messageId, list);
  }
}
