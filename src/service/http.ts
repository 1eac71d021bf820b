// One POST on an undici pool, told apart the way a sender must: an answer (with its status,
// even when its body broke off), or no answer, and then whether the request was written
// (in doubt) or never left (safe to send again). Shared by the SMS client and the email client.
import type { Dispatcher, Pool } from 'undici';
import { redactText, redactUrl } from '../core/redact.ts';
import { DroplineError } from '../errors.ts';

/**
 * A service host from its configured URL (`what` names the setting): the origin a Pool dials
 * and the path before the endpoints'. Not a URL, or not http(s): DROPLINE_ERR_CONFIG.
 */
export function serviceHost(baseUrl: string, what: string): { origin: string; basePath: string } {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new DroplineError('DROPLINE_ERR_CONFIG', `${what} is not a URL: ${redactUrl(baseUrl)}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new DroplineError('DROPLINE_ERR_CONFIG', `${what} must start with https:// or http://`);
  return { origin: url.origin, basePath: url.pathname.replace(/\/+$/, '') };
}

export type HttpAnswer =
  | {
      readonly ok: true;
      readonly status: number;
      readonly headers: Record<string, string | string[] | undefined>;
      readonly text: string;
      readonly bodyError: boolean;
      /** Whether the whole request had been handed to the socket when the status line came. */
      readonly written: boolean;
    }
  | { readonly ok: false; readonly written: boolean; readonly error: Error };

/**
 * What an answer means for the request it answers, the same on every channel (docs/service.md,
 * "Which answers are safe to resend"). The channel decides what to do with a bad request (400:
 * SMS bisects, email and WhatsApp reject) and a body too large (413: halves where it can).
 */
export type AnswerDecision =
  /** 2xx: taken. */
  | 'accepted'
  /** 400: the request's structure or content refused. */
  | 'bad_request'
  /** 401: the credentials or the token refused. */
  | 'unauthorized'
  /** 403: the account may not do this (an address not allowed). */
  | 'forbidden'
  /** 413: the body is too large. */
  | 'too_large'
  /** 429: refused before any processing; wait Retry-After, then send again. */
  | 'rate_limited'
  /** The service declined the request (500, 503): safe to send again after a back-off. */
  | 'retry'
  /** The request may have been processed (502, 504 and other 5xx): never resent by the client. */
  | 'in_doubt'
  /** Refused for good (any other status): nothing was processed, sending again cannot help. */
  | 'failed';

/**
 * The decision for `status`, answered to a request whose body was (`written`) or was not yet
 * wholly handed to the socket. A gateway (every deployment has one: a load balancer, a proxy)
 * answers 502 when its connection to the backend broke and 504 when the backend did not answer
 * in time: the backend may have taken the request either way, and the service has no
 * idempotency key. An answer that came before the whole body was written cannot be to a
 * request anyone processed: any in-doubt status is then safe to retry.
 */
export function answerDecision(status: number, written: boolean): AnswerDecision {
  if (status >= 200 && status < 300) return 'accepted';
  switch (status) {
    case 400:
      return 'bad_request';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 413:
      return 'too_large';
    case 429:
      return 'rate_limited';
    // 500: the service's own error (a gateway relays it; its own failures are 502/504), and the
    // service asks to retry it "after a few minutes" (docs/service.md "Answers"). 503: unavailable,
    // the request not handled (RFC 9110 15.6.4); the service itself resends its notifications on a
    // 503 only.
    case 500:
    case 503:
      return 'retry';
    // The server does not do this at all (RFC 9110 15.6.2, 15.6.6): nothing was processed.
    case 501:
    case 505:
      return 'failed';
  }
  if (status >= 500 && status < 600) return written ? 'in_doubt' : 'retry';
  return 'failed';
}

export function postOnce(
  pool: Pool,
  request: {
    readonly path: string;
    readonly body: Buffer;
    readonly headers: Record<string, string>;
    readonly headersTimeout: number;
    readonly bodyTimeout: number;
  },
): Promise<HttpAnswer> {
  return new Promise((resolve) => {
    let written = false;
    let sentBeforeAnswer = false;
    let status = 0;
    let resHeaders: Record<string, string | string[] | undefined> = {};
    const chunks: Buffer[] = [];
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart() {},
      onRequestSent() {
        written = true;
      },
      onResponseStart(_controller, statusCode, h) {
        status = statusCode;
        sentBeforeAnswer = written;
        resHeaders = h;
      },
      onResponseData(_controller, chunk) {
        chunks.push(chunk);
      },
      onResponseEnd() {
        resolve({
          ok: true,
          status,
          headers: resHeaders,
          text: Buffer.concat(chunks).toString('utf8'),
          bodyError: false,
          written: sentBeforeAnswer,
        });
      },
      onResponseError(_controller, error) {
        // Once the status line arrived the service has answered: the outcome follows the status.
        if (status !== 0)
          resolve({
            ok: true,
            status,
            headers: resHeaders,
            text: '',
            bodyError: true,
            written: sentBeforeAnswer,
          });
        else resolve({ ok: false, written, error });
      },
    };
    try {
      pool.dispatch({ method: 'POST', ...request }, handler);
    } catch (error) {
      resolve({ ok: false, written: false, error: error as Error });
    }
  });
}

export function headerOf(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** An error as a short, secret-free line: its code and message, URLs without their query. */
export function describeError(error: Error): string {
  const code = (error as { code?: unknown }).code;
  const text = typeof code === 'string' ? `${code}: ${error.message}` : error.message || error.name;
  return redactText(text);
}
