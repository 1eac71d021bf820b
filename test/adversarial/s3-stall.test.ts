// Issue 10 item 9: an S3 endpoint that stops answering (SIGSTOP: connections stay open,
// nothing comes back) must not hold a listing or a read forever: every request has an idle
// time limit, and the source works again once the endpoint answers. A real s3rver, frozen.
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { S3Source } from '../../src/sources/s3-source.ts';
import { type S3rverHandle, startS3rver } from '../helpers/s3rver.ts';

describe('an S3 endpoint that stops answering', () => {
  let s3: S3rverHandle;
  let source: S3Source;

  beforeAll(async () => {
    s3 = await startS3rver(['stall']);
    source = new S3Source({
      name: 'bucket',
      bucket: 'stall',
      prefix: 'drop/',
      clientConfig: s3.clientConfig,
      logger: silentLogger,
      opTimeoutMs: 1000,
    });
    await source.start();
  });

  afterAll(async () => {
    s3?.thaw();
    await source?.close();
    await s3?.close();
  });

  it('a listing and a read frozen mid-object fail within the time limit; both work again after', async () => {
    const body = Buffer.alloc(8 * 1024 * 1024, 0x61);
    await s3.client.send(new PutObjectCommand({ Bucket: 'stall', Key: 'drop/inbox/big.txt', Body: body }));
    expect((await source.list()).map((e) => e.name)).toEqual(['big.txt']);

    const reading = (async () => {
      let got = 0;
      for await (const chunk of source.open('inbox/big.txt')) {
        if (got === 0) s3.freeze();
        got += chunk.byteLength;
      }
      return got;
    })();
    await expect(reading).rejects.toThrow(/timed out|timeout/i);
    await expect(source.list()).rejects.toThrow(/timed out|timeout/i);

    s3.thaw();
    expect((await source.list()).map((e) => e.name)).toEqual(['big.txt']);
    let got = 0;
    for await (const chunk of source.open('inbox/big.txt')) got += chunk.byteLength;
    expect(got).toBe(body.length);
  }, 30_000);
});
