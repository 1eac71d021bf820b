// The dashboard's dates and counts as the page words them (src/ops/dashboard/i18n.js and
// progress.js, plain ES modules loaded here as the browser loads them). A date's year has
// four digits: `24/12/30` reads as day/month/year or year/month/day. A file's first count
// is its recipients, the same figure a rejection's `3 of 4 recipients` names.
import { beforeAll, describe, expect, it } from 'vitest';

interface I18n {
  setLanguage(lang: string): void;
  t(key: string, vars?: Record<string, unknown>): string;
  when(iso: string): string;
  whenIn(iso: string, zone: string): string;
  dateTime(date: Date, options?: { seconds?: boolean; day?: boolean; zone?: string }): string;
}
interface Progress {
  recipientsRead(counts: Record<string, number | undefined>): number;
}

let i18n: I18n;
let progress: Progress;

beforeAll(async () => {
  // The two browser globals setLanguage touches; nothing else of the DOM is used here.
  const stored = new Map<string, string>();
  Object.assign(globalThis, {
    localStorage: {
      getItem: (k: string) => stored.get(k) ?? null,
      setItem: (k: string, v: string) => stored.set(k, v),
    },
    document: { documentElement: { lang: 'en' } },
  });
  const dir = new URL('../../src/ops/dashboard/', import.meta.url);
  i18n = (await import(new URL('i18n.js', dir).href)) as I18n;
  progress = (await import(new URL('progress.js', dir).href)) as Progress;
});

/** A day/month/year (or month/day/year) with a two-digit year, as `24/12/30`. */
const TWO_DIGIT_YEAR = /\b\d{1,2}\/\d{1,2}\/\d{2}(?!\d)/;

describe('dates on the dashboard', () => {
  it('a scheduled start, in the source’s zone, has a four-digit year in both languages', () => {
    i18n.setLanguage('es');
    expect(i18n.whenIn('2030-12-24T14:00:00Z', 'America/Bogota')).toMatch(/^24\/12\/2030, 9:00\sa\.\sm\.$/);
    i18n.setLanguage('en');
    expect(i18n.whenIn('2030-12-24T14:00:00Z', 'America/Bogota')).toMatch(/^12\/24\/2030, 9:00\sAM$/);
  });

  it('every other date (arrived, finished, updated, the timeline, the chart) too', () => {
    for (const lang of ['es', 'en']) {
      i18n.setLanguage(lang);
      // Noon UTC: the same day in every zone the test may run in.
      const at = i18n.when('2026-12-01T12:00:00Z');
      expect(at).toMatch(/\b2026\b/);
      expect(at).not.toMatch(TWO_DIGIT_YEAR);
      const tick = i18n.dateTime(new Date('2026-12-01T12:00:00Z'), { zone: 'UTC' });
      expect(tick).toMatch(lang === 'es' ? /^1\/12\/2026, 12:00\sp\.\sm\.$/ : /^12\/1\/2026, 12:00\sPM$/);
      // The chart's ticks of today: the time alone.
      expect(i18n.dateTime(new Date('2026-12-01T12:00:00Z'), { zone: 'UTC', day: false })).not.toMatch(
        /2026/,
      );
    }
  });
});

describe('counts on the dashboard', () => {
  it('a file’s first count is its recipients: a bulk line of three numbers is three', () => {
    // samples' kind of mala.txt read as bulk: 2 records, 4 recipients, 3 of them invalid.
    const c = { records: 2, valid: 1, invalid: 3, duplicates: 0, suppressed: 0 };
    expect(progress.recipientsRead(c)).toBe(4);
    expect(progress.recipientsRead({ ...c, duplicates: 2, suppressed: 1, contactLimited: 5 })).toBe(12);
    i18n.setLanguage('es');
    expect(i18n.t('recipients')).toBe('destinatarios leídos');
    i18n.setLanguage('en');
    expect(i18n.t('recipients')).toBe('recipients read');
  });
});
