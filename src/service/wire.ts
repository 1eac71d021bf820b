// DTO ⇄ domain for the messaging service (docs/service.md "The service interface, as dropline uses
// it"). Pure: no I/O, no clock; every function here is a value in, value out.

import { redactSecrets } from '../core/redact.ts';
import { DroplineError } from '../errors.ts';

// The planned chunk (its messages, destinations and `via`) is the planner's: src/plan/chunks.ts.
import type { Destination, MtMessageVia, PlannedChunk, PlannedMessage } from '../plan/chunks.ts';

export type { Destination, MtMessageVia, PlannedChunk, PlannedMessage } from '../plan/chunks.ts';

export interface NotifySettings {
  /** Used exactly as given; its query string carries the receiver token. */
  readonly notifyUrl?: string | undefined;
  readonly notifyContentType?: string | undefined;
}

export const MAX_CALLBACK_DATA_CHARS = 200;

/** A contiguous slice [start, end) of a chunk's destinations, counted across its messages in order. */
export interface ChunkPart {
  readonly chunkId: string;
  /** `chunkId` for the whole chunk, `chunkId#start-end` for a split or bisected part. */
  readonly partId: string;
  readonly start: number;
  readonly end: number;
  readonly chunk: PlannedChunk;
}

export function countDestinations(chunk: PlannedChunk): number {
  let n = 0;
  for (const m of chunk.messages) n += m.destinations.length;
  return n;
}

export function wholePart(chunk: PlannedChunk): ChunkPart {
  return { chunkId: chunk.chunkId, partId: chunk.chunkId, start: 0, end: countDestinations(chunk), chunk };
}

export function subPart(part: ChunkPart, start: number, end: number): ChunkPart {
  return { chunkId: part.chunkId, partId: `${part.chunkId}#${start}-${end}`, start, end, chunk: part.chunk };
}

/** The part's messages, each keeping only the destinations inside [start, end). */
export function partMessages(part: ChunkPart): PlannedMessage[] {
  const out: PlannedMessage[] = [];
  let offset = 0;
  for (const m of part.chunk.messages) {
    const from = Math.max(part.start - offset, 0);
    const to = Math.min(part.end - offset, m.destinations.length);
    if (from < to) {
      out.push(
        from === 0 && to === m.destinations.length
          ? m
          : { text: m.text, destinations: m.destinations.slice(from, to) },
      );
    }
    offset += m.destinations.length;
    if (offset >= part.end) break;
  }
  return out;
}

export function partDestinations(part: ChunkPart): Destination[] {
  return partMessages(part).flatMap((m) => m.destinations);
}

/**
 * Throws DROPLINE_ERR_SERVICE_BAD_CHUNK when the chunk cannot become a valid POST
 * /mtmessage/massive body.
 */
export function checkChunk(chunk: PlannedChunk): void {
  if (countDestinations(chunk) === 0) {
    throw new DroplineError('DROPLINE_ERR_SERVICE_BAD_CHUNK', `chunk ${chunk.chunkId} has no destination`);
  }
  if (chunk.callbackData !== undefined && chunk.callbackData.length > MAX_CALLBACK_DATA_CHARS) {
    throw new DroplineError(
      'DROPLINE_ERR_SERVICE_BAD_CHUNK',
      `chunk ${chunk.chunkId}: callbackData has ${chunk.callbackData.length} characters, at most ${MAX_CALLBACK_DATA_CHARS} are allowed`,
    );
  }
}

/**
 * Turns a callback object into the escaped JSON text the batch endpoint asks for, refusing more
 * than 200 characters.
 */
export function encodeCallbackData(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined || text.length > MAX_CALLBACK_DATA_CHARS) {
    throw new DroplineError(
      'DROPLINE_ERR_SERVICE_BAD_CHUNK',
      `callbackData must be JSON of at most ${MAX_CALLBACK_DATA_CHARS} characters`,
    );
  }
  return text;
}

/** Messages written into one string before it is copied into the body (massiveBody). */
const BODY_GROUP = 64;

