// The pipeline's progress stage (docs/architecture.md "The pipeline"): a sent file's delivery
// reports counted, completion, the delivery timeout and in-doubt chunks settled.
import type { FileCounts, FilePatch, FileRecord, FileState } from '../store/store.ts';
import type { PipelineContext } from './context.ts';
import type { Leases } from './lease.ts';
import type { Outputs } from './outputs.ts';

/** Completion of submitted files, under their lease. */
export class Progress {
  readonly c: PipelineContext;
  readonly leases: Leases;
  readonly outputs: Outputs;

  constructor(c: PipelineContext, leases: Leases, outputs: Outputs) {
    this.c = c;
    this.leases = leases;
    this.outputs = outputs;
  }

  async submitted(fileId: string, from: readonly FileState[]): Promise<FileRecord> {
    const deadline = new Date(this.c.now().getTime() + this.c.config.deliveryTimeoutMs).toISOString();
    const file = await this.c.transition(fileId, 'submitted', from, {
      reason: null,
      deliveryDeadline: deadline,
    });
    if (!file) return this.c.mustGet(fileId);
    await this.outputs.dropStaleReport(file);
    await this.c.moveTo(file, this.c.source(file.source), 'done');
    // The manifest only: report.csv is the per-line account of a finished file, written
    // when it completes (or stops: partial, rejected, cancelled). At this point every row
    // of it would say "sent, pending delivery", and a million-row report costs seconds;
    // `dropline report <fileId>` prints the current one at any time.
    const manifest = await this.outputs.writeReports(fileId, { report: false });
    // The manifest's counts were read after the file became submitted: good enough for
    // checkProgress (pending deliveries only go down), one count of the file fewer.
    return this.progressHeld(await this.c.mustGet(fileId), manifest?.counts);
  }

  /**
   * Submitted: completed when every submitted recipient has a final status, or at the
   * delivery deadline (the rest UNKNOWN). Partial: submitted once delivery reports have
   * settled every in-doubt chunk, sending again when one left a chunk pending (recipients a
   * 403 held back); in-doubt chunks resent after the grace period when `api.inDoubt` is
   * "resend". Whatever it changes, under the file's lease: null when another worker holds
   * the file (that one checks it).
   */
  async checkProgress(file: FileRecord | string): Promise<FileRecord | null> {
    const seen = typeof file === 'string' ? await this.c.store.getFile(file) : file;
    if (!seen) return null;
    // The daemon checks every submitted file every few seconds: one that has nothing to do
    // costs a read, not two lease writes. The decision is made again under the lease.
    if (!(await this.progressDue(seen))) return seen;
    return this.leases.withLease(seen.fileId, (f) => this.progressHeld(f));
  }

  /** Whether progressHeld would change something now (read only). */
  private async progressDue(file: FileRecord): Promise<boolean> {
    if (file.state !== 'submitted' && file.state !== 'partial') return false;
    const counts = await this.c.store.counts(file.fileId);
    if (file.state === 'submitted')
      return (
        counts.pendingDelivery === 0 ||
        (file.deliveryDeadline !== null && this.c.now().getTime() >= Date.parse(file.deliveryDeadline))
      );
    if (counts.chunksPending > 0 || counts.chunksFailed + counts.chunksInDoubt === 0) return true;
    return this.c.config.api.inDoubt === 'resend' && counts.chunksFailed === 0 && counts.chunksInDoubt > 0;
  }

  async progressHeld(file: FileRecord, known?: Pick<FileCounts, 'pendingDelivery'>): Promise<FileRecord> {
    const fileId = file.fileId;
    if (file.state === 'partial') {
      const counts = await this.c.store.counts(fileId);
      // A report proved an in-doubt chunk that also holds recipients a 403 held back: the
      // chunk is pending again for them, so the file goes back to sending.
      if (counts.chunksPending > 0)
        return (await this.c.transition(fileId, 'sending', ['partial'], { reason: null })) ?? file;
      if (counts.chunksFailed + counts.chunksInDoubt === 0) return this.submitted(fileId, ['partial']);
      if (this.c.config.api.inDoubt === 'resend' && counts.chunksFailed === 0 && counts.chunksInDoubt > 0) {
        const chunks = await this.c.store.listChunks(fileId, ['in_doubt']);
        const graceOver = chunks.every(
          (c) => this.c.now().getTime() - Date.parse(c.updatedAt) >= this.c.config.api.inDoubtGraceMs,
        );
        if (graceOver) return this.resendInDoubt(file);
      }
      return file;
    }
    if (file.state !== 'submitted') return file;
    const counts = known ?? (await this.c.store.counts(fileId));
    if (counts.pendingDelivery > 0) {
      if (!file.deliveryDeadline || this.c.now().getTime() < Date.parse(file.deliveryDeadline)) return file;
      this.leases.fence(fileId);
      const expired = await this.c.store.expireDeliveries(fileId);
      this.c.log.info({ fileId, expired }, 'delivery timeout: recipients without a report are UNKNOWN');
    }
    const done = await this.finish(fileId, 'completed', ['submitted']);
    return done ?? this.c.mustGet(fileId);
  }

  /**
   * A file whose rows are final (completed, partial): report.csv first, then the state, then
   * the manifest. Whoever sees the state (`dropline status`, the API) finds the report, which
   * for a million rows takes seconds to write.
   */
  async finish(
    fileId: string,
    to: FileState,
    from: readonly FileState[],
    patch?: FilePatch,
  ): Promise<FileRecord | null> {
    const before = await this.c.store.getFile(fileId);
    if (before) await this.outputs.writeReportCsv(before);
    // A lease taken over while the report was written: refused here, and nothing more written.
    const file = await this.c.transition(fileId, to, from, patch);
    if (file) await this.outputs.writeReports(fileId, { report: false });
    return file;
  }

  /** api.inDoubt "resend": in-doubt chunks go out again, counted as possible duplicates. */
  private async resendInDoubt(file: FileRecord): Promise<FileRecord> {
    const counts = await this.c.store.counts(file.fileId);
    this.leases.fence(file.fileId);
    // Counted in the same transaction: a requeue repeated after a lost commit counts nothing twice.
    const requeued = await this.c.store.requeueChunks(file.fileId, ['in_doubt'], {
      addPossibleDuplicates: counts.inDoubt,
    });
    if (requeued === 0) return file;
    this.c.log.warn(
      { fileId: file.fileId, chunks: requeued, recipients: counts.inDoubt },
      'resending in-doubt chunks: their recipients may get the message twice',
    );
    return (await this.c.transition(file.fileId, 'sending', ['partial'])) ?? file;
  }
}
