// One file's way through dropline: claim → ingest (read, validate, record every line) →
// send (write-ahead per chunk) → delivery reports → completed. The store is the truth at
// every step, so a process killed at any moment is resumed by the next one that takes the
// file's lease. This file is the driver; each stage is an object of its own in this folder
// (docs/architecture.md "The pipeline").
import type { Config, SourceConfig } from '../config/schema.ts';
import { DroplineError } from '../errors.ts';
import type { SendWindow } from '../plan/send-window.ts';
import type { Source, SourceEntry } from '../sources/source.ts';
import type { FileRecord, FileState, Store } from '../store/store.ts';
import { RETRY_FROM } from './actions.ts';
import { Claims } from './claim.ts';
import { PipelineContext, type PipelineOptions } from './context.ts';
import { Ingest } from './ingest.ts';
import type { Leases } from './lease.ts';
import { Outputs } from './outputs.ts';
import { Progress } from './progress.ts';
import { Schedule } from './schedule.ts';
import { Sender } from './send.ts';

export { FILE_STATE_CHANNEL, type FileStateEvent, type PipelineOptions } from './context.ts';
export { LeaseLost } from './lease.ts';

/** The states in which a worker drives a file (holding its lease). */
export const DRIVEN_STATES: readonly FileState[] = ['validating', 'scheduled', 'sending'];
/** A file whose drive failed is started again (by any worker) this long after. */
const DRIVE_RETRY_MS = 2000;

/**
 * The driver (docs/architecture.md "The pipeline"): a file taken through its stages, lease,
 * claim, ingest, schedule, send, progress and outputs, each an object of its own in this
 * folder. The methods below are what the daemon, the commands and the ops API call.
 */
export class Pipeline {
  readonly c: PipelineContext;
  readonly leases: Leases;
  readonly outputs: Outputs;
  readonly schedule: Schedule;
  readonly progress: Progress;
  readonly sending: Sender;
  readonly ingesting: Ingest;
  readonly claims: Claims;

  constructor(options: PipelineOptions) {
    const c = new PipelineContext(options);
    this.c = c;
    this.leases = c.leases;
    this.outputs = new Outputs(c, this.leases);
    this.schedule = new Schedule(c, this.outputs);
    this.progress = new Progress(c, this.leases, this.outputs);
    this.sending = new Sender(c, this.leases, this.outputs, this.progress, this.schedule);
    this.ingesting = new Ingest(c, this.leases, this.outputs, this.schedule);
    this.claims = new Claims(c, this.leases, this.ingesting, this.outputs);
  }

  get store(): Store {
    return this.c.store;
  }

  get config(): Config {
    return this.c.config;
  }

  /** Records read so far of the files this process is reading (progress before the counts exist). */
  get reading(): Map<string, number> {
    return this.ingesting.reading;
  }

  /** When work last moved (a batch read, a chunk answered, a transition): the daemon's watchdog. */
  get lastProgress(): number {
    return this.c.lastProgress;
  }

  /** The same per file being driven (the daemon forgets a file's entry when its drive ends). */
  get progressAt(): Map<string, number> {
    return this.c.progressAt;
  }

  sourceConfig(name: string): SourceConfig {
    return this.c.sourceConfig(name);
  }

  source(name: string): Source {
    return this.c.source(name);
  }

  /** The send window of a source's files: its own `sendWindow`, else the global one; null: any hour. */
  windowOf(sourceName: string): SendWindow | null {
    return this.schedule.windowOf(sourceName);
  }

  /** See Leases.withLease: the one way to work on a file. */
  withLease<T>(
    target: string | FileRecord,
    fn: (file: FileRecord) => Promise<T>,
    options: { waitMs?: number; holdOnFailureMs?: number } = {},
  ): Promise<T | null> {
    return this.leases.withLease(target, fn, options);
  }

  /** See Claims.claimReady. */
  claimReady(...args: Parameters<Claims['claimReady']>): ReturnType<Claims['claimReady']> {
    return this.claims.claimReady(...args);
  }

  /** See Claims.claim. */
  claim(...args: Parameters<Claims['claim']>): ReturnType<Claims['claim']> {
    return this.claims.claim(...args);
  }

  /** See Claims.rejectIncomplete. */
  rejectIncomplete(source: Source, entry: SourceEntry): Promise<FileRecord | null> {
    return this.claims.rejectIncomplete(source, entry);
  }

  /** See Progress.checkProgress. */
  checkProgress(file: FileRecord | string): Promise<FileRecord | null> {
    return this.progress.checkProgress(file);
  }

  /** See Outputs.rewriteReports. */
  rewriteReports(...args: Parameters<Outputs['rewriteReports']>): ReturnType<Outputs['rewriteReports']> {
    return this.outputs.rewriteReports(...args);
  }

