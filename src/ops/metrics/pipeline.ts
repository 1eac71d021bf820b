// The pipeline's reading: the recipients of the files read to the end (pipeline.ts's
// file-state channel) and the listings of each source.
import { Counter, Histogram, type Registry } from 'prom-client';
import { FILE_STATE_CHANNEL, type FileStateEvent } from '../../pipeline/pipeline.ts';
import { listen, type Unsubscribe } from './listen.ts';

export interface PipelineMetrics {
  /** One listing of a source: how long it took, and whether it failed. */
  scanned(source: string, seconds: number, failed: boolean): void;
  close: Unsubscribe;
}

export function registerPipelineMetrics(registry: Registry): PipelineMetrics {
  const recipients = new Counter({
    name: 'dropline_recipients_read_total',
    help: 'Recipients of files read to the end, by outcome of the reading (valid, invalid, duplicate, suppressed)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  // Counted when a file leaves validating (sending or rejected): once a file, however many
  // times a crash made it be read.
  const close = listen(FILE_STATE_CHANNEL, (message) => {
    const { file, from } = message as FileStateEvent;
    if (from !== 'validating' || (file.state !== 'sending' && file.state !== 'rejected')) return;
    const c = file.counts;
    recipients.inc({ outcome: 'valid' }, c.valid);
    recipients.inc({ outcome: 'invalid' }, c.invalid);
    recipients.inc({ outcome: 'duplicate' }, c.duplicates);
    recipients.inc({ outcome: 'suppressed' }, c.suppressed);
  });

  const scans = new Counter({
    name: 'dropline_source_scans_total',
    help: 'Listings of a source by result (ok, error)',
    labelNames: ['source', 'result'],
    registers: [registry],
  });
  const scanTime = new Histogram({
    name: 'dropline_source_scan_duration_seconds',
    help: 'Time of one listing of a source',
    labelNames: ['source'],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60],
    registers: [registry],
  });

  return {
    scanned(source, seconds, failed) {
      scans.inc({ source, result: failed ? 'error' : 'ok' });
      scanTime.observe({ source }, seconds);
    },
    close,
  };
}
