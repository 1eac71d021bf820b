// Opt-out lists and the consent list (docs/opt-outs.md), one set of gauges each: `list` is the
// configuration key (suppressionList, sources.<name>.suppressionList, consent.list), never the
// location: a bounded label, and no URL or path in it. Read at each scrape from the lists this
// worker uses (docs/metrics.md: this worker's, not the deployment's).
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ConsentListInfo } from '../../pipeline/consent-list.ts';
import type { RefusalReason, SuppressionListInfo } from '../../pipeline/suppression-lists.ts';

export interface SuppressionListMetrics {
  /** The opt-out lists whose copies in use /metrics shows (SuppressionLists.describe). */
  watchSuppressionLists(describe: () => SuppressionListInfo[]): void;
  /** The consent list whose copy in use /metrics shows (ConsentList.describe). */
  watchConsentList(describe: () => ConsentListInfo): void;
}

/** What the gauges read of a list. */
interface ListState {
  name: string;
  /** Its distinct entries (numbers, or numbers and addresses). */
  size: number;
  loadedAt: Date | null;
  checkedAt: Date | null;
  lastError: string | null;
  failures: number;
  refused: { reason: RefusalReason } | null;
}

/** How one kind of list is named: the metrics' prefix, its size's name and help, and "a list" / "each list" in the helps. */
interface ListKind {
  prefix: string;
  size: { name: string; help: string };
  one: string;
  each: string;
}

export function registerSuppressionListMetrics(registry: Registry): SuppressionListMetrics {
  let suppressionLists: (() => SuppressionListInfo[]) | null = null;
  let consentList: (() => ConsentListInfo) | null = null;
  registerListGauges(
    registry,
    {
      prefix: 'dropline_suppression_list',
      size: { name: 'numbers', help: 'Distinct numbers in the copy in use of each opt-out list' },
      one: 'an opt-out list',
      each: 'each opt-out list',
    },
    () => (suppressionLists?.() ?? []).map((l) => ({ ...l, size: l.numbers })),
  );
  registerListGauges(
    registry,
    {
      prefix: 'dropline_consent_list',
      size: {
        name: 'entries',
        help: 'Distinct numbers and addresses in the copy in use of the consent list',
      },
      one: 'the consent list',
      each: 'the consent list',
    },
    () => {
      const l = consentList?.();
      return l ? [{ ...l, size: l.entries }] : [];
    },
  );
  return {
    watchSuppressionLists(describe) {
      suppressionLists = describe;
    },
    watchConsentList(describe) {
      consentList = describe;
    },
  };
}

function registerListGauges(registry: Registry, kind: ListKind, lists: () => ListState[]): void {
  const gauge = (name: string, help: string, value: (l: ListState) => number | null) =>
    new Gauge({
      name: `${kind.prefix}_${name}`,
      help,
      labelNames: ['list'],
      registers: [registry],
      collect() {
        this.reset();
        for (const l of lists()) {
          const v = value(l);
          if (v !== null) this.set({ list: l.name }, v);
        }
      },
    });
  gauge(kind.size.name, `${kind.size.help} (0 until it is read)`, (l) => l.size);
  gauge(
    'loaded_timestamp_seconds',
    `When the copy in use of ${kind.each} was read (Unix time; absent until it is read)`,
    (l) => (l.loadedAt ? l.loadedAt.getTime() / 1000 : null),
  );
  gauge('checked_timestamp_seconds', `When ${kind.each} was last checked for a change (Unix time)`, (l) =>
    l.checkedAt ? l.checkedAt.getTime() / 1000 : null,
  );
  gauge(
    'error',
    `1 while ${kind.one}'s last check or reload failed (the copy read before stays in use), else 0`,
    (l) => (l.lastError === null ? 0 : 1),
  );
  new Counter({
    name: `${kind.prefix}_check_failures_total`,
    help: `Checks or reloads of ${kind.one} that failed (the copy read before stayed in use)`,
    labelNames: ['list'],
    registers: [registry],
    collect() {
      // The lists count; shown as they are (a counter of this process's lists).
      this.reset();
      for (const l of lists()) this.inc({ list: l.name }, l.failures);
    },
  });
  new Gauge({
    name: `${kind.prefix}_refused`,
    help: `1 while ${kind.one}'s new content is refused and its files wait, \`reason\` saying why (unparseable, shrank); else 0 (no reason)`,
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
}
