// The processes the benches that time whole `dropline` commands start: `dropline sandbox`
// (resolved once it prints where it listens) and `dropline run` (once it says it runs), both
// with the bin's young-generation flag; and a free loopback port for their servers.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { type Timed, timed } from './send-run.ts';

export const SEMI_SPACE = '--max-semi-space-size=16';
export const cli = join(import.meta.dirname, '..', 'bin', 'dropline.js');

export async function startSandboxProcess(flags: string[]): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [SEMI_SPACE, cli, 'sandbox', '--port', '0', ...flags], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout?.on('data', (d: Buffer) => {
      text += d.toString();
      const m = /sandbox listening on (http:\/\/\S+)/.exec(text);
      if (m) resolve(m[1]!);
    });
    child.once('exit', () => reject(new Error('sandbox exited')));
  });
  return { url, child };
}

/** `dropline run` with `work`'s dropline.config.json, resolved once it says it runs. */
export function startRun(work: string): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [SEMI_SPACE, cli, '--config', join(work, 'dropline.config.json'), 'run'],
    {
      cwd: work,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  return new Promise((resolve, reject) => {
    let text = '';
    const seen = (d: Buffer) => {
      text = (text + d.toString()).slice(-20_000);
      if (text.includes('dropline is running')) resolve(child);
    };
    child.stdout?.on('data', seen);
    child.stderr?.on('data', seen);
    child.once('exit', (code) => reject(new Error(`dropline run exited ${code}:\n${text.slice(-3000)}`)));
  });
}

/** A loopback port free now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

/** User + system CPU seconds of a process so far (Linux /proc; NaN elsewhere). */
export function cpuOf(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 (1-based), in clock ticks (100 a second on Linux).
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/**
 * A call to the sandbox's test surface on a connection of its own: a kept-alive one left idle
 * through a 15 s run can be closed by the sandbox (keepAliveTimeout 5 s) just as it is reused.
 */
export function sandboxJson<T>(url: string, path: string, method = 'GET'): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('error', reject);
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`${method} ${path}: ${res.statusCode}`));
        else resolve(JSON.parse(Buffer.concat(parts).toString('utf8')) as T);
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** timed(), with the CPU seconds the sandbox process `pid` spent meanwhile. */
export function timedBeside(
  args: string[],
  cwd: string,
  pid: number | undefined,
): Timed & { sandboxCpu: number } {
  const cpu0 = cpuOf(pid);
  const t = timed(args, cwd);
  return { ...t, sandboxCpu: cpuOf(pid) - cpu0 };
}
