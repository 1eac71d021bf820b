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

  it('listens on the address --host names (127.0.0.1 by default)', async () => {
    const ledger = async (url: string) => (await fetch(`${url}/_sandbox/ledger`)).status;

    const everywhere = run(['--host', '0.0.0.0', '--port', '0']);
    const line = await everywhere.firstLine;
    expect(line).toMatch(/^sandbox listening on http:\/\/0\.0\.0\.0:\d+$/);
    const port = new URL(line.slice('sandbox listening on '.length)).port;
    // 0.0.0.0 is every interface, loopback included.
    expect(await ledger(`http://127.0.0.1:${port}`)).toBe(200);
    everywhere.child.kill('SIGTERM');
    expect(await everywhere.exit).toBe(0);

    // Linux routes all of 127.0.0.0/8 to loopback: a sandbox told 127.0.0.2 answers there and
    // refuses 127.0.0.1, which shows the address is the one bound, not only the one printed.
    if (process.platform === 'linux') {
      const other = run(['--host', '127.0.0.2', '--port', '0']);
      const url = (await other.firstLine).slice('sandbox listening on '.length);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.2:\d+$/);
      expect(await ledger(url)).toBe(200);
      await expect(ledger(url.replace('127.0.0.2', '127.0.0.1'))).rejects.toThrow();
      other.child.kill('SIGTERM');
      expect(await other.exit).toBe(0);
    }
  });

  it('exits 2 on a bad flag or an unreadable accounts file', async () => {
    expect(await run(['--host', ' ']).exit).toBe(2);
    expect(await run(['--failure-ratio', '2']).exit).toBe(2);
    expect(await run(['--port', 'x']).exit).toBe(2);
    expect(await run(['--accounts', '/nonexistent/accounts.json']).exit).toBe(2);
    expect(await run(['--allow-ip', '10.0.0.0/33']).exit).toBe(2);
    expect(await run(['--allow-ip', ',']).exit).toBe(2);
  });

  it('an accounts file that is not JSON: exit 2 with where it breaks, never its passwords', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dropline-sandbox-'));
    const accounts = join(dir, 'accounts.json');
    // The password's quotes forgotten: V8's own message would quote the text around it.
    writeFileSync(accounts, '{"acme": Zq7secretpw}\n');
    const { child, exit } = run(['--accounts', accounts]);
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    expect(await exit).toBe(2);
    expect(stderr).toMatch(/DROPLINE_ERR_CONFIG: .*--accounts .*not valid JSON: .* at line 1, column 10/);
    expect(stderr).not.toMatch(/Zq7|secretpw/);
  });
});
