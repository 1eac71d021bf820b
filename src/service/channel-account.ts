// An account of a channel whose requests answer for each recipient at once (email, WhatsApp),
// as the pipeline sends with it: a chunk waits for its turn on the account (dispatch.ts: fair
// across files, within the concurrency and rate every worker shares through the store), is
// recorded inflight (the write-ahead `start`), is delivered by the channel's client, and its
// recipients' answers become what the store records (toResult: those the service took are
// ACCEPTED at once, as no delivery report follows on these channels).

import { chunkStateOf } from '../core/chunk-state.ts';
import type { ErrorCode } from '../errors.ts';
import {
  ACCEPTED_DELIVERY,
  type ChunkDestination,
  type ChunkResult,
  type PartOutcome,
} from '../store/store.ts';
import { type BudgetSource, Dispatcher, type Flow, MemoryBudget } from './dispatch.ts';

/** What a recipient's request answered: the same kinds on every channel of this sort. */
export type RecipientOutcome =
  | {
      readonly kind: 'accepted';
      readonly messageId: string | null;
      /** The request's own answer when it was not plainly accepted (requestNote). */
      readonly request?: string | undefined;
    }
  /** The service's business answer for this recipient: final. */
  | {
      readonly kind: 'rejected';
      readonly code: string;
      readonly reason: string;
      readonly request?: string | undefined;
    }
  | {
      readonly kind: 'failed';
      readonly code: ErrorCode;
      readonly reason: string;
      readonly retryable: boolean;
    }
  | { readonly kind: 'in_doubt'; readonly reason: string }
  /** 401 / 403: the account's email files pause with the reason. */
  | { readonly kind: 'unauthorized' | 'forbidden'; readonly reason: string };

export interface ChannelAccountOptions {
  readonly name: string;
  /** Chunks in flight at once. */
  readonly concurrency: number;
  /** Recipients a second (0: no limit). */
  readonly ratePerSecond: number;
  readonly budget?: BudgetSource | undefined;
  readonly owner?: string | undefined;
  /** How long a permit outlives a worker that died holding it. */
  readonly permitLeaseMs?: number | undefined;
  readonly onBudgetError?: ((err: unknown, what: string) => void) | undefined;
}

export interface ChunkSendResult {
  readonly result: ChunkResult;
  /** 401 or 403: the account was refused; the file pauses with this reason. */
  readonly refused: string | null;
}

export abstract class ChannelAccount<M> {
  readonly name: string;
  readonly concurrency: number;
  readonly #dispatcher: Dispatcher;

  constructor(opts: ChannelAccountOptions) {
    this.name = opts.name;
    this.concurrency = opts.concurrency;
    this.#dispatcher = new Dispatcher({
      budget: opts.budget ?? new MemoryBudget(),
      owner: opts.owner ?? `pid-${process.pid}`,
      concurrency: opts.concurrency,
      ratePerSecond: opts.ratePerSecond,
      leaseMs: opts.permitLeaseMs ?? 120_000,
      onError: opts.onBudgetError,
    });
  }

  /** Recipients a chunk holds at most. */
  abstract readonly chunkRecipients: number;

  /** The channel's requests for one chunk: one outcome a recipient, in order. */
  protected abstract deliver(
    message: M,
    rows: readonly ChunkDestination[],
    signal: AbortSignal,
  ): Promise<{ outcomes: RecipientOutcome[]; requests: number }>;

  /**
   * Sends one chunk once its turn on the account has come and `start` (the write-ahead: the
   * chunk committed inflight) said yes; null when it was not sent (stopped while waiting, or
   * `start` said no).
   */
  async sendChunk(
    message: M,
    rows: readonly ChunkDestination[],
    options: { signal: AbortSignal; flow: Flow; start: () => Promise<boolean> },
  ): Promise<ChunkSendResult | null> {
    if (rows.length > this.chunkRecipients)
      throw new Error(
        `a chunk of ${this.name} holds at most ${this.chunkRecipients} recipients, not ${rows.length}`,
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
      const sent = await this.deliver(message, rows, options.signal);
      return toResult(rows, sent.outcomes, sent.requests, options.signal.aborted);
    } finally {
      permit.release();
    }
  }
}

