// `dropline validate` as a real process (docs/contract.md "validate --json", issue 2):
// exit 0 accepted, 1 rejected, 2 usage error or unreadable file.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REASONS } from '../../src/errors.ts';
import { REPO as ROOT, runCli } from '../helpers/cli.ts';

const SAMPLES = join(ROOT, 'samples');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const dropline = (...args: string[]): Promise<Run> => runCli(args, { env: { NO_COLOR: '1' } });

interface Issue {
  line: number;
  code: string;
  message: string;
  value?: string;
  hint?: string;
}

interface ValidateJson {
  file: string;
  bytes: number;
  sha256: string | null;
  encoding: string;
  layout: 'personalized' | 'bulk';
  separator: string | null;
  header: boolean;
  records: number;
  valid: number;
  invalid: number;
  duplicates: number;
  suppressed: number;
  segments: number;
  encodings: { gsm7: number; ucs2: number };
  countries: Record<string, number>;
  accepted: boolean;
  rejection: { code: string; message: string } | null;
  errors: Issue[];
  warnings: Issue[];
  errorsTruncated: boolean;
  directives: {
    priority: string | null;
    expect: { line: number; count: number } | null;
    sendAt: { line: number; at: string } | null;
  };
}

async function validateJson(...args: string[]): Promise<{ run: Run; json: ValidateJson }> {
  const run = await dropline('validate', '--json', ...args);
  expect(run.code, run.stderr).toBeLessThan(2);
  return { run, json: JSON.parse(run.stdout) as ValidateJson };
}

const CONTRACT_FIELDS = [
  'file',
  'bytes',
  'sha256',
  'encoding',
  'layout',
  'separator',
  'header',
  'records',
  'valid',
  'invalid',
  'duplicates',
  'suppressed',
  'segments',
  'encodings',
  'countries',
  'accepted',
  'rejection',
  'errors',
  'warnings',
  'errorsTruncated',
];

/**
 * Every docs/contract.md "validate --json" field with its type, the counts consistent, the sha256 real.
 * `path`: the file as given on the command line (relative to the repository or absolute).
 */
