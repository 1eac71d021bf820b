// Issue 14, replies that opt out: `dropline run` binds to the sandbox's SMPP server as a
// receiver (optOut.smpp), keeps every reply (`dropline replies`), and a reply whose text is an
// opt-out keyword holds its sender back from the chunks of a campaign not yet sent. Replies
// sent while dropline is down are delivered once it binds again: none is lost.
import { afterAll, beforeAll, expect, it } from 'vitest';

import { csvRecords, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({
    sandbox: { smpp: {} },
    api: { chunkSize: 10 },
    config: (sandbox) => ({
      optOut: { smpp: { host: '127.0.0.1', port: sandbox.smpp!.port, systemId: 'demo', password: 'demo' } },
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

async function replies(args: string[] = []): Promise<Record<string, string>[]> {
  const r = await h.cli(['replies', ...args]);
  expect(r.code, r.stderr).toBe(0);
  return csvRecords(r.stdout);
}

it('an opt-out received after the file was read holds its number back from the chunks not yet sent', async () => {
  // 40 recipients; the file waits 8 s for its sendAt, read and valid meanwhile.
  const numbers = Array.from({ length: 40 }, (_, i) => `3${String(410_000_000 + i)}`);
  const at = new Date(Date.now() + 8000);
  await h.dropFile(
    'promo.txt',
    `#! sendAt: ${at.toISOString()}\n${numbers.map((n) => `${n};Promo ${n}`).join('\n')}\n`,
  );
  const scheduled = await h.waitForState('promo.txt', 'scheduled');
  expect(scheduled.counts.valid).toBe(40);

  await postReplies([
    { from: `57${numbers[35]}`, text: ' Salir. ' },
    { from: `+57${numbers[2]}`, text: 'No gracias, ¿cuándo abren?' },
  ]);
  await waitFor('both replies kept', async () => (await replies()).length === 2);
  const kept = await replies();
  expect(kept.map((r) => [r.from, r.text, r.optOut])).toEqual([
    [`57${numbers[35]}`, ' Salir. ', 'true'],
    [`57${numbers[2]}`, 'No gracias, ¿cuándo abren?', 'false'],
  ]);
  expect(new Date(kept[0]!.receivedAt!).getTime()).toBeLessThan(at.getTime());

  const m = await h.waitForState('promo.txt', ['submitted', 'completed']);
  expect(m.counts).toMatchObject({ records: 40, valid: 39, suppressed: 1, optedOut: 1, submitted: 39 });
  const sent = (await h.ledger(m.fileId)).entries.map((e) => e.to);
  expect(sent).toHaveLength(39);
  expect(sent).not.toContain(`57${numbers[35]}`);
  expect(sent).toContain(`57${numbers[2]}`);
  const report = csvRecords((await h.cli(['report', m.fileId])).stdout);
  expect(report.filter((r) => r.outcome === 'suppressed').map((r) => [r.line, r.code])).toEqual([
    ['37', 'SUPPRESSED'],
  ]);
  // Logs mask the number.
  expect(h.daemonOutput).not.toContain(numbers[35]!);
});

it('replies sent while dropline is down arrive once it is back; --since filters', async () => {
  const before = new Date().toISOString();
  expect(await h.stop()).toBe(0);
  await postReplies([{ from: '573109998877', text: 'STOP' }]);
  await h.start();
  await waitFor('the reply sent while down', async () => (await replies(['--since', before])).length === 1);
  const [r] = await replies(['--since', before]);
  expect(r).toMatchObject({ from: '573109998877', text: 'STOP', optOut: 'true' });
  expect((await replies()).length).toBe(3);
});

it('a bad --since is a usage error', async () => {
  const r = await h.cli(['replies', '--since', 'ayer']);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain('DROPLINE_ERR_USAGE');
});