/**
 * The JSON body of POST /mtmessage/massive for a part, as bytes: the bytes of JSON.stringify
 * of the whole, keys in a fixed order, so the same part always gives the same bytes (a
 * resend is recognisable byte for byte). Each message is written as text, its destinations
 * by one JSON.stringify of their list (planChunk makes them exactly `{to, messageId}`), and
 * BODY_GROUP messages a string: no object a message, one copy into the Buffer a group, and
 * never a 100+ KB string per request, which V8 puts straight into the old generation, where
 * only a full GC frees it (peak RSS grew by ~100 MB while sending a personalized file).
 */
export function massiveBody(part: ChunkPart, notify: NotifySettings): Buffer {
  // What follows each message's text, the same for every message of the request.
  let tail = '';
  if (part.chunk.shortCode !== undefined) tail += `,"shortCode":${JSON.stringify(part.chunk.shortCode)}`;
  if (notify.notifyUrl !== undefined) tail += `,"notifyUrl":${JSON.stringify(notify.notifyUrl)}`;
  if (notify.notifyContentType !== undefined)
    tail += `,"notifyContentType":${JSON.stringify(notify.notifyContentType)}`;
  if (part.chunk.callbackData !== undefined)
    tail += `,"callbackData":${JSON.stringify(part.chunk.callbackData)}`;
  tail += '}';
  const groups: string[] = [];
  let group = `{"bulkId":${JSON.stringify(part.chunk.bulkId)},"messages":[`;
  const messages = partMessages(part);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    group += `${i > 0 ? ',' : ''}{"destinations":${JSON.stringify(m.destinations)},"text":${JSON.stringify(m.text)}${tail}`;
    if ((i + 1) % BODY_GROUP === 0) {
      groups.push(group);
      group = '';
    }
  }
  groups.push(`${group}]}`);
  let bytes = 0;
  for (const g of groups) bytes += Buffer.byteLength(g);
  const body = Buffer.allocUnsafe(bytes);
  let at = 0;
  for (const g of groups) at += body.write(g, at);
  return body;
}

/**
 * The JSON body of POST /mtmessage (docs/sandbox.md "POST /mtmessage") for a part: Type 1
 * (`MessageText` to every device) when its recipients share one text, else Type 2 (`MessagePattern`
 * `{0}` and one `MessageData` value list a device, in the order of `Devices`, the sandbox's reading
 * of a structure the service does not show); `Devices` joined by `-`.
 */
export function mtMessageBody(part: ChunkPart, via: MtMessageVia): Buffer {
  const messages = partMessages(part);
  const devices = messages.flatMap((m) => m.destinations.map((d) => d.to)).join('-');
  const body: Record<string, unknown> =
    messages.length === 1
      ? { Type: 1, Devices: devices, MessageText: messages[0]!.text }
      : {
          Type: 2,
          Devices: devices,
          MessagePattern: '{0}',
          MessageData: messages.flatMap((m) => m.destinations.map(() => [m.text])),
        };
  body.Channel = via.channel;
  if (via.flash) body.FlashSMS = 1;
  body.CustomMessageId = via.customMessageId;
  body.CallbackData = via.callbackData;
  return Buffer.from(JSON.stringify(body));
}

/**
 * POST /mtmessage's answer (docs/service.md "Answers"): `Status` 0 accepted; 1 a business rejection, its
 * reason in `MessageText`; anything else (no body, no Status) unclear: a 200 may be either, so
 * the recipients are in doubt rather than sent.
 */
export function mtMessageAnswer(
  body: unknown,
  /** What the request carried, kept out of the reason (reasonOf). */
  secrets: readonly string[],
): { kind: 'accepted' } | { kind: 'rejected'; reason: string } | { kind: 'unclear' } {
  if (typeof body !== 'object' || body === null) return { kind: 'unclear' };
  const { Status, MessageText } = body as { Status?: unknown; MessageText?: unknown };
  if (Status === 0 || Status === '0') return { kind: 'accepted' };
  if (Status !== 1 && Status !== '1') return { kind: 'unclear' };
  const reason =
    typeof MessageText === 'string' && MessageText.trim() !== '' ? MessageText.trim() : 'Status 1';
  return { kind: 'rejected', reason: redactSecrets(reason, secrets) };
}

// ---- token ----

export type TokenGrant =
  | { readonly grant: 'password' }
  | { readonly grant: 'refresh_token'; readonly refreshToken: string };

