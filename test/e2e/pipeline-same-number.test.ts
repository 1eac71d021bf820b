// Issue 10, item 3: one number on several lines of a personalized file, with different texts
// (not duplicates). The service answers one delivery report per line; dropline keeps delivery
// reports idempotent on (transactionNumber, to), so two lines of one number must never share a
// request (one transactionNumber): each line is sent in a request of its own and reaches its
// own final status. Before the fix the second report was taken for a repeat of the first and
// its line waited for the delivery deadline (72 h) to become UNKNOWN.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import type { ReportRow } from '../../src/store/store.ts';
import { PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({ sandbox: { failureRatio: 0.3 }, api: { chunkSize: 300 } });
  await h.start();
});

afterAll(async () => {
  await h?.close();
});

const REPEATED = '3001234567';
const THRICE = '3109876543';

function content(): { text: string; valid: number } {
  const lines: string[] = [];
  for (let i = 1; i <= 60; i++) {
    if (i === 5 || i === 20) lines.push(`${REPEATED};Hola, su cita ${i} es el lunes.`);
    else if (i === 7 || i === 8 || i === 50) lines.push(`${THRICE};Recordatorio ${i} de su pago.`);
    else lines.push(`3${String(200_000_000 + i)};Hola cliente ${i}.`);
  }
  return { text: `${lines.join('\n')}\n`, valid: 60 };
}

it('the same number on several lines: each line is sent once, in a request of its own, and reaches its final status', async () => {
  const { text, valid } = content();
  await h.dropFile('repetidos.txt', text);
  const submitted = await h.waitForState('repetidos.txt', ['submitted', 'completed']);
  const fileId = submitted.fileId;

  // Every accepted line gets exactly one notification, answered 200.
  await waitFor('every notification of the file answered', async () => {
    const n = await h.notifications();
    const mine = n.attempts.filter((a) => a.bulkId === fileId);
    return n.pending === 0 && mine.length >= valid;
  });
  const { attempts } = await h.notifications();
  const mine = attempts.filter((a) => a.bulkId === fileId);
  expect(mine).toHaveLength(valid);
  expect(mine.every((a) => a.code === 200)).toBe(true);

  // No request carried one number twice: the lines of a number have different transactionNumbers.
  const ledger = await h.ledger(fileId);
  expect(ledger.entries).toHaveLength(valid);
  for (const n of [`57${REPEATED}`, `57${THRICE}`]) {
    const entries = ledger.entries.filter((e) => e.to === n);
    expect(new Set(entries.map((e) => e.transactionNumber)).size, n).toBe(entries.length);
  }

  // Every line reached its final status: the file completes without waiting for a deadline.
  const done = await h.waitForFile(fileId, 'completed', { timeoutMs: 15_000 });
  expect(done.counts).toMatchObject({ valid, submitted: valid, pendingDelivery: 0, unknown: 0 });
  expect(done.counts.delivered + done.counts.undelivered).toBe(valid);

  // And each line carries the status of its own report.
  const store = await openStore(String(h.config.store));
  const rows: ReportRow[] = [];
  try {
    for await (const page of store.reportPages(fileId)) rows.push(...page);
  } finally {
    await store.close();
  }
  const statusOf = new Map(mine.map((a) => [a.messageId, a.statusName]));
  for (const line of [5, 20, 7, 8, 50]) {
    const row = rows.find((r) => r.line === line)!;
    expect(row.status, `line ${line}`).toBe(statusOf.get(`${fileId}-${line}`));
  }
});
