// Issue 14, templates and cost through the daemon's path (`dropline send`, a process): the
// service receives each record's merged text, transliterated to GSM-7 when the source says so,
// and the manifest carries the campaign's cost: segments by country, as written and as sent.
// (é is GSM-7 and stays; á has no place in GSM-7 and becomes a.)
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { csvRecords, PipelineHarness } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({ source: { transliterate: 'gsm7', maxInvalidRatio: 0.5 } });
});

afterAll(async () => {
  await h?.close();
});

it('each recipient gets its merged, transliterated text; MISSING_FIELD lines are not sent; the manifest has the cost', async () => {
  const path = join(h.dir, 'citas.txt');
  await writeFile(
    path,
    [
      '#! message: Hola {{Nombre}}, su cita está lista el {{día}}',
      'numero;nombre;dia',
      '3001234567;Ana;lunes',
      '3109876543;;martes',
      '+525512345678;José;miércoles',
      '',
    ].join('\n'),
  );
  const r = await h.cli(['send', path, '--json']);
  expect(r.code, r.stderr).toBe(0);
  const m = JSON.parse(r.stdout) as Manifest;
  expect(m.counts).toMatchObject({ records: 3, valid: 2, invalid: 1, submitted: 2 });
  const sent = (await h.ledger(m.fileId)).entries.map((e) => [e.to, e.text]).sort();
  expect(sent).toEqual([
    ['525512345678', 'Hola José, su cita esta lista el miércoles'],
    ['573001234567', 'Hola Ana, su cita esta lista el lunes'],
  ]);
  expect(m.cost).toEqual({
    segmentsByCountry: { CO: 1, MX: 1 },
    transliteration: { mode: 'gsm7', segmentsAsWritten: 2, segmentsTransliterated: 2, recipientsChanged: 2 },
  });
  const report = csvRecords((await h.cli(['report', m.fileId])).stdout);
  expect(report.find((row) => row.line === '4')).toMatchObject({ outcome: 'invalid', code: 'MISSING_FIELD' });
});
