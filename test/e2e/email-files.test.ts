// Issue 15, email files before email sending exists: `dropline validate` reads them as docs/format.md
// "Email files" says (addresses, fields, the subject's placeholders), and a source that sends sms never
// sends one: `dropline send` (the daemon's path) rejects it BAD_DIRECTIVE and the service
// receives nothing; `validate` with the configuration, or without one (the embedded
// default's SMS source), says the same.
import { spawnSync } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { BIN, PipelineHarness } from '../helpers/pipeline-harness.ts';

/** `dropline validate` in a folder without a configuration (no DROPLINE_CONFIG either). */
async function bareValidate(args: string[]): Promise<{ code: number | null; stdout: string }> {
  const cwd = await mkdtemp(join(tmpdir(), 'dropline-bare-'));
  const env = { ...process.env };
  delete env.DROPLINE_CONFIG;
  const r = spawnSync(process.execPath, [BIN, 'validate', ...args], { cwd, env, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout };
}

let h: PipelineHarness;
let path: string;

beforeAll(async () => {
  h = await PipelineHarness.create();
  path = join(h.dir, 'facturas.txt');
  await writeFile(
    path,
    [
      '#! channel: email',
      '#! templateId: invoice',
      'correo;nombre;mes',
      'ana@example.com;Ana;enero',
      'luis@bücher.de;Luis;febrero',
      'luis@bücher.de;Luis;febrero',
      'no-es-un-correo;Pia;marzo',
      '3001234567;Juan;abril',
      'pia@example.com;Pía;mayo',
      'juan@example.com;Juan;junio',
      ...['julio', 'agosto', 'septiembre', 'octubre', 'noviembre'].map(
        (m) => `${m}@example.com;Cliente;${m}`,
      ),
      '',
    ].join('\n'),
  );
});

afterAll(async () => {
  await h?.close();
});

it('validate without a configuration reads the addresses, their fields and the content, and refuses the file as the embedded default does', async () => {
  // The embedded default's one source sends sms (docs/configuration.md): the file is read
  // whole, then refused BAD_DIRECTIVE as `npm start` would refuse it.
  const r = await bareValidate(['--json', path]);
  expect(r.code).toBe(1);
  const s = JSON.parse(r.stdout);
  expect(s).toMatchObject({
    accepted: false,
    rejection: {
      code: 'BAD_DIRECTIVE',
      message:
        'line 1: this source sends sms, not email: drop the file in a source whose account sends email',
    },
    channel: 'email',
    email: { templateId: 'invoice', subject: null, html: null },
    records: 12,
    valid: 9,
    invalid: 2,
    duplicates: 1,
    segments: 0,
  });
  expect(s.errors.map((e: { line: number; code: string }) => [e.line, e.code])).toEqual([
    [7, 'INVALID_EMAIL'],
    [8, 'INVALID_EMAIL'],
  ]);
  const text = await bareValidate([path]);
  expect(text.stdout).toContain('settings of source local (embedded default)');
  expect(text.stdout).toContain('channel email');
  expect(text.stdout).toContain('template invoice (stored on the service)');
});

it('a source that sends sms rejects an email file whole, and sends nothing of it', async () => {
  const r = await h.cli(['send', path, '--json']);
  expect(r.code).toBe(1);
  const m = JSON.parse(r.stdout) as Manifest;
  expect(m.state).toBe('rejected');
  expect(m.rejection?.code).toBe('BAD_DIRECTIVE');
  expect(m.rejection?.message).toBe(
    'line 1: this source sends sms, not email: drop the file in a source whose account sends email',
  );
  expect((await h.ledger()).entries).toEqual([]);
  const checked = await h.cli(['validate', path]);
  expect(checked.code).toBe(1);
  expect(checked.stdout).toContain('BAD_DIRECTIVE: line 1: this source sends sms, not email');
});
