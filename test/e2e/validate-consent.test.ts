// `dropline validate` with a configuration that has a consent list (issue 35 follow-up): the
// recipients without consent for the source's channel are NO_CONSENT, counted suppressed as the
// daemon counts them (docs/opt-outs.md "Consent lists"), whichever of the three forms the
// list's location takes; a list that cannot be read is exit 2 (DROPLINE_ERR_CONSENT_LIST), as
// an opt-out list is; a content that is no consent list is refused. Real processes, real files.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type CliRun, runCli } from '../helpers/cli.ts';

// A agreed to SMS, B to WhatsApp only, C to nothing; D agreed to SMS but is on the opt-out list.
const A = '3001110001';
const B = '3002220002';
const C = '3003330003';
const D = '3004440004';

let dir = '';
let file = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-validate-consent-'));
  await mkdir(join(dir, 'drop', 'lists'), { recursive: true });
  const consent = `# numero;canales\n${A};sms\n${B};whatsapp\n${D};sms\n`;
  await writeFile(join(dir, 'consent.txt'), consent);
  await writeFile(join(dir, 'drop', 'lists', 'consent.txt'), consent);
  await writeFile(join(dir, 'optouts.txt'), `${D}\n`);
  // A spreadsheet saved over the list: no line is an entry.
  await writeFile(join(dir, 'sheet.txt'), 'numero,canales\n"3001110001","sms"\nfin\n');
  file = join(dir, 'campaign.txt');
  await writeFile(file, `Hola\n${A}\n${B}\n${C}\n${D}\n`);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** validate with a configuration whose consent.list is `list`. */
async function validate(list: string, args: string[] = ['--json']): Promise<CliRun> {
  const configPath = join(dir, `config-${list.replace(/\W/g, '_')}.json`);
  await writeFile(
    configPath,
    JSON.stringify({
      suppressionList: join(dir, 'optouts.txt'),
      consent: { list },
      sources: [{ name: 'drop', type: 'local', path: join(dir, 'drop'), maxInvalidRatio: 1 }],
    }),
  );
  return runCli(['--config', configPath, 'validate', ...args, file], {
    cwd: dir,
    env: { DROPLINE_CONFIG: '' },
  });
}

it('no consent for the channel: NO_CONSENT, counted suppressed as the daemon counts it', async () => {
  const r = await validate(join(dir, 'consent.txt'));
  expect(r.code, r.stderr).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({
    records: 4,
    valid: 1,
    suppressed: 3,
    noConsent: 2,
    accepted: true,
  });
  const text = await validate(join(dir, 'consent.txt'), []);
  expect(text.code, text.stderr).toBe(0);
  expect(text.stdout).toContain('1 valid, 0 invalid, 0 duplicate, 3 suppressed (2 NO_CONSENT');
});

it('a list on a source (<sourceName>:<path>) is read through it', async () => {
  const r = await validate('drop:lists/consent.txt');
  expect(r.code, r.stderr).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ valid: 1, suppressed: 3, noConsent: 2 });
});

it('a list that cannot be read: exit 2, naming consent.list and where it is', async () => {
  const missing = join(dir, 'gone.txt');
  const r = await validate(missing);
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toContain('DROPLINE_ERR_CONSENT_LIST: the consent list cannot be read');
  expect(r.stderr).toContain(`consent.list (${missing}): `);
  // Its own hint: the consent list's entries, not an opt-out list's numbers.
  expect(r.stderr).toContain('hint: check the consent.list location');
  expect(r.stderr).not.toContain('suppression');
  expect(r.stderr).toContain('ENOENT');
});

it('a content that is no consent list: refused, never used as an empty list', async () => {
  const r = await validate(join(dir, 'sheet.txt'));
  expect(r.code).toBe(1);
  expect(r.stdout).toBe('');
  expect(r.stderr).toContain('DROPLINE_ERR_CONSENT_LIST_REFUSED');
  expect(r.stderr).toContain('consent.list');
  expect(r.stderr).toContain('not a consent list');
});

it('--consent-list checks the file against another list, instead of the configured one', async () => {
  // The configured list is refused; the one given is used in its place, in any of the three forms.
  for (const given of [join(dir, 'consent.txt'), 'drop:lists/consent.txt']) {
    const r = await validate(join(dir, 'sheet.txt'), ['--json', '--consent-list', given]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ valid: 1, suppressed: 3, noConsent: 2 });
  }
  const missing = await validate(join(dir, 'consent.txt'), ['--consent-list', join(dir, 'gone.txt')]);
  expect(missing.code).toBe(2);
  expect(missing.stderr).toContain('DROPLINE_ERR_CONSENT_LIST');
});
