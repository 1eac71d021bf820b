// When commercial messages may be sent (docs/campaign-rules.md "Send windows (`sendWindow`)", issue
// 14): weekly hours in a time zone, closed dates, and a country's public holidays. Pure: the caller
// gives the instant. Colombia's holidays (those moved to Monday by Ley 51 de 1983 included) come
// from the maintained colombian-holidays package, never from a table written here.

import { getHolidaysForYear } from 'colombian-holidays';

export const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
export type Day = (typeof DAYS)[number];

export interface WindowRule {
  readonly days: readonly Day[];
  /** `HH:MM`, local time, included. */
  readonly from: string;
  /** `HH:MM` (up to `24:00`), local time, excluded: at `to` the window is closed. */
  readonly to: string;
}

export interface WindowSpec {
  /** An IANA time zone (`America/Bogota`). */
  readonly timezone: string;
  readonly rules: readonly WindowRule[];
  /** Local dates (`YYYY-MM-DD`) closed all day, besides the holidays. */
  readonly closed?: readonly string[] | undefined;
  /** `CO`: Colombia's public holidays are closed all day. */
  readonly holidays?: 'CO' | null | undefined;
}

/**
 * Ley 2300 de 2023, art. 3: Monday to Friday 7:00–19:00, Saturday 8:00–15:00, never on
 * Sundays or public holidays, in Bogotá's time.
 */
export const COLOMBIA_COMMERCIAL: WindowSpec = {
  timezone: 'America/Bogota',
  rules: [
    { days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '07:00', to: '19:00' },
    { days: ['sat'], from: '08:00', to: '15:00' },
  ],
  closed: [],
  holidays: 'CO',
};

/** The configuration's `sendWindow` (a name or a spec) as a window; null: any hour. */
export function sendWindowOf(config: 'colombia-commercial' | WindowSpec | null): SendWindow | null {
  if (config === null) return null;
  return new SendWindow(config === 'colombia-commercial' ? COLOMBIA_COMMERCIAL : config);
}

