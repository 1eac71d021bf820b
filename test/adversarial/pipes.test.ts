// Every command is safe to pipe (issue 10 item 21): `dropline status | head`, `report | head`
// end quietly when the reader goes away, no EPIPE crash, no "unexpected error". Real
// processes whose stdout is closed by the reader before they write.
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, PipelineHarness } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;
let fileId = '';

beforeAll(async () => {
  h = await PipelineHarness.create();
  await h.start();
  const lines = Array.from({ length: 3000 }, (_, i) => `3001${String(i).padStart(6, '0')}`);
  await h.dropFile('grande.txt', `Hola\n${lines.join('\n')}\n`);
  fileId = (await h.waitForState('grande.txt', 'completed', { timeoutMs: 60_000 })).fileId;
  await writeFile(join(h.dir, 'check.txt'), `Hola\n${lines.map((l, i) => (i % 3 ? l : 'x')).join('\n')}\n`);
});
afterAll(async () => {
  await h?.close();
});

/** Runs dropline with its stdout closed by the reader at once; bounded. */
function closedStdout(args: string[]): Promise<{ code: number | null; stderr: string; hung: boolean }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [BIN, '--config', h.configPath, ...args], {
      cwd: h.dir,
      env: { ...process.env, DROPLINE_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    let stderr = '';
    let hung = false;
    child.stderr.on('data', (b: Buffer) => {
      stderr += b;
    });
    const timer = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, 20_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      done({ code, stderr, hung });
    });
  });
}

describe('a reader that goes away', () => {
  it.each([
    ['status', () => ['status']],
    ['status --json', () => ['status', '--json']],
    ['status <fileId>', () => ['status', fileId]],
    ['report <fileId>', () => ['report', fileId]],
    ['validate', () => ['validate', 'check.txt']],
    ['validate --json', () => ['validate', '--json', 'check.txt']],
    ['--help', () => ['--help']],
  ])('%s ends quietly', async (_name, argv) => {
    const args = argv();
    const r = await closedStdout(args);
    expect(r.hung).toBe(false);
    expect(r.stderr).not.toMatch(/EPIPE|unexpected error|Error:/);
    // validate keeps its verdict (1: rejected), the others succeed
    expect(r.code).toBe(args[0] === 'validate' ? 1 : 0);
  });
});
