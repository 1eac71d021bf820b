// /metrics (issue 13): what operators alert on, in Prometheus's text format (prom-client).
// Labels are bounded: states, results, HTTP statuses, delivery statuses, grants and sources,
// never a fileId, a name or a number. Counters are this process's since it started (sum them
// over the workers); the gauges read from the store are the whole deployment's, the same on
// every worker. docs/metrics.md lists each metric with an alert.
import diagnosticsChannel from 'node:diagnostics_channel';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { COMMIT_CHANNEL, type CommitEvent, type ReceiverStats } from '../notify/receiver.ts';
import { STORE_CALL_CHANNEL, type StoreCallEvent } from '../pipeline/patient-store.ts';
import { FILE_STATE_CHANNEL, type FileStateEvent } from '../pipeline/pipeline.ts';
import type { SuppressionListInfo } from '../pipeline/suppression-lists.ts';
import { ATTEMPT_CHANNEL, type AttemptEvent, TOKEN_CHANNEL, type TokenEvent } from '../service/client.ts';
import type { Store, StoreGauges } from '../store/store.ts';
import { ALERT_CHANNEL, type AlertDelivery } from './alerts.ts';
import type { ServiceOutage } from './service-outage.ts';

export interface Metrics {
  readonly registry: Registry;
  /** One listing of a source: how long it took, and whether it failed. */
  scanned(source: string, seconds: number, failed: boolean): void;
  /** The messaging service's outage now (service-outage.ts), for dropline_service_unreachable. */
  watchService(current: () => ServiceOutage | null): void;
  /** The delivery-report receiver whose answers /metrics shows. */
  watchReceiver(stats: () => ReceiverStats): void;
  /** The opt-out lists whose copies in use /metrics shows (SuppressionLists.describe). */
  watchSuppressionLists(describe: () => SuppressionListInfo[]): void;
  close(): void;
}

/** The store is read once a scrape, however many gauges come from it. */
const GAUGES_FRESH_MS = 1000;

