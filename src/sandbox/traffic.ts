// What the sandbox's monitoring endpoints show (docs/sandbox.md "Monitoring"): its own traffic of
// the last 15 minutes, by account, mobile operator and status. The service's response fields are
// "not shown"; the shapes below, the operator prefix table and the windows are the sandbox's own
// choice (docs/sandbox.md, "Monitoring").
//
// Counted in one-second buckets on the sandbox's clock: an acceptance adds a PENDING message to
// its bucket, the status report (the first notification attempt) moves it out of there (while
// that bucket is still kept) into the report's bucket under its status, with its delivery time
// (acceptance → report). So a message counts once, under its latest state, by the time of its
// latest event. Buckets older than the window are dropped.

/** Colombian mobile prefixes (the three digits after 57) per operator: the sandbox's own table. */
export const OPERATOR_PREFIXES: Readonly<Record<string, readonly string[]>> = {
  Claro: ['310', '311', '312', '313', '314', '320', '321', '322', '323'],
  Movistar: ['315', '316', '317', '318'],
  Tigo: ['300', '301', '302', '304', '305'],
  WOM: ['350', '351'],
};

/** Any other number: a Colombian prefix not in the table, or another country. */
export const OTHER_OPERATOR = 'OTHER';

/** Every operator the sandbox names, in the order it lists them. */
export const OPERATORS: readonly string[] = [...Object.keys(OPERATOR_PREFIXES), OTHER_OPERATOR];

const BY_PREFIX = new Map<string, string>(
  Object.entries(OPERATOR_PREFIXES).flatMap(([operator, prefixes]) => prefixes.map((p) => [p, operator])),
);

/** `573101234567` → `Claro`; anything but a 12-digit 57 number with a known prefix → `OTHER`. */
export function operatorOf(to: string): string {
  if (to.length !== 12 || !to.startsWith('57')) return OTHER_OPERATOR;
  return BY_PREFIX.get(to.slice(2, 5)) ?? OTHER_OPERATOR;
}

/**
 * The statuses a report carries (docs/service.md "Status notifications"), and the state of a
 * message accepted, not yet reported.
 */
export const REPORTED_STATUSES = ['DELIVERED_TO_HANDSET', 'NO_SUCCESS'] as const;
export type ReportedStatus = (typeof REPORTED_STATUSES)[number];
export const PENDING_STATUS = 'PENDING';

/**
 * The bireports window: "the last 15 minutes" (docs/service.md "Monitoring"). Not scaled by
 * --time-scale.
 */
export const WINDOW_MS = 15 * 60_000;
/** platformmonitory's "near real time": the delivery time of the reports of the last minute. */
export const REAL_TIME_MS = 60_000;
const BUCKET_MS = 1000;

interface Times {
  count: number;
  totalMs: number;
  maxMs: number;
}

interface Cell {
  pending: number;
  reported: Record<ReportedStatus, Times>;
}

/** Account → operator → counts, for one second. */
type Bucket = Map<string, Map<string, Cell>>;

export interface OperatorStatus {
  readonly operator: string;
  /** Always "UP": the sandbox's operators never fail. */
  readonly status: 'UP';
  /** Always false: the sandbox routes every operator directly. */
  readonly alternate: boolean;
  /** Mean acceptance → report time of the last minute's reports, else the configured delay. */
  readonly deliveryTimeMs: number;
  /** The reports that mean is over (0: the configured delay). */
  readonly reportsLastMinute: number;
}

export interface StatusTimes {
  readonly status: ReportedStatus;
  readonly count: number;
  /** Acceptance → report, null without reports. */
  readonly avgMs: number | null;
  readonly maxMs: number | null;
}

export interface OperatorCount {
  readonly operator: string;
  readonly status: ReportedStatus | typeof PENDING_STATUS;
  readonly count: number;
}

/** Counts one request's destinations; made once per accepted request. */
export interface Tally {
  add(to: string): void;
}

export class Traffic {
  readonly #buckets = new Map<number, Bucket>();
  readonly #now: () => number;
  /** What deliveryTimeMs says when no report came in the last minute. */
  readonly #expectedDelayMs: number;

  constructor(now: () => number, expectedDelayMs: number) {
    this.#now = now;
    this.#expectedDelayMs = expectedDelayMs;
  }

  /** The destinations of one request `account` had accepted at `at` (sandbox clock). */
  accepting(account: string, at: number): Tally {
    const byOperator = this.#accountIn(this.#bucket(at), account);
    return {
      add(to: string): void {
        cellOf(byOperator, operatorOf(to)).pending++;
      },
    };
  }

