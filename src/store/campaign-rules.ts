// The campaign rules a store applies to a chunk as it goes out (Store.beginChunk, and
// Store.holdBack on its own), written once for both backends (./steps.ts): numbers that opted
// out by a reply since the file was read, then the contact limit of the file's entity
// (docs/campaign-rules.md "Contact limit"). The texts a user reads come from src/errors.ts
// (HELD_BACK_DETAILS), not from SQL.

import { HELD_BACK_DETAILS } from '../errors.ts';
import { localDateTime } from '../plan/send-window.ts';
import { asker, type Rule } from './steps.ts';
import type { BeginChunk, ContactLimitOptions, HeldBack, HoldBackOptions } from './store.ts';

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
   * Each pending row that holds no contact of the entity's local day yet takes one, in id
   * order (a key twice in the chunk: its second row after its first), when its key's
   * standing allows: fewer than perDay contacts that day and (with `weekly`) its channel
   * among the week's, or a channel slot left. Each contact taken is written to the ledger.
   * How many were taken.
   */
  takeContacts(weekly: boolean): number;
  /**
   * The contacts just taken (`taken` of them) are recorded once for the chunk: its rows still
   * pending that held no contact of the day before (docs/campaign-rules.md "How it holds with
   * several workers").
   */
  recordContacts(taken: number): void;
  /** The chunk's rows still pending: when every one took a contact, nobody was refused. */
  pendingCount(): number;
  /** Rows left without a contact of the day, with the rule that refused them and the contact in the way. */
  refused(weekly: boolean): RefusedContact[];
  /** These rows become `contact_limit` with this code and their detail: how many. */
  holdRefused(code: 'CONTACT_LIMIT', details: { id: number; detail: string }[]): number;
};

const ask = asker<HoldBackOperations>();

/** What holdBack did, and the refused rows' details (beginChunk marks them again after undoing the rest). */
interface Holding {
  held: HeldBack;
  refused: { id: number; detail: string }[];
}

function* hold(options: HoldBackOptions): Rule<HoldBackOperations, Holding> {
  const held: HeldBack = { suppressed: 0, contactLimited: 0 };
  const done = { held, refused: [] };
  if (options.optOuts)
    held.suppressed = yield* ask('holdOptOuts', 'SUPPRESSED', HELD_BACK_DETAILS.SUPPRESSED);
  const limit = options.contactLimit;
  if (!limit) return done;
  const weekly = limit.channelsPerWeek !== null;
  const taken = yield* ask('takeContacts', weekly);
  // The usual chunk: every row took its contact, none to look up again.
  if (taken === (yield* ask('pendingCount'))) return yield* recorded(done, taken);
  const refused = yield* ask('refused', weekly);
  if (refused.length === 0) return yield* recorded(done, taken);
  const details = refused.map((r) => ({ id: r.id, detail: refusalDetail(r, limit) }));
  held.contactLimited = yield* ask('holdRefused', 'CONTACT_LIMIT', details);
  return yield* recorded({ held, refused: details }, taken);
}

/**
 * The contacts taken recorded, once the refused rows are no longer pending. A start that took
 * none writes its (empty) record too, at the time the chunk went inflight: its result finds
 * its own start's record by that time, and gives back only from it (docs/campaign-rules.md
 * "Contacts given back").
 */
function* recorded(holding: Holding, taken: number): Rule<HoldBackOperations, Holding> {
  yield* ask('recordContacts', taken);
  return holding;
}

export function* holdBackRule(options: HoldBackOptions): Rule<HoldBackOperations, HeldBack> {
  return (yield* hold(options)).held;
}

/** What a backend does for beginChunk, in its one transaction, besides holdBack's operations. */
export type BeginChunkOperations = HoldBackOperations & {
  /** A savepoint at the transaction's start. */
  savepoint(): void;
  /** Back to the savepoint: the chunk pending again, the contacts taken given back. */
  undo(): void;
  /** The chunk pending → inflight, fenced as setChunkState (attempts + 1): whether it moved. */
  toInflight(): boolean;
};

const askBegin = asker<BeginChunkOperations>();

/**
 * The chunk goes inflight and its recipients are held back in one transaction, so a contact
 * is taken only by a chunk that goes out (docs/campaign-rules.md "How it holds with several
 * workers"). When some were held back, the request read before (their destinations) would
 * carry them: everything is undone but their outcomes, the chunk stays pending, and its
 * sender reads its destinations again (`{ held }`); the next try holds nobody back.
 */
export function* beginChunkRule(options: HoldBackOptions): Rule<BeginChunkOperations, BeginChunk> {
  yield* askBegin('savepoint');
  if (!(yield* askBegin('toInflight'))) return 'refused';
  const { held, refused } = yield* hold(options);
  if (held.suppressed + held.contactLimited === 0) return 'began';
  yield* askBegin('undo');
  if (held.suppressed > 0) yield* askBegin('holdOptOuts', 'SUPPRESSED', HELD_BACK_DETAILS.SUPPRESSED);
  if (refused.length > 0) yield* askBegin('holdRefused', 'CONTACT_LIMIT', refused);
  return { held };
}

/** Which rule held a row back and when the contact in its way was made, in the limit's zone. */
export function refusalDetail(r: RefusedContact, limit: ContactLimitOptions): string {
  const when = r.at === null ? null : localDateTime(new Date(r.at), limit.timezone);
  return r.rule === 'week'
    ? HELD_BACK_DETAILS.CONTACT_LIMIT.week(limit.channelsPerWeek ?? 0, r.channel, when)
    : HELD_BACK_DETAILS.CONTACT_LIMIT.day(limit.perDay, r.channel, when);
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
