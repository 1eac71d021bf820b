// What every service endpoint of the sandbox answers with: JSON, the HTTP-status faults, and
// Basic credentials read from the header.
import type { ServerResponse } from 'node:http';
import type { Fired } from './faults.ts';

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Answers the HTTP-status faults; returns false for the ones applied later (timeout, reset, revoke). */
export function applyStatusFault(
  fired: Fired,
  res: ServerResponse,
  done: (status: number, body: unknown) => void,
): boolean {
  const status = Number(fired.kind);
  if (!Number.isInteger(status)) return false;
  if (status === 429) res.setHeader('retry-after', fired.rule.retryAfter ?? '1');
  done(status, { message: `injected fault ${fired.kind}` });
  return true;
}

export function parseBasic(header: string | undefined): { username: string; password: string } | null {
  const m = /^Basic\s+(\S+)$/i.exec(header ?? '');
  if (!m) return null;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return null;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** A request as the service endpoints log it (GET /_sandbox/requests). */
export interface RequestRecord {
  readonly endpoint: string;
  readonly status: number;
  /** For /token: the grant type. */
  readonly grant?: string | undefined;
  /** For /mtmessage/massive: destinations in the body (0 when unreadable); /mtmessage: devices. */
  readonly destinations?: number | undefined;
  /** For /mtmessage/massive and monitoring: the account whose token the request carried, once checked. */
  readonly account?: string | undefined;
  /** For /mtmessage/massive: the body's bulkId, when the body was read. */
  readonly bulkId?: string | undefined;
  /**
   * For /momessage: the body's ShortCode; for /mtmessage/massive: its messages' shortCode
   * values, distinct, joined by `,` (absent: none carried one).
   */
  readonly shortCode?: string | undefined;
  /** For /email/v1/deliver: recipients in the body's payload (0 when unreadable). */
  readonly recipients?: number | undefined;
  readonly fault?: string | undefined;
  readonly at: number;
}

/** A request's body read as JSON, or the answer refusing it: 413 too large (null), 400 not JSON. */
export function jsonBody(
  raw: Buffer | null,
):
  | { readonly ok: true; readonly body: unknown }
  | { readonly ok: false; readonly status: 400 | 413; readonly message: string } {
  if (raw === null) return { ok: false, status: 413, message: 'the body is too large' };
  try {
    return { ok: true, body: JSON.parse(raw.toString('utf8')) };
  } catch {
    return { ok: false, status: 400, message: 'the body is not valid JSON' };
  }
}
