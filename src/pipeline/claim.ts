// The pipeline's claim stage (docs/architecture.md "The pipeline"): ready inbox files hashed,
// recorded (DUPLICATE_FILE decided by the store) and moved to processing/, in batches.
import diagnosticsChannel from 'node:diagnostics_channel';
import type { FileReasonCode, TextParams } from '../errors.ts';
import { type Sniff, sniff } from '../format/decode.ts';
import { fileIdFor } from '../plan/ids.ts';
import { mapLimited, markerMismatch } from '../sources/readiness.ts';
import {
  fileRefusalOf,
  type Source,
  type SourceEntry,
  SourceFileError,
  type SourceVersion,
} from '../sources/source.ts';
import type { ClaimedFile, FileRecord, ReadyFile } from '../store/store.ts';
import { type PipelineContext, stateChanged } from './context.ts';
import { type Ingest, tooLarge } from './ingest.ts';
import type { Leases } from './lease.ts';
import type { Outputs } from './outputs.ts';

/** Files of a claim batch read (hashed) and moved at once (round trips, not bandwidth, on SFTP/S3). */
const CLAIM_READ_CONCURRENCY = 16;

/**
 * diagnostics_channel: a claim batch's files moved to processing/, their paths not recorded
 * yet (published just before that record). The crash tests stop a daemon here: a crash at
 * this moment leaves records that still say inbox/ (docs/runbook.md "Restarts and crashes").
 */
export const CLAIM_MOVED_CHANNEL = 'dropline:claim:moved';
const claimMovedChannel = diagnosticsChannel.channel(CLAIM_MOVED_CHANNEL);

/** Claims ready files, and rejects those that never became ready. */
export class Claims {
  readonly c: PipelineContext;
  readonly leases: Leases;
  readonly ingesting: Ingest;
  readonly outputs: Outputs;

  constructor(c: PipelineContext, leases: Leases, ingesting: Ingest, outputs: Outputs) {
    this.c = c;
    this.leases = leases;
    this.ingesting = ingesting;
    this.outputs = outputs;
  }

