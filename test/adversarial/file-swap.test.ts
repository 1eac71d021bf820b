// Issue 10 item 6: a symbolic link or a FIFO put in place of a listed drop file. The daemon
// never follows the link (nothing of the file it points to reaches a report, the manifest,
// /api/files or the service) and never waits on the FIFO (the other files go on, SIGTERM
// exits). Real daemon, real store, real sandbox; the swaps are made where a race puts
// them: between the listing and the claim's read, and in processing/ after the claim.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { silentLogger } from '../../src/log.ts';
import { Pipeline } from '../../src/pipeline/pipeline.ts';
import { reportFileName } from '../../src/pipeline/reports.ts';
import { fileIdFor } from '../../src/plan/ids.ts';
import type { ServiceClient } from '../../src/service/client.ts';
import { LocalSource } from '../../src/sources/local-source.ts';
import type { Source } from '../../src/sources/source.ts';
import { openStore } from '../../src/store/index.ts';
import { PipelineHarness } from '../helpers/pipeline-harness.ts';
import { type Sshd, sftpSourceConfig, sftpSourceFor, sshdUnavailable, startSshd } from '../helpers/sshd.ts';

const sha256 = (b: string): string => createHash('sha256').update(b).digest('hex');
const mkfifo = (path: string): void => void execFileSync('mkfifo', [path]);

/** Numbers that must never show anywhere: the content of a file outside the source. */
const SECRET = '573009990001;clave secreta 1\n573009990002;clave secreta 2\n';
const campaign = (from: number, n: number): string =>
  Array.from({ length: n }, (_, i) => `57301${String(from + i).padStart(7, '0')};Hola ${from + i}\n`).join(
    '',
  );

describe('a link or FIFO swapped in after listing: the real daemon', () => {
  let h: PipelineHarness;
  let secretPath: string;

  beforeAll(async () => {
    h = await PipelineHarness.create();
    for (const f of ['inbox', 'processing', 'done', 'failed', 'reports'])
      await mkdir(join(h.drop, f), { recursive: true });
    secretPath = join(h.dir, 'secret.txt');
    await writeFile(secretPath, SECRET);
  });

  afterAll(async () => {
    await h?.close();
  });

  it('in processing/ after the claim: refused NOT_A_REGULAR_FILE, never read, others go on, SIGTERM exits', async () => {
    // Claimed (as regular files) by an earlier run, then swapped in processing/.
    const store = await openStore(`sqlite:${join(h.dir, 'state.db')}`);
    await store.migrate();
    const ids: Record<string, string> = {};
    try {
      for (const [name, content] of [
        ['link.txt', campaign(0, 5)],
        ['fifo.txt', campaign(100, 5)],
      ] as const) {
        const [c] = await store.claimFiles(
          'local',
          [{ name, path: `processing/${name}`, sha256: sha256(content), bytes: Buffer.byteLength(content) }],
          { idFor: (sha, g) => fileIdFor('local', sha, g), duplicateSince: new Date().toISOString() },
        );
        ids[name] = c!.file.fileId;
      }
    } finally {
      await store.close();
    }
    await symlink(secretPath, join(h.drop, 'processing', 'link.txt'));
    mkfifo(join(h.drop, 'processing', 'fifo.txt'));
    await h.start();
    // A file dropped afterwards is sent: the queue is not held by the FIFO.
    const after = campaign(500, 20);
    await h.dropFile('after.txt', after);

    for (const name of ['link.txt', 'fifo.txt']) {
      const m = await h.waitForFile(ids[name]!, ['rejected', 'submitted', 'completed'], {
        timeoutMs: 20_000,
      });
      expect({ name, state: m.state, code: m.rejection?.code }).toEqual({
        name,
        state: 'rejected',
        code: 'NOT_A_REGULAR_FILE',
      });
      expect(h.daemonOutput).toContain(`${name} rejected NOT_A_REGULAR_FILE`);
    }
    const done = await h.waitForState('after.txt', ['submitted', 'completed'], { timeoutMs: 20_000 });
    expect((await h.ledger(done.fileId)).entries).toHaveLength(20);

    // Nothing of the linked file anywhere: reports, errors.csv, the API, the service. The
    // folders are read once the daemon has stopped: a report it rewrites meanwhile is a
    // temporary file there one moment and gone the next.
    const api = JSON.stringify(await h.files());
    const ledger = (await h.ledger()).entries;
    expect(await h.stop()).toBe(0);
    const everything = [
      api,
      ...(await Promise.all(
        (await readdir(join(h.drop, 'reports'))).map((f) => readFile(join(h.drop, 'reports', f), 'utf8')),
      )),
      ...(await Promise.all(
        (
          await readdir(join(h.drop, 'failed'))
        )
          .filter((f) => f.endsWith('.csv'))
          .map((f) => readFile(join(h.drop, 'failed', f), 'utf8')),
      )),
    ].join('\n');
    expect(everything).not.toContain('9990001');
    expect(everything).not.toContain('secreta');
    expect(ledger.filter((e) => e.to.includes('999000'))).toEqual([]);
    // The link itself went to failed/, the file it points to is untouched.
    expect(await readFile(secretPath, 'utf8')).toBe(SECRET);
  }, 90_000);
});

