// What the client publishes of every request it makes, for metrics and the outage detector
// (docs/service.md "Observing attempts"): on node:diagnostics_channel, and as the client's own
// 'attempt' and 'token' events, the same objects. No numbers, no tokens.
import diagnosticsChannel from 'node:diagnostics_channel';
import type { EventEmitter } from 'node:events';
import type { TokenGrant } from './wire.ts';

export const ATTEMPT_CHANNEL = 'dropline:service:attempt';
export const TOKEN_CHANNEL = 'dropline:service:token';

export type AttemptResult =
  | 'accepted'
  | 'rejected'
  | 'bisect'
  | 'split'
  | 'retry'
  | 'rate_limited'
  | 'reauth'
  | 'unauthorized'
  | 'forbidden'
  | 'failed'
  | 'in_doubt';

/** Published for every HTTP attempt of POST /mtmessage/massive. No numbers, no tokens. */
export interface AttemptEvent {
  readonly chunkId: string;
  readonly partId: string;
  /** 1-based count of requests made for this part. */
  readonly attempt: number;
  readonly destinations: number;
  /** HTTP status, 0 when no answer came. */
  readonly status: number;
  readonly latencyMs: number;
  readonly result: AttemptResult;
  /** Whether the body was handed to the socket (only meaningful when status is 0). */
  readonly written: boolean;
  readonly error?: string | undefined;
  /** Wait before the next attempt, for retry and rate_limited. */
  readonly delayMs?: number | undefined;
}

export interface TokenEvent {
  readonly grant: TokenGrant['grant'];
  readonly attempt: number;
  readonly status: number;
  readonly latencyMs: number;
  readonly error?: string | undefined;
}

const attemptChannel = diagnosticsChannel.channel(ATTEMPT_CHANNEL);
const tokenChannel = diagnosticsChannel.channel(TOKEN_CHANNEL);

export function publishAttempt(client: EventEmitter, event: AttemptEvent): void {
  if (attemptChannel.hasSubscribers) attemptChannel.publish(event);
  client.emit('attempt', event);
}

export function publishToken(client: EventEmitter, event: TokenEvent): void {
  if (tokenChannel.hasSubscribers) tokenChannel.publish(event);
  client.emit('token', event);
}
