// Issue 10 item 7: one file that cannot be read must not block its source. Errors are per
// file: that file gets a code and a log line, the others go on.
//
// Tests run as root, for whom chmod 000 changes nothing, so the permission errors are made
// where they really happen: a local daemon run as root without CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH (setpriv --bounding-set: root then obeys a file's mode bits like any
// user), and an SFTP server whose login (sshd runs as an unprivileged user,
// test/helpers/sshd.ts) may not read a file a partner left 0600. A file removed between
// the listing and the claim is the other per-file error.
import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { silentLogger } from '../../src/log.ts';
import { Pipeline } from '../../src/pipeline/pipeline.ts';
import type { ServiceClient } from '../../src/service/client.ts';
import { LocalSource } from '../../src/sources/local-source.ts';
import { openStore } from '../../src/store/index.ts';
import { PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';
import { type Sshd, sftpSourceConfig, sshdUnavailable, startSshd } from '../helpers/sshd.ts';

const campaign = (from: number, n: number): string =>
  Array.from({ length: n }, (_, i) => `57302${String(from + i).padStart(7, '0')};Hola ${from + i}\n`).join(
    '',
  );

const noSshd = sshdUnavailable();
const noSetpriv = (() => {
  try {
    execFileSync('setpriv', ['--bounding-set=-dac_override,-dac_read_search', 'true']);
    return process.getuid?.() === 0 ? null : 'not root';
  } catch {
    return 'setpriv cannot drop capabilities here';
  }
})();
if (noSetpriv) console.warn(`local EACCES test skipped: ${noSetpriv}`);

describe.skipIf(noSetpriv !== null)(
  'a local file the daemon may not read (root without DAC override)',
  () => {
    let h: PipelineHarness;

    beforeAll(async () => {
      h = await PipelineHarness.create();
    });

    afterAll(async () => {
      await h?.close();
    });

    it('is rejected FILE_UNREADABLE with one log line; the files beside it are sent', async () => {
      await h.start({ wrap: ['setpriv', '--bounding-set=-dac_override,-dac_read_search', '--'] });
      const inbox = join(h.drop, 'inbox');
      for (const [name, content] of [
        ['locked.txt', campaign(0, 5)],
        ['a.txt', campaign(100, 7)],
        ['b.txt', campaign(200, 9)],
      ] as const) {
        await writeFile(join(inbox, `.${name}.tmp`), content);
        if (name === 'locked.txt') await chmod(join(inbox, `.${name}.tmp`), 0o000);
      }
      // Visible in one listing, so one claim batch holds all three.
      for (const name of ['locked.txt', 'a.txt', 'b.txt'])
        await rename(join(inbox, `.${name}.tmp`), join(inbox, name));

      const a = await h.waitForState('a.txt', ['submitted', 'completed'], { timeoutMs: 30_000 });
      const b = await h.waitForState('b.txt', ['submitted', 'completed'], { timeoutMs: 30_000 });
      expect((await h.ledger(a.fileId)).entries).toHaveLength(7);
      expect((await h.ledger(b.fileId)).entries).toHaveLength(9);
      const locked = await h.waitForState('locked.txt', ['rejected'], { timeoutMs: 30_000 });
      expect(locked.rejection?.code).toBe('FILE_UNREADABLE');
      expect(await stat(join(h.drop, 'failed', 'locked.txt'))).toBeTruthy();
      await h.dropFile('c.txt', campaign(300, 3));
      await h.waitForState('c.txt', ['submitted', 'completed'], { timeoutMs: 30_000 });
      expect(h.daemonOutput.split('locked.txt rejected FILE_UNREADABLE').length - 1).toBe(1);
      expect(h.daemonOutput).not.toContain('file(s) failed');
    }, 90_000);
  },
);

describe.skipIf(noSshd !== null)('an SFTP file the login may not read (the real daemon)', () => {
  let sshd: Sshd;
  let h: PipelineHarness;

  beforeAll(async () => {
    sshd = await startSshd();
    h = await PipelineHarness.create({
      config: {
        sources: [sftpSourceConfig(sshd, 'drop', { stableMs: 200, pollMs: 100 })],
      },
    });
  });

  afterAll(async () => {
    await h?.close();
    await sshd?.close();
  });

  it('is rejected FILE_UNREADABLE with one log line; the files beside it are sent', async () => {
    await h.start();
    const inbox = join(sshd.home, 'drop', 'inbox');
    await waitFor('the inbox on the server', async () => (await stat(inbox).catch(() => null)) !== null);
    // Written on the server's disk as root, mode 0600: the SFTP login gets "permission denied".
    await writeFile(join(inbox, '.locked.tmp'), campaign(0, 5));
    await chmod(join(inbox, '.locked.tmp'), 0o600);
    await writeFile(join(inbox, '.a.tmp'), campaign(100, 7));
    await writeFile(join(inbox, '.b.tmp'), campaign(200, 9));
    // Visible in one listing, so one claim batch holds all three.
    await rename(join(inbox, '.locked.tmp'), join(inbox, 'locked.txt'));
    await rename(join(inbox, '.a.tmp'), join(inbox, 'a.txt'));
    await rename(join(inbox, '.b.tmp'), join(inbox, 'b.txt'));

    const a = await h.waitForState('a.txt', ['submitted', 'completed'], { timeoutMs: 30_000 });
    const b = await h.waitForState('b.txt', ['submitted', 'completed'], { timeoutMs: 30_000 });
    expect((await h.ledger(a.fileId)).entries).toHaveLength(7);
    expect((await h.ledger(b.fileId)).entries).toHaveLength(9);
    const locked = await h.waitForState('locked.txt', ['rejected'], { timeoutMs: 30_000 });
    expect(locked.rejection?.code).toBe('FILE_UNREADABLE');
    expect((await h.ledger(locked.fileId)).entries).toEqual([]);
    // Out of the inbox (a later poll does not try it again), one log line.
    expect(await stat(join(sshd.home, 'drop', 'failed', 'locked.txt'))).toBeTruthy();
    // Polls go on (a file dropped later is sent) and none of them tries it again.
    await writeFile(join(inbox, '.c.tmp'), campaign(300, 3));
    await rename(join(inbox, '.c.tmp'), join(inbox, 'c.txt'));
    await h.waitForState('c.txt', ['submitted', 'completed'], { timeoutMs: 30_000 });
    expect(h.daemonOutput.split('locked.txt rejected FILE_UNREADABLE').length - 1).toBe(1);
    expect(h.daemonOutput).not.toContain('claim 3 file(s) failed');
  }, 90_000);
});

describe('a local file removed between the listing and the claim', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dropline-unreadable-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is skipped alone: the rest of the batch is claimed', async () => {
    const source = new LocalSource({ name: 'local', path: join(dir, 'drop') });
    await source.start();
    const store = await openStore(`sqlite:${join(dir, 'state.db')}`);
    await store.migrate();
    const pipeline = new Pipeline({
      config: parseConfig({
        store: `sqlite:${join(dir, 'state.db')}`,
        sources: [{ name: 'local', type: 'local', path: join(dir, 'drop') }],
      }),
      store,
      client: null as unknown as ServiceClient,
      sources: new Map([['local', source]]),
      logger: silentLogger,
      owner: 'test',
    });
    try {
      const inbox = join(dir, 'drop', 'inbox');
      for (const [i, name] of ['a.txt', 'gone.txt', 'b.txt'].entries())
        await writeFile(join(inbox, name), campaign(i * 10, 3));
      const listing = await source.list();
      await unlink(join(inbox, 'gone.txt'));
      const files = await pipeline.claimReady(source, listing);
      expect(files.map((f) => [f.name, f.state]).sort()).toEqual([
        ['a.txt', 'validating'],
        ['b.txt', 'validating'],
      ]);
      expect(await readFile(join(dir, 'drop', 'processing', 'a.txt'), 'utf8')).toBe(campaign(0, 3));
    } finally {
      await source.close();
      await store.close();
    }
  });
});
