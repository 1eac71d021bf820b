// `validate --max-line-length` is capped: the reader holds a line in memory up to the limit,
// so an unbounded value would lift its memory bound (docs/configuration.md).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'dropline.js');

function dropline(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe('validate --max-line-length has a maximum (1 MiB)', () => {
  it.each(['1048577', '9999999999'])('%s is a usage error naming the maximum', async (value) => {
    const run = await dropline('validate', 'samples/bulk.txt', '--max-line-length', value);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('DROPLINE_ERR_USAGE');
    expect(run.stderr).toContain('--max-line-length');
    expect(run.stderr).toContain('1048576');
    expect(run.stdout).toBe('');
  });

  it('the maximum itself is accepted', async () => {
    const run = await dropline('validate', 'samples/bulk.txt', '--max-line-length', '1048576');
    expect(run.code).toBe(0);
  });

  it('the help text names the maximum', async () => {
    const run = await dropline('validate', '--help');
    expect(run.stdout).toMatch(/--max-line-length[\s\S]*1048576/);
  });
});
