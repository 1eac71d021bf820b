// The consent list (`consent.list`, docs/opt-outs.md "Consent lists"), shown as the opt-out
// lists are (./suppression-lists.ts): `list` is the configuration key, never the location.
// Read at each scrape from the list this worker uses (docs/metrics.md: this worker's).
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ConsentListInfo } from '../../pipeline/consent-list.ts';

export interface ConsentListMetrics {
  /** The consent list whose copy in use /metrics shows (ConsentList.describe). */
  watchConsentList(describe: () => ConsentListInfo): void;
}

export function registerConsentListMetrics(registry: Registry): ConsentListMetrics {
  let consentList: (() => ConsentListInfo) | null = null;
  const lists = (): ConsentListInfo[] => (consentList ? [consentList()] : []);
  new Gauge({
    name: 'dropline_consent_list_entries',
    help: 'Distinct numbers and addresses in the copy in use of the consent list (0 until it is read)',
    labelNames: ['list'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of lists()) this.set({ list: l.name }, l.entries);
    },
  });
  new Gauge({
    name: 'dropline_consent_list_loaded_timestamp_seconds',
    help: 'When the copy in use of the consent list was read (Unix time; absent until it is read)',
    labelNames: ['list'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of lists()) if (l.loadedAt) this.set({ list: l.name }, l.loadedAt.getTime() / 1000);
    },
  });
  new Gauge({
    name: 'dropline_consent_list_checked_timestamp_seconds',
    help: 'When the consent list was last checked for a change (Unix time)',
    labelNames: ['list'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of lists()) if (l.checkedAt) this.set({ list: l.name }, l.checkedAt.getTime() / 1000);
    },
  });
  new Gauge({
    name: 'dropline_consent_list_error',
    help: "1 while the consent list's last check or reload failed (the copy read before stays in use), else 0",
    labelNames: ['list'],
    registers: [registry],
    collect() {
      this.reset();
      for (const l of lists()) this.set({ list: l.name }, l.lastError === null ? 0 : 1);
    },
  });
  new Counter({
    name: 'dropline_consent_list_check_failures_total',
    help: 'Checks or reloads of the consent list that failed (the copy read before stayed in use)',
    labelNames: ['list'],
    registers: [registry],
    collect() {
      // The list counts; shown as it is (a counter of this process's list).
      this.reset();
      for (const l of lists()) this.inc({ list: l.name }, l.failures);
    },
  });
  new Gauge({
    name: 'dropline_consent_list_refused',
    help: "1 while the consent list's new content is refused and the files wait, `reason` saying why (unparseable, shrank); else 0 (no reason)",
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
    watchConsentList(describe) {
      consentList = describe;
    },
  };
}
