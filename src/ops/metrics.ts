// /metrics (issue 13): what operators alert on, in Prometheus's text format (prom-client).
// Labels are bounded: states, results, HTTP statuses, delivery statuses, grants and sources,
// never a fileId, a name or a number. Counters are this process's since it started (sum them
// over the workers); the gauges read from the store are the whole deployment's, the same on
// every worker. docs/metrics.md lists each metric with an alert; metrics/ holds them by area,
// registered here in the order /metrics shows them.
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Store } from '../store/store.ts';
import { registerAlertMetrics } from './metrics/alerts.ts';
import { type PipelineMetrics, registerPipelineMetrics } from './metrics/pipeline.ts';
import { type ReceiverMetrics, registerReceiverMetrics } from './metrics/receiver.ts';
import { registerServiceClientMetrics, type ServiceClientMetrics } from './metrics/service-client.ts';
import { registerStoreCallMetrics } from './metrics/store-calls.ts';
import { registerStoreGauges } from './metrics/store-gauges.ts';
import { registerSuppressionListMetrics, type SuppressionListMetrics } from './metrics/suppression-lists.ts';

export interface Metrics
  extends Pick<PipelineMetrics, 'scanned'>,
    Pick<ServiceClientMetrics, 'watchService'>,
    Pick<ReceiverMetrics, 'watchReceiver'>,
    SuppressionListMetrics {
  readonly registry: Registry;
  /** Ends the diagnostics-channel subscriptions. */
  close(): void;
}

export function createMetrics(store: Store): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  registerStoreGauges(registry, store);
  const service = registerServiceClientMetrics(registry);
  const receiver = registerReceiverMetrics(registry);
  const stopStoreCalls = registerStoreCallMetrics(registry);
  const stopAlerts = registerAlertMetrics(registry);
  const pipeline = registerPipelineMetrics(registry);
  const lists = registerSuppressionListMetrics(registry);
  return {
    registry,
    scanned: pipeline.scanned,
    watchService: service.watchService,
    watchReceiver: receiver.watchReceiver,
    watchSuppressionLists: lists.watchSuppressionLists,
    watchConsentList: lists.watchConsentList,
    close() {
      service.close();
      receiver.close();
      stopStoreCalls();
      stopAlerts();
      pipeline.close();
    },
  };
}
