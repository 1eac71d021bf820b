// Issue 35, replies joined to their campaign (docs/replies.md): an SMS campaign sent from a
// short code (the source's `shortCode`) through the sandbox; users' replies over its SMPP
// server are joined to the row sent to their number: report.csv gains `reply` and
// `repliedAt` (written again when a reply comes after it), the manifest counts `replied`,
// `dropline replies --file` lists them. A reply to another short code, or from a number the
// campaign did not send to, stays unjoined (the window is the store contract's:
// test/contract/store/replies-joined.ts). Replies that come while the store is away are kept,
// in the order they came.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvRecords, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

const SHORT_CODE = '890123';
let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({
    // The sandbox refuses a massive message from a short code not assigned to the account.
    sandbox: { accounts: [{ username: 'demo', password: 'demo', shortCodes: [SHORT_CODE] }], smpp: {} },
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

async function postReplies(body: unknown): Promise<void> {
  const res = await fetch(`${h.sandbox.url}/_sandbox/replies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.text()).toBe(202);
}

async function cliCsv(args: string[]): Promise<Record<string, string>[]> {
  const r = await h.cli(args);
  expect(r.code, r.stderr).toBe(0);
  return csvRecords(r.stdout);
}

describe('a campaign sent from a short code', () => {
  it('joins its replies to the rows sent to their numbers: report, manifest, replies --file', async () => {
    const numbers = Array.from({ length: 6 }, (_, i) => `3${String(520_000_000 + i)}`);
    await h.dropFile(
      'citas.txt',
      `${numbers.map((n) => `${n};Responde SI para confirmar tu cita`).join('\n')}\n`,
    );
    const done = await h.waitForState('citas.txt', 'completed');
    const { fileId } = done;
    // The file's own manifest counts its replies (a list of manifests leaves them out).
    expect((await h.waitForFile(fileId, 'completed')).counts).toMatchObject({ submitted: 6, replied: 0 });
    expect(done.counts.replied).toBeUndefined();

    await postReplies([
      { from: `57${numbers[0]}`, to: SHORT_CODE, text: 'SI' },
      { from: `+57${numbers[3]}`, to: SHORT_CODE, text: 'No puedo, ¿el jueves?' },
      { from: `57${numbers[0]}`, to: SHORT_CODE, text: 'gracias' },
      // Another short code, and a number the campaign never sent to: unjoined.
      { from: `57${numbers[1]}`, to: '555', text: 'SI' },
      { from: '573009999999', to: SHORT_CODE, text: 'SI' },
    ]);
    await waitFor('the five replies kept', async () => (await cliCsv(['replies'])).length === 5);

    const joined = await cliCsv(['replies', '--file', fileId]);
    expect(joined.map((r) => [r.from, r.to, r.text, r.line])).toEqual([
      [`57${numbers[0]}`, SHORT_CODE, 'SI', '1'],
      [`57${numbers[3]}`, SHORT_CODE, 'No puedo, ¿el jueves?', '4'],
      [`57${numbers[0]}`, SHORT_CODE, 'gracias', '1'],
    ]);

    // The report was written when the file completed: the replies write it again.
    const report = await waitFor('report.csv with the replies', async () => {
      const rows = csvRecords(await h.readReport(done));
      return rows.find((r) => r.line === '4')?.reply ? rows : undefined;
    });
    expect(report.map((r) => [r.line, r.reply])).toEqual([
      ['1', 'SI'],
      ['2', ''],
      ['3', ''],
      ['4', 'No puedo, ¿el jueves?'],
      ['5', ''],
      ['6', ''],
    ]);
    const firstAt = joined[0]!.receivedAt;
    expect(report[0]!.repliedAt).toBe(firstAt);
    expect(report[1]!.repliedAt).toBe('');
    // `dropline report` prints the same columns.
    const printed = await cliCsv(['report', fileId]);
    expect(printed[3]).toMatchObject({ reply: 'No puedo, ¿el jueves?' });

    const m = await h.waitForFile(fileId, 'completed');
    expect(m.counts.replied).toBe(2);
    // The manifest beside report.csv was written again with it.
    const written = JSON.parse(await h.readReport(done, 'manifest.json')) as typeof m;
    expect(written.counts.replied).toBe(2);
    // The dashboard's campaign page: the reply rate and the latest replies, numbers masked.
    const activity = (await h.opsGet(`/api/files/${fileId}/activity`)).body as {
      replies: {
        replies: number;
        replied: number;
        rate: number;
        latest: { from: string; text: string; line: number }[];
      };
    };
    expect(activity.replies).toMatchObject({ replies: 3, replied: 2, rate: 2 / 6 });
    expect(activity.replies.latest.map((r) => [r.text, r.line])).toEqual([
      ['gracias', 1],
      ['No puedo, ¿el jueves?', 4],
      ['SI', 1],
    ]);
    expect(activity.replies.latest[1]!.from).toBe(`57${numbers[3]!.slice(0, 3)}****${numbers[3]!.slice(-3)}`);
    expect(JSON.stringify(activity)).not.toContain(numbers[3]!);
    // Logs mask the numbers that replied.
    expect(h.daemonOutput).not.toContain(numbers[3]!);
  });

  it('an unknown fileId is DROPLINE_ERR_UNKNOWN_FILE', async () => {
    const r = await h.cli(['replies', '--file', 'nope']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('DROPLINE_ERR_UNKNOWN_FILE');
  });
});
