// The Source contract for LocalSource on a temp dir, plus what only a real disk can show.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalSource } from '../../src/sources/local-source.ts';
import { FOLDERS } from '../../src/sources/source.ts';
import { sourceContract } from './source.contract.ts';

async function put(root: string, path: string, content: string | Buffer): Promise<void> {
  const abs = join(root, ...path.split('/'));
  await mkdir(dirname(abs), { recursive: true });
  await writeFile(abs, content);
}

sourceContract('local', async () => {
  const root = await mkdtemp(join(tmpdir(), 'dropline-local-'));
  return {
    source: new LocalSource({ name: 'local', path: join(root, 'drop') }),
    put: (path, content) => put(root, `drop/${path}`, content),
    symlink: async (path, target) => {
      const abs = join(root, 'drop', ...path.split('/'));
      await mkdir(dirname(abs), { recursive: true });
      await symlink(target, abs);
    },
    fifo: async (path) => {
      const abs = join(root, 'drop', ...path.split('/'));
      await mkdir(dirname(abs), { recursive: true });
      execFileSync('mkfifo', [abs]);
    },
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
});

describe('LocalSource on disk', () => {
  let root: string;
  let source: LocalSource;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'dropline-local-'));
    source = new LocalSource({ name: 'local', path: join(root, 'a', 'b') });
    await source.start();
  });

  afterEach(async () => {
    await source.close();
    await rm(root, { recursive: true, force: true });
  });

  it('creates the folders as directories under a path that did not exist', async () => {
    for (const f of FOLDERS) expect((await stat(join(root, 'a', 'b', f))).isDirectory()).toBe(true);
  });

  it('lists regular files only (a directory or symlink named x.txt is not a drop file)', async () => {
    const inbox = join(root, 'a', 'b', 'inbox');
    await mkdir(join(inbox, 'dir.txt'));
    await writeFile(join(root, 'outside.txt'), 'x');
    await symlink(join(root, 'outside.txt'), join(inbox, 'link.txt'));
    await writeFile(join(inbox, 'real.txt'), 'x');
    expect((await source.list()).map((e) => e.name)).toEqual(['real.txt']);
  });

  it('open and readTail refuse a link, a FIFO (at once, without a writer) and a folder: NOT_A_REGULAR_FILE', async () => {
    const processing = join(root, 'a', 'b', 'processing');
    await writeFile(join(root, 'outside.txt'), '573001234567;secret\n');
    await symlink(join(root, 'outside.txt'), join(processing, 'link.txt'));
    execFileSync('mkfifo', [join(processing, 'fifo.txt')]);
    await mkdir(join(processing, 'dir.txt'));
    for (const name of ['link.txt', 'fifo.txt', 'dir.txt']) {
      const read = async () => {
        for await (const _ of source.open(`processing/${name}`)) break;
      };
      await expect(read()).rejects.toMatchObject({ reason: 'NOT_A_REGULAR_FILE' });
      await expect(source.readTail(`processing/${name}`, 16)).rejects.toMatchObject({
        reason: 'NOT_A_REGULAR_FILE',
      });
    }
  });

  it('write leaves no temp file behind, whether it succeeds or fails', async () => {
    await source.write('reports/r.csv', 'a\n');
    async function* broken(): AsyncGenerator<string> {
      yield 'b\n';
      throw new Error('boom');
    }
    await expect(source.write('reports/r.csv', broken())).rejects.toThrow('boom');
    expect(await readdir(join(root, 'a', 'b', 'reports'))).toEqual(['r.csv']);
  });

  it('refuses paths that leave the source root', async () => {
    await expect(source.exists('../x.txt')).rejects.toThrow(/invalid source path/);
    await expect(source.exists('/etc/passwd')).rejects.toThrow(/invalid source path/);
    await expect(source.move('inbox/a.txt', 'inbox/../../a.txt')).rejects.toThrow(/invalid source path/);
  });

  it('ping fails when the folder is gone', async () => {
    await rm(join(root, 'a'), { recursive: true });
    await expect(source.ping()).rejects.toThrow();
  });
});
