// The workers that drive files under leases, as they announce themselves and as `status`
// lists them (docs/store.md "Leases and fencing").

import type { FileState } from './files.ts';

/** A worker as it announces itself. */
export interface WorkerInfo {
  /** The lease owner it writes. */
  readonly workerId: string;
  readonly host: string;
  readonly pid: number;
  readonly version: string;
}

export interface WorkerRecord extends WorkerInfo {
  readonly startedAt: string;
  readonly heartbeatAt: string;
  /** Since its last heartbeat, on the store's clock. */
  readonly heartbeatAgeMs: number;
  readonly stoppedAt: string | null;
  /** Files it holds an unexpired lease on. */
  readonly files: readonly { fileId: string; name: string; state: FileState; takenOverFrom: string | null }[];
}

/**
 * A worker silent this long (three missed heartbeats of a `dropline run`) is dead: its files
 * are taken over once their leases expire, and its send permits stop holding their account's
 * concurrency at once (a killed worker's would otherwise hold it until their leases end). A
 * process that never beats (`dropline send`) keeps its permits to their lease's end.
 */
export const WORKER_SILENT_MS = 15_000;
