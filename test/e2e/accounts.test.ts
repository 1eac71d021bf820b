// Issue 12, several accounts: `accounts` in the configuration and `sources[].account` choosing
// one. Each source's files go out with its own account's credentials and token; an account
// whose login is refused pauses its own files only. `dropline run` as a process, the sandbox
// with three accounts of its own.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { RequestRecord } from '../../src/sandbox/server.ts';
import { PipelineHarness, personalizedFile } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

async function drop(dir: string, name: string, content: string): Promise<void> {
  await mkdir(join(dir, 'inbox'), { recursive: true });
  await writeFile(join(dir, 'inbox', `.${name}.tmp`), content);
  await rename(join(dir, 'inbox', `.${name}.tmp`), join(dir, 'inbox', name));
}

it("each source's files are sent with its own account; a refused account pauses only its files", async () => {
  h = await PipelineHarness.create({
    sandbox: {
      accounts: [
        { username: 'demo', password: 'demo' },
        { username: 'alfa', password: 'clave-alfa' },
        { username: 'beta', password: 'clave-beta' },
      ],
    },
  });
  const betaPassword = join(h.dir, 'beta.password');
  await writeFile(betaPassword, 'clave-beta\n', { mode: 0o600 });
  const url = h.sandbox.url;
  const local = { type: 'local', stableMs: 200, pollMs: 100 };
  const config = {
    ...h.config,
    accounts: {
      alfa: { baseUrl: url, username: 'alfa', password: 'clave-alfa', concurrency: 1 },
      beta: { baseUrl: url, username: 'beta', passwordFile: betaPassword },
      // beta's username with a wrong password: refused, and beta's own token untouched.
      gamma: { baseUrl: url, username: 'beta', password: 'not-the-password' },
    },
    sources: [
      { ...local, name: 'uno', path: join(h.dir, 'uno'), account: 'alfa' },
      { ...local, name: 'dos', path: join(h.dir, 'dos'), account: 'beta' },
      { ...local, name: 'tres', path: join(h.dir, 'tres'), account: 'gamma' },
      { ...local, name: 'cuatro', path: join(h.dir, 'cuatro') },
    ],
  };
  await writeFile(h.configPath, `${JSON.stringify(config, null, 2)}\n`);
  await h.start();
  await drop(join(h.dir, 'uno'), 'uno.txt', personalizedFile(1200, 1).content);
  await drop(join(h.dir, 'dos'), 'dos.txt', personalizedFile(1200, 2).content);
  await drop(join(h.dir, 'tres'), 'tres.txt', personalizedFile(300, 3).content);
  await drop(join(h.dir, 'cuatro'), 'cuatro.txt', personalizedFile(300, 4).content);

  const uno = await h.waitForState('uno.txt', ['submitted', 'completed']);
  const dos = await h.waitForState('dos.txt', ['submitted', 'completed']);
  const cuatro = await h.waitForState('cuatro.txt', ['submitted', 'completed']);
  const tres = await h.waitForState('tres.txt', 'paused');
  expect(tres.reason).toMatch(/credential|password|401|unauthori/i);

  const { requests } = (await (await fetch(`${url}/_sandbox/requests`)).json()) as {
    requests: RequestRecord[];
  };
  const sends = (fileId: string) =>
    requests.filter((r) => r.endpoint === '/mtmessage/massive' && r.bulkId === fileId);
  const accountsOf = (fileId: string) => [...new Set(sends(fileId).map((r) => r.account))];
  // Chunks of 500 (the harness's chunkSize): 3 requests each for 1,200 recipients.
  expect(sends(uno.fileId).filter((r) => r.status === 200)).toHaveLength(3);
  expect(accountsOf(uno.fileId)).toEqual(['alfa']);
  expect(sends(dos.fileId).filter((r) => r.status === 200)).toHaveLength(3);
  expect(accountsOf(dos.fileId)).toEqual(['beta']);
  // No account named: the `api` credentials, the account "default".
  expect(accountsOf(cuatro.fileId)).toEqual(['demo']);
  expect(sends(tres.fileId).filter((r) => r.status === 200)).toEqual([]);
  // Each account logged in with its own credentials: gamma's refusals are its own.
  const logins = requests.filter((r) => r.endpoint === '/token');
  expect(logins.filter((r) => r.status === 401).length).toBeGreaterThan(0);
  expect(logins.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(3);
}, 60_000);

it('a source naming an account the configuration does not define: the start fails at once, naming it', async () => {
  h = await PipelineHarness.create();
  const config = { ...h.config, sources: [{ ...(h.config.sources as object[])[0], account: 'nadie' }] };
  await writeFile(h.configPath, `${JSON.stringify(config, null, 2)}\n`);
  const r = await h.cli(['run']);
  expect(r.code).not.toBe(0);
  expect(r.stderr).toContain('DROPLINE_ERR_CONFIG');
  expect(r.stderr).toContain('sources.0.account: no account "nadie" (accounts: default)');
});
