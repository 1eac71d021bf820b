// The one rule for what state a sent chunk ends in, whatever its channel (docs/architecture.md
// "Channels"): from how many of its parts (or recipients) each outcome had.

/** A chunk's state once its request(s) answered. */
export type AnsweredChunkState = 'in_doubt' | 'failed' | 'pending' | 'rejected' | 'accepted';

export interface OutcomeTally {
  readonly accepted: number;
  readonly rejected: number;
  readonly failed: number;
  readonly inDoubt: number;
  /** Never sent and put back (the account refused, or a stop cut a retryable failure short). */
  readonly held: number;
}

/**
 * In doubt when anything may have been sent unanswered (reports settle it); else failed when
 * anything failed for good (retry resends it); else pending when something was put back; else
 * rejected when the service took nothing and refused something; else accepted.
 */
export function chunkStateOf(t: OutcomeTally): AnsweredChunkState {
  if (t.inDoubt > 0) return 'in_doubt';
  if (t.failed > 0) return 'failed';
  if (t.held > 0) return 'pending';
  if (t.accepted === 0 && t.rejected > 0) return 'rejected';
  return 'accepted';
}
