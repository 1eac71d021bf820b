// `validate --max-line-length` is capped: the reader holds a line in memory up to the limit,
// so an unbounded value would lift its memory bound (docs/configuration.md).
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';

const dropline = (...args: string[]) => runCli(args, { env: { NO_COLOR: '1' } });

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
