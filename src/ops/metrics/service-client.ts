// The messaging service as this worker's client sees it: its attempts and token requests
// (service/client.ts's diagnostics channels) and whether the service is reachable now.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { ATTEMPT_CHANNEL, type AttemptEvent, TOKEN_CHANNEL, type TokenEvent } from '../../service/client.ts';
import type { ServiceOutage } from '../service-outage.ts';
import { listen, type Unsubscribe } from './listen.ts';

export interface ServiceClientMetrics {
  /** The messaging service's outage now (service-outage.ts), for dropline_service_unreachable. */
  watchService(current: () => ServiceOutage | null): void;
  close: Unsubscribe;
}

export function registerServiceClientMetrics(registry: Registry): ServiceClientMetrics {
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
  const stopAttempts = listen(ATTEMPT_CHANNEL, (message) => {
    const e = message as AttemptEvent;
    requests.inc({ result: e.result, status: String(e.status) });
    destinations.inc({ result: e.result }, e.destinations);
    latency.observe({ result: e.result }, e.latencyMs / 1000);
  });
  const stopTokens = listen(TOKEN_CHANNEL, (message) => {
    const e = message as TokenEvent;
    tokens.inc({ grant: e.grant, status: String(e.status) });
  });

  return {
    watchService(current) {
      serviceOutage = current;
    },
    close() {
      stopAttempts();
      stopTokens();
    },
  };
}
