// What a one-message-a-request endpoint of the sandbox accepted (POST /momessage, WhatsApp):
// each message once, with how often it was taken, so a test sees a message sent twice.

export class AcceptedLedger<E extends { count: number }> {
  readonly #entries = new Map<string, E>();
  readonly #keyOf: (entry: Omit<E, 'count'>) => readonly unknown[];
  readonly #retake: (found: E, entry: Omit<E, 'count'>) => void;
  #accepted = 0;
  #duplicates = 0;

  /**
   * `keyOf`: what makes two acceptances the same message; `retake`: what a repeat's
   * acceptance changes of the entry (its latest transaction number).
   */
  constructor(
    keyOf: (entry: Omit<E, 'count'>) => readonly unknown[],
    retake: (found: E, entry: Omit<E, 'count'>) => void,
  ) {
    this.#keyOf = keyOf;
    this.#retake = retake;
  }

  record(entry: Omit<E, 'count'>): void {
    this.#accepted++;
    const key = JSON.stringify(this.#keyOf(entry));
    const found = this.#entries.get(key);
    if (found) {
      if (found.count === 1) this.#duplicates++;
      found.count++;
      this.#retake(found, entry);
      return;
    }
    this.#entries.set(key, { ...entry, count: 1 } as E);
  }

  get accepted(): number {
    return this.#accepted;
  }

  /** Messages accepted more than once. */
  get duplicates(): number {
    return this.#duplicates;
  }

  entries(): E[] {
    return [...this.#entries.values()];
  }

  clear(): void {
    this.#entries.clear();
    this.#accepted = 0;
    this.#duplicates = 0;
  }
}
