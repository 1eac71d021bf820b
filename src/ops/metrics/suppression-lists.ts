// Opt-out lists: `list` is the configuration key (suppressionList, sources.<name>.suppressionList),
// never the location: a bounded label, and no URL or path in it. Read at each scrape from
// the lists this worker uses (docs/metrics.md: this worker's, not the deployment's).
import { Counter, Gauge, type Registry } from 'prom-client';
import type { SuppressionListInfo } from '../../pipeline/suppression-lists.ts';

export interface SuppressionListMetrics {
  /** The opt-out lists whose copies in use /metrics shows (SuppressionLists.describe). */
  watchSuppressionLists(describe: () => SuppressionListInfo[]): void;
}

export function registerSuppressionListMetrics(registry: Registry): SuppressionListMetrics {
  let suppressionLists: (() => SuppressionListInfo[]) | null = null;
  const lists = (): SuppressionListInfo[] => suppressionLists?.() ?? [];
  new Gauge({
    name: 'dropline_suppression_list_numbers',
    help: 'Distinct numbers in the copy in use of each opt-out list (0 until it is read)',
    labelNames: ['list'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of lists()) this.set({ list: l.name }, l.numbers);
    },
  });
  new Gauge({
    name: 'dropline_suppression_list_loaded_timestamp_seconds',
    help: 'When the copy in use of each opt-out list was read (Unix time; absent until it is read)',
    labelNames: ['list'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of lists()) if (l.loadedAt) this.set({ list: l.name }, l.loadedAt.getTime() / 1000);
    },
  });
  new Gauge({
    name: 'dropline_suppression_list_checked_timestamp_seconds',
    help: 'When each opt-out list was last checked for a change (Unix time)',
    labelNames: ['list'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of lists()) if (l.checkedAt) this.set({ list: l.name }, l.checkedAt.getTime() / 1000);
    },
  });
  new Gauge({
    name: 'dropline_suppression_list_error',
    help: "1 while an opt-out list's last check or reload failed (the copy read before stays in use), else 0",
    labelNames: ['list'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of lists()) this.set({ list: l.name }, l.lastError === null ? 0 : 1);
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
      for (const l of lists()) this.inc({ list: l.name }, l.failures);
    },
  });
  new Gauge({
    name: 'dropline_suppression_list_refused',
    help: "1 while an opt-out list's new content is refused and its files wait, `reason` saying why (unparseable, shrank); else 0 (no reason)",
    labelNames: ['list', 'reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of lists())
        this.set(
          l.refused ? { list: l.name, reason: l.refused.reason } : { list: l.name },
          l.refused ? 1 : 0,
        );
    },
  });

  return {
    watchSuppressionLists(describe) {
      suppressionLists = describe;
    },
  };
}
