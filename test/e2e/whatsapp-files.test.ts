// WhatsApp drop files (docs/format.md "WhatsApp files") through `dropline
// validate` as a process: the numbers, each recipient's template parameters, the template and
// its sending number, one example of the parameters; and the files it rejects, with the line.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BIN } from '../helpers/pipeline-harness.ts';

let dir: string;

/**
 * `dropline validate` in a folder whose configuration has one WhatsApp source (no
 * DROPLINE_CONFIG): without one it answers for the embedded default's SMS source, which
 * refuses every WhatsApp file (test/e2e/validate-embedded-default.test.ts).
 */
function validate(args: string[]): { code: number | null; stdout: string } {
  const env = { ...process.env };
  delete env.DROPLINE_CONFIG;
  const r = spawnSync(process.execPath, [BIN, 'validate', ...args], { cwd: dir, env, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout };
}

async function file(name: string, lines: string[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-whatsapp-files-'));
  await writeFile(
    join(dir, 'dropline.config.json'),
    JSON.stringify({
      accounts: {
        wa: {
          channel: 'whatsapp',
          baseUrl: 'http://127.0.0.1:9/',
          username: 'u',
          source: '+573000000000',
        },
      },
      sources: [{ name: 'wa', type: 'local', path: './drop', channel: 'whatsapp', account: 'wa' }],
    }),
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

it('a headed file: numbers, parameters from the numbered columns, the template and its sending number', async () => {
  const path = await file('facturas.txt', [
    '#! channel: whatsapp',
    '#! templateId: factura',
    '#! source: +573001112233',
    'numero;nombre;1;2',
    '3001234567;x;Ana;$120.000',
    '3109876543;x;Luis;$80.000',
    '3109876543;x;Luis;$80.000',
    '12;x;Pia;$1',
    '3151112233;x;Juan;',
    ...Array.from({ length: 6 }, (_, i) => `320000000${i};x;Cliente ${i};$${i}`),
  ]);
  const r = validate(['--json', path]);
  expect(r.code).toBe(0);
  const s = JSON.parse(r.stdout);
  expect(s).toMatchObject({
    accepted: true,
    channel: 'whatsapp',
    whatsapp: { templateId: 'factura', source: '573001112233' },
    email: null,
    records: 11,
    valid: 8,
    invalid: 2,
    duplicates: 1,
    segments: 0,
    countries: { CO: 8 },
    templates: [{ line: 5, template: '{{1}} | {{2}}', example: '["Ana","$120.000"]' }],
  });
  expect(s.errors.map((e: { line: number; code: string }) => [e.line, e.code])).toEqual([
    [8, 'INVALID_NUMBER'],
    [9, 'MISSING_FIELD'],
  ]);
  const text = validate([path]);
  expect(text.code).toBe(0);
  expect(text.stdout).toContain('channel whatsapp; countries CO 8');
  expect(text.stdout).toContain('template factura (a WhatsApp template approved on the service)');
  expect(text.stdout).toContain('sending number 573001112233');
  expect(text.stdout).toContain('parameters "{{1}} | {{2}}"');
  expect(text.stdout).toContain('example (line 5): ["Ana","$120.000"]');
  expect(text.stdout).toContain('line 9: MISSING_FIELD parameter 2 has no value on this line (column 2)');
  // No SMS cost lines for a WhatsApp file.
  expect(text.stdout).not.toContain('segments');
});

it('a list of numbers with `#! message:` parameters, sent from the account’s own number', async () => {
  const path = await file('promo.txt', [
    '#! channel: whatsapp',
    '#! templateId: promo',
    '#! message: Black Friday | 30% || 40%',
    '3001234567',
    '3109876543;3151112233',
  ]);
  const s = JSON.parse(validate(['--json', path]).stdout);
  expect(s).toMatchObject({
    accepted: true,
    layout: 'bulk',
    records: 2,
    valid: 3,
    whatsapp: { templateId: 'promo', source: null },
  });
  const text = validate([path]).stdout;
  expect(text).toContain("sending number the account's own");
  expect(text).toContain('example (line 4): ["Black Friday","30% | 40%"]');
});

it('rejected files: no template (NO_MESSAGE), a numbered column missing, a message column; exit 1', async () => {
  const none = await file('sin-plantilla.txt', ['#! channel: whatsapp', 'numero;1', '3001234567;Ana']);
  const r1 = validate([none]);
  expect(r1.code).toBe(1);
  expect(r1.stdout).toContain(
    "NO_MESSAGE: a WhatsApp file needs a template: `#! templateId:` or its source's `whatsapp.templateId`",
  );
  expect(r1.stdout).toContain('hint: add `#! templateId: <id>`');

  const gap = await file('hueco.txt', [
    '#! channel: whatsapp',
    '#! templateId: t',
    'numero;2',
    '3001234567;Ana',
  ]);
  const r2 = validate([gap]);
  expect(r2.code).toBe(1);
  expect(r2.stdout).toContain(
    "UNKNOWN_PLACEHOLDER: line 3: the template's parameter {{1}} has no column `1`",
  );

  const sms = await file('sms.txt', [
    '#! channel: whatsapp',
    '#! templateId: t',
    'numero;mensaje',
    '3001234567;Hola',
  ]);
  const r3 = JSON.parse(validate(['--json', sms]).stdout);
  expect(r3.accepted).toBe(false);
  expect(r3.rejection.code).toBe('BAD_DIRECTIVE');
  expect(r3.rejection.message).toMatch(/^line 3: column 2 `mensaje` is a message text/);

  const source = await file('origen.txt', [
    '#! channel: whatsapp',
    '#! templateId: t',
    '#! source: 300-111',
    '3001234567',
  ]);
  const r4 = JSON.parse(validate(['--json', source]).stdout);
  expect(r4.rejection.code).toBe('BAD_DIRECTIVE');
  expect(r4.rejection.message).toMatch(/^line 3: source is the WhatsApp sending number, 8 to 15 digits/);
});