export function createMetrics(store: Store): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  let read: { at: number; gauges: Promise<StoreGauges> } | null = null;
  const gauges = (): Promise<StoreGauges> => {
    if (!read || Date.now() - read.at > GAUGES_FRESH_MS) read = { at: Date.now(), gauges: store.gauges() };
    return read.gauges;
  };
  new Gauge({
    name: 'dropline_files',
    help: 'Files in the store by state (every worker sees the same)',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [state, n] of Object.entries((await gauges()).files)) this.set({ state }, n ?? 0);
    },
  });
  new Gauge({
    name: 'dropline_chunks_in_doubt',
    help: 'Chunks of unfinished files whose outcome is unknown (sent, no answer): their reports decide them',
    registers: [registry],
    async collect() {
      this.set((await gauges()).chunksInDoubt);
    },
  });
  new Gauge({
    name: 'dropline_send_window_open',
    help: '1 while files may be sent (no send window is configured: always)',
    registers: [registry],
    collect() {
      this.set(1);
    },
  });

  let serviceOutage: (() => ServiceOutage | null) | null = null;
  new Gauge({
    name: 'dropline_service_unreachable',
    help: "1 while this worker's requests find no messaging service (from the first refused until one is answered), else 0",
    registers: [registry],
    collect() {
      this.set(serviceOutage?.() ? 1 : 0);
    },
  });

  const requests = new Counter({
    name: 'dropline_service_requests_total',
    help: 'POST /mtmessage/massive attempts by result and HTTP status (0: no answer)',
    labelNames: ['result', 'status'],
    registers: [registry],
  });
  const destinations = new Counter({
    name: 'dropline_service_destinations_total',
    help: 'Recipients in those attempts by result (accepted: submitted to the service)',
    labelNames: ['result'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'dropline_service_request_duration_seconds',
    help: 'Time of a POST /mtmessage/massive attempt, by result',
    labelNames: ['result'],
    buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const tokens = new Counter({
    name: 'dropline_token_requests_total',
    help: 'POST /token attempts by grant (password: a login; refresh_token: a renewal) and HTTP status',
    labelNames: ['grant', 'status'],
    registers: [registry],
  });
  const onAttempt = (message: unknown): void => {
    const e = message as AttemptEvent;
    requests.inc({ result: e.result, status: String(e.status) });
    destinations.inc({ result: e.result }, e.destinations);
    latency.observe({ result: e.result }, e.latencyMs / 1000);
  };
  const onToken = (message: unknown): void => {
    const e = message as TokenEvent;
    tokens.inc({ grant: e.grant, status: String(e.status) });
  };

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
  const onCommit = (message: unknown): void => {
    const e = message as CommitEvent;
    for (const [status, n] of Object.entries(e.statuses)) reports.inc({ status }, n);
    reportEvents.inc({ kind: 'recorded' }, e.recorded - e.orphans);
    reportEvents.inc({ kind: 'duplicate' }, e.duplicates);
    reportEvents.inc({ kind: 'orphan' }, e.orphans);
    for (const ms of e.lagsMs) lag.observe(ms / 1000);
  };
  diagnosticsChannel.subscribe(ATTEMPT_CHANNEL, onAttempt);
  diagnosticsChannel.subscribe(TOKEN_CHANNEL, onToken);
  diagnosticsChannel.subscribe(COMMIT_CHANNEL, onCommit);

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

  const storeTime = new Histogram({
    name: 'dropline_store_operation_duration_seconds',
    help: "Time of the work's store calls, by Store method",
    labelNames: ['operation'],
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [registry],
  });
  const storeErrors = new Counter({
    name: 'dropline_store_errors_total',
    help: 'Store calls that failed, by Store method and kind (unavailable: waited for and tried again)',
    labelNames: ['operation', 'kind'],
    registers: [registry],
  });
  const onStoreCall = (message: unknown): void => {
    const e = message as StoreCallEvent;
    storeTime.observe({ operation: e.operation }, e.seconds);
    if (e.error) storeErrors.inc({ operation: e.operation, kind: e.error });
  };
  diagnosticsChannel.subscribe(STORE_CALL_CHANNEL, onStoreCall);

  const alerts = new Counter({
    name: 'dropline_alerts_total',
    help: 'Alerts by event and result (delivered, failed after its tries, dropped: queue full or stopping)',
    labelNames: ['event', 'result'],
    registers: [registry],
  });
  const onAlert = (message: unknown): void => {
    const e = message as AlertDelivery;
    alerts.inc({ event: e.event, result: e.result });
  };
  diagnosticsChannel.subscribe(ALERT_CHANNEL, onAlert);

  const recipients = new Counter({
    name: 'dropline_recipients_read_total',
    help: 'Recipients of files read to the end, by outcome of the reading (valid, invalid, duplicate, suppressed)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  // Counted when a file leaves validating (sending or rejected): once a file, however many
  // times a crash made it be read.
  const onFileState = (message: unknown): void => {
    const { file, from } = message as FileStateEvent;
    if (from !== 'validating' || (file.state !== 'sending' && file.state !== 'rejected')) return;
    const c = file.counts;
    recipients.inc({ outcome: 'valid' }, c.valid);
    recipients.inc({ outcome: 'invalid' }, c.invalid);
    recipients.inc({ outcome: 'duplicate' }, c.duplicates);
    recipients.inc({ outcome: 'suppressed' }, c.suppressed);
  };
  diagnosticsChannel.subscribe(FILE_STATE_CHANNEL, onFileState);

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

  // Opt-out lists: `list` is the configuration key (suppressionList, sources.<name>.suppressionList),
  // never the location: a bounded label, and no URL or path in it.
  let suppressionLists: (() => SuppressionListInfo[]) | null = null;
  new Gauge({
    name: 'dropline_suppression_list_numbers',
    help: 'Distinct numbers in the copy in use of each opt-out list (0 until it is read)',
    labelNames: ['list'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of suppressionLists?.() ?? []) this.set({ list: l.name }, l.numbers);
    },
  });
  new Gauge({
    name: 'dropline_suppression_list_loaded_timestamp_seconds',
    help: 'When the copy in use of each opt-out list was read (Unix time; absent until it is read)',
    labelNames: ['list'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of suppressionLists?.() ?? [])
        if (l.loadedAt) this.set({ list: l.name }, l.loadedAt.getTime() / 1000);
    },
  });
  new Gauge({
    name: 'dropline_suppression_list_checked_timestamp_seconds',
    help: 'When each opt-out list was last checked for a change (Unix time)',
    labelNames: ['list'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of suppressionLists?.() ?? [])
        if (l.checkedAt) this.set({ list: l.name }, l.checkedAt.getTime() / 1000);
    },
  });
  new Gauge({
    name: 'dropline_suppression_list_error',
    help: "1 while an opt-out list's last check or reload failed (the copy read before stays in use), else 0",
    labelNames: ['list'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of suppressionLists?.() ?? []) this.set({ list: l.name }, l.lastError === null ? 0 : 1);
    },
  });
  new Counter({
    name: 'dropline_suppression_list_check_failures_total',
    help: 'Checks or reloads of an opt-out list that failed (the copy read before stayed in use)',
    labelNames: ['list'],
    registers: [registry],
    collect() {
      // The lists count; shown as they are (a counter of this process's lists).
      this.reset();
      for (const l of suppressionLists?.() ?? []) this.inc({ list: l.name }, l.failures);
    },
  });
  new Gauge({
    name: 'dropline_suppression_list_refused',
    help: "1 while an opt-out list's new content is refused and its files wait, `reason` saying why (unparseable, shrank); else 0 (no reason)",
    labelNames: ['list', 'reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of suppressionLists?.() ?? [])
        this.set(
          l.refused ? { list: l.name, reason: l.refused.reason } : { list: l.name },
          l.refused ? 1 : 0,
        );
    },
  });

  return {
    registry,
    scanned(source, seconds, failed) {
      scans.inc({ source, result: failed ? 'error' : 'ok' });
      scanTime.observe({ source }, seconds);
    },
    watchService(current) {
      serviceOutage = current;
    },
    watchReceiver(stats) {
      receiverStats = stats;
    },
    watchSuppressionLists(describe) {
      suppressionLists = describe;
    },
    close() {
      diagnosticsChannel.unsubscribe(ATTEMPT_CHANNEL, onAttempt);
      diagnosticsChannel.unsubscribe(TOKEN_CHANNEL, onToken);
      diagnosticsChannel.unsubscribe(COMMIT_CHANNEL, onCommit);
      diagnosticsChannel.unsubscribe(STORE_CALL_CHANNEL, onStoreCall);
      diagnosticsChannel.unsubscribe(ALERT_CHANNEL, onAlert);
      diagnosticsChannel.unsubscribe(FILE_STATE_CHANNEL, onFileState);
    },
  };
}