/**
 * The store's account of one request's recipients: accepted ones sent (ACCEPTED at once),
 * rejected ones rejected with the service's code, the others failed, in doubt or put back.
 * Recipients with the same outcome and code share a part.
 */
export function toResult(
  rows: readonly ChunkDestination[],
  outcomes: readonly RecipientOutcome[],
  requests: number,
  stopped: boolean,
): ChunkSendResult {
  const parts = new Map<string, PartOutcome>();
  const add = (key: string, messageId: string, part: Omit<PartOutcome, 'messageIds'>): void => {
    const existing = parts.get(key);
    if (existing) existing.messageIds.push(messageId);
    else parts.set(key, { ...part, messageIds: [messageId] });
  };
  let accepted = 0;
  let rejected = 0;
  let failed = 0;
  let inDoubt = 0;
  let held = 0;
  // The refusal first, whatever its row: a retryable failure anywhere in the chunk (requests
  // run at once) may be one that met it while waiting to retry, and is put back with it.
  let refused: string | null = null;
  for (const o of outcomes)
    if (o.kind === 'unauthorized' || o.kind === 'forbidden') {
      refused = o.reason;
      break;
    }
  let first: { code: string; message: string } | null = null;
  for (const [i, row] of rows.entries()) {
    const o = outcomes[i]!;
    const id = row.messageId;
    switch (o.kind) {
      case 'accepted': {
        accepted++;
        // The service's own message id, when it gives one, is the recipient's transaction
        // number; the request's answer, when not plainly accepted, its detail.
        add(o.messageId === null ? `sent:${o.request}` : `sent:${id}`, id, {
          outcome: 'sent',
          transactionNumber: o.messageId,
          ...(o.request === undefined ? {} : { detail: o.request }),
        });
        break;
      }
      case 'rejected': {
        rejected++;
        first ??= { code: o.code, message: o.reason };
        const detail =
          o.request === undefined || o.reason.includes(o.request) ? o.reason : `${o.reason} (${o.request})`;
        add(`rejected:${o.code}:${detail}`, id, { outcome: 'rejected', code: o.code, detail });
        break;
      }
      case 'in_doubt':
        inDoubt++;
        first ??= { code: 'DROPLINE_ERR_SERVICE_IN_DOUBT', message: o.reason };
        add(`in_doubt:${o.reason}`, id, {
          outcome: 'in_doubt',
          code: 'DROPLINE_ERR_SERVICE_IN_DOUBT',
          detail: o.reason,
        });
        break;
      case 'unauthorized':
      case 'forbidden': {
        // Never sent: back to pending with the refusal, sent once the account is fixed.
        held++;
        const code =
          o.kind === 'unauthorized' ? 'DROPLINE_ERR_SERVICE_AUTH' : 'DROPLINE_ERR_SERVICE_FORBIDDEN';
        first ??= { code, message: o.reason };
        add(`pending:${code}`, id, { outcome: 'pending', code, detail: o.reason });
        break;
      }
      case 'failed':
        first ??= { code: o.code, message: o.reason };
        // Never left, and the send was stopped or the account refused: put back.
        if (o.retryable && (stopped || refused !== null)) {
          held++;
          add(`pending:${o.code}`, id, { outcome: 'pending', code: o.code, detail: o.reason });
        } else {
          failed++;
          add(`failed:${o.code}:${o.reason}`, id, { outcome: 'failed', code: o.code, detail: o.reason });
        }
        break;
    }
  }
  const state = chunkStateOf({ accepted, rejected, failed, inDoubt, held });
  return {
    refused,
    result: {
      state,
      attempts: requests,
      errorCode: first?.code ?? null,
      errorMessage: first?.message ?? null,
      parts: [...parts.values()],
      finalStatus: ACCEPTED_DELIVERY,
    },
  };
}
