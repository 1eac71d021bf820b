import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson } from '../service/helpers.ts';

const main = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});

function run(args: string[]): {
  child: ChildProcess;
  firstLine: Promise<string>;
  exit: Promise<number | null>;
} {
  const child = spawn(process.execPath, [main, 'sandbox', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const lines = createInterface({ input: child.stdout! });
  const firstLine = new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', () => reject(new Error('exited before printing')));
  });
  firstLine.catch(() => {}); // awaited only by the tests that expect a line
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, firstLine, exit };
}

describe('dropline sandbox', () => {
  it('prints exactly one listening line, serves the accounts file, and exits 0 on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dropline-sandbox-'));
    const accounts = join(dir, 'accounts.json');
    writeFileSync(accounts, JSON.stringify({ acme: 'pw1' }));
    const { child, firstLine, exit } = run([
      '--port',
      '0',
      '--accounts',
      accounts,
      '--time-scale',
      '0.01',
      '--delivery-delay-ms',
      '10',
      '--failure-ratio',
      '0.5',
      '--token-lifetime-s',
      '60',
    ]);
    const line = await firstLine;
    expect(line).toMatch(/^sandbox listening on http:\/\/127\.0\.0\.1:\d+$/);
    const url = line.slice('sandbox listening on '.length);
    const token = await postJson(
      `${url}/token`,
      { grant_type: 'password' },
      {
        authorization: `Basic ${Buffer.from('acme:pw1').toString('base64')}`,
      },
    );
    expect(token).toMatchObject({ status: 200, body: { expires_in: 60 } });
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
  });

  it('exits 2 on a bad flag or an unreadable accounts file', async () => {
    expect(await run(['--failure-ratio', '2']).exit).toBe(2);
    expect(await run(['--port', 'x']).exit).toBe(2);
    expect(await run(['--accounts', '/nonexistent/accounts.json']).exit).toBe(2);
  });
});
