// Issue 14, contactLimit (Ley 2300 de 2023: a consumer contacted at most once a day): a
// recipient the account already sent a message that Bogotá day is not sent again, whatever the
// campaign, and is reported `contact_limit` / CONTACT_LIMIT, counted like suppressed. The CLI
// as a process against the sandbox.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { csvRecords, PipelineHarness } from '../helpers/pipeline-harness.ts';
import { campaign, Workers } from '../helpers/pipeline-workers.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({ api: { chunkSize: 40 }, config: { contactLimit: { perDay: 1 } } });
});

afterAll(async () => {
  await h?.close();
});

/** Personalized lines for numbers 3000000000 + from … + to (exclusive). */
const lines = (from: number, to: number, text: string) =>
  Array.from({ length: to - from }, (_, i) => `${3_000_000_000 + from + i};${text} ${from + i}\n`).join('');

async function send(name: string, content: string): Promise<Manifest> {
  const path = join(h.dir, name);
  await writeFile(path, content);
  const r = await h.cli(['send', path, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Manifest;
}

it('a second campaign the same day skips the numbers the first one reached; none is sent twice', async () => {
  const first = await send('manana.txt', lines(0, 100, 'Oferta de la mañana'));
  expect(first.counts).toMatchObject({ valid: 100, submitted: 100, contactLimited: 0 });

  // 60 new numbers, 50 already reached, and a number twice with two messages (not a duplicate).
  const second = await send(
    'tarde.txt',
    `${lines(50, 160, 'Oferta de la tarde')}${3_000_000_150};Otra oferta de la tarde\n`,
  );
  expect(second.counts).toMatchObject({
    records: 111,
    valid: 60,
    contactLimited: 51,
    submitted: 60,
  });
  const c = second.counts;
  expect(c.records).toBe(c.valid + c.invalid + c.duplicates + c.suppressed + c.contactLimited);

  const ledger = await h.ledger();
  const to = ledger.entries.map((e) => e.to);
  expect(to).toHaveLength(160);
  expect(new Set(to).size).toBe(160);

  const printed = await h.cli(['report', second.fileId]);
  expect(printed.code, printed.stderr).toBe(0);
  const report = csvRecords(printed.stdout);
  const limited = report.filter((r) => r.outcome === 'contact_limit');
  expect(limited).toHaveLength(51);
  expect(new Set(limited.map((r) => r.code))).toEqual(new Set(['CONTACT_LIMIT']));
  // The first 50 lines (numbers the morning reached) and the last line (the second message).
  expect(limited.map((r) => Number(r.line))).toEqual([...Array.from({ length: 50 }, (_, i) => i + 1), 111]);
  expect(report.filter((r) => r.outcome === 'sent')).toHaveLength(60);
});

it("a worker whose clock is a day ahead still counts the store's day: nobody gets two messages that day", async () => {
  // Two workers on one store (on PostgreSQL the database's now(); SQLite in one process: the
  // real clock); b's own clock runs a day ahead. The day of the limit is the store's.
  const w = await Workers.create({ contactLimit: { perDay: 1 } });
  try {
    const a = await w.worker('a');
    const b = await w.worker('b', { processNow: () => new Date(Date.now() + 86_400_000) });
    const drive = async (worker: typeof a, name: string, content: string) => {
      const file = await worker.pipeline.claim(worker.source, await w.dropFile(name, content));
      await worker.pipeline.drive(file!.fileId);
      return w.store.counts(file!.fileId);
    };
    const first = await drive(a, 'hoy.txt', campaign(200, 7));
    expect(first).toMatchObject({ submitted: 200, contactLimited: 0 });
    // The same 200 numbers, another text: sent by b the same real day.
    const second = await drive(b, 'otra.txt', campaign(200, 7).replaceAll('su cita', 'su pedido'));
    expect(second).toMatchObject({ submitted: 0, contactLimited: 200 });
    const res = await fetch(`${w.sandbox.url}/_sandbox/ledger`);
    const entries = ((await res.json()) as { entries: { to: string }[] }).entries;
    expect(entries).toHaveLength(200);
  } finally {
    await w.close();
  }
});
