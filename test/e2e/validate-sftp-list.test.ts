// `dropline validate` with an opt-out list on an SFTP source whose host key is pinned by
// `hostKeyFile` (not `hostKeySha256`): validate reads the configuration as the daemon does,
// the key file read into the fingerprint, and reads the list through a real sshd.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type SftpClient from 'ssh2-sftp-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readConfigFile } from '../../src/config/load.ts';
import { runCli } from '../helpers/cli.ts';
import { type Sshd, sftpPut, sshdUnavailable, startSshd } from '../helpers/sshd.ts';

const skip = sshdUnavailable();
if (skip) console.warn(`validate with an SFTP list skipped: ${skip}`);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const dropline = (args: string[], cwd: string): Promise<Run> =>
  runCli(args, { cwd, env: { DROPLINE_CONFIG: '' } });

describe.skipIf(skip !== null)('validate: an opt-out list on an SFTP source pinned by hostKeyFile', () => {
  let sshd: Sshd;
  let partner: SftpClient;
  let dir: string;
  let configPath: string;
  let file: string;

  beforeAll(async () => {
    sshd = await startSshd();
    partner = await sshd.partner();
    dir = await mkdtemp(join(tmpdir(), 'dropline-validate-sftp-'));
    await sftpPut(partner, 'drop/lists/optout.txt', '3001234568\n');
    file = join(dir, 'campaign.txt');
    await writeFile(file, 'Hola\n3001234567\n3001234568\n');
    configPath = join(dir, 'dropline.config.json');
    await writeFile(
      configPath,
      JSON.stringify({
        sources: [
          {
            name: 'partner',
            type: 'sftp',
            host: sshd.host,
            port: sshd.port,
            username: sshd.user,
            privateKeyPath: sshd.clientKeyPath,
            // The harness's sshd keeps its host key beside the login directory (test/helpers/sshd.ts).
            hostKeyFile: join(dirname(sshd.home), 'etc', 'host_ed25519.pub'),
            path: 'drop',
            suppressionList: 'partner:lists/optout.txt',
          },
        ],
      }),
    );
  });

  afterAll(async () => {
    await partner?.end().catch(() => {});
    await sshd?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('pins the key file as the daemon does (readConfigFile pinHostKeys)', () => {
    const plain = readConfigFile({ path: configPath }).config.sources[0];
    expect(plain).toMatchObject({ type: 'sftp' });
    expect((plain as { hostKeySha256?: string }).hostKeySha256).toBeUndefined();
    const pinned = readConfigFile({ path: configPath, pinHostKeys: true }).config.sources[0];
    expect((pinned as { hostKeySha256?: string }).hostKeySha256).toBe(sshd.hostKeySha256);
  });

  it('reads the list through the SFTP source: the number on it is SUPPRESSED', async () => {
    const r = await dropline(
      ['--config', configPath, 'validate', '--json', '--source', 'partner', file],
      dir,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ valid: 1, suppressed: 1, accepted: true });
  });

  it('a host key file that holds another key: the connection is refused, the list not read (exit 2)', async () => {
    const other = join(dir, 'other.pub');
    // A well-formed ed25519 public key that is not the server's.
    await writeFile(
      other,
      'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHXuT2HTmTNd9DNr6b5S9gaGBJvXn9j2JErv0qAxEsu6 other\n',
    );
    const config = JSON.parse(await readFile(configPath, 'utf8')) as { sources: Record<string, unknown>[] };
    config.sources[0] = { ...config.sources[0], hostKeyFile: other };
    const path = join(dir, 'other-key.config.json');
    await writeFile(path, JSON.stringify(config));
    const r = await dropline(['--config', path, 'validate', '--json', '--source', 'partner', file], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('DROPLINE_ERR_SUPPRESSION_LIST');
    expect(r.stderr).toMatch(/host key/i);
  });
});
