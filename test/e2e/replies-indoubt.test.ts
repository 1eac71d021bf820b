// Replies to recipients of a chunk that was in doubt (docs/replies.md "The join"): an SMS
// campaign from a short code whose first chunk the sandbox accepts and then resets the
// connection on (the answer lost: in doubt, held), settled by its delivery reports as sent.
// Its recipients are reply targets from then on: a reply from one is joined to its row like
// one from a chunk the service answered (replies --file, report.csv's reply column).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { csvRecords, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

const SHORT_CODE = '890123';
let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({
    sandbox: { accounts: [{ username: 'demo', password: 'demo', shortCodes: [SHORT_CODE] }], smpp: {} },
    // Held, not resent: only the reports settle the chunk in doubt.
    api: { chunkSize: 2, concurrency: 1, inDoubt: 'hold' },
    source: { shortCode: SHORT_CODE },
    config: (sandbox) => ({
      replies: { smpp: { host: '127.0.0.1', port: sandbox.smpp!.port, systemId: 'demo', password: 'demo' } },
    }),
  });
  await h.start();
});

afterAll(async () => {
  await h?.close();
});

async function cliCsv(args: string[]): Promise<Record<string, string>[]> {
  const r = await h.cli(args);
  expect(r.code, r.stderr).toBe(0);
  return csvRecords(r.stdout);
}

it('a reply from a recipient whose chunk was in doubt, settled by its reports, is joined', async () => {
  await h.faults({ massive: { reset: { probability: 1, times: 1 } } });
  const numbers = Array.from({ length: 4 }, (_, i) => `3${String(530_000_000 + i)}`);
  await h.dropFile('duda.txt', `${numbers.map((n) => `${n};Responde SI para confirmar`).join('\n')}\n`);
  const done = await h.waitForState('duda.txt', 'completed');
  const { fileId } = done;
  // The first chunk was in doubt and settled by its reports, never sent again.
  expect(done.counts).toMatchObject({ submitted: 4, chunksInDoubt: 0, inDoubt: 0, possibleDuplicates: 0 });
  expect((await h.ledger(fileId)).duplicates).toBe(0);

  const res = await fetch(`${h.sandbox.url}/_sandbox/replies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([
      { from: `57${numbers[0]}`, to: SHORT_CODE, text: 'SI' },
      { from: `57${numbers[3]}`, to: SHORT_CODE, text: 'Confirmo' },
    ]),
  });
  expect(res.status, await res.text()).toBe(202);
  await waitFor('the two replies kept', async () => (await cliCsv(['replies'])).length === 2);

  expect((await cliCsv(['replies', '--file', fileId])).map((r) => [r.from, r.text, r.line])).toEqual([
    [`57${numbers[0]}`, 'SI', '1'],
    [`57${numbers[3]}`, 'Confirmo', '4'],
  ]);
  const report = await waitFor('report.csv with the replies', async () => {
    const rows = csvRecords(await h.readReport(done));
    return rows.find((r) => r.line === '4')?.reply ? rows : undefined;
  });
  expect(report.map((r) => [r.line, r.outcome, r.reply])).toEqual([
    ['1', 'sent', 'SI'],
    ['2', 'sent', ''],
    ['3', 'sent', ''],
    ['4', 'sent', 'Confirmo'],
  ]);
  expect((await h.waitForFile(fileId, 'completed')).counts.replied).toBe(2);
});
