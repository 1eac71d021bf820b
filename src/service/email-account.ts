// An email account as the pipeline sends with it: the email host's client (email.ts) behind
// the account's turn (dispatch.ts: fair across files, within the concurrency and rate every
// worker shares through the store), one chunk (at most 50 recipients) a request, and the
// answer as the store records it (ChunkResult, the recipients the service took ACCEPTED).
import {
  ACCEPTED_DELIVERY,
  type ChunkDestination,
  type ChunkResult,
  type PartOutcome,
} from '../store/store.ts';
import { type BudgetSource, Dispatcher, type Flow, MemoryBudget } from './dispatch.ts';
import { EMAIL_MAX_RECIPIENTS, type EmailClient, type EmailContent, type EmailOutcome } from './email.ts';

export interface EmailAccountOptions {
  readonly name: string;
  readonly client: EmailClient;
  /** The sender (spec 2.8 `from`, `fromName`): the account's, checked by the service. */
  readonly from: string;
  readonly fromName?: string | undefined;
  readonly concurrency: number;
  /** Recipients a second (0: no limit). */
  readonly ratePerSecond: number;
  readonly budget?: BudgetSource | undefined;
  readonly owner?: string | undefined;
  /** How long a permit outlives a worker that died holding it. */
  readonly permitLeaseMs?: number | undefined;
  readonly onBudgetError?: ((err: unknown, what: string) => void) | undefined;
}

/** What a file sends: a stored template, or a subject and an HTML body (FORMAT.md 8.3). */
export type EmailMessage = Omit<EmailContent, 'from' | 'fromName'>;

export interface EmailChunkResult {
  readonly result: ChunkResult;
  /** 401 or 403: the account was refused; the file pauses with this reason. */
  readonly refused: string | null;
}

export class EmailAccount {
  readonly name: string;
  readonly concurrency: number;
  readonly #client: EmailClient;
  readonly #dispatcher: Dispatcher;
  readonly #from: Pick<EmailContent, 'from' | 'fromName'>;

  constructor(opts: EmailAccountOptions) {
    this.name = opts.name;
    this.concurrency = opts.concurrency;
    this.#client = opts.client;
    this.#from =
      opts.fromName === undefined ? { from: opts.from } : { from: opts.from, fromName: opts.fromName };
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
   * Sends one chunk once its turn on the account has come and `start` (the write-ahead:
   * the chunk committed inflight) said yes; null when it was not sent (stopped while
   * waiting, or `start` said no). Each destination's text is its fields as JSON (the
   * reader's email recipients), its number the address.
   */
  async sendChunk(
    message: EmailMessage,
    rows: readonly ChunkDestination[],
    options: { signal: AbortSignal; flow: Flow; start: () => Promise<boolean> },
  ): Promise<EmailChunkResult | null> {
    if (rows.length > EMAIL_MAX_RECIPIENTS)
      throw new Error(`an email chunk holds at most ${EMAIL_MAX_RECIPIENTS} recipients, not ${rows.length}`);
    let permit: { release(): void };
    try {
      permit = await this.#dispatcher.acquire(options.flow, rows.length, options.signal);
    } catch (err) {
      if (options.signal.aborted) return null;
      throw err;
    }
    try {
      if (!(await options.start())) return null;
      const sent = await this.#client.send(
        { ...message, ...this.#from },
        rows.map((r) => ({ recipient: r.number, fields: fieldsOf(r.text) })),
        options.signal,
      );
      return toResult(rows, sent.outcomes, sent.requests, options.signal.aborted);
    } finally {
      permit.release();
    }
  }

  #templates: { at: number; ids: Promise<readonly string[]> } | null = null;

  /**
   * The account's stored templates (GET /email/v1/templates), asked at most once a minute. A
   * failure is thrown and not kept: the next call asks again.
   */
  templateIds(now: number = Date.now()): Promise<readonly string[]> {
    if (this.#templates === null || now - this.#templates.at >= TEMPLATES_FRESH_MS) {
      const ids = this.#client.templates();
      const entry = { at: now, ids };
      this.#templates = entry;
      ids.catch(() => {
        if (this.#templates === entry) this.#templates = null;
      });
    }
    return this.#templates.ids;
  }
}

/** How long the account's template list is used before it is asked again. */
const TEMPLATES_FRESH_MS = 60_000;

function fieldsOf(text: string | null): Record<string, string> | undefined {
  if (text === null || text === '') return undefined;
  const parsed = JSON.parse(text) as Record<string, string>;
  return Object.keys(parsed).length > 0 ? parsed : undefined;
}

/**
 * The store's account of one request's recipients: accepted ones sent (ACCEPTED at once),
 * rejected ones rejected with the service's code, the others failed, in doubt or put back.
 * Recipients with the same outcome and code share a part.
 */
export function toResult(
  rows: readonly ChunkDestination[],
  outcomes: readonly EmailOutcome[],
  requests: number,
  stopped: boolean,
): EmailChunkResult {
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
  let refused: string | null = null;
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
        refused ??= o.reason;
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
  const state: ChunkResult['state'] =
    inDoubt > 0
      ? 'in_doubt'
      : failed > 0
        ? 'failed'
        : held > 0
          ? 'pending'
          : accepted === 0 && rejected > 0
            ? 'rejected'
            : 'accepted';
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
