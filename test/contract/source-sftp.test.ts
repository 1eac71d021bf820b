// The Source contract for SftpSource against a real OpenSSH sshd on 127.0.0.1 (test/helpers/
// sshd.ts), plus what only SFTP shows: folders made on connect, symlinks and directories
// named x.txt, paths that leave the root, a broken download.
import { execFileSync } from 'node:child_process';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type SftpClient from 'ssh2-sftp-client';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SftpSource } from '../../src/sources/sftp-source.ts';
import { FOLDERS } from '../../src/sources/source.ts';
import { type Sshd, sftpPut, sftpSourceFor, sshdUnavailable, startSshd } from '../helpers/sshd.ts';
import { sourceContract } from './source.contract.ts';

const skip = sshdUnavailable();
if (skip) console.warn(`SFTP contract tests skipped: ${skip}`);

let sshd: Sshd | null = null;
let partner: SftpClient | null = null;
let n = 0;

async function server(): Promise<{ sshd: Sshd; partner: SftpClient }> {
  sshd ??= await startSshd();
  partner ??= await sshd.partner();
  return { sshd, partner };
}

afterAll(async () => {
  await partner?.end().catch(() => {});
  await sshd?.close();
});

describe.skipIf(skip !== null)('SFTP', () => {
  sourceContract('sftp', async () => {
    const { sshd: s, partner: p } = await server();
    const dir = `t${++n}`;
    return {
      // Relative to the login directory, as most partner sites are given.
      source: await sftpSourceFor(s, `${dir}/drop`, { name: 'sftp' }),
      put: (path, content) => sftpPut(p, `${dir}/drop/${path}`, content),
      // The server's disk is this machine's: the link is made there, as a partner's shell would.
      symlink: async (path, target) => {
        const abs = join(s.home, dir, 'drop', ...path.split('/'));
        await mkdir(dirname(abs), { recursive: true });
        await symlink(target, abs);
      },
      fifo: async (path) => {
        const abs = join(s.home, dir, 'drop', ...path.split('/'));
        await mkdir(dirname(abs), { recursive: true });
        execFileSync('mkfifo', [abs]);
      },
      cleanup: () => rm(join(s.home, dir), { recursive: true, force: true }),
    };
  });

  describe('SftpSource on a real server', () => {
    let source: SftpSource;
    let root: string;

    beforeEach(async () => {
      const { sshd: s } = await server();
      const dir = `u${++n}`;
      root = join(s.home, dir);
      // An absolute path this time.
      source = await sftpSourceFor(s, join(root, 'a', 'b'), { name: 'sftp' });
      await source.start();
    });

    afterEach(async () => {
      await source.close();
      await rm(root, { recursive: true, force: true });
    });

    it('creates the folders, parents included, at start', async () => {
      const { partner: p } = await server();
      for (const f of FOLDERS) expect(await p.exists(join(root, 'a', 'b', f))).toBe('d');
    });

    it('lists regular files only (a directory or a symlink named x.txt is not a drop file)', async () => {
      const { partner: p } = await server();
      const inbox = join(root, 'a', 'b', 'inbox');
      await p.mkdir(join(inbox, 'dir.txt'));
      await writeFile(join(root, 'outside.txt'), 'x');
      await symlink(join(root, 'outside.txt'), join(inbox, 'link.txt'));
      await sftpPut(p, join(inbox, 'real.txt'), 'x');
      expect((await source.list()).map((e) => e.name)).toEqual(['real.txt']);
    });

    it('refuses paths that leave the source root', async () => {
      await expect(source.exists('../x.txt')).rejects.toThrow(/invalid source path/);
      await expect(source.exists('/etc/passwd')).rejects.toThrow(/invalid source path/);
      await expect(source.move('inbox/a.txt', 'inbox/../../a.txt')).rejects.toThrow(/invalid source path/);
    });

    it('write leaves no temp file behind, whether it succeeds or fails', async () => {
      const { partner: p } = await server();
      await source.write('reports/r.csv', 'a\n');
      async function* broken(): AsyncGenerator<string> {
        yield 'b\n';
        throw new Error('boom');
      }
      await expect(source.write('reports/r.csv', broken())).rejects.toThrow('boom');
      const names = (await p.list(join(root, 'a', 'b', 'reports'))).map((e) => e.name);
      expect(names).toEqual(['r.csv']);
    });

    it('a missing file fails open with the path in a clear error', async () => {
      const read = async () => {
        for await (const _ of source.open('inbox/nope.txt')) {
          // nothing
        }
      };
      await expect(read()).rejects.toMatchObject({
        code: 'DROPLINE_ERR_SFTP',
        message: expect.stringContaining('inbox/nope.txt'),
      });
    });
  });
});
