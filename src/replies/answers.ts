// Answers to users' replies (docs/opt-outs.md "Answers"): the help text, the confirmation of an
// opt-out or an opt-in, sent back to the number through the service's two-way SMS,
// `POST /momessage`, from the short code the reply was sent to: with the two-way account of
// that short code when there is one (its own client, token and retries), else with the SMS
// account's token (a minimal client, below).
import { redactText } from '../core/redact.ts';
import type { RecipientOutcome } from '../service/channel-account.ts';
import { serviceHost } from '../service/http.ts';

/**
 * Sends one text to `to` from `shortCode`; rejects when the service did not take it: with
 * AnswerNotTaken when it surely did not (the answer may go again), any other error when it
 * may have (never sent again).
 */
export interface ReplyAnswerer {
  answer(to: string, shortCode: string, text: string): Promise<void>;
}

/**
 * The service refused the answer without taking it: a 429, 500 or 503 (answered at once, nothing
 * accepted), or a connection never made. docs/opt-outs.md "Answers": it stays owed.
 */
export class AnswerNotTaken extends Error {}

/** Statuses that take nothing (as the two-way client retries them). */
const NOT_TAKEN_STATUSES = new Set([429, 500, 503]);
/** Connection errors before any byte of the request was written. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** The account's bearer token, shared with its sends (the service keeps one token an account). */
export interface BearerTokens {
  get(): Promise<string>;
  /** The token a 401 answered: the next get() renews it. */
  invalidate(token: string): void;
}

export interface MoMessageAnswererOptions {
  /** The service's base URL (the SMS host: the token is the SMS account's). */
  readonly baseUrl: string;
  readonly tokens: BearerTokens;
  readonly timeoutMs?: number | undefined;
}

/**
 * A minimal `POST /momessage` client: one request an answer, `{MessageText, PhoneNumber,
 * ShortCode}`, Bearer; `Message: OK` is taken, anything else rejects with the service's
 * `Status`. A 401 renews the token and tries once more; nothing else is retried (an answer
 * is worth less than sending it twice).
 */
export class MoMessageAnswerer implements ReplyAnswerer {
  readonly #url: string;
  readonly #tokens: BearerTokens;
  readonly #timeoutMs: number;

  constructor(options: MoMessageAnswererOptions) {
    const host = serviceHost(options.baseUrl, 'api.baseUrl');
    this.#url = `${host.origin}${host.basePath}/momessage`;
    this.#tokens = options.tokens;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  async answer(to: string, shortCode: string, text: string): Promise<void> {
    const body = JSON.stringify({ MessageText: text, PhoneNumber: to, ShortCode: shortCode });
    for (let attempt = 1; ; attempt++) {
      // No token, no request: the answer was not taken, and is owed again.
      const token = await this.#tokens.get().catch((err: Error) => {
        throw new AnswerNotTaken(`POST /token: ${redactText(err.message)}`);
      });
      const res = await fetch(this.#url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(this.#timeoutMs),
      }).catch((err: Error) => {
        const code = (err.cause as NodeJS.ErrnoException | undefined)?.code;
        if (code !== undefined && NOT_CONNECTED.has(code))
          throw new AnswerNotTaken(`POST /momessage: ${code}`);
        throw err;
      });
      const answer = await res.text();
      if (res.status === 401 && attempt === 1) {
        this.#tokens.invalidate(token);
        continue;
      }
      if (!res.ok) {
        const Refused = NOT_TAKEN_STATUSES.has(res.status) ? AnswerNotTaken : Error;
        throw new Refused(`POST /momessage answered ${res.status}: ${shown(answer, token)}`);
      }
      const parsed = parseAnswer(answer);
      if (parsed?.Message !== 'OK')
        throw new Error(
          `POST /momessage: ${parsed?.Message ?? 'no Message'} (Status ${parsed?.Status ?? '?'})`,
        );
      return;
    }
  }
}

function parseAnswer(text: string): { Message?: unknown; Status?: unknown } | null {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' ? (v as { Message?: unknown; Status?: unknown }) : null;
  } catch {
    return null;
  }
}

/** The service's answer as a reason: short, no token (a service may echo a request back). */
function shown(text: string, token: string): string {
  return redactText(text.split(token).join('***')).slice(0, 200);
}

/** What an answer needs of a two-way account's client (src/channels/twoway/client.ts). */
export interface TwoWaySender {
  send(
    messages: readonly { text: string; phoneNumber: string; shortCode: string }[],
  ): Promise<{ outcomes: readonly RecipientOutcome[] }>;
}

/** Answers through a two-way account's client: taken when its one message is accepted. */
export function twoWayAnswerer(client: TwoWaySender): ReplyAnswerer {
  return {
    async answer(to, shortCode, text) {
      const [o] = (await client.send([{ text, phoneNumber: to, shortCode }])).outcomes;
      if (!o) throw new Error('POST /momessage: no answer');
      if (o.kind === 'failed' && o.retryable)
        throw new AnswerNotTaken(`POST /momessage: ${o.kind}: ${o.reason}`);
      if (o.kind !== 'accepted') throw new Error(`POST /momessage: ${o.kind}: ${o.reason}`);
    },
  };
}

/** Each short code's own answerer (its two-way account's), else `fallback` (the SMS account's). */
export function answerersByShortCode(
  byShortCode: ReadonlyMap<string, ReplyAnswerer>,
  fallback: ReplyAnswerer,
): ReplyAnswerer {
  return {
    answer: (to, shortCode, text) => (byShortCode.get(shortCode) ?? fallback).answer(to, shortCode, text),
  };
}