  /** Per-file read errors at claim already logged (source + path → message). */
  private readonly unreadableSaid = new Map<string, string>();
  /**
   * Claims ready inbox files: hashes each, records them all in one store transaction
   * (unique per source, path and content; DUPLICATE_FILE decided there), moves the new ones
   * to processing/ and records their paths in one more. An inbox of thousands of files
   * costs two store calls a batch, not a round trip a file. Returns every record; those in
   * state `validating` are the files to drive, duplicates are already in failed/.
   */
  async claimReady(
    source: Source,
    entries: readonly SourceEntry[],
    options: { force?: boolean } = {},
  ): Promise<FileRecord[]> {
    const { maxFileBytes: maxBytes, readiness } = this.c.sourceConfig(source.name);
    type Refused = {
      entry: SourceEntry;
      refusal: { reason: FileReasonCode; message: string; params?: TextParams };
      read?: { sha256: string; bytes: number };
    };
    // The markers this claim took: put back if the batch is not recorded (below).
    const taken: { path: string; content: string }[] = [];
    // The version of each file hashed (local sources): its move checks it still moves that one.
    const versions = new Map<string, SourceVersion>();
    // Several files read at once: on SFTP or S3 a claim costs round trips, not bandwidth,
    // and one at a time made a claim of 500 small files wait for 4,000 answers in a row.
    const reading = mapLimited(
      entries,
      CLAIM_READ_CONCURRENCY,
      async (entry): Promise<ReadyFile | Refused | null> => {
        try {
          const r = await this.readForClaim(source, entry, maxBytes);
          // Changing while it was hashed: not this claim's; a later poll sees it settled.
          if (r === null) return null;
          // A marker source: the marker goes with the claim, whatever becomes of the file, so
          // that it never stands for the next upload of the name (docs/sources.md "Markers").
          const marker =
            readiness === 'marker' && entry.path.startsWith('inbox/')
              ? await source.takeMarker(`${entry.path}.done`)
              : undefined;
          // Taken by another worker's claim of the same file: that claim goes on.
          if (marker === null) return null;
          if (marker !== undefined) taken.push({ path: `${entry.path}.done`, content: marker });
          if ('refusal' in r) return { entry, refusal: r.refusal };
          const read = { sha256: r.sniffed.sha256!, bytes: r.sniffed.bytes };
          const mismatch = marker === undefined ? null : markerMismatch(marker, read.sha256);
          if (mismatch !== null)
            return { entry, refusal: { reason: 'MARKER_MISMATCH', message: mismatch }, read };
          this.ingesting.rememberSniff(r.sniffed);
          if (r.version) versions.set(entry.path, r.version);
          return { name: entry.name, path: entry.path, sha256: r.sniffed.sha256!, bytes: r.sniffed.bytes };
        } catch (err) {
          // One file's trouble is that file's: the others of the batch are claimed all the same.
          if (!(await this.unreadableNow(source, entry, err))) throw err;
          return null;
        }
      },
    );
    const ready: ReadyFile[] = [];
    const refused: Refused[] = [];
    let claimed: ClaimedFile[];
    try {
      for (const r of await reading) {
        if (r === null) continue;
        if ('refusal' in r) refused.push(r);
        else ready.push(r);
      }
      claimed = await this.claimFiles(source, ready, options.force ?? false);
    } catch (err) {
      // Nothing of the batch was recorded (a store that failed over, a source lost mid-read):
      // its files stay in the inbox, so their markers go back beside them, or they would
      // wait for a marker their partner already wrote (docs/sources.md "Markers").
      await this.putBackMarkers(source, taken);
      throw err;
    }
    const paths: { fileId: string; path: string; from: string }[] = [];
    const files = await mapLimited(
      claimed,
      CLAIM_READ_CONCURRENCY,
      async ({ file, created, duplicateOf }) => {
        // Recorded before (a crash between recording and moving): whoever takes the lease goes on.
        if (!created) return file;
        this.c.log.info(
          { fileId: file.fileId, source: source.name, file: file.name, bytes: file.bytes, state: file.state },
          `claimed ${file.name}`,
        );
        if (duplicateOf) {
          await this.leases.withLease(file.fileId, (f) => this.outputs.finishFailed(f, source));
          return this.c.mustGet(file.fileId);
        }
        let path: string;
        try {
          path = await this.c.moveTo(file, source, 'processing', {
            record: false,
            expect: versions.get(file.path),
          });
        } catch (err) {
          if (!(err instanceof SourceFileError)) throw err;
          return this.rejectReplaced(file, err.message);
        }
        // Recorded only where the path is still the one moved from: a worker that took the
        // file meanwhile found it moved and recorded its path itself (context.ts toProcessing).
        if (path !== file.path) paths.push({ fileId: file.fileId, path, from: file.path });
        return { ...file, path };
      },
    );
    if (paths.length > 0 && claimMovedChannel.hasSubscribers)
      claimMovedChannel.publish({ source: source.name, paths });
    await this.c.store.setPaths(paths);
    for (const { entry, refusal, read } of refused) {
      const file = await this.rejectAtClaim(source, entry, refusal, read);
      if (file) files.push(file);
    }
    return files;
  }

  /**
   * A file replaced at its inbox name after this claim hashed it (docs/sources.md "What
   * happens to a file"): the claim of the content read fails FILE_CHANGED, its errors.csv
   * and manifest written, nothing moved; the newer file stays in the inbox, a new file to
   * claim once ready (on a marker source, with a marker of its own: this claim took the old).
   */
  private async rejectReplaced(file: FileRecord, message: string): Promise<FileRecord> {
    this.c.log.warn({ fileId: file.fileId, source: file.source, file: file.name }, message);
    await this.leases.withLease(file.fileId, async (f) => {
      const rejected = await this.c.transition(f.fileId, 'rejected', ['validating'], {
        rejection: { code: 'FILE_CHANGED', message },
      });
      if (rejected) await this.outputs.finishFailed(rejected, null);
    });
    return this.c.mustGet(file.fileId);
  }

