// `dropline sandbox` as its own process for the benches that time whole `dropline` commands:
// started with the bin's young-generation flag, resolved once it prints where it listens.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

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
