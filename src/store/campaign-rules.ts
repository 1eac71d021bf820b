// The campaign rules a store applies to a chunk before it is sent (Store.holdBack), written
// once for both backends (./steps.ts): numbers that opted out by a reply since the file was
// read, then the contact limit of the file's entity (docs/campaign-rules.md "Contact limit").
// The texts a user reads come from src/errors.ts (HELD_BACK_DETAILS), not from SQL.

import { HELD_BACK_DETAILS } from '../errors.ts';
import { localDateTime } from '../plan/send-window.ts';
import { asker, type Rule } from './steps.ts';
import type { ContactLimitOptions, HeldBack, HoldBackOptions } from './store.ts';

/** A pending row of the chunk refused by the ledger, and the contact that stands in its way. */
export interface RefusedContact {
  id: number;
  /** `day`: the day's slots are taken; `week`: other channels took the week's. */
  rule: 'day' | 'week';
  /** The latest such contact (ISO-8601) and its channel; null when none is found. */
  at: string | null;
  channel: string | null;
}

/** What a backend does for holdBack, inside its one transaction, on the chunk's pending rows. */
export type HoldBackOperations = {
  /** Rows whose number is on the opt-out list become `suppressed` with this code and detail: how many. */
  holdOptOuts(code: 'SUPPRESSED', detail: string): number;
  /**
   * Week slot `slot` of the entity's local week for the chunk's channel, for each row whose
   * key holds none for that channel yet (in key order).
   */
  takeWeekSlots(slot: number): void;
  /**
   * Day slot `slot` of the entity's local day for each row without one (in key order; with
   * `weekly`, only rows whose key holds a week slot for the channel): a key twice in the
   * chunk takes two slots, or is held back.
   */
  takeSlots(slot: number, weekly: boolean): void;
  /** Rows left without a day slot, with the rule that refused them (`weekly`: the week's first). */
  refused(weekly: boolean): RefusedContact[];
  /** Week slots taken by rows left without a day slot (this call's) are given back. */
  releaseWeekSlots(): void;
  /** These rows become `contact_limit` with this code and their detail: how many. */
  holdRefused(code: 'CONTACT_LIMIT', details: { id: number; detail: string }[]): number;
};

const ask = asker<HoldBackOperations>();

export function* holdBackRule(options: HoldBackOptions): Rule<HoldBackOperations, HeldBack> {
  const held: HeldBack = { suppressed: 0, contactLimited: 0 };
  if (options.optOuts)
    held.suppressed = yield* ask('holdOptOuts', 'SUPPRESSED', HELD_BACK_DETAILS.SUPPRESSED);
  const limit = options.contactLimit;
  if (!limit) return held;
  const weekly = limit.channelsPerWeek !== null;
  // Week slots first: a day slot goes only to a key whose channel has its week's.
  for (let slot = 1; slot <= (limit.channelsPerWeek ?? 0); slot++) yield* ask('takeWeekSlots', slot);
  // A slot per round: a key twice in the chunk takes two slots, or is held back.
  for (let slot = 1; slot <= limit.perDay; slot++) yield* ask('takeSlots', slot, weekly);
  const refused = yield* ask('refused', weekly);
  if (refused.length === 0) return held;
  // A week slot whose row found no day slot was no contact: another channel may take it.
  if (weekly) yield* ask('releaseWeekSlots');
  const details = refused.map((r) => ({ id: r.id, detail: refusalDetail(r, limit) }));
  held.contactLimited = yield* ask('holdRefused', 'CONTACT_LIMIT', details);
  return held;
}

/** Which rule held a row back and when the contact in its way was made, in the limit's zone. */
export function refusalDetail(r: RefusedContact, limit: ContactLimitOptions): string {
  const when = r.at === null ? null : localDateTime(new Date(r.at), limit.timezone);
  return r.rule === 'week'
    ? HELD_BACK_DETAILS.CONTACT_LIMIT.week(limit.channelsPerWeek ?? 0, r.channel, when)
    : HELD_BACK_DETAILS.CONTACT_LIMIT.day(limit.perDay, r.channel, when);
}

/** The local dates from `week` (a Monday) to `day`, both included: where the week's contacts are. */
export function weekDays(week: string, day: string): string[] {
  const days: string[] = [];
  for (let t = Date.parse(`${week}T00:00:00Z`); days.length < 7; t += 86_400_000) {
    const d = new Date(t).toISOString().slice(0, 10);
    days.push(d);
    if (d >= day) break;
  }
  return days;
}

/** A row of a backend's refused() query. */
export function refusedOf(row: Record<string, unknown>): RefusedContact {
  return {
    id: Number(row.id),
    rule: row.rule === 'week' ? 'week' : 'day',
    at: row.at == null ? null : new Date(String(row.at)).toISOString(),
    channel: row.channel == null ? null : String(row.channel),
  };
}
