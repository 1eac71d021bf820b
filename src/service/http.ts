// One POST on an undici pool, told apart the way a sender must: an answer (with its status,
// even when its body broke off), or no answer, and then whether the request was written
// (in doubt) or never left (safe to send again). Shared by the SMS client and the email client.
import type { Dispatcher, Pool } from 'undici';
import { DroplineError } from '../errors.ts';
import { redactText, redactUrl } from './redact.ts';

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
    }
  | { readonly ok: false; readonly written: boolean; readonly error: Error };

/** Statuses retried with back-off: the service struggling, not refusing. */
export const RETRYABLE_STATUS = new Set([500, 502, 503, 504]);

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
        });
      },
      onResponseError(_controller, error) {
        // Once the status line arrived the service has answered: the outcome follows the status.
        if (status !== 0) resolve({ ok: true, status, headers: resHeaders, text: '', bodyError: true });
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
