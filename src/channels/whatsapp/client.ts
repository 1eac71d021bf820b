// The WhatsApp host's client (docs/channels.md "WhatsApp"): POST
// /MultiChannelInput/SendMessageMetaWhatsApp with the account's Basic credentials, one template
// message to one recipient a request. Transport only: what the service answered for each
// message, in order; the pipeline records it.
//
// - 200 (any 2xx): received, not delivered: accepted, with the transaction number
//   when the body carries one (its shape is not shown: transactionNumber and its spellings).
// - 400: this message refused (a template not approved, wrong parameter count, a number not
//   the account's): rejected with the service's message. Final.
// - 401 (credentials) and 403 (no permission, an address not allowed): this message and the
//   ones not yet sent are not sent (the file pauses until the account is fixed).
// - 5xx, 429 and requests that never left are sent again with back-off; a request written
//   without an answer is in doubt, never sent again here.
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { secretsOf } from '../../core/redact.ts';
import type { ErrorCode } from '../../errors.ts';
import type { RecipientOutcome } from '../../service/channel-account.ts';
import { answerDecision, describeError, headerOf, postOnce, serviceHost } from '../../service/http.ts';
import {
  backoffDelay,
  parseBody,
  parseRetryAfter,
  reasonOf,
  transactionNumberOf,
} from '../../service/wire.ts';

export const WHATSAPP_PATH = '/MultiChannelInput/SendMessageMetaWhatsApp';

/** One message: an approved template with its parameters in the template's order. */
export interface WhatsAppMessage {
  /** The sending number. */
  readonly source: string;
  readonly destination: string;
  readonly templateId: string;
  readonly parameters: readonly string[];
}

/** The same outcomes as an email recipient's: accepted, rejected, failed, in doubt, refused. */
export type WhatsAppOutcome = RecipientOutcome;

export interface WhatsAppClientOptions {
  /** `{whatsapp_url}`. */
  readonly baseUrl: string;
  readonly username: string;
  readonly password: string;
  /** Per request, headers and body (default 30 s). */
  readonly timeoutMs?: number | undefined;
  readonly retry?: { baseMs?: number; maxMs?: number; maxAttempts?: number } | undefined;
  /** Connections kept to the host (default 8). */
  readonly connections?: number | undefined;
  readonly random?: (() => number) | undefined;
}

export class WhatsAppClient {
  readonly #pool: Pool;
  readonly #path: string;
  readonly #authorization: string;
  /** The credentials, which no reason may show (a service may echo the request's headers back). */
  readonly #secrets: readonly string[];
  readonly #timeout: number;
  readonly #retry: { baseMs: number; maxMs: number; maxAttempts: number };
  readonly #random: () => number;

