// Recipients → one request's chunk (POST /mtmessage/massive, or /mtmessage with its `via`). Pure and deterministic: the same
// rows always give the same chunk, so a resumed chunk is byte-for-byte the same request.
/** Exactly these two keys: massiveBody writes a list of them with JSON.stringify. */
export interface Destination {
  readonly to: string;
  readonly messageId: string;
}

export interface PlannedMessage {
  readonly text: string;
  readonly destinations: readonly Destination[];
}

/**
 * A chunk sent with POST /mtmessage (docs/channels.md "RCS and flash SMS") rather than the massive
 * endpoint: RCS, or SMS with an option the massive endpoint does not take (flash). Its reports come
 * to the account webhook without a bulkId: `CallbackData` (`{"f": fileId, "c": seq}`) names the
 * chunk, and the receiver finds each recipient by its number in it (docs/channels.md).
 */
export interface MtMessageVia {
  readonly channel: 'SMS' | 'RCS';
  readonly flash: boolean;
  /** Returned as each report's messageId (the chunk's id). */
  readonly customMessageId: string;
  readonly callbackData: { readonly f: string; readonly c: number };
}

/** What the planner hands to the client: one request's worth of recipients. */
export interface PlannedChunk {
  readonly chunkId: string;
  readonly bulkId: string;
  readonly messages: readonly PlannedMessage[];
  /**
   * Already JSON text ("a JSON object must be sent as escaped text", docs/service.md), at most 200
   * characters.
   */
  readonly callbackData?: string | undefined;
  /**
   * The massive messages' `shortCode` (docs/channels.md "Two-way SMS"): where replies return;
   * absent: none sent.
   */
  readonly shortCode?: string | undefined;
  /** Sent with POST /mtmessage; absent: POST /mtmessage/massive. */
  readonly via?: MtMessageVia | undefined;
}

export interface ChunkRecipient {
  number: string;
  messageId: string;
  /** null in bulk files: the file's message. */
  text: string | null;
}

export function chunkIdFor(fileId: string, seq: number): string {
  return `${fileId}/${seq}`;
}

/**
 * Bulk: one message element. Personalized: recipients with identical texts share an element,
 * elements in the order their text first appears, destinations in row order.
 */
export function planChunk(
  fileId: string,
  seq: number,
  rows: readonly ChunkRecipient[],
  bulkText: string | null,
): PlannedChunk {
  const byText = new Map<string, { to: string; messageId: string }[]>();
  for (const r of rows) {
    const text = r.text ?? bulkText ?? '';
    let list = byText.get(text);
    if (!list) {
      list = [];
      byText.set(text, list);
    }
    list.push({ to: r.number, messageId: r.messageId });
  }
  const messages: PlannedMessage[] = [...byText].map(([text, destinations]) => ({ text, destinations }));
  return { chunkId: chunkIdFor(fileId, seq), bulkId: fileId, messages };
}

/**
 * Assigns the valid recipients of a file, in file order, to chunks of at most `chunkSize`.
 * One request never carries one number twice: delivery reports are told apart by
 * (transactionNumber, to) (docs/service.md "transactionNumber"), so two lines of one number with
 * different texts in one request would get reports the receiver takes for one repeated
 * report. A number already in the current chunk closes it and starts the next one: chunks
 * stay runs of consecutive recipients (the store keeps a chunk as one id range), only shorter
 * where a number repeats.
 */
export class ChunkPlanner {
  readonly #chunkSize: number;
  readonly #sizes: number[] = [];
  #numbers = new Set<string>();

  constructor(chunkSize: number) {
    if (!(chunkSize >= 1)) throw new RangeError(`chunk size ${chunkSize}`);
    this.#chunkSize = chunkSize;
  }

  /** The seq (1-based) of the chunk the next valid recipient, sent to `number`, goes into. */
  place(number: string): number {
    const n = this.#sizes.length;
    if (n === 0 || this.#sizes[n - 1]! >= this.#chunkSize || this.#numbers.has(number)) {
      this.#sizes.push(0);
      this.#numbers = new Set();
    }
    this.#sizes[this.#sizes.length - 1]!++;
    this.#numbers.add(number);
    return this.#sizes.length;
  }

  /** The chunks planned so far, with their sizes. */
  chunks(): { seq: number; size: number }[] {
    return this.#sizes.map((size, i) => ({ seq: i + 1, size }));
  }
}
