// One file's way through dropline: claim → ingest (read, validate, record every line) →
// send (write-ahead per chunk) → delivery reports → completed. The store is the truth at
// every step, so a process killed at any moment is resumed by the next one that takes the
// file's lease (DESIGN-NOTES 1).
import type { Config, SourceConfig } from '../config/schema.ts';
import { sniff } from '../format/decode.ts';
import { makeNumberRules, type NumberRules } from '../format/numbers.ts';
import { type ReadSummary, readDropFile } from '../format/reader.ts';
import type { SuppressionList } from '../format/suppression.ts';
import type { Logger } from '../log.ts';
import { planChunk } from '../plan/chunks.ts';
import { fileIdFor } from '../plan/ids.ts';
import type { SendResult, ServiceClient } from '../service/client.ts';
import type { Source, SourceEntry } from '../sources/source.ts';
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
    this.log.info(
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
    const ready: ReadyFile[] = [];
    for (const entry of entries) {
      const sniffed = await sniff(source.open(entry.path), { hash: true });
      this.touch();
      ready.push({ name: entry.name, path: entry.path, sha256: sniffed.sha256!, bytes: sniffed.bytes });
    }
    const claimed = await this.store.claimFiles(source.name, ready, {
      idFor: (sha256, generation) => fileIdFor(source.name, sha256, generation),
      duplicateSince: new Date(this.now().getTime() - this.config.duplicateWindowMs).toISOString(),
      force: options.force ?? false,
    });
    const files: FileRecord[] = [];
    const paths: { fileId: string; path: string }[] = [];
    for (const { file, created, duplicateOf } of claimed) {
      // Recorded before (a crash between recording and moving): whoever takes the lease goes on.
      if (!created) {
        files.push(file);
        continue;
      }
      this.log.info(
        { fileId: file.fileId, source: source.name, file: file.name, bytes: file.bytes, state: file.state },
        `claimed ${file.name}`,
      );
      if (duplicateOf) {
        await this.finishFailed(file, source);
        files.push(await this.mustGet(file.fileId));
        continue;
      }
      const path = await this.moveTo(file, source, 'processing', { record: false });
      if (path !== file.path) paths.push({ fileId: file.fileId, path });
      files.push({ ...file, path });
    }
    await this.store.setPaths(paths);
    return files;
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
   * A file that never became complete (no trailer, or no marker, before incompleteTimeout):
   * rejected MISSING_TRAILER, moved to failed/ with its errors.csv.
   */
  async rejectIncomplete(source: Source, entry: SourceEntry): Promise<FileRecord | null> {
    const cfg = this.sourceConfig(source.name);
    const sniffed = await sniff(source.open(entry.path), { hash: true });
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
      if (await source.exists(target)) {
        // Prefixed with the fileId, cut so that it still fits NAME_MAX (255 bytes).
        const prefix = `${file.fileId}-`;
        const ext = /\.txt$/i.exec(file.name)?.[0] ?? '';
        const base = file.name.slice(0, file.name.length - ext.length);
        target = `${folder}/${prefix}${cutToBytes(base, 255 - prefix.length - ext.length)}${ext}`;
      }
      const moved = await source.move(file.path, target);
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
    const chunkSize = this.config.api.chunkSize;
    let rows: RecipientInsert[] = [];
    let idx = 0;
    let valid = 0;
    let summary: ReadSummary | null = null;
    let bulkTextStored = false;
    for await (const batch of readDropFile(() => source.open(file.path), {
      name: file.name,
      layout: cfg.layout,
      numberRules: this.numberRules(cfg),
      suppression: this.suppression,
      maxInvalidRatio: cfg.maxInvalidRatio,
      maxFileBytes: cfg.maxFileBytes,
    })) {
      for (const item of batch) {
        switch (item.kind) {
          case 'recipient': {
            valid++;
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
              chunkSeq: Math.ceil(valid / chunkSize),
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
        this.touch();
        rows = [];
      }
    }
    this.reading.delete(file.fileId);
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
    const chunks = Math.ceil(summary.valid / chunkSize);
    await this.store.insertChunks(
      file.fileId,
      Array.from({ length: chunks }, (_, i) => ({
        seq: i + 1,
        size: i + 1 < chunks ? chunkSize : summary.valid - chunkSize * (chunks - 1),
      })),
    );
    await this.transition(file.fileId, 'sending', ['validating'], patch);
    // The manifest only: every row of the report would still say pending. Its counts are
    // known without counting a million rows: nothing of the file was sent yet (sending
    // starts after validating, and clearRecipients wiped any earlier attempt).
    await this.writeReports(file.fileId, {
      report: false,
      counts: { ...patch.counts, ...NOTHING_SENT, chunks, chunksPending: chunks },
    });
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
        this.log.info(
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