async function expectContract(path: string, run: Run, json: ValidateJson): Promise<void> {
  for (const field of CONTRACT_FIELDS) expect(json, field).toHaveProperty(field);
  const bytes = await readFile(resolve(ROOT, path));
  expect(json.file).toBe(path);
  expect(json.bytes).toBe(bytes.length);
  expect(json.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  expect(['utf-8', 'utf-16le', 'utf-16be', 'windows-1252']).toContain(json.encoding);
  expect(['personalized', 'bulk']).toContain(json.layout);
  expect(typeof json.header).toBe('boolean');
  for (const n of [json.records, json.valid, json.invalid, json.duplicates, json.suppressed, json.segments]) {
    expect(Number.isInteger(n) && n >= 0).toBe(true);
  }
  expect(Object.keys(json.encodings).sort()).toEqual(['gsm7', 'ucs2']);
  // Email recipients have no SMS encoding, segments or country, WhatsApp recipients a country
  // but no encoding or segments (docs/format.md "Email files", "WhatsApp files", "RCS files").
  const channel = (json as { channel?: string }).channel ?? 'sms';
  // RCS and two-way texts are read as SMS texts: their encodings are counted.
  const sms = channel === 'sms' || channel === 'rcs' || channel === 'twoway' ? json.valid : 0;
  expect(json.encodings.gsm7 + json.encodings.ucs2).toBe(sms);
  expect(Object.values(json.countries).reduce((a, b) => a + b, 0)).toBe(channel === 'email' ? 0 : json.valid);
  if (sms === 0) expect(json.segments).toBe(0);
  expect(json.accepted).toBe(json.rejection === null);
  if (json.rejection) {
    expect(Object.keys(REASONS)).toContain(json.rejection.code);
    expect(json.rejection.message.length).toBeGreaterThan(0);
  }
  for (const e of json.errors) {
    expect(Object.keys(e)).toEqual(expect.arrayContaining(['line', 'code', 'message', 'value']));
    expect(e.line).toBeGreaterThan(0);
    expect(REASONS[e.code as keyof typeof REASONS].scope).toBe('record');
  }
  for (const w of json.warnings) {
    expect(Object.keys(w)).toEqual(expect.arrayContaining(['line', 'code', 'message']));
    expect(REASONS[w.code as keyof typeof REASONS].scope).toBe('warning');
  }
  expect(json.errors.length).toBeLessThanOrEqual(1000);
  expect(json.errorsTruncated).toBe(json.invalid > json.errors.length);
  expect(run.code).toBe(json.accepted ? 0 : 1);
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-validate-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function tempFile(name: string, content: string | Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

describe('validate --json on samples/*.txt: every field of docs/contract.md', async () => {
  const samples = (await readdir(SAMPLES)).filter((f) => f.endsWith('.txt')).sort();

  it('there are samples to check', () => {
    expect(samples).toEqual(
      expect.arrayContaining(['bulk.txt', 'mistakes.txt', 'personalized-headed.txt', 'personalized.txt']),
    );
  });

  it.each(samples)('samples/%s', async (name) => {
    const path = join('samples', name);
    const { run, json } = await validateJson(path);
    await expectContract(path, run, json);
  });

  it('personalized.txt: accepted, exit 0', async () => {
    const { run, json } = await validateJson('samples/personalized.txt');
    expect(run.code).toBe(0);
    expect(json).toMatchObject({
      layout: 'personalized',
      separator: ';',
      header: false,
      encoding: 'utf-8',
      records: 5,
      valid: 5,
      accepted: true,
      rejection: null,
      countries: { CO: 5 },
    });
  });

  it('personalized-headed.txt: header, CRLF, a multi-line quoted message', async () => {
    const { json } = await validateJson('samples/personalized-headed.txt');
    expect(json).toMatchObject({ header: true, records: 4, valid: 4, invalid: 0 });
    expect(json.warnings.map((w) => [w.line, w.code])).toEqual([[4, 'UCS2_MESSAGE']]);
  });

  it('urgent.txt: its directives read (priority high, the expected count checked)', async () => {
    const { run, json } = await validateJson('samples/urgent.txt');
    expect(run.code).toBe(0);
    expect(json).toMatchObject({ header: true, records: 3, valid: 3, accepted: true });
    expect(json.directives).toEqual({
      priority: 'high',
      expect: { line: 2, count: 3 },
      sendAt: null,
      message: null,
      channel: null,
      flash: null,
      subject: null,
      templateId: null,
    });
  });

  it('template.txt: a #! message: template merged per record, its start, the line missing a field', async () => {
    const { run, json } = await validateJson('samples/template.txt');
    expect(run.code).toBe(0);
    expect(json).toMatchObject({ records: 6, valid: 5, invalid: 1, accepted: true });
    expect(json.directives.sendAt).toEqual({ line: 2, at: '2026-12-01T14:00:00.000Z' });
    expect(json.errors.map((e) => [e.line, e.code])).toEqual([[6, 'MISSING_FIELD']]);
    const text = await dropline('validate', 'samples/template.txt');
    expect(text.stdout).toContain('example (line 4): "Hola Ana, su cita es el martes 1 a las 9:30.');
    expect(text.stdout).toContain(
      'not sent before 2026-12-01T14:00:00.000Z, nor outside the send window (#! sendAt:)',
    );
  });

  it('bulk.txt: bulk, countries counted', async () => {
    const { json } = await validateJson('samples/bulk.txt');
    expect(json).toMatchObject({ layout: 'bulk', records: 4, valid: 6, countries: { CO: 5, MX: 1 } });
  });

  it("the README's opt-out example: samples/optouts.list suppresses two of bulk.txt's numbers", async () => {
    const { run, json } = await validateJson(
      '--suppression-list',
      'samples/optouts.list',
      'samples/bulk.txt',
    );
    expect(run.code).toBe(0);
    expect(json).toMatchObject({ valid: 4, suppressed: 2, accepted: true });
  });

  it('the suppression list is read as the daemon reads it (national numbers are Colombian), whatever --default-country', async () => {
    const list = await tempFile('optouts-co.list', '3109876543\n');
    const file = await tempFile('mx.txt', 'Hola\n+573109876543\n5512345678\n');
    const { json } = await validateJson('--default-country', 'MX', '--suppression-list', list, file);
    expect(json).toMatchObject({ valid: 1, suppressed: 1 });
  });

  it('mistakes.txt: every mistake with its line, code and value', async () => {
    const { json } = await validateJson('samples/mistakes.txt');
    expect(json.errors.map((e) => [e.line, e.code, e.value])).toEqual([
      [5, 'INVALID_NUMBER', '57300123'],
      [6, 'NOT_MOBILE', '6015551234'],
      [7, 'EMPTY_MESSAGE', ''],
      [10, 'MALFORMED_QUOTE', expect.stringContaining('573001234506')],
    ]);
    expect(json).toMatchObject({ records: 23, valid: 18, invalid: 4, duplicates: 1, errorsTruncated: false });
  });
});

describe('validate: exit codes', () => {
  it('1 when rejected (TOO_MANY_INVALID with --max-invalid-ratio 0)', async () => {
    const { run, json } = await validateJson('samples/mistakes.txt', '--max-invalid-ratio', '0');
    expect(run.code).toBe(1);
    expect(json.accepted).toBe(false);
    expect(json.rejection?.code).toBe('TOO_MANY_INVALID');
  });

  it('1 for a whole-file rejection (NO_MESSAGE, BINARY_FILE, EMPTY_FILE, TRAILER_MISMATCH)', async () => {
    for (const [name, content, code] of [
      ['nomessage.txt', '3001234567\n3109876543\n', 'NO_MESSAGE'],
      ['binary.txt', Buffer.from([0x33, 0x00, 0x0a]), 'BINARY_FILE'],
      ['empty.txt', '# nothing yet\n', 'EMPTY_FILE'],
      ['trailer.txt', '3001234567;Hola\nEOF;2\n', 'TRAILER_MISMATCH'],
    ] as const) {
      const run = await dropline('validate', '--json', await tempFile(name, content));
      expect(run.code, name).toBe(1);
      expect(JSON.parse(run.stdout).rejection.code).toBe(code);
    }
  });

  it.each([
    ['a missing file', ['validate', 'samples/no-such-file.txt'], 'DROPLINE_ERR_FILE_UNREADABLE'],
    ['a directory', ['validate', 'samples'], 'DROPLINE_ERR_FILE_UNREADABLE'],
    [
      '--max-invalid-ratio 3',
      ['validate', 'samples/bulk.txt', '--max-invalid-ratio', '3'],
      '--max-invalid-ratio',
    ],
    [
      '--max-invalid-ratio abc',
      ['validate', 'samples/bulk.txt', '--max-invalid-ratio', 'abc'],
      'a number from 0 to 1',
    ],
    ['--allowed-countries ZZ', ['validate', 'samples/bulk.txt', '--allowed-countries', 'ZZ'], '"ZZ"'],
    ['--default-country XX', ['validate', 'samples/bulk.txt', '--default-country', 'XX'], '"XX"'],
    ['--layout diagonal', ['validate', 'samples/bulk.txt', '--layout', 'diagonal'], 'diagonal'],
    ['--max-line-length 0', ['validate', 'samples/bulk.txt', '--max-line-length', '0'], '--max-line-length'],
    ['an unknown flag', ['validate', 'samples/bulk.txt', '--frobnicate'], '--frobnicate'],
    ['no file', ['validate'], 'file'],
    [
      'a missing suppression list',
      ['validate', 'samples/bulk.txt', '--suppression-list', 'nope.txt'],
      'DROPLINE_ERR_SUPPRESSION_LIST',
    ],
  ])('2 for %s, with a message naming it', async (_name, args, named) => {
    const run = await dropline(...args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(named);
    expect(run.stdout).toBe('');
  });
});

describe('validate: options', () => {
  it('--layout bulk overrides the content', async () => {
    const { json } = await validateJson('samples/personalized.txt', '--layout', 'bulk');
    expect(json.layout).toBe('bulk');
  });

  it('--allowed-countries CO makes the Mexican number COUNTRY_NOT_ALLOWED', async () => {
    const { json } = await validateJson('samples/bulk.txt', '--allowed-countries', 'co');
    expect(json.errors.map((e) => [e.line, e.code])).toEqual([[5, 'COUNTRY_NOT_ALLOWED']]);
    expect(json.countries).toEqual({ CO: 5 });
  });

  it('--suppression-list: SUPPRESSED numbers are counted, not invalid', async () => {
    const list = await tempFile('optout.txt', '310 987 6543\n+57 315 111 2233\n');
    const { json } = await validateJson('samples/bulk.txt', '--suppression-list', list);
    expect(json).toMatchObject({ valid: 4, suppressed: 2, invalid: 0, accepted: true });
  });

  it('--max-line-length reports LINE_TOO_LONG and reads on', async () => {
    const { json } = await validateJson(
      'samples/personalized.txt',
      '--max-line-length',
      '70',
      '--max-invalid-ratio',
      '1',
    );
    expect(json.errors.map((e) => [e.line, e.code])).toEqual([
      [1, 'LINE_TOO_LONG'], // 82 characters
      [3, 'LINE_TOO_LONG'], // 72
    ]);
    expect(json.valid).toBe(3);
  });

  it('errors are listed up to 1000, errorsTruncated, the counts complete', async () => {
    const lines = ['3001234567;Hola', ...Array.from({ length: 1004 }, (_, i) => `300${i};Hola`)];
    const path = await tempFile('many.txt', `${lines.join('\n')}\n`);
    const run = await dropline('validate', '--json', path);
    const json = JSON.parse(run.stdout) as ValidateJson;
    await expectContract(path, run, json);
    expect(run.code).toBe(1);
    expect(json.invalid).toBe(1004);
    expect(json.errors).toHaveLength(1000);
    expect(json.errorsTruncated).toBe(true);
  });
});

describe('validate: fixtures in real encodings', () => {
  it.each([
    ['windows-1252.txt', { encoding: 'windows-1252', header: false, valid: 2 }],
    ['windows-1252-header.txt', { encoding: 'windows-1252', header: true, valid: 2 }],
    ['utf16le-bom.txt', { encoding: 'utf-16le', header: true, separator: '\t', valid: 2 }],
    ['utf16be-bom.txt', { encoding: 'utf-16be', layout: 'bulk', valid: 3 }],
    ['utf8-bom-header.txt', { encoding: 'utf-8', header: true, valid: 2 }],
    ['quoted-multiline.txt', { encoding: 'utf-8', records: 2, valid: 2 }],
  ])('%s', async (name, expected) => {
    const path = join('test', 'fixtures', 'format', name);
    const { run, json } = await validateJson(path);
    await expectContract(path, run, json);
    expect(json).toMatchObject({ accepted: true, ...expected });
  });

  it('the human output names the encoding and the Spanish header', async () => {
    const run = await dropline('validate', 'test/fixtures/format/windows-1252-header.txt');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('encoding windows-1252');
    expect(run.stdout).toContain('header Número, Mensaje');
  });
});

describe('validate: the human output', () => {
  it('an accepted file: verdict, layout, encoding, sha256, counts, segments', async () => {
    const run = await dropline('validate', 'samples/bulk.txt');
    expect(run.code).toBe(0);
    const sha = createHash('sha256')
      .update(await readFile(join(SAMPLES, 'bulk.txt')))
      .digest('hex');
    expect(run.stdout).toContain('samples/bulk.txt: ACCEPTED');
    expect(run.stdout).toContain('layout bulk');
    expect(run.stdout).toContain('encoding utf-8');
    expect(run.stdout).toContain(sha);
    expect(run.stdout).toMatch(/records 4: 6 valid, 0 invalid/);
    expect(run.stdout).toMatch(/segments 6/);
  });

  it('names every error with its line number, code and a hint for each code', async () => {
    const run = await dropline('validate', 'samples/mistakes.txt');
    expect(run.code).toBe(0);
    for (const [line, code] of [
      [5, 'INVALID_NUMBER'],
      [6, 'NOT_MOBILE'],
      [7, 'EMPTY_MESSAGE'],
      [10, 'MALFORMED_QUOTE'],
    ] as const) {
      expect(run.stdout).toContain(`line ${line}: ${code}`);
      expect(run.stdout).toContain(`hint (${code}): ${REASONS[code].hint}`);
    }
    expect(run.stdout).toMatch(/line 21: UCS2_MESSAGE .*'á'/);
  });

  it('a rejected file: REJECTED, the rejection code, its message and hint; exit 1', async () => {
    const path = await tempFile('rejected.txt', '3001234567;Hola\n12;Hola\n13;Hola\n');
    const run = await dropline('validate', path);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('REJECTED');
    expect(run.stdout).toContain('TOO_MANY_INVALID: 2 of 3 recipients are invalid');
    expect(run.stdout).toContain(`hint: ${REASONS.TOO_MANY_INVALID.hint}`);
    expect(run.stdout).toContain('line 2: INVALID_NUMBER');
  });
});

describe('validate: templates (docs/format.md "Templates") and what the file costs', () => {
  const campaign = [
    '#! message: Hola {{Nombre}}, su cita en {{ciudad}} es mañana… “confírmela” respondiendo SI, por favor.',
    'Número;Nombre;Ciudad;Mensaje',
    '3001234567;Ana;Bogotá;',
    '3109876543;Juan;Cali;',
    '3151112233;Luis;Pasto;Luis, su pedido {{{{especial}} llegó',
    '+52 1 55 1234 5678;Sofía;CDMX;',
  ].join('\n');

  interface CostJson {
    segments: number;
    segmentsByCountry: Record<string, number>;
    transliteration: {
      mode: string;
      segmentsAsWritten: number;
      segmentsTransliterated: number;
      recipientsChanged: number;
    };
    templates: { line: number; template: string; example: string }[];
    directives: { message: { line: number; template: string } | null };
    encodings: { gsm7: number; ucs2: number };
  }

  it('--json: segments by country, as written vs transliterated, one example per template', async () => {
    const path = await tempFile('cita.txt', `${campaign}\n`);
    const { run, json } = await validateJson(path);
    await expectContract(path, run, json);
    const cost = json as unknown as CostJson;
    expect(run.code).toBe(0);
    expect(cost.directives.message).toEqual({
      line: 1,
      template: 'Hola {{Nombre}}, su cita en {{ciudad}} es mañana… “confírmela” respondiendo SI, por favor.',
    });
    // UCS-2 as written: 3 template texts of 78-79 characters (2 parts each) and one of 34 (1);
    // transliterated, every one is a single GSM-7 part.
    expect(cost.segments).toBe(7);
    expect(cost.segmentsByCountry).toEqual({ CO: 5, MX: 2 });
    expect(cost.transliteration).toEqual({
      mode: 'never',
      segmentsAsWritten: 7,
      segmentsTransliterated: 4,
      recipientsChanged: 4,
    });
    expect(cost.templates).toEqual([
      {
        line: 3,
        template:
          'Hola {{Nombre}}, su cita en {{ciudad}} es mañana… “confírmela” respondiendo SI, por favor.',
        example: 'Hola Ana, su cita en Bogotá es mañana… “confírmela” respondiendo SI, por favor.',
      },
    ]);
  });

  it('--transliterate gsm7: the texts sent are GSM-7, segments are the transliterated count', async () => {
    const path = await tempFile('cita-gsm7.txt', `${campaign}\n`);
    const { json } = await validateJson('--transliterate', 'gsm7', path);
    const cost = json as unknown as CostJson;
    expect(cost.encodings).toEqual({ gsm7: 4, ucs2: 0 });
    expect(cost.segments).toBe(4);
    expect(cost.segmentsByCountry).toEqual({ CO: 3, MX: 1 });
    expect(cost.transliteration).toMatchObject({
      mode: 'gsm7',
      segmentsAsWritten: 7,
      segmentsTransliterated: 4,
    });
    expect(cost.templates[0]?.example).toBe(
      'Hola Ana, su cita en Bogota es mañana... "confirmela" respondiendo SI, por favor.',
    );
    const bad = await dropline('validate', '--transliterate', 'ascii', path);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('ascii');
  });

  it('the human output shows the cost and a merged example (message text only, no number)', async () => {
    const path = await tempFile('cita-text.txt', `${campaign}\n`);
    const run = await dropline('validate', path);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('segments by country: CO 5, MX 2');
    expect(run.stdout).toContain(
      "transliteration never: 7 segments as written; with --transliterate gsm7 4 (3 fewer; 4 recipients' texts would change)",
    );
    expect(run.stdout).toContain(
      'template "Hola {{Nombre}}, su cita en {{ciudad}} es mañana… “confírmela” respondiendo SI, por favor."',
    );
    expect(run.stdout).toContain(
      'example (line 3): "Hola Ana, su cita en Bogotá es mañana… “confírmela” respondiendo SI, por favor."',
    );
    expect(run.stdout).not.toMatch(/example[^\n]*3001234567/);
    const gsm7 = await dropline('validate', '--transliterate', 'gsm7', path);
    expect(gsm7.stdout).toContain(
      "transliteration gsm7: 4 segments sent, 7 as written (3 fewer; 4 recipients' texts changed)",
    );
  });

  it('UNKNOWN_PLACEHOLDER and MISSING_FIELD as validate shows them', async () => {
    const unknown = await tempFile('typo.txt', '#! message: Hola {{nmbre}}\nnumero;nombre\n3001234567;Ana\n');
    const u = await dropline('validate', unknown);
    expect(u.code).toBe(1);
    expect(u.stdout).toContain(
      'UNKNOWN_PLACEHOLDER: line 1: {{nmbre}} names no column of the header (columns: numero, nombre)',
    );
    const missing = await tempFile(
      'missing.txt',
      '#! message: Hola {{nombre}}\nnumero;nombre\n3001234567;Ana\n3109876543;\n',
    );
    const { run, json } = await validateJson(missing, '--max-invalid-ratio', '0.5');
    await expectContract(missing, run, json);
    expect(json.errors.map((e) => [e.line, e.code, e.value])).toEqual([[4, 'MISSING_FIELD', '{{nombre}}']]);
    expect(json).toMatchObject({ valid: 1, invalid: 1, accepted: true });
  });

  it("with a configuration, the source's transliterate applies; --transliterate overrides it", async () => {
    const config = await tempFile(
      'translit.config.json',
      JSON.stringify({
        sources: [
          { name: 'plain', type: 'local', path: join(dir, 'drop') },
          { name: 'ahorro', type: 'local', path: join(dir, 'drop'), transliterate: 'gsm7' },
        ],
      }),
    );
    const path = await tempFile('cita-config.txt', `${campaign}\n`);
    const mode = async (...args: string[]) => {
      const run = await dropline('--config', config, 'validate', '--json', ...args, path);
      expect(run.code, run.stderr).toBe(0);
      return (JSON.parse(run.stdout) as CostJson).transliteration.mode;
    };
    expect(await mode()).toBe('never');
    expect(await mode('--source', 'ahorro')).toBe('gsm7');
    expect(await mode('--source', 'ahorro', '--transliterate', 'never')).toBe('never');
  });
});
