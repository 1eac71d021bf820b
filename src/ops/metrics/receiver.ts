// The delivery-report receiver: the reports it commits (notify/receiver.ts's commit channel)
// and the requests it answers (its own counts, read at each scrape).
import { Counter, Histogram, type Registry } from 'prom-client';
import { COMMIT_CHANNEL, type CommitEvent, type ReceiverStats } from '../../notify/receiver.ts';
import { listen, type Unsubscribe } from './listen.ts';

export interface ReceiverMetrics {
  /** The delivery-report receiver whose answers /metrics shows. */
  watchReceiver(stats: () => ReceiverStats): void;
  close: Unsubscribe;
}

export function registerReceiverMetrics(registry: Registry): ReceiverMetrics {
  const reports = new Counter({
    name: 'dropline_delivery_reports_total',
    help: 'Delivery reports committed by status (repeats included)',
    labelNames: ['status'],
    registers: [registry],
  });
  const reportEvents = new Counter({
    name: 'dropline_delivery_report_events_total',
    help: 'Delivery reports committed: recorded (new), duplicate (already recorded), orphan (matching no recipient, kept)',
    labelNames: ['kind'],
    registers: [registry],
  });
  const lag = new Histogram({
    name: 'dropline_delivery_report_ingest_seconds',
    help: "A report request's time from arrival to its answer (after the commit)",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const close = listen(COMMIT_CHANNEL, (message) => {
    const e = message as CommitEvent;
    for (const [status, n] of Object.entries(e.statuses)) reports.inc({ status }, n);
    reportEvents.inc({ kind: 'recorded' }, e.recorded - e.orphans);
    reportEvents.inc({ kind: 'duplicate' }, e.duplicates);
    reportEvents.inc({ kind: 'orphan' }, e.orphans);
    for (const ms of e.lagsMs) lag.observe(ms / 1000);
  });

  let receiverStats: (() => ReceiverStats) | null = null;
  new Counter({
    name: 'dropline_delivery_report_requests_total',
    help: 'Requests to the delivery-report receiver by the HTTP status answered (401 bad token, 400 bad body, 503 busy or store down)',
    labelNames: ['status'],
    registers: [registry],
    collect() {
      if (!receiverStats) return;
      // The receiver counts; shown as they are (a counter of this process's receiver).
      this.reset();
      for (const [status, n] of Object.entries(receiverStats().answered)) this.inc({ status }, n);
    },
  });

  return {
    watchReceiver(stats) {
      receiverStats = stats;
    },
    close,
  };
}
