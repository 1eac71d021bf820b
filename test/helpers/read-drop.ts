// Reading a drop file in a unit test, as the channel readers' tests do: whole, then in 1- and
// 7-byte chunks (every read must give the very same items and summary), and without items (as
// validate reads) the same summary.
import { expect } from 'vitest';
import { makeNumberRules } from '../../src/format/numbers.ts';
import {
  type ReadItem,
  type ReadOptions,
  type ReadSummary,
  type RecipientItem,
  readDropFile,
  type SkippedItem,
  type WarningItem,
} from '../../src/format/reader.ts';
import { rejectionParams } from '../../src/ops/wording.ts';

const CO = makeNumberRules();

export interface Read {
  summary: ReadSummary;
  items: ReadItem[];
  recipients: RecipientItem[];
  skipped: SkippedItem[];
  warnings: WarningItem[];
}

async function readOnce(bytes: Uint8Array, options: Partial<ReadOptions>, chunk: number): Promise<Read> {
  const open = () =>
    (async function* () {
      for (let i = 0; i < bytes.length; i += chunk) yield bytes.subarray(i, i + chunk);
    })();
  const items: ReadItem[] = [];
  let summary: ReadSummary | null = null;
  for await (const batch of readDropFile(open, { name: 'drop.txt', numberRules: CO, ...options })) {
    for (const item of batch) {
      if (item.kind === 'summary') summary = item;
      else items.push(item);
    }
  }
  expect(summary).not.toBeNull();
  return {
    summary: summary!,
    items,
    recipients: items.filter((i): i is RecipientItem => i.kind === 'recipient'),
    skipped: items.filter((i): i is SkippedItem => i.kind !== 'recipient' && i.kind !== 'warning'),
    warnings: items.filter((i): i is WarningItem => i.kind === 'warning'),
  };
}

/** Reads whole, then in 1- and 7-byte chunks, and without items, and expects the same. */
export async function read(text: string | string[], options: Partial<ReadOptions> = {}): Promise<Read> {
  const bytes = new TextEncoder().encode(Array.isArray(text) ? `${text.join('\n')}\n` : text);
  const whole = await readOnce(bytes, options, bytes.length || 1);
  for (const chunk of [1, 7]) expect(await readOnce(bytes, options, chunk)).toEqual(whole);
  expect((await readOnce(bytes, { ...options, items: false }, bytes.length || 1)).summary).toEqual(
    whole.summary,
  );
  // A rejection's parameters are what its message says (see format-reader.test.ts).
  const rejected = whole.summary.rejection;
  if (rejected) expect(rejected.params).toEqual(rejectionParams(rejected.code, rejected.message));
  return whole;
}

/** [line, code] of every record or number not sent. */
export const problems = (r: Read) => r.skipped.map((s) => [s.line, s.code]);
export const rejection = (r: Read) =>
  r.summary.rejection && [r.summary.rejection.code, r.summary.rejection.message];
export const counts = (s: ReadSummary) => ({
  records: s.records,
  valid: s.valid,
  invalid: s.invalid,
  duplicates: s.duplicates,
  suppressed: s.suppressed,
});
