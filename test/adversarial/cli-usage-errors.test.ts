// A command line dropline cannot use is answered like every other error: exit 2,
// `dropline: DROPLINE_ERR_…: <what is wrong>` and a hint, never commander's bare "error:"
// line or "unexpected error" with a stack trace.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/errors.ts';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { BIN, PipelineHarness, REPO } from '../helpers/pipeline-harness.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(args: string[], cwd = REPO): Promise<Run> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd, env: { ...process.env, DROPLINE_CONFIG: '', DROPLINE_LOG_LEVEL: 'warn' }, timeout: 30_000 },
      (err, stdout, stderr) =>
        done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

const usageHint = ERRORS.DROPLINE_ERR_USAGE.hint;

describe('--help of the commands that print JSON', () => {
  it('says what --json prints and that it goes to stdout, for every such command', async () => {
    const commands = [
      'validate',
      'send',
      'status',
      'retry',
      'pause',
      'resume',
      'cancel',
      'workers',
      'prune',
      'sandbox',
    ];
    for (const command of commands) {
      const h = await run([command, '--help']);
      expect(h.code, command).toBe(0);
      // commander wraps a long description over lines
      expect(h.stdout.replace(/\s+/g, ' '), command).toMatch(/--json print .+ as JSON on stdout/);
    }
  });
});

describe("commander's own parse errors", () => {
  it.each([
    ['an unknown command', ['frobnicate'], /DROPLINE_ERR_USAGE: .*unknown command 'frobnicate'/],
    ['an unknown option', ['validate', '--bogus', 'x'], /DROPLINE_ERR_USAGE: .*unknown option '--bogus'/],
    ['a missing argument', ['validate'], /DROPLINE_ERR_USAGE: .*missing required argument 'file'/],
    ['too many arguments', ['validate', 'a', 'b'], /DROPLINE_ERR_USAGE: .*too many arguments/],
    [
      'a --limit that is not a number',
      ['status', '--limit', 'abc'],
      /DROPLINE_ERR_USAGE: .*--limit.*'abc'.*integer/,
    ],
    ['a --limit of 0', ['status', '--limit', '0'], /DROPLINE_ERR_USAGE: .*--limit.*integer from 1/],
    ['a --days that is not a number', ['prune', '--days', 'soon'], /DROPLINE_ERR_USAGE: .*--days.*'soon'/],
  ])('%s: exit 2 with DROPLINE_ERR_USAGE and its hint', async (_name, args, message) => {
    const r = await run(args);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^dropline: DROPLINE_ERR_USAGE: /);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toContain(`  hint: ${usageHint}`);
    expect(r.stderr).not.toMatch(/^error: /m);
  });

  it('--version and --help are unchanged', async () => {
    const version = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string })
      .version;
    const v = await run(['--version']);
    expect(v.code).toBe(0);
    expect(v.stdout.trim()).toBe(`dropline ${version}`);
    expect(v.stderr).toBe('');
    const h = await run(['validate', '--help']);
    expect(h.code).toBe(0);
    expect(h.stdout).toMatch(/^Usage: dropline validate \[options\] <file>/);
    expect(h.stderr).toBe('');
  });
});

describe('dropline send of something that is not a regular file', () => {
  it.each([
    ['a device', '/dev/zero', /\/dev\/zero: a device, not a regular file/],
    ['a folder', '.', /\.: a folder, not a regular file/],
  ])('%s says what it is', async (_name, path, message) => {
    const r = await run(['send', path]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/DROPLINE_ERR_FILE_UNREADABLE: /);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/no such file/);
  });

  it('a missing file is still "no such file"', async () => {
    const r = await run(['send', 'no-such-file.txt']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/DROPLINE_ERR_FILE_UNREADABLE: .*no-such-file\.txt: no such file/);
  });
});

describe('dropline report --out that cannot be written', () => {
  let h: PipelineHarness;
  let fileId = '';

  beforeAll(async () => {
    h = await PipelineHarness.create();
    const file = join(h.dir, 'hola.txt');
    await writeFile(file, 'Hola\n3001234567\n');
    const sent = await h.cli(['send', '--json', file]);
    if (sent.code !== 0) throw new Error(`send exited ${sent.code}: ${sent.stderr}`);
    fileId = (JSON.parse(sent.stdout) as Manifest).fileId;
    await mkdir(join(h.dir, 'a-folder'));
  });
  afterAll(async () => {
    await h?.close();
  });

  it.each([
    ['a folder', 'a-folder', /--out a-folder: .*a folder/],
    [
      'in a folder that does not exist',
      'no-such-folder/report.csv',
      /--out no-such-folder\/report\.csv: .*does not exist/,
    ],
  ])('%s: DROPLINE_ERR_USAGE naming --out', async (_name, out, message) => {
    const r = await h.cli(['report', fileId, '--out', out]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/DROPLINE_ERR_USAGE: /);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toContain(usageHint);
    expect(r.stderr).not.toMatch(/unexpected error/);
  });

  it.runIf(existsSync('/dev/full'))('a disk that fills up: DROPLINE_ERR_USAGE naming --out', async () => {
    const r = await h.cli(['report', fileId, '--out', '/dev/full']);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/DROPLINE_ERR_USAGE: .*--out \/dev\/full: no space left/);
    expect(r.stderr).not.toMatch(/unexpected error/);
  });

  it('a mistyped fileId leaves an existing --out file alone', async () => {
    await writeFile(join(h.dir, 'kept.csv'), 'yesterday\n');
    const r = await h.cli(['report', 'no-such-file-id', '--out', 'kept.csv']);
    expect(r.stderr).toMatch(/DROPLINE_ERR_UNKNOWN_FILE/);
    expect(readFileSync(join(h.dir, 'kept.csv'), 'utf8')).toBe('yesterday\n');
  });

  it('a writable --out gets the report', async () => {
    const r = await h.cli(['report', fileId, '--out', 'report.csv']);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(h.dir, 'report.csv'), 'utf8')).toMatch(/573001234567/);
  });
});
