// The work's store calls (pipeline/patient-store.ts's channel): their time and failures.
import { Counter, Histogram, type Registry } from 'prom-client';
import { STORE_CALL_CHANNEL, type StoreCallEvent } from '../../pipeline/patient-store.ts';
import { listen, type Unsubscribe } from './listen.ts';

export function registerStoreCallMetrics(registry: Registry): Unsubscribe {
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
  return listen(STORE_CALL_CHANNEL, (message) => {
    const e = message as StoreCallEvent;
    storeTime.observe({ operation: e.operation }, e.seconds);
    if (e.error) storeErrors.inc({ operation: e.operation, kind: e.error });
  });
}
