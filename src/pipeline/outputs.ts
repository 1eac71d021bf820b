// The pipeline's outputs stage (docs/architecture.md "The pipeline"): a file's reports on its
// source (manifest, report.csv, errors.csv), written under its lease, owed when the source
// refuses them, and the file moved to its final folder when it fails or is cancelled.
import type { Source } from '../sources/source.ts';
import type { FileCounts, FileRecord, FileState } from '../store/store.ts';
import type { PipelineContext } from './context.ts';
import type { Leases } from './lease.ts';
import { buildManifest, errorsCsv, type Manifest, manifestOf, reportCsv, reportFileName } from './reports.ts';

/**
 * States whose report.csv is on the source (written when the file finished or stopped); the
 * others have their manifest only.
 */
const REPORT_CSV_STATES: ReadonlySet<FileState> = new Set([
  'completed',
  'partial',
  'cancelled',
  'paused',
  'rejected',
  'duplicate',
]);

/** Reports and final folders of the files this worker holds. */
export class Outputs {
  readonly c: PipelineContext;
  readonly leases: Leases;

  constructor(c: PipelineContext, leases: Leases) {
    this.c = c;
    this.leases = leases;
  }

  /**
   * A rejected or duplicate file: original to failed/ with its errors.csv, and the reports.
   * `source` null: the file has no original of its own to move (what is at its path now is
   * another file, e.g. a newer upload that replaced it before its claim moved it).
   */
  async finishFailed(file: FileRecord, source: Source | null): Promise<void> {
    if (source) await this.c.moveTo(file, source, 'failed');
    await this.writeErrorsCsv(file);
    await this.writeReports(file.fileId);
  }

  /** failed/<name>.<fileId>.errors.csv; false (and owed) when the source refused it. */
  private async writeErrorsCsv(file: FileRecord): Promise<boolean> {
    const source = this.c.sources.get(file.source);
    if (!source) return false;
    await this.leases.confirm(file.fileId);
    try {
      await source.write(
        `failed/${reportFileName(file.name, file.fileId, 'errors.csv')}`,
        errorsCsv(this.c.store, file),
      );
      return true;
    } catch (err) {
      this.c.log.error({ fileId: file.fileId, err: (err as Error).message }, 'could not write errors.csv');
      await this.owe(file.fileId);
      return false;
    }
  }

  /**
   * report.csv and the manifest written again under the file's lease (asked for up to
   * `waitMs`), when its state is one of `states`: delivery reports changed its rows, or a
   * user paused or cancelled it. false when another worker holds the file: that one writes
   * them (a send that finds its file paused or cancelled does).
   */
  async rewriteReports(
    fileId: string,
    options: { states?: ReadonlySet<string>; waitMs?: number } = {},
  ): Promise<boolean> {
    const done = await this.leases.withLease(
      fileId,
      async (file) => {
        if (options.states && !options.states.has(file.state)) return true;
        if (file.state === 'cancelled') await this.closeCancelled(file);
        else await this.writeAllReports(fileId);
        return true;
      },
      options.waitMs === undefined ? {} : { waitMs: options.waitMs },
    );
    return done === true;
  }

  /**
   * A cancelled file, under its lease, once nothing of it is sent any more: its chunks not
   * sent are `cancelled` (their recipients too), its original goes to done/ like a finished
   * file's, and its reports say so. Idempotent: whoever holds the file next may do it again.
   */
  async closeCancelled(file: FileRecord): Promise<FileRecord> {
    await this.settleCancelled(file);
    await this.writeAllReports(file.fileId);
    return this.c.mustGet(file.fileId);
  }

  /** closeCancelled without the reports: its unsent chunks cancelled, the original in done/. */
  private async settleCancelled(file: FileRecord): Promise<void> {
    this.leases.fence(file.fileId);
    const chunks = await this.c.store.cancelUnsent(file.fileId);
    if (chunks > 0)
      this.c.log.info({ fileId: file.fileId, chunks }, `${chunks} chunk(s) cancelled, never sent`);
    const source = this.c.sources.get(file.source);
    if (source && (file.path.startsWith('processing/') || file.path.startsWith('inbox/')))
      await this.c.moveTo(file, source, 'done');
  }

  /**
   * reports/<name>.<fileId>.manifest.json and .report.csv, rewritten at milestones, by the
   * lease holder only. A report of a million rows costs seconds, so it is written only where
   * its rows changed.
   */
  async writeReports(
    fileId: string,
    options: { report?: boolean; counts?: FileCounts } = {},
  ): Promise<Manifest | null> {
    let manifest: Manifest | null;
    if (options.counts) {
      const file = await this.c.store.getFile(fileId);
      manifest = file ? buildManifest(file, options.counts) : null;
    } else manifest = await manifestOf(this.c.store, fileId);
    if (!manifest) return null;
    const source = this.c.sources.get(manifest.source);
    if (!source) return manifest;
    // The manifest last: whoever sees its state sees a report.csv at least as recent.
    if (options.report !== false && !(await this.writeReportCsv(manifest))) return manifest;
    await this.writeManifest(manifest);
    return manifest;
  }

