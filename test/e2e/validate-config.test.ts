// `dropline validate` answers what the daemon will do with a file (issue 10 item 20): with a
// configuration, the source's maxInvalidRatio, allowedCountries, layout and defaultCountry and
// the suppression list apply (`--source NAME`, default the first source); explicit flags
// still override. Real processes, a real config file.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let dir = '';
let configPath = '';
let file = '';

const dropline = (args: string[], options: { cwd?: string } = {}): Promise<Run> =>
  runCli(args, { cwd: options.cwd ?? dir, env: { DROPLINE_CONFIG: '' } });

interface Summary {
  layout: string;
  valid: number;
  invalid: number;
  suppressed: number;
  countries: Record<string, number>;
  accepted: boolean;
  rejection: { code: string } | null;
  errorCounts: Record<string, number>;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-validate-config-'));
  await writeFile(join(dir, 'optouts.txt'), '3001234568\n');
  file = join(dir, 'campaign.txt');
  await writeFile(file, 'Hola\n3001234567\n3001234568\n3001234569\n+5215512345678\n');
  configPath = join(dir, 'dropline.config.json');
  const common = { type: 'local', path: join(dir, 'drop') };
  await writeFile(
    configPath,
    JSON.stringify({
      suppressionList: join(dir, 'optouts.txt'),
      sources: [
        { name: 'co', ...common, maxInvalidRatio: 0, allowedCountries: ['CO'] },
        { name: 'mx', ...common, defaultCountry: 'MX', maxInvalidRatio: 1 },
        { name: 'forced', ...common, layout: 'personalized', maxInvalidRatio: 1 },
        { name: 'strict', ...common, maxInvalidRatio: 1, allowDirectives: ['expect'] },
      ],
    }),
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const json = (r: Run) => JSON.parse(r.stdout) as Summary;

describe('validate with a configuration', () => {
  it('without one: the built-in defaults accept the file', async () => {
    const r = await dropline(['validate', '--json', file], { cwd: tmpdir() });
    expect(r.code, r.stderr).toBe(0);
    expect(json(r)).toMatchObject({ valid: 4, suppressed: 0, accepted: true });
  });

  it("applies the first source's settings and the suppression list by default", async () => {
    const r = await dropline(['--config', configPath, 'validate', '--json', file]);
    expect(r.code, r.stderr).toBe(1);
    const s = json(r);
    expect(s.suppressed).toBe(1);
    expect(s.errorCounts.COUNTRY_NOT_ALLOWED).toBe(1);
    expect(s.rejection?.code).toBe('TOO_MANY_INVALID');
  });

  it('explicit flags override the source', async () => {
    const r = await dropline([
      '--config',
      configPath,
      'validate',
      '--json',
      '--max-invalid-ratio',
      '0.5',
      file,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(json(r)).toMatchObject({ suppressed: 1, accepted: true });
  });

  it('--source picks another source: its defaultCountry', async () => {
    const r = await dropline(['--config', configPath, 'validate', '--json', '--source', 'mx', file]);
    expect(r.code, r.stderr).toBe(0);
    expect(json(r).countries.CO ?? 0).toBe(0);
    expect(json(r).countries.MX).toBeGreaterThanOrEqual(1);
  });

  it('--source picks another source: its layout', async () => {
    const r = await dropline(['--config', configPath, 'validate', '--json', '--source', 'forced', file]);
    expect(json(r).layout).toBe('personalized');
  });

  it('--source picks another source: its allowDirectives (docs/format.md "Directives")', async () => {
    const directed = join(dir, 'directed.txt');
    await writeFile(directed, '#! priority: high\nHola\n3001234567\n');
    const allowed = await dropline(['--config', configPath, 'validate', '--source', 'mx', directed]);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toMatch(/priority high/);
    const r = await dropline(['--config', configPath, 'validate', '--source', 'strict', directed]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/BAD_DIRECTIVE: line 1: this source does not allow the `priority` directive/);
  });

  it('an unknown --source is a usage error', async () => {
    const r = await dropline(['--config', configPath, 'validate', '--source', 'nope', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/nope/);
  });

  it('the config in the working directory counts like --config', async () => {
    const r = await dropline(['validate', '--json', file]);
    // cwd is the temp dir, which holds dropline.config.json
    expect(r.code, r.stderr).toBe(1);
    expect(json(r).suppressed).toBe(1);
  });
});
