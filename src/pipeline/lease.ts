// The pipeline's lease stage (docs/architecture.md "The pipeline"): the one way to work on a
// file, under its lease, renewed while the work runs; fencing stops a worker whose lease was
// taken over.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../config/schema.ts';
import type { Logger } from '../log.ts';
import type { FileRecord, Store } from '../store/store.ts';

/** How often a caller that waits for a file's lease (a command beside the daemon) asks again. */
const LEASE_POLL_MS = 100;

/**
 * This worker no longer holds the file's lease: another one took it over (ours expired while
 * this one was stalled), so this one stops working on the file at once and writes nothing
 * more for it. Thrown inside withLease and ended there.
 */
export class LeaseLost extends Error {
  readonly fileId: string;
  constructor(fileId: string) {
    super(`the lease of ${fileId} is held by another worker now`);
    this.name = 'LeaseLost';
    this.fileId = fileId;
  }
}

/** A lease this worker holds while it works on a file. */
interface Held {
  lost: boolean;
}

/** What the leases need of the pipeline (PipelineContext). */
export interface LeaseContext {
  readonly store: Store;
  readonly config: Config;
  readonly log: Logger;
  readonly owner: string;
  readonly stopping: AbortController;
  mustGet(fileId: string): Promise<FileRecord>;
}

/** The leases of the files this worker holds. */
export class Leases {
  readonly c: LeaseContext;

  constructor(c: LeaseContext) {
    this.c = c;
  }

  /** The files this process works on now, under their lease: never two works on one file at once. */
  readonly held = new Map<string, Held>();
  /**
   * The one way to work on a file (drive it, check its progress, write its reports): its
   * lease taken (`target` a fileId) or just acquired (`target` the record acquireFile
   * returned), renewed while `fn` runs, released after. null, without running `fn`, when
   * another live worker holds the file (after `waitMs` of asking again) or this process
   * works on it already; null too when the lease was taken over while `fn` ran (it stopped
   * at once, see fence and confirm).
   */
  async withLease<T>(
    target: string | FileRecord,
    fn: (file: FileRecord) => Promise<T>,
    options: { waitMs?: number; holdOnFailureMs?: number } = {},
  ): Promise<T | null> {
    const fileId = typeof target === 'string' ? target : target.fileId;
    if (this.held.has(fileId)) return null;
    const lease: Held = { lost: false };
    // Before the first await: a second call in this process finds it held.
    this.held.set(fileId, lease);
    let taken = typeof target !== 'string';
    let failed = false;
    let renew: NodeJS.Timeout | undefined;
    try {
      const deadline = Date.now() + (options.waitMs ?? 0);
      while (!taken) {
        taken = await this.c.store.takeLease(fileId, this.c.owner, this.c.config.leaseMs);
        if (taken) break;
        if (Date.now() >= deadline || this.c.stopping.signal.aborted) return null;
        await sleep(LEASE_POLL_MS);
      }
      let renewing = false;
      renew = setInterval(
        () => {
          if (renewing || lease.lost) return;
          renewing = true;
          this.c.store
            .renewLease(fileId, this.c.owner, this.c.config.leaseMs)
            .then(
              (ok) => {
                if (!ok) this.lose(fileId);
              },
              // The store unreachable past the patient wait: the next write or renewal says.
              () => {},
            )
            .finally(() => {
              renewing = false;
            });
        },
        Math.max(200, Math.floor(this.c.config.leaseMs / 3)),
      );
      return await fn(await this.c.mustGet(fileId));
    } catch (err) {
      if (err instanceof LeaseLost && err.fileId === fileId) return null;
      failed = true;
      throw err;
    } finally {
      clearInterval(renew);
      this.held.delete(fileId);
      if (taken && !lease.lost) {
        // A failed drive keeps the lease a little while, so that neither this worker nor
        // another starts it again at once (a source that is down would spin).
        const hold = failed ? (options.holdOnFailureMs ?? 0) : 0;
        await (hold > 0
          ? this.c.store.takeLease(fileId, this.c.owner, hold)
          : this.c.store.releaseLease(fileId, this.c.owner)
        ).catch(() => {});
      }
    }
  }

  /** Marks the lease lost (said once) and returns the error that ends the work on the file. */
  lose(fileId: string): LeaseLost {
    const lease = this.held.get(fileId);
    if (lease && !lease.lost) {
      lease.lost = true;
      this.c.log.warn(
        { fileId },
        `the lease of ${fileId} was taken over by another worker: this one stops and writes nothing more for it`,
      );
    }
    return new LeaseLost(fileId);
  }

  /** Before a write that only the lease holder may make: LeaseLost once the lease is gone. */
  fence(fileId: string): void {
    const lease = this.held.get(fileId);
    if (!lease || lease.lost) throw new LeaseLost(fileId);
  }

  /**
   * Before a write outside the store (report.csv, the manifest, a stale report removed),
   * which the store cannot refuse: the lease confirmed now, or LeaseLost. The write then has
   * at least two thirds of leaseMs before anyone may take the file over (PostgreSQL renews only
   * past that point; SQLite renews every time).
   */
  async confirm(fileId: string): Promise<void> {
    this.fence(fileId);
    if (!(await this.c.store.renewLease(fileId, this.c.owner, this.c.config.leaseMs)))
      throw this.lose(fileId);
  }
}
