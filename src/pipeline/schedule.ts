// The pipeline's schedule stage (docs/architecture.md "The pipeline"): when a file may send
// (its `#! sendAt:` and its source's send window), and why it waits.
import { stateReason } from '../errors.ts';
import { localTime, type SendWindow, sendWindowOf } from '../plan/send-window.ts';
import type { FilePatch, FileRecord } from '../store/store.ts';
import type { PipelineContext } from './context.ts';
import type { Outputs } from './outputs.ts';

/** Send windows by source, and the start and reason of a scheduled file. */
export class Schedule {
  readonly c: PipelineContext;
  readonly outputs: Outputs;

  constructor(c: PipelineContext, outputs: Outputs) {
    this.c = c;
    this.outputs = outputs;
  }

  private readonly windows = new Map<string, SendWindow | null>();

  /** The send window of a source's files: its own `sendWindow`, else the global one; null: any hour. */
  windowOf(sourceName: string): SendWindow | null {
    let w = this.windows.get(sourceName);
    if (w === undefined) {
      const own = this.c.sourceConfig(sourceName).sendWindow;
      w = sendWindowOf(own === undefined ? this.c.config.sendWindow : own);
      this.windows.set(sourceName, w);
    }
    return w;
  }

  /**
   * When a file may start sending, at `now`: its `#! sendAt:` when later, then the send window's
   * next opening. null: the window never opens (within 400 days).
   */
  startOf(file: Pick<FileRecord, 'source' | 'sendAt'>, now: Date): Date | null {
    const notBefore =
      file.sendAt !== null && Date.parse(file.sendAt) > now.getTime() ? new Date(file.sendAt) : now;
    const w = this.windowOf(file.source);
    return w ? w.nextOpening(notBefore) : notBefore;
  }

  /** Why a file waits until `start` (the file's reason while it is `scheduled`). */
  private waitReason(file: Pick<FileRecord, 'source' | 'sendAt'>, start: Date | null) {
    const w = this.windowOf(file.source);
    // Without a window, Bogotá's time, the zone a `#! sendAt:` without offset is read in.
    const zone = w?.spec.timezone ?? 'America/Bogota';
    if (start === null) return stateReason('WINDOW_NEVER_OPENS');
    const at = { at: localTime(start, zone), zone };
    if (file.sendAt !== null && Date.parse(file.sendAt) === start.getTime())
      return stateReason('SCHEDULED_SEND_AT', at);
    return stateReason('SCHEDULED_WINDOW', at);
  }

  /**
   * A `scheduled` file's start and reason. A window that never opens is looked at again in a
   * day (the configuration may have changed).
   */
  scheduledPatch(file: Pick<FileRecord, 'source' | 'sendAt'>, start: Date | null): FilePatch {
    const until = start ?? new Date(this.c.now().getTime() + 86_400_000);
    return { scheduledUntil: until.toISOString(), ...this.waitReason(file, start) };
  }

  /** A sending file back to `scheduled` until `start` (its manifest says so). */
  async reschedule(file: FileRecord, start: Date | null): Promise<FileRecord> {
    const scheduled = await this.c.transition(
      file.fileId,
      'scheduled',
      ['sending'],
      this.scheduledPatch(file, start),
    );
    if (!scheduled) return this.c.mustGet(file.fileId);
    await this.outputs.writeReports(file.fileId, { report: false });
    return scheduled;
  }
}
