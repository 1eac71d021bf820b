// The Source contract for S3Source against s3rver (a child process, see test/helpers/s3rver.ts).
// `put` uploads with PutObject, as a partner's S3 client would. Each test gets its own prefix,
// so one s3rver serves the whole file.
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalisePrefix, S3Source } from '../../src/sources/s3-source.ts';
import { FOLDERS } from '../../src/sources/source.ts';
import { type S3rverHandle, startS3rver } from '../helpers/s3rver.ts';
import { sourceContract } from './source.contract.ts';

const BUCKET = 'contract';
let s3: S3rverHandle;
let n = 0;

beforeAll(async () => {
  s3 = await startS3rver([BUCKET]);
});

afterAll(async () => {
  await s3?.close();
});

function makeSource(prefix: string, extra: { listPageSize?: number } = {}): S3Source {
  return new S3Source({
    name: 's3',
    bucket: BUCKET,
    prefix,
    region: 'us-east-1',
    endpoint: s3.endpoint,
    forcePathStyle: true,
    clientConfig: { credentials: s3.clientConfig.credentials! },
    ...extra,
  });
}

sourceContract('s3', async () => {
  const prefix = `t${++n}/drop/`;
  return {
    source: makeSource(prefix, { listPageSize: 4 }),
    put: async (path, content) => {
      await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${prefix}${path}`, Body: content }));
    },
    cleanup: async () => {},
  };
});

describe('S3Source specifics', () => {
  it('normalises the prefix to end with "/" (or stay empty)', () => {
    expect(normalisePrefix('')).toBe('');
    expect(normalisePrefix(undefined)).toBe('');
    expect(normalisePrefix('drop')).toBe('drop/');
    expect(normalisePrefix('/a/b/')).toBe('a/b/');
  });

  it('start makes a marker per folder; ping answers; list ignores sub-folders of inbox/', async () => {
    const source = makeSource(`t${++n}`);
    await source.start();
    await source.ping();
    await s3.client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: `${source.prefix}inbox/sub/x.txt`, Body: 'x' }),
    );
    await s3.client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: `${source.prefix}inbox/y.txt`, Body: 'y' }),
    );
    for (const folder of FOLDERS) {
      const head = await s3.client.send(
        new HeadObjectCommand({ Bucket: BUCKET, Key: `${source.prefix}${folder}/` }),
      );
      expect(head.ContentLength).toBe(0);
    }
    await expect(source.exists('inbox/')).rejects.toThrow(/invalid source path/);
    const listed = await source.list();
    expect(listed.map((e) => e.name)).toEqual(['y.txt']);
    expect(listed[0]?.etag).toMatch(/^"[0-9a-f]+"$/);
    await source.close();
  }, 20_000);

  it('refuses paths that leave the prefix', async () => {
    const source = makeSource(`t${++n}`);
    await expect(source.exists('../x.txt')).rejects.toThrow(/invalid source path/);
    await expect(source.exists('/etc/passwd')).rejects.toThrow(/invalid source path/);
    await source.close();
  });

  it('an endpoint that is down: start does not throw, ping and list fail with DROPLINE_ERR_S3', async () => {
    const source = new S3Source({
      name: 'down',
      bucket: BUCKET,
      endpoint: 'http://127.0.0.1:9', // discard: nothing listens
      forcePathStyle: true,
      clientConfig: { credentials: s3.clientConfig.credentials!, maxAttempts: 1 },
    });
    await source.start();
    await expect(source.ping()).rejects.toMatchObject({ code: 'DROPLINE_ERR_S3' });
    const err = await source.list().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'DROPLINE_ERR_S3' });
    expect(String((err as Error).message)).not.toContain('S3RVER');
    await source.close();
  });

  it('ping fails for a bucket that does not exist', async () => {
    const source = new S3Source({
      name: 'nobucket',
      bucket: 'no-such-bucket',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      clientConfig: { credentials: s3.clientConfig.credentials! },
    });
    await expect(source.ping()).rejects.toThrow(/no-such-bucket.*404/);
    await source.close();
  });
});
