// An SMS (or RCS) account as the pipeline sends with it: the service client (its token, pace,
// retries and bisection: src/service/client.ts) sends a plain sms file's chunks with POST
// /mtmessage/massive, an RCS or flash file's with POST /mtmessage; each part's outcome
// becomes what the store records, in the one result shape every channel gives.
import { chunkStateOf } from '../../core/chunk-state.ts';
import { planChunk } from '../../plan/chunks.ts';
import type { ChunkSendResult } from '../../service/channel-account.ts';
import { type SendResult, ServiceClient } from '../../service/client.ts';
import type { MtMessageVia, PlannedChunk } from '../../service/wire.ts';
import type { ChunkDestination, ChunkResult, PartOutcome } from '../../store/store.ts';
import type { AccountOpening, ChunkSender, OutgoingFile, SendingAccount } from '../channel.ts';
import { chunkCallback } from './reports.ts';

/** The SMS host's accounts: sms and rcs (the same host and credentials). */
type MtChannel = 'sms' | 'rcs';

export class MtAccount implements SendingAccount {
  readonly name: string;
  readonly channel: MtChannel;
  readonly concurrency: number;
  readonly client: ServiceClient;
  /** A massive request takes the whole chunk (api.chunkSize decides it). */
  readonly chunkRecipients = Number.POSITIVE_INFINITY;

  constructor(o: { name: string; channel: MtChannel; client: ServiceClient; concurrency: number }) {
    this.name = o.name;
    this.channel = o.channel;
    this.client = o.client;
    this.concurrency = o.concurrency;
  }

  get monitored(): ServiceClient {
    return this.client;
  }

  async sender(file: OutgoingFile): Promise<ChunkSender> {
    const { fileId, bulkText, shortCode } = file;
    // An RCS or flash file: POST /mtmessage, its chunk named in the request for its reports.
    const mt = file.content?.channel === 'rcs' || file.content?.channel === 'sms' ? file.content : null;
    const plan = (seq: number, rows: readonly ChunkDestination[]): PlannedChunk => {
      const chunk = planChunk(fileId, seq, rows, bulkText);
      // The massive messages carry the source's short code; POST /mtmessage has no such field.
      if (!mt) return shortCode === null ? chunk : { ...chunk, shortCode };
      const via: MtMessageVia = {
        channel: mt.channel === 'rcs' ? 'RCS' : 'SMS',
        flash: mt.flash === true,
        customMessageId: chunk.chunkId,
        callbackData: chunkCallback(fileId, seq),
      };
      return { ...chunk, via };
    };
    return {
      send: async (seq, rows, options) => {
        const result = await this.client.sendChunk(plan(seq, rows), options);
        return result && toSendResult(result, options.signal.aborted);
      },
    };
  }

  close(): Promise<void> {
    return this.client.close();
  }
}

/** An account of the SMS host, its client sharing its token and budget through the store. */
export function openMtAccount(o: AccountOpening, channel: MtChannel): MtAccount {
  const a = o.config;
  if (!('username' in a)) throw new Error(`accounts.${o.name}: not an account of the SMS host`);
  const concurrency = a.concurrency ?? o.api.concurrency;
  const client = new ServiceClient({
    baseUrl: a.baseUrl,
    username: a.username,
    password: o.secret,
    concurrency,
    ratePerSecond: a.ratePerSecond ?? o.api.ratePerSecond,
    // Its budget is the account's, whatever the password; its token the credentials' (hashed).
    ...o.budget(`${a.baseUrl}\n${a.username}`),
    tokenShare: o.tokenShare(`${a.baseUrl}\n${a.username}\n${o.secret}`),
    notifyUrl: o.notifyUrl,
    notifyContentType: 'application/json',
    timeoutMs: o.api.timeoutMs,
    retry: o.api.retry,
    token: { expiresInUnitMs: o.api.tokenExpiresInUnitMs, maxLifetimeS: o.api.tokenMaxLifetimeS },
  });
  return new MtAccount({ name: o.name, channel, client, concurrency });
}

/** The client's answer → the result the store records, and the account's refusal (401/403) if any. */
function toSendResult(result: SendResult, stopped: boolean): ChunkSendResult {
  const blocked = result.parts.find(
    (p) => p.outcome.kind === 'forbidden' || p.outcome.kind === 'unauthorized',
  );
  const refused = blocked && blocked.outcome.kind !== 'accepted' ? blocked.outcome.reason : null;
  return { result: toChunkResult(result, { stopped }), refused };
}

/**
 * The client's per-part outcomes → what the store records for the chunk. `stopped`: the send
 * was cut short by a stop, so a retryable failure (the service never took the part) is
 * pending again rather than failed for good.
 */
export function toChunkResult(result: SendResult, options: { stopped?: boolean } = {}): ChunkResult {
  const parts: PartOutcome[] = [];
  let attempts = 0;
  let accepted = 0;
  let rejected = 0;
  let failed = 0;
  let inDoubt = 0;
  let blocked = 0;
  let transactionNumber: string | null = null;
  let errorCode: string | null = null;
  let errorMessage: string | null = null;
  for (const p of result.parts) {
    const o = p.outcome;
    attempts += o.attempts;
    const messageIds = p.destinations.map((d) => d.messageId);
    // One part carrying every destination of the request: the store may record it by chunk.
    const whole = result.parts.length === 1 && p.destinations.length === result.destinations;
    const scope = whole ? { messageIds, wholeChunk: true } : { messageIds };
    if (o.kind === 'accepted') {
      accepted++;
      transactionNumber ??= o.transactionNumber;
      parts.push({ ...scope, outcome: 'sent', transactionNumber: o.transactionNumber });
      continue;
    }
    errorCode ??= o.code;
    errorMessage ??= o.reason;
    switch (o.kind) {
      case 'rejected':
        rejected++;
        parts.push({ ...scope, outcome: 'rejected', code: o.code, detail: o.reason });
        break;
      case 'in_doubt':
        inDoubt++;
        parts.push({ ...scope, outcome: 'in_doubt', code: o.code, detail: o.reason });
        break;
      case 'forbidden':
      case 'unauthorized':
        blocked++;
        parts.push({ ...scope, outcome: 'pending', code: o.code, detail: o.reason });
        break;
      default:
        if (options.stopped && o.retryable) {
          blocked++;
          parts.push({ ...scope, outcome: 'pending', code: o.code, detail: o.reason });
        } else {
          failed++;
          parts.push({ ...scope, outcome: 'failed', code: o.code, detail: o.reason });
        }
    }
  }
  const state = chunkStateOf({ accepted, rejected, failed, inDoubt, held: blocked });
  return { state, attempts, transactionNumber, errorCode, errorMessage, parts };
}
