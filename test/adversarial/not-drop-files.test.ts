// Issue 10 item 23: what lies in an inbox and is not a drop file (a .csv, a folder, a
// symbolic link) is ignored with one log line each, once, saying why; upload temp names
// and `.done` markers are normal traffic and ignored without a word.

import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSource } from '../../src/sources/local-source.ts';
import { S3Source } from '../../src/sources/s3-source.ts';
import type { Source } from '../../src/sources/source.ts';
import { PipelineHarness } from '../helpers/pipeline-harness.ts';
import { S3RVER_CREDENTIALS, type S3rverHandle, startS3rver } from '../helpers/s3rver.ts';
import { type Sshd, sftpSourceFor, sshdUnavailable, startSshd } from '../helpers/sshd.ts';

const campaign = (from: number): string => `57304${String(from).padStart(7, '0')};Hola\n`;
const count = (text: string, what: string): number => text.split(what).length - 1;

describe('not drop files in a local inbox (the real daemon)', () => {
  let h: PipelineHarness;

  beforeAll(async () => {
    h = await PipelineHarness.create();
  });

  afterAll(async () => {
    await h?.close();
  });

  it('one log line each, once, with the reason; temp names and markers say nothing', async () => {
    await h.start();
    const inbox = join(h.drop, 'inbox');
    await writeFile(join(inbox, 'clientes.csv'), campaign(1));
    await mkdir(join(inbox, 'carpeta.txt'));
    await writeFile(join(h.dir, 'elsewhere.txt'), campaign(2));
    await symlink(join(h.dir, 'elsewhere.txt'), join(inbox, 'enlace.txt'));
    execFileSync('mkfifo', [join(inbox, 'tubo.txt')]);
    await writeFile(join(inbox, '.subiendo.txt.tmp'), campaign(3));
    await writeFile(join(inbox, 'x.txt.part'), campaign(4));
    await writeFile(join(inbox, 'y.txt.done'), '');
    // Polls go on: two files dropped one after the other are each sent (many polls later).
    for (const name of ['uno.txt', 'dos.txt']) {
      await h.dropFile(name, campaign(name === 'uno.txt' ? 10 : 11));
      await h.waitForState(name, ['submitted', 'completed']);
    }
    const out = h.daemonOutput;
    expect({
      csv: count(out, 'ignoring inbox/clientes.csv: not a .txt name'),
      folder: count(out, 'ignoring inbox/carpeta.txt: a folder'),
      link: count(out, 'ignoring inbox/enlace.txt: a symbolic link'),
      fifo: count(out, 'ignoring inbox/tubo.txt: not a regular file'),
    }).toEqual({ csv: 1, folder: 1, link: 1, fifo: 1 });
    for (const quiet of ['.subiendo.txt.tmp', 'x.txt.part', 'y.txt.done', 'uno.txt', 'dos.txt'])
      expect(out).not.toContain(`ignoring inbox/${quiet}`);
    // Nothing of the linked file was read.
    expect(JSON.stringify(await h.files())).not.toContain('elsewhere');
    expect(await readFile(join(h.dir, 'elsewhere.txt'), 'utf8')).toBe(campaign(2));
  }, 60_000);
});

describe('a name that is not UTF-8 in a local inbox', () => {
  it('is named in the listing with its reason, not passed over in silence', async () => {
    const root = await mkdtemp(join(tmpdir(), 'dropline-names-'));
    const source = new LocalSource({ name: 'local', path: root });
    await source.start();
    try {
      const inbox = join(root, 'inbox');
      await writeFile(join(inbox, 'ok.txt'), campaign(1));
      // "campaña.txt" as Latin-1 writes it (a Windows client, a zip tool): not UTF-8.
      const latin1 = Buffer.concat([
        Buffer.from(`${inbox}/campa`),
        Buffer.from([0xf1]),
        Buffer.from('a.txt'),
      ]);
      await writeFile(latin1, campaign(2));
      const ignored = await ignoredBy(source);
      expect(Object.values(ignored)).toHaveLength(1);
      expect(Object.values(ignored)[0]).toContain('not valid UTF-8');
    } finally {
      await source.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});

async function ignoredBy(source: Source): Promise<Record<string, string>> {
  const ignored: Record<string, string> = {};
  const listing = await source.list({ ignored: (name, why) => void (ignored[name] = why) });
  expect(listing.map((e) => e.name)).toEqual(['ok.txt']);
  return ignored;
}

const noSshd = sshdUnavailable();
describe.skipIf(noSshd !== null)('not drop files in an SFTP inbox', () => {
  let sshd: Sshd;
  beforeAll(async () => {
    sshd = await startSshd();
  });
  afterAll(async () => {
    await sshd?.close();
  });

  it('the listing names each with its reason', async () => {
    const source = await sftpSourceFor(sshd, 'nd');
    await source.start();
    try {
      const inbox = join(sshd.home, 'nd', 'inbox');
      await writeFile(join(inbox, 'ok.txt'), campaign(1));
      await writeFile(join(inbox, 'data.csv'), campaign(2));
      await mkdir(join(inbox, 'sub.txt'));
      await symlink(join(inbox, 'ok.txt'), join(inbox, 'alias.txt'));
      await writeFile(join(inbox, 'ok.txt.done'), '');
      const ignored = await ignoredBy(source);
      expect(Object.keys(ignored).sort()).toEqual(['alias.txt', 'data.csv', 'sub.txt']);
      expect(ignored['alias.txt']).toContain('symbolic link');
      expect(ignored['sub.txt']).toContain('folder');
      expect(ignored['data.csv']).toContain('not a .txt name');
    } finally {
      await source.close();
    }
  }, 30_000);
});

describe('not drop files in an S3 inbox', () => {
  let s3: S3rverHandle;
  beforeAll(async () => {
    s3 = await startS3rver(['nd']);
  });
  afterAll(async () => {
    await s3?.close();
  });

  it('the listing names each with its reason', async () => {
    const source = new S3Source({
      name: 's3',
      bucket: 'nd',
      prefix: '',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      clientConfig: { credentials: S3RVER_CREDENTIALS },
    });
    await source.start();
    try {
      for (const key of ['inbox/ok.txt', 'inbox/data.csv', 'inbox/sub/x.txt', 'inbox/ok.txt.done'])
        await s3.client.send(new PutObjectCommand({ Bucket: 'nd', Key: key, Body: campaign(1) }));
      const ignored = await ignoredBy(source);
      expect(Object.keys(ignored).sort()).toEqual(['data.csv', 'sub']);
      expect(ignored.sub).toContain('folder');
    } finally {
      await source.close();
    }
  }, 30_000);
});
