// The daemon's file slots: the files driven at once, up to workers.filesInFlight, the oldest
// waiting first (docs/architecture.md "The daemon"). A file during which nothing moves for
// workStallMs is stalled: it no longer counts against the slots, so the other files go on.
// A failure in one file is logged and never stops the daemon.
import type { Logger, RepeatGate } from '../log.ts';
import type { FileRecord } from '../store/store.ts';
import type { StalledWork } from './step-queue.ts';

/** A file being driven. */
interface Drive {
  readonly fileId: string;
  readonly what: string;
  readonly startedAt: number;
  /** No progress for stallMs: it no longer counts against the slots. */
  stalled: boolean;
  ended: Promise<void>;
}

export interface FileSlotsOptions {
  /** Slots: files driven at once. */
  size: number;
  stallMs: number;
  /** The next file to drive, acquired under its lease (Pipeline.acquireNext); null: none. */
  acquire: () => Promise<FileRecord | null>;
  /** Drives an acquired file to its end (Pipeline.driveAcquired). */
  drive: (file: FileRecord) => Promise<unknown>;
  /** When the file last moved (Pipeline.progressAt). */
  progressAt: (fileId: string) => number | undefined;
  /** The file's drive has ended (Pipeline.progressAt forgets it). */
  ended: (fileId: string) => void;
  log: Logger;
  gate: RepeatGate;
  now?: () => number;
}

export class FileSlots {
  readonly #o: FileSlotsOptions;
  readonly #now: () => number;
  readonly #drives = new Map<string, Drive>();
  #filling = false;
  #fillAgain = false;
  #closing = false;

  constructor(options: FileSlotsOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Slots taken: the files driven that are not stalled. */
  busy(): number {
    let n = 0;
    for (const d of this.#drives.values()) if (!d.stalled) n++;
    return n;
  }

  /** The ids of the files being driven, stalled ones included. */
  driven(): IterableIterator<string> {
    return this.#drives.keys();
  }

  /** Starts files while there is room: new ones, and those left by a dead or stalled worker. */
  async fill(): Promise<void> {
    if (this.#filling) {
      this.#fillAgain = true;
      return;
    }
    this.#filling = true;
    try {
      do {
        this.#fillAgain = false;
        while (!this.#closing && this.busy() < this.#o.size) {
          const file = await this.#o.acquire();
          if (!file) break;
          this.#launch(file);
        }
      } while (this.#fillAgain && !this.#closing);
      if (this.#o.gate.clear('fill')) this.#o.log.info('files are acquired again');
    } catch (err) {
      const message = (err as Error).message;
      const { log: shown, repeated } = this.#o.gate.pass('fill', message);
      if (shown)
        this.#o.log.error(
          { err: message, ...(repeated ? { repeated } : {}) },
          'cannot acquire the next file',
        );
    } finally {
      this.#filling = false;
    }
  }

  #launch(file: FileRecord): void {
    const drive: Drive = {
      fileId: file.fileId,
      what: `${file.name} (${file.fileId})`,
      startedAt: this.#now(),
      stalled: false,
      ended: Promise.resolve(),
    };
    this.#drives.set(file.fileId, drive);
    drive.ended = this.#o
      .drive(file)
      .then(
        () => {},
        (err: unknown) => this.#failed(drive, err as Error),
      )
      .finally(() => {
        this.#drives.delete(file.fileId);
        this.#o.ended(file.fileId);
        if (drive.stalled)
          this.#o.log.warn(
            { work: drive.what, s: Math.round((this.#now() - drive.startedAt) / 1000) },
            'stalled work ended',
          );
        void this.fill();
      });
  }

  #failed(drive: Drive, err: Error): void {
    const { log: shown, repeated } = this.#o.gate.pass(`drive:${drive.fileId}`, err.message);
    if (shown)
      this.#o.log.error(
        { fileId: drive.fileId, err: err.message, stack: err.stack, ...(repeated ? { repeated } : {}) },
        `${drive.what} failed`,
      );
  }

  /** The watchdog's look: a file quiet for stallMs frees its slot for another. */
  watch(): void {
    const now = this.#now();
    for (const d of this.#drives.values()) {
      if (d.stalled) continue;
      const quiet = now - Math.max(d.startedAt, this.#o.progressAt(d.fileId) ?? 0);
      if (quiet < this.#o.stallMs) continue;
      d.stalled = true;
      this.#o.log.error(
        { work: d.what, quietMs: quiet },
        `no progress in ${d.what} for ${Math.round(quiet / 1000)} s: going on with the other files`,
      );
      void this.fill();
    }
  }

  /** The files left stalled that have not ended yet. */
  stalled(): StalledWork[] {
    return [...this.#drives.values()].filter((d) => d.stalled);
  }

  /** No new file starts from now on. */
  stop(): void {
    this.#closing = true;
  }

  /** Settles when every file driven now has ended. */
  ended(): Promise<void> {
    return Promise.all([...this.#drives.values()].map((d) => d.ended)).then(() => {});
  }
}
