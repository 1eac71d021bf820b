// Issue 14, `report.includeText`: report.csv gains the text sent to each valid recipient (opt-in,
// since texts may be personal), a bulk file's one message on each of its recipients, values a
// spreadsheet would run neutralised like every other cell. Off, the report has no such column.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { csvRecords, PipelineHarness } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({
    config: { report: { includeText: true } },
    source: { maxInvalidRatio: 0.5 },
  });
});

afterAll(async () => {
  await h?.close();
});

async function sendWait(harness: PipelineHarness, name: string, content: string): Promise<Manifest> {
  const path = join(harness.dir, name);
  await writeFile(path, content);
  const r = await harness.cli(['send', path, '--wait', '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Manifest;
}

it('personalized: each valid row carries its own text; invalid and duplicate rows none', async () => {
  const m = await sendWait(
    h,
    'textos.txt',
    '3001234567;Hola Ana, su cita es el lunes\n12;Hola nadie\n3109876543;=HYPERLINK("x")\n3001234567;Hola Ana, su cita es el lunes\n',
  );
  const rows = csvRecords(await h.readReport(m));
  expect(rows.map((r) => [r.line, r.outcome, r.text])).toEqual([
    ['1', 'sent', 'Hola Ana, su cita es el lunes'],
    ['2', 'invalid', ''],
    ['3', 'sent', `'=HYPERLINK("x")`],
    ['4', 'duplicate', ''],
  ]);
  // The CLI's report says the same.
  const printed = await h.cli(['report', m.fileId]);
  expect(csvRecords(printed.stdout)).toEqual(rows);
});

it('bulk: the message on every recipient', async () => {
  const m = await sendWait(
    h,
    'aviso.bulk.txt',
    'Aviso: mañana no hay servicio\n3001234567,3109876543\n3152223344\n',
  );
  const rows = csvRecords(await h.readReport(m));
  expect(rows).toHaveLength(3);
  expect(new Set(rows.map((r) => r.text))).toEqual(new Set(['Aviso: mañana no hay servicio']));
});

it('off by default: no text column', async () => {
  const plain = await PipelineHarness.create();
  try {
    const m = await sendWait(plain, 'sin-texto.txt', '3001234567;Hola\n');
    const report = await plain.readReport(m);
    expect(report.split('\n')[0]).toBe(
      'line,number,messageId,outcome,code,status,transactionNumber,smsCount,updatedAt,detail',
    );
    expect(report).not.toContain('Hola');
  } finally {
    await plain.close();
  }
});
