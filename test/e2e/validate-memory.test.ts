// `dropline validate` parses a file while it sniffs it, so its duplicate index is sized from
// the file's head alone: a head unlike the rest (256 KB of blank lines before the records)
// must not size it for far more recipients than the file holds.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, runCli } from '../helpers/cli.ts';

const PEAK_RSS = join(REPO, 'bench', 'peak-rss.ts');

/** validate --json as a process: its summary and its peak RSS (MiB). */
async function validate(
  path: string,
): Promise<{ summary: { records: number; valid: number }; rssMiB: number }> {
  const run = await runCli(['validate', '--json', path], { nodeArgs: ['--import', PEAK_RSS] });
  const rss = /peak-rss-kib (\d+)/.exec(run.stderr);
  if ((run.code !== 0 && run.code !== 1) || !rss)
    throw new Error(`validate failed (${run.code}):\n${run.stderr}`);
  return { summary: JSON.parse(run.stdout), rssMiB: Number(rss[1]) / 1024 };
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-validate-memory-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('validate: the duplicate index is sized for the recipients the file holds', () => {
  it('a file that opens with 256 KB of blank lines peaks like the same file without them', async () => {
    const records = Array.from(
      { length: 400_000 },
      (_, i) => `5730${String(i).padStart(8, '0')};hola\n`,
    ).join('');
    const plain = join(dir, 'plain.txt');
    const blankHead = join(dir, 'blank-head.txt');
    await writeFile(plain, records);
    await writeFile(blankHead, '\n'.repeat(256 * 1024) + records);
    const a = await validate(plain);
    const b = await validate(blankHead);
    expect(b.summary.records).toBe(400_000);
    expect(b.summary.valid).toBe(a.summary.valid);
    // Extrapolated line for line, the blank head sized the index for ~8 million
    // recipients: ~80 MB more at its peak.
    expect(b.rssMiB).toBeLessThan(a.rssMiB + 30);
  }, 60_000);
});