  /** reports/<name>.<fileId>.manifest.json; false (and owed) when the source refused it. */
  private async writeManifest(manifest: Manifest): Promise<boolean> {
    const source = this.c.sources.get(manifest.source);
    if (!source) return false;
    await this.leases.confirm(manifest.fileId);
    try {
      await source.write(
        `reports/${reportFileName(manifest.name, manifest.fileId, 'manifest.json')}`,
        `${JSON.stringify(manifest, null, 2)}\n`,
      );
      return true;
    } catch (err) {
      this.c.log.error(
        { fileId: manifest.fileId, err: (err as Error).message },
        'could not write the manifest',
      );
      await this.owe(manifest.fileId);
      return false;
    }
  }

  /**
   * A report write failed: the store records the file's reports as owed, tried again with
   * back-off (report.retryBaseMs doubled per failure, up to retryMaxMs) by whichever worker
   * finds them due, after a restart too (writeOwedReports; docs/runbook.md "Report pending").
   */
  private async owe(fileId: string): Promise<void> {
    const { retryBaseMs: baseMs, retryMaxMs: maxMs } = this.c.config.report;
    await this.c.store.reportFailed(fileId, { baseMs, maxMs }).catch((err: unknown) => {
      this.c.log.error({ fileId, err: (err as Error).message }, 'could not record the reports as owed');
    });
  }

  /**
   * The reports a file owes (Store.reportsDue), written again under its lease: every one its
   * state calls for (errors.csv of a rejected or duplicate file, report.csv of a file that
   * has one, the manifest), and nothing owed any more once all went through. A failure
   * backs off again. null when another worker holds the file (it stays due).
   */
  async writeOwedReports(fileId: string): Promise<boolean | null> {
    return this.leases.withLease(fileId, async (file) => {
      if (!file.reportPending) return true;
      // A source this worker does not have (configured elsewhere): backed off for the others.
      if (!this.c.sources.has(file.source)) {
        await this.owe(fileId);
        return false;
      }
      // A cancel a user made while no worker could close it (owed by changeFileState).
      if (file.state === 'cancelled') await this.settleCancelled(file);
      const ok = await this.writeAllReports(fileId);
      if (ok) this.c.log.info({ fileId, failures: file.reportPending.failures }, 'owed reports written');
      return ok;
    });
  }

  /**
   * Every report the file's state calls for (errors.csv of a rejected or duplicate file,
   * report.csv of one that has one, the manifest last), under the lease; then nothing is
   * owed any more. false when one was refused (it is owed, backed off).
   */
  async writeAllReports(fileId: string): Promise<boolean> {
    const file = await this.c.mustGet(fileId);
    if (!this.c.sources.has(file.source)) return false;
    let ok = true;
    if (file.state === 'rejected' || file.state === 'duplicate') ok = await this.writeErrorsCsv(file);
    const current = await manifestOf(this.c.store, fileId);
    if (!current) return false;
    // Written last, once everything else went through: then nothing is owed any more.
    const manifest: Manifest = { ...current, reportPending: null };
    if (ok && REPORT_CSV_STATES.has(file.state)) ok = await this.writeReportCsv(manifest);
    if (ok) ok = await this.writeManifest(manifest);
    if (!ok) return false;
    this.leases.fence(fileId);
    await this.c.store.reportsWritten(fileId);
    return true;
  }

  /**
   * A file that was paused or partial has a report.csv from then; once it sends again (or is
   * submitted) its rows change, and report.csv comes back when it finishes. Meanwhile
   * no stale account of it stays in reports/.
   */
  async dropStaleReport(file: FileRecord): Promise<void> {
    if (!file.timestamps.paused && !file.timestamps.partial) return;
    await this.leases.confirm(file.fileId);
    const source = this.c.sources.get(file.source);
    try {
      await source?.remove(`reports/${reportFileName(file.name, file.fileId, 'report.csv')}`);
    } catch (err) {
      this.c.log.warn(
        { fileId: file.fileId, err: (err as Error).message },
        'could not remove a stale report',
      );
    }
  }

  /** reports/<name>.<fileId>.report.csv: one row per record of the file, as the store has it now. */
  async writeReportCsv(file: Pick<FileRecord, 'fileId' | 'source' | 'name'>): Promise<boolean> {
    const source = this.c.sources.get(file.source);
    if (!source) return false;
    await this.leases.confirm(file.fileId);
    try {
      await source.write(
        `reports/${reportFileName(file.name, file.fileId, 'report.csv')}`,
        reportCsv(this.c.store, file.fileId, { includeText: this.c.config.report.includeText }),
      );
      return true;
    } catch (err) {
      this.c.log.error({ fileId: file.fileId, err: (err as Error).message }, 'could not write the report');
      await this.owe(file.fileId);
      return false;
    }
  }
}