  /** See Outputs.writeOwedReports. */
  writeOwedReports(fileId: string): Promise<boolean | null> {
    return this.outputs.writeOwedReports(fileId);
  }

  /**
   * Graceful stop: every send stops between chunks. A chunk whose request is in flight gets its
   * answer; one waiting to retry after a 5xx (not accepted) goes back to pending, as do the
   * chunks never tried, so the file stays `sending` and the next start resumes it.
   */
  stop(): void {
    this.c.stopping.abort();
  }

  /**
   * Drives a file as far as it goes now, under its lease. null when another worker holds
   * it, or took it over meanwhile (this worker then stopped at once).
   */
  async drive(fileId: string): Promise<FileRecord | null> {
    return this.leases.withLease(fileId, (file) => this.driveHeld(file));
  }

  /**
   * The file waiting longest to be driven: claimed and not started yet, or left by its worker
   * (dead, or stalled past its lease) in a driven state. Its lease is this worker's; null when
   * there is none. driveAcquired drives it.
   */
  async acquireNext(): Promise<FileRecord | null> {
    return this.c.store.acquireFile(this.c.owner, DRIVEN_STATES, this.c.config.leaseMs);
  }

  async driveAcquired(file: FileRecord): Promise<FileRecord | null> {
    if (file.takenOverFrom)
      this.c.log.info(
        { fileId: file.fileId, state: file.state, from: file.takenOverFrom },
        `taking over ${file.name} from ${file.takenOverFrom}`,
      );
    else this.c.log.info({ fileId: file.fileId, state: file.state }, `driving ${file.name} (${file.state})`);
    return this.leases.withLease(file, (f) => this.driveHeld(f), { holdOnFailureMs: DRIVE_RETRY_MS });
  }

  private async driveHeld(held: FileRecord): Promise<FileRecord> {
    const fileId = held.fileId;
    this.leases.fence(fileId);
    // Chunks in flight were left by the worker that held the lease before (dead or stalled).
    await this.c.store.markInflightInDoubt(fileId);
    for (;;) {
      this.leases.fence(fileId);
      const file = await this.c.mustGet(fileId);
      // Files read at once are few (each holds its duplicate index); the others wait here.
      if (file.state === 'validating') await this.ingesting.reads(() => this.ingesting.ingest(file));
      else if (file.state === 'scheduled') {
        // Its time has come (acquireFile takes it then), or not yet (a pause resumed early).
        const now = this.c.now();
        const start = this.schedule.startOf(file, now);
        if (start === null || start.getTime() > now.getTime()) {
          this.leases.fence(fileId);
          await this.c.store.updateFile(fileId, this.schedule.scheduledPatch(file, start));
          return this.c.mustGet(fileId);
        }
        await this.c.transition(fileId, 'sending', ['scheduled'], { scheduledUntil: null, reason: null });
      } else if (file.state === 'cancelled') return this.outputs.closeCancelled(file);
      else if (file.state === 'sending') {
        const after = await this.sending.send(file);
        if (after.state === 'sending') return after; // stopped
        // submitted() has just checked its progress: no second count of the file.
        if (after.state === 'submitted') return after;
      } else return await this.progress.progressHeld(file);
    }
  }

  /**
   * `retry`, under the file's lease (asked for up to `waitMs`): failed and in-doubt chunks
   * back to pending, the file back to sending, then driven here. In-doubt recipients may have
   * been accepted already: they are counted as possible duplicates. null when another worker
   * holds the file. With `drive: false` the file is left, lease free, for the daemon to take.
   */
  async retry(fileId: string, options: { waitMs?: number; drive?: boolean } = {}): Promise<number | null> {
    return this.leases.withLease(
      fileId,
      async (file) => {
        // Checked under the lease: a file cancelled or paused meanwhile is not requeued.
        if (!RETRY_FROM.includes(file.state))
          throw new DroplineError(
            'DROPLINE_ERR_FILE_STATE',
            `${fileId} is ${file.state}; retry applies to a file that is ${RETRY_FROM.join(' or ')}`,
          );
        const { inDoubt } = await this.c.store.counts(fileId);
        this.leases.fence(fileId);
        const requeued = await this.c.store.requeueChunks(fileId, ['failed', 'in_doubt'], {
          addPossibleDuplicates: inDoubt,
        });
        if (requeued > 0) {
          if (inDoubt > 0)
            this.c.log.warn(
              { fileId, recipients: inDoubt },
              'retry resends in-doubt chunks: their recipients may get the message twice',
            );
          // The partial file's reason (chunks failed, retry resends them) no longer holds.
          await this.c.transition(fileId, 'sending', RETRY_FROM, { reason: null });
        }
        if (options.drive !== false) await this.driveHeld(file);
        return requeued;
      },
      options.waitMs === undefined ? {} : { waitMs: options.waitMs },
    );
  }
}
