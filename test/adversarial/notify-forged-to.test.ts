// Issue 10, item 17: a delivery report names its recipient by bulkId + messageId AND number. A
// report whose `to` is another number (a forged or misrouted report) is answered 200 and kept
// as an orphan; it never changes the recipient's status. Real daemon, real sandbox reports.
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import type { ReportRow } from '../../src/store/store.ts';
import { PipelineHarness, personalizedFile, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({ sandbox: { failureRatio: 0 }, api: { chunkSize: 100 } });
  await h.start();
});

afterAll(async () => {
  await h?.close();
});

async function reportRows(fileId: string): Promise<ReportRow[]> {
  const store = await openStore(`sqlite:${join(h.dir, 'state.db')}`);
  const rows: ReportRow[] = [];
  try {
    for await (const page of store.reportPages(fileId)) rows.push(...page);
  } finally {
    await store.close();
  }
  return rows;
}

it('a report whose `to` is not the recipient number is an orphan: answered 200, status unchanged', async () => {
  const gen = personalizedFile(50, 41);
  await h.dropFile('ajeno.txt', gen.content);
  const done = await h.waitForState('ajeno.txt', 'completed');
  const fileId = done.fileId;
  expect(done.counts.delivered).toBe(gen.valid.length);
  const target = gen.valid[3]!;
  const messageId = `${fileId}-${target.idSuffix}`;
  const before = (await reportRows(fileId)).find((r) => r.messageId === messageId)!;
  expect(before.status).toBe('DELIVERED_TO_HANDSET');

  // Same bulkId and messageId, another number, a status that would flip the line.
  const forged = async (to: string, tn: string) =>
    fetch(`http://127.0.0.1:${h.notifyPort}/notify?token=${h.notifyToken}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        results: [
          {
            transactionNumber: tn,
            to,
            messageId,
            bulkId: fileId,
            callbackData: null,
            smsCount: 1,
            status: { name: 'NO_SUCCESS' },
          },
        ],
      }),
    });
  const res = await forged('573119999999', '9'.repeat(28));
  expect(res.status).toBe(200);
  // The receiver commits before answering 200: the store holds the event, as an orphan.
  const orphan = await waitFor('the forged report recorded', async () => {
    const { DatabaseSync } = await import('node:sqlite');
    const db = new DatabaseSync(join(h.dir, 'state.db'), { readOnly: true });
    try {
      return db
        .prepare('SELECT orphan FROM delivery_events WHERE transaction_number = ? AND to_number = ?')
        .get('9'.repeat(28), '573119999999');
    } finally {
      db.close();
    }
  });
  expect(orphan).toEqual({ orphan: 1 });

  const after = (await reportRows(fileId)).find((r) => r.messageId === messageId)!;
  expect(after.status).toBe('DELIVERED_TO_HANDSET');
  expect(after.transactionNumber).toBe(before.transactionNumber);
  const m = await h.waitForFile(fileId, 'completed');
  expect(m.counts).toMatchObject({ delivered: gen.valid.length, undelivered: 0 });
});
