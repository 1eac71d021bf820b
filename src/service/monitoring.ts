// The messaging service's monitoring endpoints (docs/sandbox.md "Monitoring"), as the dashboard's
// "Service health" shows them. Their query parameters and response fields are "not shown", so
// nothing here reads into a body: it is kept as the service sent it (parsed JSON, or text).
// Pure, like wire.ts: the requests themselves are ServiceClient.monitoring() (client.ts), with
// the account's own token and pool, and no send permit (monitoring is not a send).

import { redactText, scrubSecrets } from '../core/redact.ts';

export type MonitoringName = 'platformmonitory' | 'effectivitybyclient' | 'msgmtclient';

export interface MonitoringEndpoint {
  name: MonitoringName;
  /** The endpoint's path on {base_url}, without a query string. */
  path: string;
  /** A 2xx answer within the time-out. */
  ok: boolean;
  /** HTTP status of the last answer; null when none came. */
  status: number | null;
  /** From the start (the token wait included) to the answer or the failure. */
  ms: number;
  /** The answer's body: parsed JSON, else its text (at most 64 KiB); null without a body. */
  data: unknown;
  /** Why not ok, secret-free (no token, no query string, numbers masked); null when ok. */
  error: string | null;
}

export interface ServiceHealth {
  /** The account's name in the configuration ("default": the `api` credentials). */
  account: string;
  /** ISO-8601, when the check started. */
  checkedAt: string;
  endpoints: MonitoringEndpoint[];
}

/** One account's check, as ServiceClient.monitoring() answers it. */
export type AccountHealth = Omit<ServiceHealth, 'account'>;

export const MONITORING_ENDPOINTS: readonly { readonly name: MonitoringName; readonly path: string }[] = [
  { name: 'platformmonitory', path: '/platformmonitory' },
  { name: 'effectivitybyclient', path: '/bireports/effectivitybyclient' },
  { name: 'msgmtclient', path: '/bireports/msgmtclient' },
];

/** Per endpoint, the token wait, a renewal after a 401 and the body included. */
export const MONITORING_TIMEOUT_MS = 5000;
/** A body that is not JSON is kept as text up to this many bytes. */
export const MONITORING_TEXT_BYTES = 64 * 1024;
/** Bytes read of an answer at most (a longer one is cut there, and so is not JSON). */
export const MONITORING_READ_BYTES = 1024 * 1024;

/** An answer's body as kept: JSON when it is (whole) JSON, else text cut to 64 KiB; null when empty. */
export function monitoringData(body: Buffer, contentType: string | undefined, complete = true): unknown {
  if (body.length === 0) return null;
  if (complete) {
    const text = body.toString('utf8');
    if (/\bjson\b/i.test(contentType ?? '') || /^\s*[[{"]/.test(text)) {
      try {
        return JSON.parse(text);
      } catch {
        // kept as text
      }
    }
  }
  return body.subarray(0, MONITORING_TEXT_BYTES).toString('utf8');
}

/**
 * `value` fit for the dashboard: without any of `secrets` (the bearer tokens the check used:
 * a service that echoed one back would otherwise hand it over), and with phone-number-shaped
 * digit runs masked in its texts and numbers (the service's fields are not documented: one
 * may list destinations), URL query strings removed.
 */
export function withoutSecrets(value: unknown, secrets: readonly string[]): unknown {
  const live = secrets.filter((s) => s.length > 0);
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redactText(scrubSecrets(v, live));
    if (typeof v === 'number' && Number.isInteger(v) && Math.abs(v) >= 1e7 && Math.abs(v) < 1e15)
      return redactText(String(v));
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === 'object' && v !== null)
      return Object.fromEntries(
        Object.entries(v).map(([k, x]) => [redactText(scrubSecrets(k, live)), walk(x)]),
      );
    return v;
  };
  return walk(value);
}

/** Anything that checks an account's monitoring endpoints (a ServiceClient). */
export interface Monitored {
  monitoring(): Promise<AccountHealth>;
}

/** Every account's check, at once, in the map's order. Never rejects. */
export function serviceHealth(accounts: ReadonlyMap<string, Monitored>): Promise<ServiceHealth[]> {
  return Promise.all(
    [...accounts].map(async ([account, client]) => ({ account, ...(await client.monitoring()) })),
  );
}