  /** A status reported at `at` for a destination accepted at `acceptedAt` (sandbox clock). */
  reported(account: string, to: string, status: ReportedStatus, acceptedAt: number, at: number): void {
    const operator = operatorOf(to);
    const accepted = this.#buckets
      .get(Math.floor(acceptedAt / BUCKET_MS))
      ?.get(account)
      ?.get(operator);
    if (accepted && accepted.pending > 0) accepted.pending--;
    const times = cellOf(this.#accountIn(this.#bucket(at), account), operator).reported[status];
    const ms = Math.max(0, at - acceptedAt);
    times.count++;
    times.totalMs += ms;
    times.maxMs = Math.max(times.maxMs, ms);
  }

  /** GET /platformmonitory: every operator, every account's reports of the last minute. */
  platform(): OperatorStatus[] {
    const sums = new Map<string, { count: number; totalMs: number }>();
    for (const bucket of this.#since(REAL_TIME_MS)) {
      for (const byOperator of bucket.values()) {
        for (const [operator, cell] of byOperator) {
          const s = sums.get(operator) ?? { count: 0, totalMs: 0 };
          for (const status of REPORTED_STATUSES) {
            s.count += cell.reported[status].count;
            s.totalMs += cell.reported[status].totalMs;
          }
          sums.set(operator, s);
        }
      }
    }
    return OPERATORS.map((operator) => {
      const s = sums.get(operator);
      const reportsLastMinute = s?.count ?? 0;
      return {
        operator,
        status: 'UP',
        alternate: false,
        deliveryTimeMs:
          reportsLastMinute > 0
            ? Math.round(s!.totalMs / reportsLastMinute)
            : Math.round(this.#expectedDelayMs),
        reportsLastMinute,
      };
    });
  }

  /** GET /bireports/effectivitybyclient: the account's reports of the window, by status. */
  effectivity(account: string): StatusTimes[] {
    const sums = Object.fromEntries(
      REPORTED_STATUSES.map((s) => [s, { count: 0, totalMs: 0, maxMs: 0 }]),
    ) as Record<ReportedStatus, Times>;
    for (const bucket of this.#since(WINDOW_MS)) {
      for (const cell of bucket.get(account)?.values() ?? []) {
        for (const status of REPORTED_STATUSES) {
          const t = cell.reported[status];
          sums[status].count += t.count;
          sums[status].totalMs += t.totalMs;
          sums[status].maxMs = Math.max(sums[status].maxMs, t.maxMs);
        }
      }
    }
    return REPORTED_STATUSES.map((status) => {
      const { count, totalMs, maxMs } = sums[status];
      return {
        status,
        count,
        avgMs: count > 0 ? Math.round(totalMs / count) : null,
        maxMs: count > 0 ? maxMs : null,
      };
    });
  }

  /** GET /bireports/msgmtclient: the account's messages of the window by operator and status (no zero rows). */
  messages(account: string): OperatorCount[] {
    const counts = new Map<string, Record<string, number>>();
    for (const bucket of this.#since(WINDOW_MS)) {
      for (const [operator, cell] of bucket.get(account) ?? []) {
        const c = counts.get(operator) ?? {};
        c[PENDING_STATUS] = (c[PENDING_STATUS] ?? 0) + cell.pending;
        for (const status of REPORTED_STATUSES) c[status] = (c[status] ?? 0) + cell.reported[status].count;
        counts.set(operator, c);
      }
    }
    const rows: OperatorCount[] = [];
    for (const operator of OPERATORS) {
      const c = counts.get(operator);
      if (!c) continue;
      for (const status of [...REPORTED_STATUSES, PENDING_STATUS] as const) {
        if ((c[status] ?? 0) > 0) rows.push({ operator, status, count: c[status]! });
      }
    }
    return rows;
  }

  /** The window's bounds as the bireports show them. */
  window(): { from: string; to: string } {
    const now = this.#now();
    return { from: new Date(now - WINDOW_MS).toISOString(), to: new Date(now).toISOString() };
  }

  clear(): void {
    this.#buckets.clear();
  }

  #bucket(at: number): Bucket {
    const key = Math.floor(at / BUCKET_MS);
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      this.#prune();
      bucket = new Map();
      this.#buckets.set(key, bucket);
    }
    return bucket;
  }

  #accountIn(bucket: Bucket, account: string): Map<string, Cell> {
    let byOperator = bucket.get(account);
    if (!byOperator) bucket.set(account, (byOperator = new Map()));
    return byOperator;
  }

  /** Buckets of the last `spanMs` (to the second), pruning the older ones. */
  *#since(spanMs: number): Generator<Bucket> {
    this.#prune();
    const first = Math.floor((this.#now() - spanMs) / BUCKET_MS) + 1;
    for (const [key, bucket] of this.#buckets) if (key >= first) yield bucket;
  }

  #prune(): void {
    const first = Math.floor((this.#now() - WINDOW_MS) / BUCKET_MS) + 1;
    for (const key of this.#buckets.keys()) if (key < first) this.#buckets.delete(key);
  }
}

function cellOf(byOperator: Map<string, Cell>, operator: string): Cell {
  let cell = byOperator.get(operator);
  if (!cell) {
    cell = {
      pending: 0,
      reported: {
        DELIVERED_TO_HANDSET: { count: 0, totalMs: 0, maxMs: 0 },
        NO_SUCCESS: { count: 0, totalMs: 0, maxMs: 0 },
      },
    };
    byOperator.set(operator, cell);
  }
  return cell;
}
