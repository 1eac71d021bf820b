// Webhook alerts (ops/alerts.ts's channel) by event and how their delivery ended.
import { Counter, type Registry } from 'prom-client';
import { ALERT_CHANNEL, type AlertDelivery } from '../alerts.ts';
import { listen, type Unsubscribe } from './listen.ts';

export function registerAlertMetrics(registry: Registry): Unsubscribe {
  const alerts = new Counter({
    name: 'dropline_alerts_total',
    help: 'Alerts by event and result (delivered, failed after its tries, dropped: queue full or stopping)',
    labelNames: ['event', 'result'],
    registers: [registry],
  });
  return listen(ALERT_CHANNEL, (message) => {
    const e = message as AlertDelivery;
    alerts.inc({ event: e.event, result: e.result });
  });
}