export function tokenRequestBody(grant: TokenGrant): string {
  return grant.grant === 'password'
    ? JSON.stringify({ grant_type: 'password' })
    : JSON.stringify({ grant_type: 'refresh_token', refresh_token: grant.refreshToken });
}

export interface TokenPolicy {
  /**
   * Milliseconds per unit of `expires_in` (not documented, docs/service.md "Tokens"; default 1000:
   * seconds).
   */
  readonly expiresInUnitMs: number;
  /**
   * Upper bound on a token's lifetime whatever `expires_in` says (default 4 h, docs/service.md
   * "Tokens").
   */
  readonly maxLifetimeMs: number;
}

export interface Token {
  readonly accessToken: string;
  readonly refreshToken: string | null;
  readonly tokenType: string;
  /** Lifetime as understood by the client after the unit and cap are applied. */
  readonly lifetimeMs: number;
}

/** Parses a /token answer; null when it carries no usable access_token. */
export function parseTokenResponse(body: unknown, policy: TokenPolicy): Token | null {
  if (typeof body !== 'object' || body === null) return null;
  const o = body as Record<string, unknown>;
  if (typeof o.access_token !== 'string' || o.access_token === '') return null;
  const raw = typeof o.expires_in === 'string' ? Number(o.expires_in) : o.expires_in;
  const lifetimeMs =
    typeof raw === 'number' && Number.isFinite(raw) && raw > 0
      ? Math.min(raw * policy.expiresInUnitMs, policy.maxLifetimeMs)
      : policy.maxLifetimeMs;
  return {
    accessToken: o.access_token,
    refreshToken: typeof o.refresh_token === 'string' && o.refresh_token !== '' ? o.refresh_token : null,
    tokenType: typeof o.token_type === 'string' ? o.token_type : 'bearer',
    lifetimeMs,
  };
}

// ---- responses ----

/** Parses a response body as JSON when it looks like JSON; otherwise keeps the text (or null when empty). */
export function parseBody(text: string, contentType: string | undefined): unknown {
  if (text === '') return null;
  const looksJson = /\bjson\b/i.test(contentType ?? '') || /^\s*[[{"]/.test(text);
  if (looksJson) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

/**
 * The transaction number of an accepted send, when the body carries one (docs/service.md
 * "transactionNumber").
 */
export function transactionNumberOf(body: unknown): string | null {
  if (typeof body !== 'object' || body === null) return null;
  const o = body as Record<string, unknown>;
  for (const key of ['transactionNumber', 'TransactionNumber', 'transactionId']) {
    const v = o[key];
    if (typeof v === 'string' && v !== '') return v;
    if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  }
  return null;
}

const REASON_KEYS = ['message', 'Message', 'MessageText', 'error_description', 'reason', 'error', 'detail'];

/**
 * A human-readable reason out of an error answer, masked and at most 500 characters, without
 * any of `secrets` (what the request carried: a service may echo it back).
 */
export function reasonOf(body: unknown, status: number, secrets: readonly string[]): string {
  let reason: string | null = null;
  if (typeof body === 'string') reason = body.trim();
  else if (typeof body === 'object' && body !== null) {
    const o = body as Record<string, unknown>;
    for (const key of REASON_KEYS) {
      const v = o[key];
      if (typeof v === 'string' && v.trim() !== '') {
        reason = v.trim();
        break;
      }
    }
    reason ??= JSON.stringify(body);
  }
  return redactSecrets(reason || `HTTP ${status} without a body`, secrets);
}

/** Retry-After as milliseconds from `now`: delta-seconds (fractions allowed) or an HTTP date. */
export function parseRetryAfter(value: string | undefined, now: number): number | null {
  if (value === undefined) return null;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

export interface BackoffPolicy {
  readonly baseMs: number;
  readonly maxMs: number;
}

/**
 * Delay before retry number `retry` (1 = first retry): base doubling up to max, with "equal
 * jitter" (half fixed, half random) so a fleet retrying together spreads out but never
 * retries sooner than half the schedule.
 */
export function backoffDelay(retry: number, policy: BackoffPolicy, random: number): number {
  const exp = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, retry - 1));
  return Math.round(exp / 2 + (exp / 2) * random);
}
