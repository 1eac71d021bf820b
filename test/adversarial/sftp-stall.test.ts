// Issue 10 items 9 and 27: an SFTP server that stops answering (SIGSTOP: the connection
// stays open, nothing comes back) must not hold a listing, a read or a write forever: every
// SFTP operation has a time limit, the connection is dropped and made again once the
// server answers. A real sshd, frozen mid-operation.
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SftpSource } from '../../src/sources/sftp-source.ts';
import { waitFor } from '../helpers/pipeline-harness.ts';
import { type Sshd, sftpSourceFor, sshdUnavailable, startSshd } from '../helpers/sshd.ts';

const skip = sshdUnavailable();

describe.skipIf(skip !== null)('an SFTP server that stops answering', () => {
  let sshd: Sshd;
  let source: SftpSource;

  beforeAll(async () => {
    sshd = await startSshd();
    source = await sftpSourceFor(sshd, 'stall', { opTimeoutMs: 1000, readyTimeoutMs: 2000 });
    await source.start();
  });

  afterAll(async () => {
    await source?.close();
    await sshd?.close();
  });

  it('a read frozen mid-file, a listing and a write fail within their time limit; all work again once it answers', async () => {
    const content = randomBytes(3 * 1024 * 1024);
    await writeFile(join(sshd.home, 'stall', 'inbox', 'big.txt'), content);
    expect((await source.list()).map((e) => e.name)).toEqual(['big.txt']);

    // Frozen after the first chunk of a read.
    const reading = (async () => {
      let got = 0;
      for await (const chunk of source.open('inbox/big.txt')) {
        if (got === 0) await sshd.freeze();
        got += chunk.byteLength;
      }
      return got;
    })();
    // Its own time limit ends it (without one, only ssh2's keep-alives would, ~40 s later,
    // and a server whose SSH layer still answers would hold it for ever).
    await expect(reading).rejects.toMatchObject({
      code: 'DROPLINE_ERR_SFTP',
      message: expect.stringContaining('no answer from'),
    });
    // Still frozen: a listing (the daemon's poll) and a report write end too, with an error.
    await expect(source.list()).rejects.toMatchObject({ code: 'DROPLINE_ERR_SFTP' });
    await expect(source.write('reports/r.csv', 'a,b\n')).rejects.toMatchObject({ code: 'DROPLINE_ERR_SFTP' });
    await expect(source.ping()).rejects.toMatchObject({ code: 'DROPLINE_ERR_SFTP' });

    await sshd.thaw();
    // Reconnected by itself: the listing answers, the file reads whole, writes land.
    await waitFor(
      'the source answers again',
      () =>
        source.list().then(
          (l) => l.length === 1,
          () => false,
        ),
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    const parts: Buffer[] = [];
    for await (const c of source.open('inbox/big.txt')) parts.push(Buffer.from(c));
    expect(Buffer.concat(parts).equals(content)).toBe(true);
    await source.write('reports/r.csv', 'a,b\n');
    expect(await readFile(join(sshd.home, 'stall', 'reports', 'r.csv'), 'utf8')).toBe('a,b\n');

    // Closed while the server is frozen (a SIGTERM during an outage): close does not hang.
    await sshd.freeze();
    await source.close();
    await sshd.thaw();
  }, 30_000);
});
