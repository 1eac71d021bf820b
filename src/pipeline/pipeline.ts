// One file's way through dropline: claim → ingest (read, validate, record every line) →
// send (write-ahead per chunk) → delivery reports → completed. The store is the truth at
// every step, so a process killed at any moment is resumed by the next one that takes the
// file's lease (DESIGN-NOTES 1).
import { createHash } from 'node:crypto';
import type { Config, SourceConfig } from '../config/schema.ts';
import type { FileReasonCode } from '../errors.ts';
import { type Sniff, sniff } from '../format/decode.ts';
import { makeNumberRules, type NumberRules } from '../format/numbers.ts';
import { type ReadSummary, readDropFile } from '../format/reader.ts';
import type { SuppressionList } from '../format/suppression.ts';
import type { Logger } from '../log.ts';
import { ChunkPlanner, planChunk } from '../plan/chunks.ts';
import { fileIdFor } from '../plan/ids.ts';
import type { SendResult, ServiceClient } from '../service/client.ts';
import { mapLimited } from '../sources/readiness.ts';
import { fileRefusalOf, type Source, type SourceEntry, SourceFileError } from '../sources/source.ts';
import {
  type ChunkResult,
  type ChunkState,
  type FileCounts,
  type FilePatch,
  type FileRecord,
  type FileState,
  NOTHING_SENT,
  type PartOutcome,
  type ReadyFile,
  type RecipientInsert,
  type Store,
} from '../store/store.ts';
import {
  buildManifest,
  cutToBytes,
  errorsCsv,
  type Manifest,
  manifestOf,
  reportCsv,
  reportFileName,
} from './reports.ts';

// Rows per insertRecipients transaction (~500 for a million rows). 10,000 cost no less time
// but kept ~10k row objects alive across young-generation GCs: V8 grew its new space to
// 128 MB during ingest (peak RSS ~380 MB at 1M recipients against ~290 MB with 2,000).
const INSERT_BATCH = 2000;
/** Claim-time sniffs kept for their ingest: a claim batch's worth, and more. */
const SNIFFS_KEPT = 2000;
/** Files of a claim batch read (hashed) and moved at once (round trips, not bandwidth, on SFTP/S3). */
const CLAIM_READ_CONCURRENCY = 16;

export interface PipelineOptions {
  config: Config;
  store: Store;
  client: ServiceClient;
  sources: ReadonlyMap<string, Source>;
  logger: Logger;
  /** This worker's lease owner id. */
  owner: string;
  suppression?: SuppressionList | null;
  now?: () => Date;
}

/** The states in which a worker drives a file (holding its lease). */
export const DRIVEN_STATES: readonly FileState[] = ['validating', 'sending'];

export class Pipeline {
  readonly store: Store;
  readonly config: Config;
  private readonly client: ServiceClient;
  private readonly sources: ReadonlyMap<string, Source>;
  private readonly log: Logger;
  private readonly owner: string;
  private readonly suppression: SuppressionList | null;
  private readonly now: () => Date;
  private readonly rules = new Map<string, NumberRules>();
  /** Files this process is driving now: never driven twice at once. */
  private readonly driving = new Set<string>();
  /** Claim-time sniffs by sha256, for the ingest that follows (rememberSniff). */
  private readonly sniffs = new Map<string, Sniff>();
  /** Per-file read errors at claim already logged (source + path → message). */
  private readonly unreadableSaid = new Map<string, string>();
  /** Records read so far of the files this process is reading (progress before the counts exist). */
  readonly reading = new Map<string, number>();
  /** When work last moved (a batch read, a chunk answered, a transition): the daemon's watchdog. */
  lastProgress = Date.now();
  /** Aborted by stop(): no new chunk starts, and a chunk waiting to retry gives up as pending. */
  private readonly stopping = new AbortController();