  constructor(opts: WhatsAppClientOptions) {
    const host = serviceHost(opts.baseUrl, 'the WhatsApp baseUrl');
    this.#timeout = opts.timeoutMs ?? 30_000;
    this.#pool = new Pool(host.origin, {
      connections: opts.connections ?? 8,
      pipelining: 1,
      headersTimeout: this.#timeout,
      bodyTimeout: this.#timeout,
      keepAliveTimeout: 4_000,
    });
    this.#path = `${host.basePath}${WHATSAPP_PATH}`;
    const credentials = Buffer.from(`${opts.username}:${opts.password}`).toString('base64');
    this.#authorization = `Basic ${credentials}`;
    this.#secrets = secretsOf([opts.password, credentials]);
    this.#retry = {
      baseMs: opts.retry?.baseMs ?? 5_000,
      maxMs: opts.retry?.maxMs ?? 60_000,
      maxAttempts: opts.retry?.maxAttempts ?? 5,
    };
    this.#random = opts.random ?? Math.random;
  }

  /**
   * Sends each message, all at once; one outcome each, in order. A 401 or 403 stops the
   * messages not yet sent (failed, retryable: sent once the account is fixed).
   */
  async send(
    messages: readonly WhatsAppMessage[],
    signal: AbortSignal = new AbortController().signal,
  ): Promise<{ outcomes: WhatsAppOutcome[]; requests: number }> {
    const run: Run = { signal, requests: 0, refused: null };
    const outcomes = await Promise.all(messages.map((m) => this.#sendOne(run, m)));
    return { outcomes, requests: run.requests };
  }

  close(): Promise<void> {
    return this.#pool.close();
  }

  async #sendOne(run: Run, message: WhatsAppMessage): Promise<WhatsAppOutcome> {
    const body = Buffer.from(
      JSON.stringify({
        source: message.source,
        destination: message.destination,
        templateId: message.templateId,
        parameters: message.parameters,
      }),
    );
    for (let tries = 1; ; tries++) {
      if (run.refused !== null) return failed(run.refused.code, `not sent: ${run.refused.why}`, true);
      if (run.signal.aborted)
        return failed('DROPLINE_ERR_SERVICE_UNAVAILABLE', 'not sent: stopped before it was sent', true);
      run.requests++;
      const answer = await postOnce(this.#pool, {
        path: this.#path,
        body,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          authorization: this.#authorization,
        },
        headersTimeout: this.#timeout,
        bodyTimeout: this.#timeout,
      });
      let retryAfterMs: number | null = null;
      let why: string;
      if (!answer.ok) {
        why = describeError(answer.error);
        if (answer.written) return { kind: 'in_doubt', reason: `${why} after the request was sent` };
      } else {
        const { status } = answer;
        const decision = answerDecision(status, answer.written);
        const parsed = answer.bodyError
          ? null
          : parseBody(answer.text, headerOf(answer.headers, 'content-type'));
        // Received: the transaction number, when the body (not shown by the spec) carries one.
        if (decision === 'accepted') return { kind: 'accepted', messageId: transactionNumberOf(parsed) };
        why = `HTTP ${status}: ${reasonOf(parsed, status, this.#secrets).slice(0, 200)}`;
        switch (decision) {
          case 'unauthorized':
          case 'forbidden':
            run.refused = {
              code: status === 401 ? 'DROPLINE_ERR_SERVICE_AUTH' : 'DROPLINE_ERR_SERVICE_FORBIDDEN',
              why: `the account was refused (${why})`,
            };
            return { kind: decision, reason: why };
          case 'bad_request':
            return { kind: 'rejected', code: 'DROPLINE_ERR_SERVICE_REJECTED', reason: why };
          case 'rate_limited': {
            // At most retry.maxMs: the chunk holds the account's permit meanwhile.
            const hinted = parseRetryAfter(headerOf(answer.headers, 'retry-after'), Date.now());
            retryAfterMs = hinted === null ? null : Math.min(hinted, this.#retry.maxMs);
            break;
          }
          case 'in_doubt':
            return { kind: 'in_doubt', reason: `${why}, a gateway's answer after the request was sent` };
          // One message a request: a body too large has nothing to split.
          case 'too_large':
          case 'failed':
            return failed('DROPLINE_ERR_SERVICE_FAILED', why, false);
        }
      }
      if (tries >= this.#retry.maxAttempts)
        return failed('DROPLINE_ERR_SERVICE_UNAVAILABLE', `${why} (${tries} tries)`, true);
      try {
        await sleep(retryAfterMs ?? backoffDelay(tries, this.#retry, this.#random()), undefined, {
          signal: run.signal,
        });
      } catch {
        return failed('DROPLINE_ERR_SERVICE_UNAVAILABLE', `${why}; stopped before retrying`, true);
      }
    }
  }
}

/** One send of messages: its requests, the stop, and the refusal that stops the rest. */
interface Run {
  readonly signal: AbortSignal;
  requests: number;
  refused: { code: ErrorCode; why: string } | null;
}

function failed(code: ErrorCode, why: string, retryable: boolean): WhatsAppOutcome {
  return { kind: 'failed', code, reason: why, retryable };
}
