// A move out of inbox/ never removes what it did not take (docs/sources.md "What happens to a
// file"): a partner's newer upload of the same name, renamed (local) or PUT (S3) into the
// inbox while the move runs, stays there. The race is made deterministic: a wrapped
// file-system call (local) or S3 client (S3) puts the newer upload in place right after the
// move's first step, where a partner's timing would.

import * as fsp from 'node:fs/promises';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CopyObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LocalSource } from '../../src/sources/local-source.ts';
import { S3Source } from '../../src/sources/s3-source.ts';
import { S3RVER_CREDENTIALS, type S3rverHandle, startS3rver } from '../helpers/s3rver.ts';

/** Runs once, right after the first link(2) or rename(2) whose source is `path`. */
const fsHook: { path: string | null; run: (() => Promise<void>) | null } = { path: null, run: null };

vi.mock('node:fs/promises', async (importOriginal) => {
  const orig = await importOriginal<typeof import('node:fs/promises')>();
  const after =
    <A extends [string, string]>(fn: (...a: A) => Promise<void>) =>
    async (...args: A): Promise<void> => {
      await fn(...args);
      if (fsHook.run && args[0] === fsHook.path) {
        const run = fsHook.run;
        fsHook.run = null;
        await run();
      }
    };
  return { ...orig, link: after(orig.link), rename: after(orig.rename) };
});

describe('local: a newer upload renamed onto inbox/x.txt while x.txt is moved', () => {
  let root: string;

  afterEach(async () => {
    fsHook.run = null;
    await rm(root, { recursive: true, force: true });
  });

  it('stays in the inbox; the moved file is the one taken', async () => {
    root = await mkdtemp(join(tmpdir(), 'dropline-move-race-'));
    const source = new LocalSource({ name: 'local', path: root });
    await source.start();
    const inbox = join(root, 'inbox', 'x.txt');
    await writeFile(inbox, 'claimed\n');
    await writeFile(join(root, 'inbox', '.x.txt.part'), 'newer upload\n');
    fsHook.path = inbox;
    fsHook.run = () => fsp.rename(join(root, 'inbox', '.x.txt.part'), inbox);
    expect(await source.move('inbox/x.txt', 'processing/x.txt')).toBe(true);
    expect(fsHook.run).toBeNull();
    expect(await readFile(join(root, 'processing', 'x.txt'), 'utf8')).toBe('claimed\n');
    expect(await readFile(inbox, 'utf8')).toBe('newer upload\n');
    expect((await source.list()).map((e) => e.name)).toEqual(['x.txt']);
  });
});

describe('S3: a newer upload PUT into inbox/x.txt while x.txt is moved', () => {
  const BUCKET = 'race';
  let s3: S3rverHandle;
  let n = 0;

  beforeAll(async () => {
    s3 = await startS3rver([BUCKET]);
  });

  afterAll(async () => {
    await s3?.close();
  });

  /** A source whose client runs `hook` once, right after the first command of class `after` for `key`. */
  function racedSource(
    prefix: string,
    after: new (...a: never[]) => unknown,
    key: string,
    hook: () => Promise<void>,
  ) {
    const source = new S3Source({
      name: 's3',
      bucket: BUCKET,
      prefix,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      clientConfig: { credentials: S3RVER_CREDENTIALS },
    });
    let fired = false;
    const send = source.client.send.bind(source.client) as (c: unknown) => Promise<unknown>;
    (source.client as unknown as { send: (c: unknown) => Promise<unknown> }).send = async (command) => {
      const out = await send(command);
      const input = (command as { input?: { Key?: string; CopySource?: string } }).input;
      const about = input?.CopySource?.endsWith(key) || input?.Key === key;
      if (!fired && command instanceof after && about) {
        fired = true;
        await hook();
      }
      return out;
    };
    return { source, fired: () => fired };
  }

  const put = (Key: string, Body: string) =>
    s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key, Body }));
  const get = async (Key: string) =>
    (await s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key }))).Body!.transformToString('utf8');

  it('between the copy and the delete: the newer object stays, the claimed one is in processing/', async () => {
    const prefix = `m${++n}/`;
    const key = `${prefix}inbox/x.txt`;
    const { source, fired } = racedSource(prefix, CopyObjectCommand, key, async () => {
      await put(key, 'newer upload\n');
    });
    await put(key, 'claimed\n');
    expect(await source.move('inbox/x.txt', 'processing/x.txt')).toBe(true);
    expect(fired()).toBe(true);
    expect(await get(`${prefix}processing/x.txt`)).toBe('claimed\n');
    expect(await get(key)).toBe('newer upload\n');
    await source.close();
  });

  it('a marker PUT again after it was read is left for the next file', async () => {
    const prefix = `m${++n}/`;
    const key = `${prefix}inbox/x.txt.done`;
    const { source, fired } = racedSource(prefix, GetObjectCommand, key, async () => {
      await put(key, 'sha256=next\n');
    });
    await put(key, 'sha256=first\n');
    expect(await source.takeMarker('inbox/x.txt.done')).toBe('sha256=first\n');
    expect(fired()).toBe(true);
    expect(await get(key)).toBe('sha256=next\n');
    await source.close();
  });
});
