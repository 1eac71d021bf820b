// A bulk file's chunks as ingest planned them, kept in memory for their first send by the
// same worker, so that it does not read back rows it has just written (chunkDestinations:
// ~0.5 s of a 1M-number bulk file's ~3.5 s on SQLite). A chunk never sent reads back exactly
// this: every recipient of it still pending (none is held back: the pipeline asks for a
// kept chunk only when no opt-out or contact limit may hold one back), in row order, the
// file's message on each (the first row's text is the file's message, the others none).
// ~16 bytes a recipient, up to `limit` recipients: later chunks are read back.
import { sentValue } from '../format/numbers.ts';
import type { ChunkDestination } from '../store/store.ts';
import { messageIdFor } from './ids.ts';

export class KeptDestinations {
  readonly fileId: string;
  readonly #limit: number;
  /** Each number's value: a sent form (digits, no leading 0, at most 15) is String(value). */
  #values = new Float64Array(1024);
  #lines = new Uint32Array(1024);
  #ks = new Uint32Array(1024);
  #length = 0;
  /** starts[s - 1]: the index of chunk s's first recipient (chunks are runs of recipients). */
  readonly #starts: number[] = [];
  /** Chunks from this seq on are not all kept (the limit was reached in one). */
  #incompleteFrom = Number.POSITIVE_INFINITY;

  constructor(fileId: string, limit: number) {
    this.fileId = fileId;
    this.#limit = limit;
  }

  /**
   * The next valid recipient, in file order, with the chunk ingest placed it in. False when
   * its destination cannot be kept as the store would give it back (a number that is not a
   * plain sent form, a messageId the file gave): nothing of the file should then be kept.
   */
  add(number: string, line: number, k: number, messageId: string | null, seq: number): boolean {
    if (messageId !== null || k < 1) return false;
    // String(value) gives the number back: digits, at most 15, no leading 0.
    const value = number.charCodeAt(0) === 48 ? -1 : sentValue(number);
    if (value < 0) return false;
    // Chunks are runs of recipients, seqs 1, 2, 3… (ChunkPlanner).
    if (seq === this.#starts.length + 1) this.#starts.push(this.#length);
    else if (seq !== this.#starts.length) return false;
    if (this.#length === this.#limit) {
      this.#incompleteFrom = Math.min(this.#incompleteFrom, seq);
      return true;
    }
    if (this.#length === this.#values.length) this.#grow();
    this.#values[this.#length] = value;
    this.#lines[this.#length] = line;
    this.#ks[this.#length] = k;
    this.#length++;
    return true;
  }

  /** Chunk seq's destinations, as chunkDestinations reads them before its first send; null if not kept. */
  destinations(seq: number): ChunkDestination[] | null {
    if (seq < 1 || seq > this.#starts.length || seq >= this.#incompleteFrom) return null;
    const from = this.#starts[seq - 1]!;
    const to = seq < this.#starts.length ? this.#starts[seq]! : this.#length;
    const out: ChunkDestination[] = [];
    for (let i = from; i < to; i++) {
      out.push({
        number: String(this.#values[i]),
        messageId: messageIdFor(this.fileId, this.#lines[i]!, this.#ks[i]!),
        text: null,
      });
    }
    return out;
  }

  #grow(): void {
    const n = Math.min(this.#values.length * 2, this.#limit);
    const values = new Float64Array(n);
    values.set(this.#values);
    this.#values = values;
    const lines = new Uint32Array(n);
    lines.set(this.#lines);
    this.#lines = lines;
    const ks = new Uint32Array(n);
    ks.set(this.#ks);
    this.#ks = ks;
  }
}
