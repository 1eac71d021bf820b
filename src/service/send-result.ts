// What ServiceClient.sendChunk resolves with: one result per part of the chunk, each with its
// outcome (docs/service.md "Outcomes").
import type { ErrorCode } from '../errors.ts';
import { type ChunkPart, type Destination, partDestinations } from './wire.ts';

export type FailureKind = 'rejected' | 'forbidden' | 'unauthorized' | 'failed' | 'in_doubt';

export type SendOutcome =
  | {
      readonly kind: 'accepted';
      readonly status: number;
      /** Parsed when JSON, text otherwise, null when empty or unreadable. */
      readonly body: unknown;
      readonly transactionNumber: string | null;
      readonly attempts: number;
    }
  | {
      /**
       * rejected: 400 for this (isolated) part, nothing of it was accepted;
       * forbidden: 403, pause the account with `reason` (the service's message);
       * unauthorized: credentials refused or a second 401, pause the account;
       * failed: retries exhausted or an unexpected answer, nothing of it was accepted;
       * in_doubt: the body may have reached the service, no answer came back.
       */
      readonly kind: FailureKind;
      readonly code: ErrorCode;
      /** HTTP status of the last answer, null when there was none. */
      readonly status: number | null;
      /** Human-readable, with phone numbers masked and URL query strings removed. */
      readonly reason: string;
      readonly retryable: boolean;
      readonly attempts: number;
    };

/** A part's outcome but for its count of requests, which the sending loop adds. */
export type PartEnd = DistributiveOmit<SendOutcome, 'attempts'>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** One slice [start, end) of the chunk's destinations (counted across its messages in order). */
export interface PartResult {
  readonly partId: string;
  readonly start: number;
  readonly end: number;
  readonly destinations: readonly Destination[];
  readonly outcome: SendOutcome;
}

/** Every destination of the chunk is in exactly one part; parts are ordered by `start`. */
export interface SendResult {
  readonly chunkId: string;
  readonly destinations: number;
  readonly parts: readonly PartResult[];
}

/** The part's one result, after `attempts` requests. */
export function partResult(part: ChunkPart, end: PartEnd, attempts: number): PartResult[] {
  return [
    {
      partId: part.partId,
      start: part.start,
      end: part.end,
      destinations: partDestinations(part),
      outcome: { ...end, attempts },
    },
  ];
}
