// Status notification bodies (docs/service.md "Status notifications") → DeliveryEvents. Pure.
//
// A 400 is final for the service: the report is lost for good (the table in docs/service.md
// "Status notifications"). So the decoder is strict only where an event would be useless without
// the field (transactionNumber and to, the idempotency key; status.name, the news) and lenient
// everywhere else: an optional field of an odd shape becomes null or text rather than a
// rejection.
//
// `results` "always has exactly one element"; more than one is decoded element by element (it
// costs nothing and loses nothing), and one bad element rejects the whole body so a retry can
// never record half of it. Reasons name the field by path and never echo a value: the value may
// be a phone number.
import { type DeliveryEvent, PENDING_DELIVERY } from '../store/store.ts';

export type DecodeResult =
  | { readonly ok: true; readonly events: DeliveryEvent[] }
  | { readonly ok: false; readonly reason: string };

/** More elements than this in one body is not a status notification. */
export const MAX_RESULTS = 1000;

/**
 * transactionNumber and `to` longer than this are no transaction number (28 digits) or phone
 * number: refused (400, final) rather than passed to the store, where they are the idempotency
 * key and would fail the whole group's commit on PostgreSQL (an index row holds at most 2704
 * bytes): a 503 for the good reports committed with it, and for it, retried for nothing.
 */
export const MAX_KEY_LENGTH = 256;

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes one notification body. The content type is not consulted: the service's account
 * webhook does not say what it sends, and a JSON body is read as JSON whatever its label.
 */
export function decodeNotification(body: string | Uint8Array, receivedAt: string): DecodeResult {
  let text: string;
  if (typeof body === 'string') text = body;
  else {
    try {
      text = decoder.decode(body);
    } catch {
      return fail('the body is not UTF-8 text');
    }
  }
  let root: unknown;
  try {
    root = JSON.parse(text);
  } catch {
    return fail(text.trim() === '' ? 'the body is empty' : 'the body is not JSON');
  }
  if (!isObject(root)) return fail('the body must be a JSON object');
  const results = root.results;
  if (!Array.isArray(results)) return fail('results is required and must be an array');
  if (results.length === 0) return fail('results must not be empty');
  if (results.length > MAX_RESULTS) return fail(`results has more than ${MAX_RESULTS} elements`);
  const events: DeliveryEvent[] = [];
  for (let i = 0; i < results.length; i++) {
    const decoded = decodeResult(results[i], `results[${i}]`, receivedAt);
    if (typeof decoded === 'string') return fail(decoded);
    events.push(decoded);
  }
  return { ok: true, events };
}

/** One element of `results`, or the reason it cannot be recorded. */
function decodeResult(value: unknown, at: string, receivedAt: string): DeliveryEvent | string {
  if (!isObject(value)) return `${at} must be an object`;
  const transactionNumber = key(value.transactionNumber);
  if (transactionNumber === undefined) return `${at}.transactionNumber is required text`;
  if (transactionNumber.length > MAX_KEY_LENGTH)
    return `${at}.transactionNumber is longer than ${MAX_KEY_LENGTH} characters`;
  const to = key(value.to);
  if (to === undefined) return `${at}.to is required text`;
  if (to.length > MAX_KEY_LENGTH) return `${at}.to is longer than ${MAX_KEY_LENGTH} characters`;
  const status = value.status;
  if (!isObject(status)) return `${at}.status is required and must be an object`;
  const name = typeof status.name === 'string' ? noNul(status.name).trim() : '';
  if (name === '') return `${at}.status.name is required text`;
  // `pending` is dropline's "no report yet" (every other name is final): recorded, it would
  // turn a recipient already reported back into one without a report, out of the counts.
  if (name === PENDING_DELIVERY) return `${at}.status.name is not a delivery status`;
  return {
    transactionNumber,
    to,
    messageId: optionalText(value.messageId) ?? '',
    bulkId: optionalText(value.bulkId) ?? '',
    callbackData: callbackData(value.callbackData),
    smsCount: smsCount(value.smsCount),
    status: name,
    receivedAt,
  };
}

/**
 * Text identifiers (transactionNumber, to). A JSON number is accepted only when it survived
 * JSON.parse exactly: a 28-digit transaction number as a number has lost digits already, and
 * recording it would break idempotency.
 */
function key(value: unknown): string | undefined {
  if (typeof value === 'string') {
    const s = noNul(value).trim();
    return s === '' ? undefined : s;
  }
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return String(value);
  return undefined;
}

/** messageId, bulkId: text, a number as text, anything else (absent, null, objects) as absent. */
function optionalText(value: unknown): string | null {
  if (typeof value === 'string') return noNul(value);
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

/**
 * Notifications carry it as text; POST /mtmessage sends "the object converted to JSON text", which
 * a sender might not do. A value nested too deep to write back as text (JSON.parse reads ~64 KiB of
 * `[` that JSON.stringify overflows the stack on) is unknown, not a thrown error: that would crash
 * the process from the request's end handler.
 */
function callbackData(value: unknown): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value === 'string') return noNul(value);
  try {
    return JSON.stringify(value);
  } catch {
    return null;
  }
}

/** A segment count: a non-negative integer, as a number or as digits; anything else is unknown. */
function smsCount(value: unknown): number | null {
  // At most a 32-bit integer (the column on PostgreSQL): a larger count is no count.
  if (typeof value === 'number')
    return Number.isSafeInteger(value) && value >= 0 && value < 2 ** 31 ? value : null;
  if (typeof value === 'string' && /^\s*\d{1,9}\s*$/.test(value)) return Number(value);
  return null;
}

/** Text without NUL characters: PostgreSQL text cannot hold one, and no id or status has one. */
function noNul(s: string): string {
  return s.includes('\0') ? s.replaceAll('\0', '') : s;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fail(reason: string): DecodeResult {
  return { ok: false, reason };
}