  /** Markers taken by a claim that was not recorded, written back where none is now. */
  private async putBackMarkers(source: Source, taken: readonly { path: string; content: string }[]) {
    for (const { path, content } of taken) {
      try {
        // A marker written since the take is the partner's newer word: it stays.
        if ((await source.stat(path)) === null) await source.write(path, content);
      } catch (err) {
        this.c.log.error({ source: source.name, path, err }, 'could not put a taken marker back');
      }
    }
  }

  /**
   * One store transaction for the batch; a claim that raced another worker's for the same
   * content (DROPLINE_ERR_STORE_CONFLICT: the fileId it computed was taken meanwhile) is made
   * again, and then reads the other's records.
   */
  private async claimFiles(source: Source, ready: readonly ReadyFile[], force: boolean) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.c.store.claimFiles(source.name, ready, {
          idFor: (sha256, generation) => fileIdFor(source.name, sha256, generation),
          duplicateSince: new Date(this.c.now().getTime() - this.c.config.duplicateWindowMs).toISOString(),
          force,
        });
      } catch (err) {
        if ((err as { code?: unknown }).code !== 'DROPLINE_ERR_STORE_CONFLICT' || attempt >= 3) throw err;
        this.c.log.info(
          { source: source.name, err: (err as Error).message },
          'a claim raced another worker: claiming again',
        );
      }
    }
  }

  /**
   * A file that could not be read at claim for a reason that is not a refusal: gone
   * (claimed by another worker, removed), or an I/O error of its own while the source
   * answers. Logged, left for a later poll, and true: the rest of the batch goes on. false
   * when the source itself does not answer: the batch waits for the next poll.
   */
  private async unreadableNow(source: Source, entry: SourceEntry, err: unknown): Promise<boolean> {
    const answers = await source.ping().then(
      () => true,
      () => false,
    );
    if (!answers) return false;
    const message = (err as Error).message;
    const key = `${source.name}\n${entry.path}`;
    // Said once while the same error repeats (a poll a second would repeat it a second).
    if (this.unreadableSaid.get(key) !== message && (await source.exists(entry.path).catch(() => true))) {
      if (this.unreadableSaid.size >= 10_000) this.unreadableSaid.clear();
      this.unreadableSaid.set(key, message);
      this.c.log.warn(
        { source: source.name, file: entry.name, err: message },
        `cannot read ${entry.path} now; it is tried again on a later poll`,
      );
    }
    return true;
  }

  /**
   * A listed file rejected at its claim: before a byte of it was read (not a regular file any
   * more, unreadable: recorded with an empty sha256), or once read (`read`: its marker does
   * not match it). Moved to failed/ with its errors.csv and manifest. null when it was
   * recorded before (its move failed): nothing new to say.
   */
  private async rejectAtClaim(
    source: Source,
    entry: SourceEntry,
    refusal: { reason: FileReasonCode; message: string; params?: TextParams },
    read?: { sha256: string; bytes: number },
  ): Promise<FileRecord | null> {
    const { reason: code, message, params } = refusal;
    const sha256 = read?.sha256 ?? '';
    const prior = await this.c.store.countBySha(source.name, sha256);
    const { file, created } = await this.c.store.registerFile({
      fileId: fileIdFor(source.name, sha256, prior + 1),
      source: source.name,
      name: entry.name,
      path: entry.path,
      sha256,
      bytes: read?.bytes ?? entry.size,
      state: 'rejected',
      rejection: { code, message, params: params ?? {} },
    });
    if (!created) return null;
    this.c.log.warn(
      { fileId: file.fileId, source: source.name, file: entry.name, code },
      `${entry.name} rejected ${code}: ${message}`,
    );
    stateChanged(file, 'claimed');
    await this.leases.withLease(file.fileId, (f) => this.outputs.finishFailed(f, source));
    return this.c.mustGet(file.fileId);
  }

  /** One file claimed (send): its record, driven next under its lease (drive). */
  async claim(
    source: Source,
    entry: SourceEntry,
    options: { force?: boolean } = {},
  ): Promise<FileRecord | null> {
    const [file = null] = await this.claimReady(source, [entry], options);
    return file;
  }

  /**
   * A listed file read as a claim reads it (hashed, at most `maxBytes`), or why it is refused:
   * too large (from the listing first: an oversize file is never read, not even to hash it),
   * not a regular file, changed… Other errors are thrown.
   */
  private async readForClaim(
    source: Source,
    entry: SourceEntry,
    maxBytes: number,
  ): Promise<
    | { sniffed: Sniff; version?: SourceVersion }
    | { refusal: { reason: FileReasonCode; message: string; params?: TextParams } }
    | null
  > {
    if (entry.size > maxBytes) return { refusal: tooLarge(maxBytes, entry.size) };
    let sniffed: Sniff;
    // Local: the version before and after the hash (two lstat calls), the same when the
    // bytes hashed are that version's; the move checks it moves that version.
    const versioned = source.kind === 'local' && entry.path.startsWith('inbox/');
    let version: SourceVersion | undefined;
    try {
      const before = versioned ? await source.stat(entry.path) : null;
      sniffed = await sniff(source.open(entry.path), { hash: true, maxBytes });
      const after = versioned ? await source.stat(entry.path) : null;
      if (versioned) {
        if (!before || !after || before.size !== after.size || before.mtimeMs !== after.mtimeMs) return null;
        version = { size: after.size, mtimeMs: after.mtimeMs };
      }
    } catch (err) {
      const refusal = fileRefusalOf(err, entry.path);
      if (!refusal) throw err;
      return { refusal };
    }
    this.c.touch();
    // It grew past the limit after the listing: the hash stopped there.
    if (sniffed.tooLarge) return { refusal: tooLarge(maxBytes, sniffed.bytes) };
    return version ? { sniffed, version } : { sniffed };
  }

  /**
   * A file that never became complete (no trailer, or no marker, before incompleteTimeout):
   * rejected MISSING_TRAILER, moved to failed/ with its errors.csv.
   */
  async rejectIncomplete(source: Source, entry: SourceEntry): Promise<FileRecord | null> {
    const cfg = this.c.sourceConfig(source.name);
    // Its marker came at the last moment: claimed on the next poll (which consumes the marker),
    // not rejected with the marker left behind to stand for the next upload of the name.
    if (cfg.readiness === 'marker' && (await source.exists(`${entry.path}.done`))) return null;
    const r = await this.readForClaim(source, entry, cfg.maxFileBytes);
    // Written to while it was read: not incomplete, still being written.
    if (r === null) return null;
    if ('refusal' in r) return this.rejectAtClaim(source, entry, r.refusal);
    const { sniffed } = r;
    const sha256 = sniffed.sha256!;
    const prior = await this.c.store.countBySha(source.name, sha256);
    const waited = cfg.readiness === 'marker' ? `its marker ${entry.name}.done` : 'a trailer line (EOF;<n>)';
    const rejection = {
      code: 'MISSING_TRAILER',
      message: `the source waits for ${waited}, and none came within ${Math.round(cfg.incompleteTimeoutMs / 1000)} s`,
      params: {},
    };
    const { file, created } = await this.c.store.registerFile({
      fileId: fileIdFor(source.name, sha256, prior + 1),
      source: source.name,
      name: entry.name,
      path: entry.path,
      sha256,
      bytes: sniffed.bytes,
      state: 'rejected',
      rejection,
    });
    if (!created) return null;
    this.c.log.warn({ fileId: file.fileId, file: entry.name }, rejection.message);
    stateChanged(file, 'claimed');
    await this.leases.withLease(file.fileId, (f) => this.outputs.finishFailed(f, source));
    return this.c.mustGet(file.fileId);
  }
}
