// A WhatsApp account as the pipeline sends with it: the WhatsApp host's client (whatsapp.ts)
// behind the account's turn (dispatch.ts: fair across files, within the concurrency and rate
// every worker shares through the store). A chunk is at most WHATSAPP_CHUNK_RECIPIENTS
// recipients, one request each, sent at once once the chunk's turn has come; the answer is
// recorded as the email account's is (toResult: the recipients the service took ACCEPTED, as
// no delivery report follows a WhatsApp message).
import type { ChunkDestination, FileWhatsApp } from '../store/store.ts';
import { type BudgetSource, Dispatcher, type Flow, MemoryBudget } from './dispatch.ts';
import { type EmailChunkResult, toResult } from './email-account.ts';
import type { WhatsAppClient } from './whatsapp.ts';

/**
 * Recipients a WhatsApp chunk: each is its own request (spec 2.7), all in flight together, so a
 * crash leaves at most this many of a chunk in doubt.
 */
export const WHATSAPP_CHUNK_RECIPIENTS = 10;

export interface WhatsAppAccountOptions {
  readonly name: string;
  readonly client: WhatsAppClient;
  /** The account's sending number (spec 2.7 `source`), unless a file names another. */
  readonly source: string;
  /** Chunks in flight at once. */
  readonly concurrency: number;
  /** Recipients (messages) a second (0: no limit). */
  readonly ratePerSecond: number;
  readonly budget?: BudgetSource | undefined;
  readonly owner?: string | undefined;
  /** How long a permit outlives a worker that died holding it. */
  readonly permitLeaseMs?: number | undefined;
  readonly onBudgetError?: ((err: unknown, what: string) => void) | undefined;
}

export class WhatsAppAccount {
  readonly name: string;
  readonly concurrency: number;
  readonly #client: WhatsAppClient;
  readonly #dispatcher: Dispatcher;
  readonly #source: string;

  constructor(opts: WhatsAppAccountOptions) {
    this.name = opts.name;
    this.concurrency = opts.concurrency;
    this.#client = opts.client;
    this.#source = opts.source;
    this.#dispatcher = new Dispatcher({
      budget: opts.budget ?? new MemoryBudget(),
      owner: opts.owner ?? `pid-${process.pid}`,
      concurrency: opts.concurrency,
      ratePerSecond: opts.ratePerSecond,
      leaseMs: opts.permitLeaseMs ?? 120_000,
      onError: opts.onBudgetError,
    });
  }

  /**
   * Sends one chunk once its turn on the account has come and `start` (the write-ahead: the
   * chunk committed inflight) said yes; null when it was not sent (stopped while waiting, or
   * `start` said no). Each destination's text is its template parameters as a JSON array (the
   * reader's WhatsApp recipients).
   */
  async sendChunk(
    content: FileWhatsApp,
    rows: readonly ChunkDestination[],
    options: { signal: AbortSignal; flow: Flow; start: () => Promise<boolean> },
  ): Promise<EmailChunkResult | null> {
    if (rows.length > WHATSAPP_CHUNK_RECIPIENTS)
      throw new Error(
        `a WhatsApp chunk holds at most ${WHATSAPP_CHUNK_RECIPIENTS} recipients, not ${rows.length}`,
      );
    let permit: { release(): void };
    try {
      permit = await this.#dispatcher.acquire(options.flow, rows.length, options.signal);
    } catch (err) {
      if (options.signal.aborted) return null;
      throw err;
    }
    try {
      if (!(await options.start())) return null;
      const source = content.source ?? this.#source;
      const sent = await this.#client.send(
        rows.map((r) => ({
          source,
          destination: r.number,
          templateId: content.templateId,
          parameters: parametersOf(r.text),
        })),
        options.signal,
      );
      return toResult(rows, sent.outcomes, sent.requests, options.signal.aborted);
    } finally {
      permit.release();
    }
  }
}

function parametersOf(text: string | null): string[] {
  if (text === null || text === '') return [];
  return JSON.parse(text) as string[];
}