/** `YYYY-MM-DD HH:MM` in `timezone` (how a start is told to a user), e.g. `2026-11-28 08:00`. */
export function localTime(at: Date, timezone: string): string {
  const p = fields(at, timezone);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}`;
}

/** `HH:MM` → minutes since midnight (`24:00` is 1440), or null. */
export function minuteOfDay(hhmm: string): number | null {
  const m = /^([01]\d|2[0-4]):([0-5]\d)$/.exec(hhmm);
  if (!m) return null;
  const minutes = Number(m[1]) * 60 + Number(m[2]);
  return minutes <= 1440 ? minutes : null;
}

/** Why the spec cannot be used, or null (the configuration's check). */
export function windowProblem(spec: WindowSpec): string | null {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: spec.timezone });
  } catch {
    return `timezone "${spec.timezone}" is not an IANA time zone (e.g. America/Bogota)`;
  }
  if (spec.rules.length === 0) return 'rules: at least one rule (a window with no hours never opens)';
  for (const [i, r] of spec.rules.entries()) {
    const from = minuteOfDay(r.from);
    const to = minuteOfDay(r.to);
    if (from === null || to === null) return `rules[${i}]: from and to are HH:MM (00:00 to 24:00)`;
    if (to <= from) return `rules[${i}]: to (${r.to}) must be after from (${r.from})`;
    if (r.days.length === 0) return `rules[${i}]: days names at least one day`;
  }
  for (const d of spec.closed ?? []) {
    // Date.parse takes 2026-02-30 (as March 2): the day must read back as written.
    const at = Date.parse(`${d}T00:00:00Z`);
    if (!/^\d{4}-\d{2}-\d{2}$/.test(d) || Number.isNaN(at) || new Date(at).toISOString().slice(0, 10) !== d)
      return `closed: "${d}" is not a date (YYYY-MM-DD)`;
  }
  return null;
}

interface LocalDay {
  /** `YYYY-MM-DD` */
  date: string;
  day: Day;
}

const MINUTE = 60_000;
/** How far ahead an opening is looked for: a window closed for longer never opens. */
const HORIZON_DAYS = 400;

export class SendWindow {
  readonly spec: WindowSpec;
  readonly #closed: Set<string>;
  readonly #holidayYears = new Map<number, Set<string>>();

  constructor(spec: WindowSpec) {
    const problem = windowProblem(spec);
    if (problem) throw new Error(`sendWindow: ${problem}`);
    this.spec = spec;
    this.#closed = new Set(spec.closed ?? []);
  }

  /** Whether a message may go out at `at`. */
  isOpen(at: Date): boolean {
    return this.#intervalAt(at) !== null;
  }

  /** When the window open at `at` closes; null when it is closed at `at`. */
  closesAt(at: Date): Date | null {
    return this.#intervalAt(at)?.end ?? null;
  }

  /** `at` itself when open, else the next opening; null when none within 400 days. */
  nextOpening(at: Date): Date | null {
    const t = at.getTime();
    for (const { start, end } of this.#intervals(at, HORIZON_DAYS))
      if (end.getTime() > t) return start.getTime() > t ? start : at;
    return null;
  }

  #intervalAt(at: Date): { start: Date; end: Date } | null {
    const t = at.getTime();
    for (const iv of this.#intervals(new Date(t - 2 * 86_400_000), 4))
      if (iv.start.getTime() <= t && t < iv.end.getTime()) return iv;
    return null;
  }

  /** The open intervals of `days` local days from the one holding `from`, in order, merged. */
  *#intervals(from: Date, days: number): Generator<{ start: Date; end: Date }> {
    const first = this.#local(from);
    let pending: { start: Date; end: Date } | null = null;
    for (let i = 0; i < days; i++) {
      const day = addDays(first.date, i);
      if (this.#closedOn(day.date)) continue;
      const spans = this.spec.rules
        .filter((r) => r.days.includes(day.day))
        .map((r) => [minuteOfDay(r.from)!, minuteOfDay(r.to)!] as const)
        .sort((a, b) => a[0] - b[0]);
      for (const [a, b] of spans) {
        const start = this.#instant(day.date, a);
        const end = this.#instant(day.date, b);
        if (pending && start.getTime() <= pending.end.getTime()) {
          if (end > pending.end) pending.end = end;
          continue;
        }
        if (pending) yield pending;
        pending = { start, end };
      }
    }
    if (pending) yield pending;
  }

  #closedOn(date: string): boolean {
    if (this.#closed.has(date)) return true;
    if (this.spec.holidays !== 'CO') return false;
    const year = Number(date.slice(0, 4));
    let set = this.#holidayYears.get(year);
    if (!set) {
      set = new Set(getHolidaysForYear(year).map((h) => h.celebrationDate));
      this.#holidayYears.set(year, set);
    }
    return set.has(date);
  }

  /** The local calendar day of `at` in the window's zone. */
  #local(at: Date): LocalDay {
    const date = localDate(at, this.spec.timezone);
    return { date, day: DAYS[new Date(`${date}T00:00:00Z`).getUTCDay()]! };
  }

  #instant(date: string, minute: number): Date {
    return localInstant(this.spec.timezone, date, minute);
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock fields of `at` in `timezone` (year, month, day, hour, minute, second). */
function fields(at: Date, timezone: string): Record<string, string> {
  let f = formatters.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timezone, f);
  }
  const out: Record<string, string> = {};
  for (const part of f.formatToParts(at)) out[part.type] = part.value;
  return out;
}

/** The local date (`YYYY-MM-DD`) of `at` in `timezone`. */
export function localDate(at: Date, timezone: string): string {
  const p = fields(at, timezone);
  return `${p.year}-${p.month}-${p.day}`;
}

/** The Monday (`YYYY-MM-DD`) of the local week (Monday to Sunday) of `at` in `timezone`. */
export function localWeek(at: Date, timezone: string): string {
  const date = new Date(`${localDate(at, timezone)}T00:00:00Z`);
  const sinceMonday = (date.getUTCDay() + 6) % 7;
  return new Date(date.getTime() - sinceMonday * 86_400_000).toISOString().slice(0, 10);
}

/** `YYYY-MM-DD HH:MM:SS ±HH:MM`: `at` as the wall clock of `timezone` shows it, with its offset. */
export function localDateTime(at: Date, timezone: string): string {
  const p = fields(at, timezone);
  const minutes = Math.round(offset(at, timezone) / 60_000);
  const abs = Math.abs(minutes);
  const zone = `${minutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${zone}`;
}

/** The zone's offset from UTC at `at`, in ms (Bogotá: −5 h). */
function offset(at: Date, timezone: string): number {
  const p = fields(at, timezone);
  const asUtc = Date.UTC(+p.year!, +p.month! - 1, +p.day!, +p.hour!, +p.minute!, +p.second!);
  return asUtc - Math.floor(at.getTime() / 1000) * 1000;
}

/**
 * The instant of local `date` (`YYYY-MM-DD`) + `minute` in `timezone`. A local time skipped
 * by a DST change is taken at the offset before the change (so an opening inside the gap
 * opens right after it).
 */
export function localInstant(timezone: string, date: string, minute: number): Date {
  const wall = Date.parse(`${date}T00:00:00Z`) + minute * MINUTE;
  const first = wall - offset(new Date(wall), timezone);
  const second = wall - offset(new Date(first), timezone);
  return new Date(Math.min(first, second));
}

function addDays(date: string, n: number): LocalDay {
  const d = new Date(Date.parse(`${date}T00:00:00Z`) + n * 86_400_000);
  return { date: d.toISOString().slice(0, 10), day: DAYS[d.getUTCDay()]! };
}
