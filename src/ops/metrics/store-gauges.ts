// The gauges read from the store: the whole deployment's, the same on every worker
// (docs/metrics.md: take `max` over the workers).
import { Gauge, type Registry } from 'prom-client';
import type { Store, StoreGauges } from '../../store/store.ts';

/** The store is read once a scrape, however many gauges come from it. */
const GAUGES_FRESH_MS = 1000;

export function registerStoreGauges(registry: Registry, store: Store): void {
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
}
