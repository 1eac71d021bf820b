// Issue 14, legal hours: the colombia-commercial window (Ley 2300 de 2023, art. 3) and custom
// windows, computed for given instants whatever the host's time zone.
import { afterEach, describe, expect, it } from 'vitest';
import { COLOMBIA_COMMERCIAL, SendWindow, windowProblem } from '../../src/plan/send-window.ts';

const co = new SendWindow(COLOMBIA_COMMERCIAL);
/** A Bogotá wall-clock time (UTC−5 all year) as an instant. */
const bogota = (local: string) => new Date(`${local}:00-05:00`);
const iso = (d: Date | null) => d?.toISOString() ?? null;

describe('colombia-commercial', () => {
  it('Friday 18:59 is open and closes at 19:00; at 19:00 it opens again Saturday 08:00', () => {
    expect(co.isOpen(bogota('2026-11-27T18:59'))).toBe(true);
    expect(iso(co.closesAt(bogota('2026-11-27T18:59')))).toBe(iso(bogota('2026-11-27T19:00')));
    expect(co.isOpen(bogota('2026-11-27T19:00'))).toBe(false);
    expect(iso(co.nextOpening(bogota('2026-11-27T19:00')))).toBe(iso(bogota('2026-11-28T08:00')));
  });

  it('Saturday closes at 15:00; Sunday is closed; Monday opens at 07:00', () => {
    expect(co.isOpen(bogota('2026-11-28T14:59'))).toBe(true);
    expect(co.isOpen(bogota('2026-11-28T15:00'))).toBe(false);
    expect(co.isOpen(bogota('2026-11-29T12:00'))).toBe(false);
    expect(iso(co.nextOpening(bogota('2026-11-28T15:00')))).toBe(iso(bogota('2026-11-30T07:00')));
    expect(co.isOpen(bogota('2026-11-30T06:59'))).toBe(false);
    expect(co.isOpen(bogota('2026-11-30T07:00'))).toBe(true);
  });

  it('skips a holiday moved to Monday (Reyes Magos, 12 January 2026) and fixed ones (8 December)', () => {
    expect(co.isOpen(bogota('2026-01-12T10:00'))).toBe(false);
    expect(iso(co.nextOpening(bogota('2026-01-10T16:00')))).toBe(iso(bogota('2026-01-13T07:00')));
    expect(co.isOpen(bogota('2026-12-08T10:00'))).toBe(false);
    expect(co.isOpen(bogota('2026-12-09T10:00'))).toBe(true);
  });

  it('an open instant is its own next opening', () => {
    const t = bogota('2026-11-25T10:30');
    expect(iso(co.nextOpening(t))).toBe(iso(t));
  });
});

describe('whatever the host’s time zone', () => {
  const saved = process.env.TZ;
  afterEach(() => {
    if (saved === undefined) delete process.env.TZ;
    else process.env.TZ = saved;
  });

  it('gives the same answers on a UTC host and one at UTC+14', () => {
    const answers = () => [
      co.isOpen(bogota('2026-11-27T18:59')),
      iso(co.nextOpening(bogota('2026-11-27T19:00'))),
      iso(new SendWindow(COLOMBIA_COMMERCIAL).nextOpening(bogota('2026-11-28T15:00'))),
    ];
    process.env.TZ = 'UTC';
    const utc = answers();
    process.env.TZ = 'Pacific/Kiritimati';
    expect(answers()).toEqual(utc);
  });
});

describe('custom windows', () => {
  it('closed dates, several rules a day, and a zone with summer time', () => {
    const w = new SendWindow({
      timezone: 'America/New_York',
      rules: [
        { days: ['sun', 'mon'], from: '09:00', to: '12:00' },
        { days: ['mon'], from: '13:00', to: '17:00' },
      ],
      closed: ['2026-03-09'],
      holidays: null,
    });
    // 8 March 2026: clocks go forward at 02:00; 09:00 is EDT (UTC−4).
    expect(iso(w.nextOpening(new Date('2026-03-08T05:00:00Z')))).toBe('2026-03-08T13:00:00.000Z');
    // Monday 9 March is closed: the next opening is Sunday 15 March.
    expect(iso(w.nextOpening(new Date('2026-03-08T16:00:00Z')))).toBe('2026-03-15T13:00:00.000Z');
    // Monday 16 March: the lunch gap.
    expect(w.isOpen(new Date('2026-03-16T16:30:00Z'))).toBe(false);
    expect(iso(w.nextOpening(new Date('2026-03-16T16:30:00Z')))).toBe('2026-03-16T17:00:00.000Z');
  });

  it('rules that touch make one opening (to 24:00, from 00:00 the next day)', () => {
    const w = new SendWindow({
      timezone: 'UTC',
      rules: [
        { days: ['fri'], from: '20:00', to: '24:00' },
        { days: ['sat'], from: '00:00', to: '02:00' },
      ],
    });
    expect(iso(w.closesAt(new Date('2026-11-27T23:00:00Z')))).toBe('2026-11-28T02:00:00.000Z');
    expect(w.isOpen(new Date('2026-11-28T01:00:00Z'))).toBe(true);
  });

  it('refuses what cannot be a window', () => {
    expect(windowProblem({ timezone: 'Mars/Olympus', rules: COLOMBIA_COMMERCIAL.rules })).toMatch(/IANA/);
    expect(windowProblem({ timezone: 'UTC', rules: [] })).toMatch(/at least one rule/);
    expect(
      windowProblem({ timezone: 'UTC', rules: [{ days: ['mon'], from: '19:00', to: '07:00' }] }),
    ).toMatch(/must be after/);
    expect(windowProblem({ timezone: 'UTC', rules: [{ days: ['mon'], from: '7:00', to: '19:00' }] })).toMatch(
      /HH:MM/,
    );
    expect(
      windowProblem({ timezone: 'UTC', rules: COLOMBIA_COMMERCIAL.rules, closed: ['24/12/2026'] }),
    ).toMatch(/not a date/);
    // A day no calendar has: it would never close anything.
    for (const day of ['2026-02-30', '2026-04-31', '2027-02-29'])
      expect(windowProblem({ timezone: 'UTC', rules: COLOMBIA_COMMERCIAL.rules, closed: [day] })).toMatch(
        /not a date/,
      );
    expect(
      windowProblem({ timezone: 'UTC', rules: COLOMBIA_COMMERCIAL.rules, closed: ['2028-02-29'] }),
    ).toBeNull();
    expect(() => new SendWindow({ timezone: 'UTC', rules: [] })).toThrow(/sendWindow/);
    expect(windowProblem(COLOMBIA_COMMERCIAL)).toBeNull();
  });

  it('a window never open within 400 days has no next opening', () => {
    const w = new SendWindow({
      timezone: 'UTC',
      rules: [{ days: ['mon'], from: '09:00', to: '10:00' }],
      closed: Array.from({ length: 60 }, (_, i) =>
        new Date(Date.parse('2026-11-30T00:00:00Z') + i * 7 * 86_400_000).toISOString().slice(0, 10),
      ),
    });
    expect(w.nextOpening(new Date('2026-11-28T00:00:00Z'))).toBeNull();
  });
});
