// `dropline run` with a configuration, for start-up errors: it must end on its own within
// BOUND_MS (else it is killed and `hung`).
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BIN } from './pipeline-harness.ts';

export const BOUND_MS = 10_000;

export interface Ended {
  code: number | null;
  stderr: string;
  stdout: string;
  /** Still running at the bound (then killed). */
  hung: boolean;
}

/** Writes `config` into `dir` and runs `dropline run` there until it exits or BOUND_MS passes. */
export async function runDaemon(dir: string, config: unknown): Promise<Ended> {
  const path = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(path, JSON.stringify(config));
  return new Promise<Ended>((done) => {
    const child = spawn(process.execPath, [BIN, '--config', path, 'run'], {
      cwd: dir,
      env: { ...process.env, DROPLINE_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let hung = false;
    child.stdout.on('data', (b: Buffer) => {
      stdout += b;
    });
    child.stderr.on('data', (b: Buffer) => {
      stderr += b;
    });
    const timer = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, BOUND_MS);
    child.once('close', (code) => {
      clearTimeout(timer);
      done({ code, stderr, stdout, hung });
    });
  });
}