/** A pipeline on a fresh store with one source (no service: these tests only claim). */
async function pipelineFor(dir: string, source: Source, cfg: Record<string, unknown>) {
  const store = await openStore(`sqlite:${join(dir, 'state.db')}`);
  await store.migrate();
  const config = parseConfig({
    store: `sqlite:${join(dir, 'state.db')}`,
    sources: [{ name: source.name, ...cfg }],
  });
  const pipeline = new Pipeline({
    config,
    store,
    client: null as unknown as ServiceClient,
    sources: new Map([[source.name, source]]),
    logger: silentLogger,
    owner: 'test',
  });
  return { store, pipeline };
}

describe('a link or FIFO swapped in between listing and claim', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dropline-swap-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('the claim refuses them alone and claims the rest of its batch', async () => {
    const source = new LocalSource({ name: 'local', path: join(dir, 'drop') });
    await source.start();
    const { store, pipeline } = await pipelineFor(dir, source, { type: 'local', path: join(dir, 'drop') });
    const inbox = join(dir, 'drop', 'inbox');
    await writeFile(join(dir, 'secret.txt'), SECRET);
    for (const [i, name] of ['a.txt', 'link.txt', 'fifo.txt', 'b.txt'].entries())
      await writeFile(join(inbox, name), campaign(i * 10, 3));
    const listing = await source.list();
    expect(listing.map((e) => e.name).sort()).toEqual(['a.txt', 'b.txt', 'fifo.txt', 'link.txt']);
    // The swap, after the listing, before the claim reads the files.
    await unlink(join(inbox, 'link.txt'));
    await symlink(join(dir, 'secret.txt'), join(inbox, 'link.txt'));
    await unlink(join(inbox, 'fifo.txt'));
    mkfifo(join(inbox, 'fifo.txt'));
    try {
      const files = await pipeline.claimReady(source, listing);
      const byName = Object.fromEntries(files.map((f) => [f.name, f]));
      expect(byName['a.txt']?.state).toBe('validating');
      expect(byName['b.txt']?.state).toBe('validating');
      for (const name of ['link.txt', 'fifo.txt']) {
        expect({ name, state: byName[name]?.state, code: byName[name]?.rejection?.code }).toEqual({
          name,
          state: 'rejected',
          code: 'NOT_A_REGULAR_FILE',
        });
        // Moved out of the inbox (as what it is: the link itself, the FIFO itself).
        expect(byName[name]?.path).toBe(`failed/${name}`);
        const manifest = JSON.parse(
          await readFile(
            join(dir, 'drop', 'reports', reportFileName(name, byName[name]!.fileId, 'manifest.json')),
            'utf8',
          ),
        ) as { rejection: { code: string } };
        expect(manifest.rejection.code).toBe('NOT_A_REGULAR_FILE');
      }
      expect(await readdir(inbox)).toEqual([]);
      expect((await stat(join(dir, 'secret.txt'))).isFile()).toBe(true);
      expect(JSON.stringify(await store.listFiles())).not.toContain('secreta');
    } finally {
      await source.close();
      await store.close();
    }
  }, 20_000);
});

const noSshd = sshdUnavailable();

describe.skipIf(noSshd !== null)('SFTP: a link swapped in between listing and claim', () => {
  let sshd: Sshd;
  let dir: string;

  beforeAll(async () => {
    sshd = await startSshd();
    dir = await mkdtemp(join(tmpdir(), 'dropline-swap-sftp-'));
  });

  afterAll(async () => {
    await sshd?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('lstat on the server: the link is refused NOT_A_REGULAR_FILE, the other file claimed', async () => {
    const source = await sftpSourceFor(sshd, 'swap');
    await source.start();
    const { store, pipeline } = await pipelineFor(dir, source, sftpSourceConfig(sshd, 'swap'));
    const inbox = join(sshd.home, 'swap', 'inbox');
    const secret = join(sshd.home, 'secret.txt');
    await writeFile(secret, SECRET);
    await writeFile(join(inbox, 'a.txt'), campaign(0, 3));
    await writeFile(join(inbox, 'link.txt'), campaign(10, 3));
    try {
      const listing = await source.list();
      expect(listing.map((e) => e.name).sort()).toEqual(['a.txt', 'link.txt']);
      await unlink(join(inbox, 'link.txt'));
      await symlink(secret, join(inbox, 'link.txt'));
      const files = await pipeline.claimReady(source, listing);
      const byName = Object.fromEntries(files.map((f) => [f.name, f]));
      expect(byName['a.txt']?.state).toBe('validating');
      expect({ state: byName['link.txt']?.state, code: byName['link.txt']?.rejection?.code }).toEqual({
        state: 'rejected',
        code: 'NOT_A_REGULAR_FILE',
      });
      expect(JSON.stringify(await store.listFiles())).not.toContain('secreta');
      const manifest = reportFileName('link.txt', byName['link.txt']!.fileId, 'manifest.json');
      expect(await readFile(join(sshd.home, 'swap', 'reports', manifest), 'utf8')).not.toContain('secreta');
    } finally {
      await source.close();
      await store.close();
    }
  }, 30_000);
});
