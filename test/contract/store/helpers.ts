// What every part of the store contract shares: the harness a backend provides, the test
// clock's start, rows and files to record, and the context a part reads its store from.

import {
  type ChunkInsert,
  DELIVERED,
  type DeliveryEvent,
  type HoldBackOptions,
  type NewFile,
  type RecipientInsert,
  type Store,
} from '../../../src/store/store.ts';

export interface TestClock {
  set(d: Date): void;
  advance(ms: number): void;
}

export interface StoreHarness {
  store: Store;
  clock: TestClock;
  /**
   * Another store on the same database, on the same clock, as a second process would open
   * it (not migrated). Optional: without it the tests that need two instances use one.
   */
  reopen?(): Promise<Store>;
  cleanup(): Promise<void>;
}

export const T0 = new Date('2026-03-01T12:00:00.000Z');

/** A clock a store reads its time from (`now`), set and moved by the test; starts at T0. */
export function testClock(): TestClock & { now(): Date } {
  let t = T0.getTime();
  return {
    now: () => new Date(t),
    set: (d: Date) => {
      t = d.getTime();
    },
    advance: (ms: number) => {
      t += ms;
    },
  };
}

export const INGEST = { records: 0, valid: 0, invalid: 0, duplicates: 0, suppressed: 0, segments: 0 };

export function newFile(overrides: Partial<NewFile> = {}): NewFile {
  const fileId = overrides.fileId ?? 'f1';
  return {
    fileId,
    source: 'local',
    name: `${fileId}.txt`,
    path: `inbox/${fileId}.txt`,
    sha256: `sha-${fileId}`,
    bytes: 100,
    state: 'validating',
    ...overrides,
  };
}

/** Valid recipients 1..n, messageIds m1..mn, planned into chunks of `chunkSize` (seq 1..). */
export function validRows(n: number, chunkSize: number, first = 1): RecipientInsert[] {
  const rows: RecipientInsert[] = [];
  for (let idx = first; idx < first + n; idx++) {
    rows.push({
      idx,
      line: idx + 1,
      k: 0,
      number: String(573000000000 + idx),
      value: String(3000000000 + idx),
      messageId: `m${idx}`,
      text: `hello ${idx}`,
      chunkSeq: Math.floor((idx - 1) / chunkSize) + 1,
      outcome: 'pending',
      code: null,
      detail: null,
      smsCount: 1,
    });
  }
  return rows;
}

export function chunksFor(n: number, chunkSize: number): ChunkInsert[] {
  const chunks: ChunkInsert[] = [];
  for (let seq = 1; (seq - 1) * chunkSize < n; seq++) {
    chunks.push({ seq, size: Math.min(chunkSize, n - (seq - 1) * chunkSize) });
  }
  return chunks;
}

/** The number validRows gives the recipient with this messageId (a report names it by both). */
export function numberOf(messageId: string): string {
  const m = /^m(\d+)$/.exec(messageId);
  return m ? String(573000000000 + Number(m[1])) : `57300${messageId}`;
}

export function event(
  fileId: string,
  messageId: string,
  overrides: Partial<DeliveryEvent> = {},
): DeliveryEvent {
  return {
    transactionNumber: `tx-${fileId}-${messageId}`,
    to: numberOf(messageId),
    messageId,
    bulkId: fileId,
    callbackData: null,
    smsCount: 1,
    status: DELIVERED,
    receivedAt: T0.toISOString(),
    ...overrides,
  };
}

export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of iterable) out.push(x);
  return out;
}

/** A file's rows with generated messageIds (bulk: line 1 has k 1..3), one own id, one invalid row. */
export function generatedRows(fileId: string): RecipientInsert[] {
  const rows = validRows(6, 4).map(
    (r, i): RecipientInsert => ({
      ...r,
      line: i < 3 ? 1 : i - 1,
      k: i < 3 ? i + 1 : 1,
      messageId: i < 3 ? `${fileId}-1-${i + 1}` : `${fileId}-${i - 1}-1`,
    }),
  );
  rows[4] = { ...rows[4]!, messageId: 'own-5' };
  rows.push({
    ...rows[0]!,
    idx: 7,
    line: 9,
    k: 1,
    messageId: null,
    chunkSeq: null,
    outcome: 'invalid',
    code: 'X',
  });
  rows.push({ ...rows[0]!, idx: 8, line: 10, k: 1, messageId: null, chunkSeq: 2, text: null });
  return rows;
}
export function generatedReport(fileId: string, messageId: string, tn = 'T1') {
  return {
    transactionNumber: tn,
    // the number of the recipient the id names (a report names it by both)
    to: generatedRows(fileId).find((r) => r.messageId === messageId)?.number ?? numberOf(messageId),
    messageId,
    bulkId: fileId,
    callbackData: null,
    smsCount: 1,
    status: 'DELIVERED_TO_HANDSET',
    receivedAt: T0.toISOString(),
  };
}

/** What each part of the contract gets from storeContract (read in tests: a new store each test). */
export interface ContractContext {
  readonly h: StoreHarness;
  readonly store: Store;
  /** T0 + ms as an ISO string. */
  at(ms: number): string;
  /** A file with `n` valid recipients in chunks of `chunkSize`, in state sending. */
  sendingFile(fileId: string, n: number, chunkSize: number, rows?: RecipientInsert[]): Promise<void>;
  /** The same file sent whole: every chunk accepted (transaction number `<fileId>-T<seq>`). */
  submittedFile(fileId: string, n: number, chunkSize: number, rows?: RecipientInsert[]): Promise<void>;
}

/** A contact limit as the store is asked to hold it back (one channel, one entity). */
export const limit = (
  perDay = 1,
  entity = 'default',
  timezone = 'America/Bogota',
  channel = 'sms',
  channelsPerWeek: number | null = null,
): HoldBackOptions => ({
  optOuts: false,
  contactLimit: { entity, channel, timezone, perDay, channelsPerWeek },
});
/** The law's reading: once a day, one channel a week. */
export const ley2300 = (channel: string, entity = 'default') =>
  limit(1, entity, 'America/Bogota', channel, 1);
