// `dropline` as users run it: bin/dropline.js as a process of this Node (or another), its
// exit code and what it printed. The tests that run the command call this, not execFile.
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';

export const REPO = resolve(import.meta.dirname, '../..');
export const BIN = join(REPO, 'bin/dropline.js');

export interface CliRun {
  /** The exit code; -1 when the process was killed (a timeout). */
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** Default: the repository. */
  cwd?: string;
  /** Added to this process's environment. */
  env?: NodeJS.ProcessEnv;
  /** The node binary (default: this one). */
  node?: string;
  /** The command's script (default: the repository's bin/dropline.js). */
  bin?: string;
  /** Node's own flags, before the script (`--import …`). */
  nodeArgs?: readonly string[];
  timeout?: number;
}

export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliRun> {
  return new Promise((done) => {
    execFile(
      options.node ?? process.execPath,
      [...(options.nodeArgs ?? []), options.bin ?? BIN, ...args],
      {
        cwd: options.cwd ?? REPO,
        env: { ...process.env, ...options.env },
        maxBuffer: 64 * 1024 * 1024,
        ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
      },
      (err, stdout, stderr) => {
        done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}
