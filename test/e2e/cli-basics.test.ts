// What a new user trips over first (issue 10 item 22): `dropline --version`, a clear message
// and exit 2 on a Node.js too old to run dropline (not a raw ERR_UNKNOWN_FILE_EXTENSION), and
// DROPLINE_CONFIG naming the configuration (a container's `docker run … status`).
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIN_NODE, nodeSupported } from '../../bin/supported-node.js';
import { REPO, runCli } from '../helpers/cli.ts';
import { PipelineHarness } from '../helpers/pipeline-harness.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const run = (
  node: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<Run> =>
  runCli(args, {
    node,
    cwd: options.cwd ?? REPO,
    env: { DROPLINE_CONFIG: '', ...options.env },
    timeout: 20_000,
  });

const version = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;

describe('dropline --version', () => {
  it('prints the version and exits 0', async () => {
    const r = await run(process.execPath, ['--version']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(`dropline ${version}`);
  });
});

describe('an unsupported Node.js', () => {
  it('nodeSupported compares major, minor and patch', () => {
    expect(nodeSupported(process.versions.node)).toBe(true);
    expect(nodeSupported('24.0.0')).toBe(true);
    expect(nodeSupported(MIN_NODE)).toBe(true);
    expect(nodeSupported('22.21.9')).toBe(false);
    expect(nodeSupported('20.20.2')).toBe(false);
    expect(nodeSupported('18.19.0')).toBe(false);
    expect(nodeSupported('not a version')).toBe(false);
  });

  // The machine's system node (Node 20) is the real case; where it is not older, the check
  // itself is what the unit test above proves.
  const system = '/usr/bin/node';

  it('bin/dropline.js says which Node.js it needs and exits 2', async () => {
    const probe = existsSync(system) ? await run(system, ['--version']) : null;
    const old = probe !== null && !/^dropline /.test(probe.stdout);
    if (!old) {
      expect(nodeSupported('20.0.0')).toBe(false);
      return;
    }
    expect(probe.code).toBe(2);
    expect(probe.stderr).toMatch(new RegExp(`Node\\.js ${MIN_NODE.replaceAll('.', '\\.')} or newer`));
    expect(probe.stderr).not.toMatch(/ERR_UNKNOWN_FILE_EXTENSION|at /);
  });
});

describe('DROPLINE_CONFIG', () => {
  let h: PipelineHarness;
  let elsewhere = '';
  beforeAll(async () => {
    h = await PipelineHarness.create();
    await h.start();
    await h.dropFile('aviso.txt', 'Hola\n3001234567\n');
    await h.waitForState('aviso.txt', 'completed');
    elsewhere = await mkdtemp(join(tmpdir(), 'dropline-elsewhere-'));
  });
  afterAll(async () => {
    await h?.close();
    await rm(elsewhere, { recursive: true, force: true });
  });

  it('names the configuration when --config is not given', async () => {
    const r = await run(process.execPath, ['status', '--json'], {
      cwd: elsewhere,
      env: { DROPLINE_CONFIG: h.configPath },
    });
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { name: string }[]).map((m) => m.name)).toContain('aviso.txt');
    expect(existsSync(join(elsewhere, '.dropline'))).toBe(false);
  });

  it('a DROPLINE_CONFIG that does not exist is a configuration error', async () => {
    const r = await run(process.execPath, ['status'], {
      cwd: elsewhere,
      env: { DROPLINE_CONFIG: join(elsewhere, 'missing.json') },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/DROPLINE_ERR_CONFIG.*DROPLINE_CONFIG/);
  });
});