  constructor(options: PipelineOptions) {
    this.store = options.store;
    this.config = options.config;
    this.client = options.client;
    this.sources = options.sources;
    this.log = options.logger;
    this.owner = options.owner;
    this.suppression = options.suppression ?? null;
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Graceful stop: every send stops between chunks. A chunk whose request is in flight gets its
   * answer; one waiting to retry after a 5xx (not accepted) goes back to pending, as do the
   * chunks never tried, so the file stays `sending` and the next start resumes it.
   */
  stop(): void {
    this.stopping.abort();
  }

  sourceConfig(name: string): SourceConfig {
    const cfg = this.config.sources.find((s) => s.name === name);
    if (!cfg) throw new Error(`unknown source ${name}`);
    return cfg;
  }

  source(name: string): Source {
    const s = this.sources.get(name);
    if (!s) throw new Error(`source ${name} is not started`);
    return s;
  }

  private numberRules(cfg: SourceConfig): NumberRules {
    let r = this.rules.get(cfg.name);
    if (!r) {
      r = makeNumberRules(cfg.defaultCountry, cfg.allowedCountries);
      this.rules.set(cfg.name, r);
    }
    return r;
  }

  private touch(): void {
    this.lastProgress = Date.now();
  }

  private transitionLog(file: FileRecord, from: string, extra: Record<string, unknown> = {}): void {
    this.touch();
    // A partial file waits for an operator (retry); a rejected one is warned about where it is rejected.
    this.log[file.state === 'partial' ? 'error' : 'info'](
      { fileId: file.fileId, source: file.source, file: file.name, from, to: file.state, ...extra },
      `file ${file.name} ${from} → ${file.state}`,
    );
  }

  private async transition(
    fileId: string,
    to: FileState,
    from: readonly FileState[],
    patch?: FilePatch,
  ): Promise<FileRecord | null> {
    const before = await this.store.getFile(fileId);
    const file = await this.store.transition(fileId, to, { from, ...(patch ? { patch } : {}) });
    if (file) this.transitionLog(file, before?.state ?? '?');
    return file;
  }

  // ---- claim ----------------------------------------------------------------------------

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
    const maxBytes = this.sourceConfig(source.name).maxFileBytes;
    type Refused = { entry: SourceEntry; refusal: { reason: FileReasonCode; message: string } };
    // Several files read at once: on SFTP or S3 a claim costs round trips, not bandwidth,
    // and one at a time made a claim of 500 small files wait for 4,000 answers in a row.
    const read = await mapLimited(
      entries,
      CLAIM_READ_CONCURRENCY,
      async (entry): Promise<ReadyFile | Refused | null> => {
        try {
          const r = await this.readForClaim(source, entry, maxBytes);
          if ('refusal' in r) return { entry, refusal: r.refusal };
          this.rememberSniff(r.sniffed);
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
    for (const r of read) {
      if (r === null) continue;
      if ('refusal' in r) refused.push(r);
      else ready.push(r);
    }
    const claimed = await this.store.claimFiles(source.name, ready, {
      idFor: (sha256, generation) => fileIdFor(source.name, sha256, generation),
      duplicateSince: new Date(this.now().getTime() - this.config.duplicateWindowMs).toISOString(),
      force: options.force ?? false,
    });
    const paths: { fileId: string; path: string }[] = [];
    const files = await mapLimited(
      claimed,
      CLAIM_READ_CONCURRENCY,
      async ({ file, created, duplicateOf }) => {
        // Recorded before (a crash between recording and moving): whoever takes the lease goes on.
        if (!created) return file;
        this.log.info(
          { fileId: file.fileId, source: source.name, file: file.name, bytes: file.bytes, state: file.state },
          `claimed ${file.name}`,
        );
        if (duplicateOf) {
          await this.finishFailed(file, source);
          return this.mustGet(file.fileId);
        }
        const path = await this.moveTo(file, source, 'processing', { record: false });
        if (path !== file.path) paths.push({ fileId: file.fileId, path });
        return { ...file, path };
      },
    );
    await this.store.setPaths(paths);
    for (const { entry, refusal } of refused) {
      const file = await this.rejectUnread(source, entry, refusal.reason, refusal.message);
      if (file) files.push(file);
    }
    return files;
  }

  /**
   * The claim's read of a file (encoding, BOM, line count), kept by content for its ingest:
   * the reader then reads the file once more instead of twice. Keyed by sha256, so it can
   * never describe other bytes than those it was made of; and the ingest's one read is
   * checked against the same sha256 (claimedBytes).
   */
  private rememberSniff(sniffed: Sniff): void {
    if (sniffed.sha256 === null) return;
    if (this.sniffs.size >= SNIFFS_KEPT) this.sniffs.delete(this.sniffs.keys().next().value!);
    this.sniffs.set(sniffed.sha256, sniffed);
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
      this.log.warn(
        { source: source.name, file: entry.name, err: message },
        `cannot read ${entry.path} now; it is tried again on a later poll`,
      );
    }
    return true;
  }

  /**
   * A listed file rejected before a byte of it was read (not a regular file any more,
   * unreadable): recorded with an empty sha256, moved to failed/ with its errors.csv and
   * manifest. null when it was recorded before (its move failed): nothing new to say.
   */
  private async rejectUnread(
    source: Source,
    entry: SourceEntry,
    code: FileReasonCode,
    message: string,
  ): Promise<FileRecord | null> {
    const prior = await this.store.countBySha(source.name, '');
    const { file, created } = await this.store.registerFile({
      fileId: fileIdFor(source.name, '', prior + 1),
      source: source.name,
      name: entry.name,
      path: entry.path,
      sha256: '',
      bytes: entry.size,
      state: 'rejected',
    });
    if (!created) return null;
    const rejection = { code, message };
    await this.store.updateFile(file.fileId, { rejection, reason: message });
    this.log.warn(
      { fileId: file.fileId, source: source.name, file: entry.name, code },
      `${entry.name} rejected ${code}: ${message}`,
    );
    await this.finishFailed(await this.mustGet(file.fileId), source);
    return this.mustGet(file.fileId);
  }

  /** One file claimed and leased by this worker (send); null when another worker holds it. */
  async claim(
    source: Source,
    entry: SourceEntry,
    options: { force?: boolean } = {},
  ): Promise<FileRecord | null> {
    const [file = null] = await this.claimReady(source, [entry], options);
    if (file?.state !== 'validating') return file;
    return (await this.store.takeLease(file.fileId, this.owner, this.config.leaseMs)) ? file : null;
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
  ): Promise<{ sniffed: Sniff } | { refusal: { reason: FileReasonCode; message: string } }> {
    if (entry.size > maxBytes) return { refusal: tooLarge(maxBytes, entry.size) };
    let sniffed: Sniff;
    try {
      sniffed = await sniff(source.open(entry.path), { hash: true, maxBytes });
    } catch (err) {
      const refusal = fileRefusalOf(err, entry.path);
      if (!refusal) throw err;
      return { refusal };
    }
    this.touch();
    // It grew past the limit after the listing: the hash stopped there.
    if (sniffed.tooLarge) return { refusal: tooLarge(maxBytes, sniffed.bytes) };
    return { sniffed };
  }

  /**
   * A file that never became complete (no trailer, or no marker, before incompleteTimeout):
   * rejected MISSING_TRAILER, moved to failed/ with its errors.csv.
   */
  async rejectIncomplete(source: Source, entry: SourceEntry): Promise<FileRecord | null> {
    const cfg = this.sourceConfig(source.name);
    const r = await this.readForClaim(source, entry, cfg.maxFileBytes);
    if ('refusal' in r) return this.rejectUnread(source, entry, r.refusal.reason, r.refusal.message);
    const { sniffed } = r;
    const sha256 = sniffed.sha256!;
    const prior = await this.store.countBySha(source.name, sha256);
    const { file, created } = await this.store.registerFile({
      fileId: fileIdFor(source.name, sha256, prior + 1),
      source: source.name,
      name: entry.name,
      path: entry.path,
      sha256,
      bytes: sniffed.bytes,
      state: 'rejected',
    });
    if (!created) return null;
    const waited = cfg.readiness === 'marker' ? `its marker ${entry.name}.done` : 'a trailer line (EOF;<n>)';
    const rejection = {
      code: 'MISSING_TRAILER',
      message: `the source waits for ${waited}, and none came within ${Math.round(cfg.incompleteTimeoutMs / 1000)} s`,
    };
    await this.store.updateFile(file.fileId, { rejection, reason: rejection.message });
    this.log.warn({ fileId: file.fileId, file: entry.name }, rejection.message);
    await this.finishFailed(await this.mustGet(file.fileId), source);
    return this.mustGet(file.fileId);
  }

  private async mustGet(fileId: string): Promise<FileRecord> {
    const f = await this.store.getFile(fileId);
    if (!f) throw new Error(`file ${fileId} vanished from the store`);
    return f;
  }

  /** Moves a file into `folder/`, under a name of its own when that one is taken. */
  private async moveTo(
    file: FileRecord,
    source: Source,
    folder: string,
    options: { record?: boolean } = {},
  ): Promise<string> {
    if (file.path.startsWith(`${folder}/`)) return file.path;
    let target = `${folder}/${file.name}`;
    try {
      let moved: boolean;
      try {
        moved = await source.move(file.path, target);
      } catch (err) {
        // The name is taken there (move never replaces a file): a name of its own, prefixed
        // with the fileId and cut so that it still fits NAME_MAX (255 bytes). Asked only
        // then, so a move costs no extra look-up (a round trip per file on SFTP).
        if (!(await source.exists(target))) throw err;
        const prefix = `${file.fileId}-`;
        const ext = /\.txt$/i.exec(file.name)?.[0] ?? '';
        const base = file.name.slice(0, file.name.length - ext.length);
        target = `${folder}/${prefix}${cutToBytes(base, 255 - prefix.length - ext.length)}${ext}`;
        moved = await source.move(file.path, target);
      }
      if (!moved) {
        this.log.warn({ fileId: file.fileId, path: file.path }, 'original already moved away');
        return file.path;
      }
    } catch (err) {
      this.log.warn(
        { fileId: file.fileId, err: (err as Error).message },
        `could not move the original to ${folder}/`,
      );
      return file.path;
    }
    if (options.record !== false) await this.store.updateFile(file.fileId, { path: target });
    return target;
  }

  private async toProcessing(file: FileRecord, source: Source): Promise<void> {
    if (file.path.startsWith('inbox/')) await this.moveTo(file, source, 'processing');
  }

  // ---- drive ----------------------------------------------------------------------------

  /** Drives a file this worker holds the lease of as far as it goes now. */
  async drive(fileId: string): Promise<FileRecord> {
    if (this.driving.has(fileId)) return this.mustGet(fileId);
    this.driving.add(fileId);
    const renew = setInterval(
      () => {
        void this.store.renewLease(fileId, this.owner, this.config.leaseMs).catch(() => {});
      },
      Math.max(200, Math.floor(this.config.leaseMs / 3)),
    );
    try {
      await this.store.markInflightInDoubt(fileId);
      for (;;) {
        const file = await this.mustGet(fileId);
        if (file.state === 'validating') await this.ingest(file);
        else if (file.state === 'sending') {
          const after = await this.send(file);
          if (after.state === 'sending') return after; // lost the lease or stopped
          // submitted() has just checked its progress: no second count of the file.
          if (after.state === 'submitted') return after;
        } else return await this.checkProgress(file);
      }
    } finally {
      clearInterval(renew);
      this.driving.delete(fileId);
      await this.store.releaseLease(fileId, this.owner).catch(() => {});
    }
  }

  // ---- ingest ---------------------------------------------------------------------------

  private async ingest(file: FileRecord): Promise<void> {
    const source = this.source(file.source);
    const cfg = this.sourceConfig(file.source);
    await this.toProcessing(file, source);
    file = await this.mustGet(file.fileId);
    await this.store.clearRecipients(file.fileId);
    const planner = new ChunkPlanner(this.config.api.chunkSize);
    let rows: RecipientInsert[] = [];
    let idx = 0;
    let summary: ReadSummary | null = null;
    let bulkTextStored = false;
    if (file.bytes > cfg.maxFileBytes) {
      const { reason, message } = tooLarge(cfg.maxFileBytes, file.bytes);
      await this.refuse(file, source, { reason, message });
      return;
    }
    const seen = { records: 0, valid: 0, invalid: 0, duplicates: 0, suppressed: 0 };
    let readShownAt = Date.now();
    const claimed = file;
    const sniffed = this.sniffs.get(file.sha256);
    this.sniffs.delete(file.sha256);
    // A refusal (changed since the claim, not a regular file…) ends the read; its rows go.
    const refused: { error: SourceFileError | null } = { error: null };
    const read = readDropFile(() => claimedBytes(source.open(claimed.path), claimed), {
      ...(sniffed?.bytes === file.bytes ? { sniffed } : {}),
      name: file.name,
      layout: cfg.layout,
      numberRules: this.numberRules(cfg),
      suppression: this.suppression,
      maxInvalidRatio: cfg.maxInvalidRatio,
      maxFileBytes: cfg.maxFileBytes,
    });
    // The progress entry goes whatever ends the read (a store error too).
    try {
      for await (const batch of untilRefused(read, file.path, refused)) {
        for (const item of batch) {
          switch (item.kind) {
            case 'recipient': {
              // A bulk file's text is kept once, on its first recipient (k > 0 only in bulk files).
              const text = item.k === 0 ? item.text : bulkTextStored ? null : item.text;
              if (item.k > 0) bulkTextStored = true;
              rows.push({
                idx: ++idx,
                line: item.line,
                k: item.k,
                number: item.number,
                value: null,
                messageId: item.messageId,
                generatedMessageId: item.messageId === null,
                text,
                chunkSeq: planner.place(item.number),
                outcome: 'pending',
                code: null,
                detail: null,
                smsCount: item.segments,
              });
              break;
            }
            case 'invalid':
            case 'duplicate':
            case 'suppressed':
              rows.push({
                idx: ++idx,
                line: item.line,
                k: item.k,
                number: item.number,
                value: item.value,
                messageId: null,
                text: null,
                chunkSeq: null,
                outcome: item.kind,
                code: item.code,
                detail: item.message,
                smsCount: null,
              });
              break;
            case 'summary':
              summary = item;
              break;
            default:
              break;
          }
        }
        if (rows.length >= INSERT_BATCH) {
          await this.store.insertRecipients(file.fileId, rows);
          this.reading.set(file.fileId, idx);
          for (const r of rows) {
            // One row a record, but a bulk line of several numbers: counted at its first.
            if (r.k <= 1) seen.records++;
            if (r.outcome === 'pending') seen.valid++;
            else if (r.outcome === 'invalid') seen.invalid++;
            else if (r.outcome === 'duplicate') seen.duplicates++;
            else if (r.outcome === 'suppressed') seen.suppressed++;
          }
          this.touch();
          rows = [];
          // `status` in another process shows how far the read got: one small UPDATE at most
          // every half second, the final counts replace it.
          if (Date.now() - readShownAt >= 500) {
            readShownAt = Date.now();
            await this.store.updateFile(file.fileId, {
              counts: { ...seen, segments: 0 },
            });
          }
        }
      }
    } finally {
      this.reading.delete(file.fileId);
    }
    if (refused.error) {
      await this.refuse(file, source, refused.error);
      return;
    }
    if (rows.length > 0) await this.store.insertRecipients(file.fileId, rows);
    if (!summary) throw new Error('the reader ended without a summary');

    const patch = {
      layout: summary.layout,
      encoding: summary.encoding,
      separator: summary.separator,
      header: summary.header,
      counts: {
        records: summary.records,
        valid: summary.valid,
        invalid: summary.invalid,
        duplicates: summary.duplicates,
        suppressed: summary.suppressed,
        segments: summary.segments,
      },
      errors: summary.errors
        .slice(0, 100)
        .map((e) => ({ line: e.line, code: e.code, message: e.message, value: e.value })),
    };
    if (!summary.accepted) {
      const rejection = { code: summary.rejection!.code, message: summary.rejection!.message };
      const rejected = await this.transition(file.fileId, 'rejected', ['validating'], {
        ...patch,
        rejection,
        reason: rejection.message,
      });
      if (rejected) await this.finishFailed(rejected, source);
      return;
    }
    const planned = planner.chunks();
    const chunks = planned.length;
    await this.store.insertChunks(file.fileId, planned);
    await this.transition(file.fileId, 'sending', ['validating'], patch);
    // The manifest only: every row of the report would still say pending. Its counts are
    // known without counting a million rows: nothing of the file was sent yet (sending
    // starts after validating, and clearRecipients wiped any earlier attempt).
    await this.writeReports(file.fileId, {
      report: false,
      counts: { ...patch.counts, ...NOTHING_SENT, chunks, chunksPending: chunks },
    });
  }

  /**
   * A claimed file that cannot be read as claimed (changed since, a link or FIFO in its
   * place, unreadable): rejected alone, with none of the rows read from it kept.
   */
  private async refuse(
    file: FileRecord,
    source: Source,
    refusal: { reason: FileReasonCode; message: string },
  ): Promise<void> {
    await this.store.clearRecipients(file.fileId);
    const rejection = { code: refusal.reason, message: refusal.message };
    this.log.warn(
      { fileId: file.fileId, source: file.source, file: file.name, code: refusal.reason },
      `${file.name} rejected ${refusal.reason}: ${refusal.message}`,
    );
    const rejected = await this.transition(file.fileId, 'rejected', ['validating'], {
      rejection,
      reason: rejection.message,
      // The records-read progress of a read it ended: none of those rows is kept.
      counts: { records: 0, valid: 0, invalid: 0, duplicates: 0, suppressed: 0, segments: 0 },
    });
    if (rejected) await this.finishFailed(rejected, source);
  }

  /** A rejected or duplicate file: original to failed/ with its errors.csv, and the reports. */
  private async finishFailed(file: FileRecord, source: Source): Promise<void> {
    await this.moveTo(file, source, 'failed');
    try {
      await source.write(
        `failed/${reportFileName(file.name, file.fileId, 'errors.csv')}`,
        errorsCsv(this.store, file),
      );
    } catch (err) {
      this.log.error({ fileId: file.fileId, err: (err as Error).message }, 'could not write errors.csv');
    }
    await this.writeReports(file.fileId);
  }

  // ---- send -----------------------------------------------------------------------------

  private bulkTexts = new Map<string, string>();

  private async bulkText(fileId: string): Promise<string | null> {
    const cached = this.bulkTexts.get(fileId);
    if (cached !== undefined) return cached;
    // The text is kept on the file's first valid recipient, the first of chunk 1.
    const first = (await this.store.chunkRecipients(fileId, 1)).find((r) => r.text !== null);
    if (first?.text != null) {
      this.bulkTexts.set(fileId, first.text);
      return first.text;
    }
    for await (const r of this.store.recipients(fileId, [
      'pending',
      'sent',
      'rejected',
      'failed',
      'in_doubt',
    ])) {
      if (r.text !== null) {
        this.bulkTexts.set(fileId, r.text);
        return r.text;
      }
    }
    return null;
  }

  /** Sends the file's pending chunks (write-ahead: inflight is committed before each request). */
  private async send(file: FileRecord): Promise<FileRecord> {
    const fileId = file.fileId;
    await this.dropStaleReport(file);
    const pending = await this.store.listChunks(fileId, ['pending']);
    const bulkText = file.layout === 'bulk' ? await this.bulkText(fileId) : null;
    let stop = false;
    const worker = async (): Promise<void> => {
      const stopping = this.stopping.signal;
      for (let chunk = pending.shift(); chunk && !stop && !stopping.aborted; chunk = pending.shift()) {
        const current = await this.store.getFile(fileId);
        if (
          current?.state !== 'sending' ||
          !(await this.store.renewLease(fileId, this.owner, this.config.leaseMs))
        ) {
          stop = true;
          return;
        }
        if (!(await this.store.setChunkState(fileId, chunk.seq, 'inflight', ['pending']))) continue;
        const rows = await this.store.chunkDestinations(fileId, chunk.seq);
        const planned = planChunk(fileId, chunk.seq, rows, bulkText);
        const result = await this.client.sendChunk(planned, { signal: stopping });
        const chunkResult = toChunkResult(result, { stopped: stopping.aborted });
        const state = await this.store.recordChunkResult(fileId, chunk.seq, chunkResult);
        this.touch();
        this.log[
          state === 'failed' ? 'error' : state === 'in_doubt' || state === 'rejected' ? 'warn' : 'info'
        ](
          {
            fileId,
            chunk: chunk.seq,
            destinations: rows.length,
            state,
            attempts: chunkResult.attempts,
            ...(chunkResult.errorCode ? { code: chunkResult.errorCode } : {}),
          },
          `chunk ${chunk.seq} ${state}`,
        );
        const blocked = result.parts.find(
          (p) => p.outcome.kind === 'forbidden' || p.outcome.kind === 'unauthorized',
        );
        if (blocked && blocked.outcome.kind !== 'accepted') {
          stop = true;
          await this.transition(fileId, 'paused', ['sending'], { reason: blocked.outcome.reason });
        }
      }
    };
    await Promise.all(Array.from({ length: this.config.api.concurrency }, worker));
    const after = await this.mustGet(fileId);
    // Paused or cancelled meanwhile: whoever did it wrote the report before the chunks in
    // flight here were recorded, so it is written again with their outcomes.
    if (after.state === 'paused' || after.state === 'cancelled') await this.writeReports(fileId);
    if (after.state !== 'sending' || stop) return after;
    // Chunk states only: the chunks table, not a count over every recipient of the file.
    const open = await this.store.listChunks(fileId, ['pending', 'inflight', 'failed', 'in_doubt']);
    if (open.some((c) => c.state === 'pending' || c.state === 'inflight')) return after;
    if (open.length > 0) {
      const failed = open.filter((c) => c.state === 'failed').length;
      const reason = `${failed} chunk(s) failed, ${open.length - failed} in doubt: dropline retry ${fileId} resends them`;
      const partial = await this.finish(fileId, 'partial', ['sending'], { reason });
      return partial ?? after;
    }
    return this.submitted(fileId, ['sending']);
  }

  private async submitted(fileId: string, from: readonly FileState[]): Promise<FileRecord> {
    const deadline = new Date(this.now().getTime() + this.config.deliveryTimeoutMs).toISOString();
    const file = await this.transition(fileId, 'submitted', from, {
      reason: null,
      deliveryDeadline: deadline,
    });
    if (!file) return this.mustGet(fileId);
    await this.dropStaleReport(file);
    await this.moveTo(file, this.source(file.source), 'done');
    // The manifest only: report.csv is the per-line account of a finished file, written
    // when it completes (or stops: partial, rejected, cancelled). At this point every row
    // of it would say "sent, pending delivery", and a million-row report costs seconds;
    // `dropline report <fileId>` prints the current one at any time.
    const manifest = await this.writeReports(fileId, { report: false });
    // The manifest's counts were read after the file became submitted: good enough for
    // checkProgress (pending deliveries only go down), one count of the file fewer.
    return this.checkProgress(await this.mustGet(fileId), manifest?.counts);
  }

  // ---- progress -------------------------------------------------------------------------

  /**
   * Submitted: completed when every submitted recipient has a final status, or at the
   * delivery deadline (the rest UNKNOWN). Partial: submitted once delivery reports have
   * settled every in-doubt chunk, sending again when one left a chunk pending (recipients a
   * 403 held back); in-doubt chunks resent after the grace period when `api.inDoubt` is
   * "resend".
   */
  async checkProgress(file: FileRecord, known?: Pick<FileCounts, 'pendingDelivery'>): Promise<FileRecord> {
    const fileId = file.fileId;
    if (file.state === 'partial') {
      const counts = await this.store.counts(fileId);
      // A report proved an in-doubt chunk that also holds recipients a 403 held back: the
      // chunk is pending again for them, so the file goes back to sending.
      if (counts.chunksPending > 0)
        return (await this.transition(fileId, 'sending', ['partial'], { reason: null })) ?? file;
      if (counts.chunksFailed + counts.chunksInDoubt === 0) return this.submitted(fileId, ['partial']);
      if (this.config.api.inDoubt === 'resend' && counts.chunksFailed === 0 && counts.chunksInDoubt > 0) {
        const chunks = await this.store.listChunks(fileId, ['in_doubt']);
        const graceOver = chunks.every(
          (c) => this.now().getTime() - Date.parse(c.updatedAt) >= this.config.api.inDoubtGraceMs,
        );
        if (graceOver) return this.resendInDoubt(file);
      }
      return file;
    }
    if (file.state !== 'submitted') return file;
    const counts = known ?? (await this.store.counts(fileId));
    if (counts.pendingDelivery > 0) {
      if (!file.deliveryDeadline || this.now().getTime() < Date.parse(file.deliveryDeadline)) return file;
      const expired = await this.store.expireDeliveries(fileId);
      this.log.info({ fileId, expired }, 'delivery timeout: recipients without a report are UNKNOWN');
    }
    const done = await this.finish(fileId, 'completed', ['submitted']);
    return done ?? this.mustGet(fileId);
  }

  /**
   * A file whose rows are final (completed, partial): report.csv first, then the state, then
   * the manifest. Whoever sees the state (`dropline status`, the API) finds the report, which
   * for a million rows takes seconds to write.
   */
  private async finish(
    fileId: string,
    to: FileState,
    from: readonly FileState[],
    patch?: FilePatch,
  ): Promise<FileRecord | null> {
    const before = await this.store.getFile(fileId);
    if (before) await this.writeReportCsv(before);
    const file = await this.transition(fileId, to, from, patch);
    if (file) await this.writeReports(fileId, { report: false });
    return file;
  }

  /** api.inDoubt "resend": in-doubt chunks go out again, counted as possible duplicates. */
  private async resendInDoubt(file: FileRecord): Promise<FileRecord> {
    const counts = await this.store.counts(file.fileId);
    const requeued = await this.store.requeueChunks(file.fileId, ['in_doubt']);
    if (requeued === 0) return file;
    this.log.warn(
      { fileId: file.fileId, chunks: requeued, recipients: counts.inDoubt },
      'resending in-doubt chunks: their recipients may get the message twice',
    );
    await this.store.updateFile(file.fileId, { addPossibleDuplicates: counts.inDoubt });
    return (await this.transition(file.fileId, 'sending', ['partial'])) ?? file;
  }

  /**
   * `retry`: failed and in-doubt chunks back to pending, the file back to sending. In-doubt
   * recipients may have been accepted already: they are counted as possible duplicates.
   */
  async retry(fileId: string): Promise<number> {
    const { inDoubt } = await this.store.counts(fileId);
    const requeued = await this.store.requeueChunks(fileId, ['failed', 'in_doubt']);
    if (requeued === 0) return 0;
    if (inDoubt > 0) {
      this.log.warn(
        { fileId, recipients: inDoubt },
        'retry resends in-doubt chunks: their recipients may get the message twice',
      );
      await this.store.updateFile(fileId, { addPossibleDuplicates: inDoubt });
    }
    await this.transition(fileId, 'sending', ['partial', 'sending']);
    return requeued;
  }

  // ---- reports --------------------------------------------------------------------------

  /**
   * reports/<name>.<fileId>.manifest.json and .report.csv, rewritten at milestones. A report
   * of a million rows costs seconds, so it is written only where its rows changed.
   */
  async writeReports(
    fileId: string,
    options: { report?: boolean; counts?: FileCounts } = {},
  ): Promise<Manifest | null> {
    let manifest: Manifest | null;
    if (options.counts) {
      const file = await this.store.getFile(fileId);
      manifest = file ? buildManifest(file, options.counts) : null;
    } else manifest = await manifestOf(this.store, fileId);
    if (!manifest) return null;
    const source = this.sources.get(manifest.source);
    if (!source) return manifest;
    // The manifest last: whoever sees its state sees a report.csv at least as recent.
    if (options.report !== false && !(await this.writeReportCsv(manifest))) return manifest;
    try {
      await source.write(
        `reports/${reportFileName(manifest.name, fileId, 'manifest.json')}`,
        `${JSON.stringify(manifest, null, 2)}\n`,
      );
    } catch (err) {
      this.log.error({ fileId, err: (err as Error).message }, 'could not write the manifest');
    }
    return manifest;
  }

  /**
   * A file that was paused or partial has a report.csv from then; once it sends again (or is
   * submitted) its rows change, and report.csv comes back when it finishes. Meanwhile
   * no stale account of it stays in reports/.
   */
  private async dropStaleReport(file: FileRecord): Promise<void> {
    if (!file.timestamps.paused && !file.timestamps.partial) return;
    const source = this.sources.get(file.source);
    try {
      await source?.remove(`reports/${reportFileName(file.name, file.fileId, 'report.csv')}`);
    } catch (err) {
      this.log.warn({ fileId: file.fileId, err: (err as Error).message }, 'could not remove a stale report');
    }
  }

  /** reports/<name>.<fileId>.report.csv: one row per record of the file, as the store has it now. */
  private async writeReportCsv(file: Pick<FileRecord, 'fileId' | 'source' | 'name'>): Promise<boolean> {
    const source = this.sources.get(file.source);
    if (!source) return false;
    try {
      await source.write(
        `reports/${reportFileName(file.name, file.fileId, 'report.csv')}`,
        reportCsv(this.store, file.fileId),
      );
      return true;
    } catch (err) {
      this.log.error({ fileId: file.fileId, err: (err as Error).message }, 'could not write the report');
      return false;
    }
  }
}

function tooLarge(maxBytes: number, bytes: number): { reason: 'FILE_TOO_LARGE'; message: string } {
  return {
    reason: 'FILE_TOO_LARGE',
    message: `the file is larger than ${maxBytes} bytes (maxFileBytes): ${bytes} bytes or more`,
  };
}

/**
 * The bytes of a claimed file, checked against its claim as they pass: never more than the
 * claimed size, and at the end exactly its size and sha256. Whatever reads through it
 * (the reader's sniff and parse passes) fails with FILE_CHANGED before it can finish on
 * content other than the claimed one, so nothing of it reaches `sending`.
 */
export async function* claimedBytes(
  chunks: AsyncIterable<Uint8Array>,
  claimed: Pick<FileRecord, 'path' | 'bytes' | 'sha256'>,
): AsyncGenerator<Uint8Array> {
  const hash = createHash('sha256');
  let bytes = 0;
  const changed = (what: string): SourceFileError =>
    new SourceFileError(
      'FILE_CHANGED',
      `${claimed.path} changed after it was claimed (${what}; claimed ${claimed.bytes} bytes, sha256 ${claimed.sha256})`,
    );
  for await (const chunk of chunks) {
    bytes += chunk.byteLength;
    if (bytes > claimed.bytes) throw changed(`more than ${claimed.bytes} bytes now`);
    hash.update(chunk);
    yield chunk;
  }
  if (bytes !== claimed.bytes) throw changed(`${bytes} bytes now`);
  const sha256 = hash.digest('hex');
  if (sha256 !== claimed.sha256) throw changed(`sha256 ${sha256} now`);
}

/** `items` until one fails with a file refusal, which is kept in `out`; other errors pass. */
async function* untilRefused<T>(
  items: AsyncIterable<T>,
  path: string,
  out: { error: SourceFileError | null },
): AsyncGenerator<T> {
  try {
    yield* items;
  } catch (err) {
    const refusal = fileRefusalOf(err, path);
    if (!refusal) throw err;
    out.error = refusal;
  }
}

/**
 * The client's per-part outcomes → what the store records for the chunk. `stopped`: the send
 * was cut short by a stop, so a retryable failure (the service never took the part) is
 * pending again rather than failed for good.
 */
export function toChunkResult(result: SendResult, options: { stopped?: boolean } = {}): ChunkResult {
  const parts: PartOutcome[] = [];
  let attempts = 0;
  let accepted = 0;
  let rejected = 0;
  let failed = 0;
  let inDoubt = 0;
  let blocked = 0;
  let transactionNumber: string | null = null;
  let errorCode: string | null = null;
  let errorMessage: string | null = null;
  for (const p of result.parts) {
    const o = p.outcome;
    attempts += o.attempts;
    const messageIds = p.destinations.map((d) => d.messageId);
    // One part carrying every destination of the request: the store may record it by chunk.
    const whole = result.parts.length === 1 && p.destinations.length === result.destinations;
    const scope = whole ? { messageIds, wholeChunk: true } : { messageIds };
    if (o.kind === 'accepted') {
      accepted++;
      transactionNumber ??= o.transactionNumber;
      parts.push({ ...scope, outcome: 'sent', transactionNumber: o.transactionNumber });
      continue;
    }
    errorCode ??= o.code;
    errorMessage ??= o.reason;
    switch (o.kind) {
      case 'rejected':
        rejected++;
        parts.push({ ...scope, outcome: 'rejected', code: o.code, detail: o.reason });
        break;
      case 'in_doubt':
        inDoubt++;
        parts.push({ ...scope, outcome: 'in_doubt', code: o.code, detail: o.reason });
        break;
      case 'forbidden':
      case 'unauthorized':
        blocked++;
        parts.push({ ...scope, outcome: 'pending', code: o.code, detail: o.reason });
        break;
      default:
        if (options.stopped && o.retryable) {
          blocked++;
          parts.push({ ...scope, outcome: 'pending', code: o.code, detail: o.reason });
        } else {
          failed++;
          parts.push({ ...scope, outcome: 'failed', code: o.code, detail: o.reason });
        }
    }
  }
  let state: ChunkState;
  if (inDoubt > 0) state = 'in_doubt';
  else if (failed > 0) state = 'failed';
  else if (blocked > 0) state = 'pending';
  else if (accepted === 0 && rejected > 0) state = 'rejected';
  else state = 'accepted';
  return { state, attempts, transactionNumber, errorCode, errorMessage, parts };
}
