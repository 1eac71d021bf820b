// Issue 10 item 8: an oversize file is rejected FILE_TOO_LARGE from its listed size, before
// a byte of it is read (two 2 GiB files used to be hashed whole first and stalled every
// other file for ~20 s). Every source type, each on its real backend; the bytes each file
// gives the pipeline are counted.

import { execFileSync } from 'node:child_process';
import { appendFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { silentLogger } from '../../src/log.ts';
import { Pipeline } from '../../src/pipeline/pipeline.ts';
import { fileIdFor } from '../../src/plan/ids.ts';
import type { ServiceClient } from '../../src/service/client.ts';
import { LocalSource } from '../../src/sources/local-source.ts';
import { S3Source } from '../../src/sources/s3-source.ts';
import type { Source } from '../../src/sources/source.ts';
import { openStore } from '../../src/store/index.ts';
import { PipelineHarness } from '../helpers/pipeline-harness.ts';
import { S3RVER_CREDENTIALS, type S3rverHandle, startS3rver } from '../helpers/s3rver.ts';
import { type Sshd, sftpSourceConfig, sftpSourceFor, sshdUnavailable, startSshd } from '../helpers/sshd.ts';

const LIMIT = 64 * 1024;
const campaign = (from: number, n: number): string =>
  Array.from({ length: n }, (_, i) => `57303${String(from + i).padStart(7, '0')};Hola ${from + i}\n`).join(
    '',
  );
const SMALL = campaign(0, 10);
/** ~1.3 MiB of valid lines: twenty times the limit. */
const BIG = campaign(100_000, 60_000);

/** The source, with the bytes each path gave to readers counted. */
function counting(source: Source): { source: Source; read: Map<string, number> } {
  const read = new Map<string, number>();
  const wrapped = new Proxy(source, {
    get(target, prop) {
      if (prop === 'open')
        return (path: string) =>
          (async function* () {
            for await (const c of target.open(path)) {
              read.set(path, (read.get(path) ?? 0) + c.byteLength);
              yield c;
            }
          })();
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { source: wrapped, read };
}

async function claimBoth(
  dir: string,
  raw: Source,
  cfg: Record<string, unknown>,
  put: (name: string, c: string) => Promise<void>,
) {
  const { source, read } = counting(raw);
  const store = await openStore(`sqlite:${join(dir, `${raw.kind}.db`)}`);
  await store.migrate();
  const pipeline = new Pipeline({
    config: parseConfig({
      store: `sqlite:${join(dir, `${raw.kind}.db`)}`,
      sources: [{ name: raw.name, maxFileBytes: LIMIT, ...cfg }],
    }),
    store,
    client: null as unknown as ServiceClient,
    sources: new Map([[raw.name, source]]),
    logger: silentLogger,
    owner: 'test',
  });
  try {
    await source.start();
    await put('small.txt', SMALL);
    await put('big.txt', BIG);
    const listing = await source.list();
    expect(listing.map((e) => e.name).sort()).toEqual(['big.txt', 'small.txt']);
    const files = await pipeline.claimReady(source, listing);
    const byName = Object.fromEntries(files.map((f) => [f.name, f]));
    expect(byName['small.txt']?.state).toBe('validating');
    expect({ state: byName['big.txt']?.state, code: byName['big.txt']?.rejection?.code }).toEqual({
      state: 'rejected',
      code: 'FILE_TOO_LARGE',
    });
    // Not a byte of it read, not even to hash it; the manifest says how big it is.
    expect(read.get('inbox/big.txt') ?? 0).toBe(0);
    expect(byName['big.txt']?.bytes).toBe(Buffer.byteLength(BIG));
    expect(byName['big.txt']?.rejection?.message).toContain(`${LIMIT} bytes`);
    expect(byName['big.txt']?.path).toBe('failed/big.txt');
  } finally {
    await source.close();
    await store.close();
  }
}

describe('an oversize file is never read', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dropline-oversize-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('local folder', async () => {
    const root = join(dir, 'drop');
    await claimBoth(
      dir,
      new LocalSource({ name: 'local', path: root }),
      { type: 'local', path: root },
      (n, c) => writeFile(join(root, 'inbox', n), c),
    );
  });

  it('local folder: a file that grows past the limit after the listing is hashed no further than the limit', async () => {
    const root = join(dir, 'grow');
    const { source, read } = counting(new LocalSource({ name: 'grow', path: root }));
    const store = await openStore(`sqlite:${join(dir, 'grow.db')}`);
    await store.migrate();
    const pipeline = new Pipeline({
      config: parseConfig({
        store: `sqlite:${join(dir, 'grow.db')}`,
        sources: [{ name: 'grow', type: 'local', path: root, maxFileBytes: LIMIT }],
      }),
      store,
      client: null as unknown as ServiceClient,
      sources: new Map([['grow', source]]),
      logger: silentLogger,
      owner: 'test',
    });
    try {
      await source.start();
      await writeFile(join(root, 'inbox', 'grows.txt'), SMALL);
      const listing = await source.list();
      await appendFile(join(root, 'inbox', 'grows.txt'), BIG);
      const [file] = await pipeline.claimReady(source, listing);
      expect({ state: file?.state, code: file?.rejection?.code }).toEqual({
        state: 'rejected',
        code: 'FILE_TOO_LARGE',
      });
      expect(read.get('inbox/grows.txt')).toBeLessThanOrEqual(LIMIT + 256 * 1024);
    } finally {
      await source.close();
      await store.close();
    }
  });
});

const noSshd = sshdUnavailable();
describe.skipIf(noSshd !== null)('an oversize file is never read: SFTP', () => {
  let sshd: Sshd;
  let dir: string;
  beforeAll(async () => {
    sshd = await startSshd();
    dir = await mkdtemp(join(tmpdir(), 'dropline-oversize-sftp-'));
  });
  afterAll(async () => {
    await sshd?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('sftp', async () => {
    const source = await sftpSourceFor(sshd, 'big');
    await claimBoth(dir, source, sftpSourceConfig(sshd, 'big'), (n, c) =>
      writeFile(join(sshd.home, 'big', 'inbox', n), c),
    );
  }, 30_000);
});

describe('an oversize file is never read: S3', () => {
  let s3: S3rverHandle;
  let dir: string;
  beforeAll(async () => {
    s3 = await startS3rver(['oversize']);
    dir = await mkdtemp(join(tmpdir(), 'dropline-oversize-s3-'));
  });
  afterAll(async () => {
    await s3?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('s3', async () => {
    const source = new S3Source({
      name: 's3',
      bucket: 'oversize',
      prefix: 'p',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      clientConfig: { credentials: S3RVER_CREDENTIALS },
    });
    await claimBoth(
      dir,
      source,
      { type: 's3', bucket: 'oversize', prefix: 'p', endpoint: s3.endpoint, forcePathStyle: true },
      async (n, c) => {
        await s3.client.send(new PutObjectCommand({ Bucket: 'oversize', Key: `p/inbox/${n}`, Body: c }));
      },
    );
  }, 30_000);
});

describe('a claimed file over the limit (the limit lowered since its claim): the real daemon', () => {
  let h: PipelineHarness;
  beforeAll(async () => {
    h = await PipelineHarness.create({ source: { maxFileBytes: LIMIT } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('is rejected FILE_TOO_LARGE from its claimed size, without opening it', async () => {
    for (const f of ['inbox', 'processing', 'done', 'failed', 'reports'])
      await mkdir(join(h.drop, f), { recursive: true });
    const store = await openStore(`sqlite:${join(h.dir, 'state.db')}`);
    await store.migrate();
    let fileId: string;
    try {
      const [c] = await store.claimFiles(
        'local',
        [{ name: 'big.txt', path: 'processing/big.txt', sha256: 'a'.repeat(64), bytes: LIMIT * 20 }],
        { idFor: (sha, g) => fileIdFor('local', sha, g), duplicateSince: new Date().toISOString() },
      );
      fileId = c!.file.fileId;
    } finally {
      await store.close();
    }
    // Whatever opened it would find a FIFO (refused NOT_A_REGULAR_FILE): the size alone decides.
    execFileSync('mkfifo', [join(h.drop, 'processing', 'big.txt')]);
    await h.start();
    const m = await h.waitForFile(fileId, ['rejected', 'sending', 'submitted'], { timeoutMs: 20_000 });
    expect({ state: m.state, code: m.rejection?.code }).toEqual({
      state: 'rejected',
      code: 'FILE_TOO_LARGE',
    });
    expect(h.daemonOutput).toContain('big.txt rejected FILE_TOO_LARGE');
  }, 60_000);
});
