// How an opt-out list is reached (docs/opt-outs.md): a local file, an `s3://` object, or a
// path on a configured source. Each backend gives a cheap version (a stat, a HEAD) and the
// list's bytes; SuppressionLists (suppression-lists.ts) decides when to read it again.
import { createHash, type Hash } from 'node:crypto';
import { lstat, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { GetObjectCommandOutput, S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { readFileChunks } from '../format/file-chunks.ts';
import type { Source } from '../sources/source.ts';

const READ_CHUNK = 256 * 1024;

/**
 * What a cheap look (a stat, a HEAD) says of a list: `id` changes when the content does.
 * A size and mtime just written are not `settled`: a file rewritten within the same clock
 * tick (a few ms, 2 s on some filesystems) at the same size keeps both, so until the mtime
 * is older than that the content's hash decides (git's "racy" files).
 */
export interface Version {
  id: string;
  settled: boolean;
  /** The list's size when the version tells it: its numbers' array is made that large at once. */
  bytes?: number;
}

/** Timestamps closer to now than this may not change on a rewrite (FAT, SMB: 2 s). */
const RACY_MS = 2000;

function timeVersion(id: string, mtimeMs: number, bytes?: number): Version {
  return { id, settled: Date.now() - mtimeMs >= RACY_MS, ...(bytes !== undefined ? { bytes } : {}) };
}

/** How one list is reached: a cheap version (a stat, a HEAD), and its bytes. */
export interface Backend {
  version(): Promise<Version>;
  open(): AsyncIterable<Uint8Array>;
}

export class LocalFileBackend implements Backend {
  readonly #path: string;
  constructor(path: string) {
    this.#path = resolve(path);
  }
  async version(): Promise<Version> {
    // Links followed: a mounted ConfigMap or a deploy swaps a link to a new file.
    const st = await stat(this.#path);
    if (!st.isFile()) throw new Error(`${this.#path} is not a regular file`);
    return timeVersion(`${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`, st.mtimeMs, st.size);
  }
  open(): AsyncIterable<Uint8Array> {
    // Two reused buffers: a stream's new buffer a chunk waits for the garbage collector.
    return readFileChunks(this.#path, READ_CHUNK);
  }
}

type S3Module = typeof import('@aws-sdk/client-s3');

async function s3Module(): Promise<S3Module> {
  return import('@aws-sdk/client-s3');
}

async function describeS3(err: unknown): Promise<string> {
  const { describeS3Error } = await import('../sources/s3-source.ts');
  return describeS3Error(err);
}

async function headVersion(client: S3Client, bucket: string, key: string): Promise<Version> {
  const { HeadObjectCommand } = await s3Module();
  try {
    const res = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    const bytes = res.ContentLength;
    if (res.ETag) return { id: `etag:${res.ETag}`, settled: true, ...(bytes !== undefined ? { bytes } : {}) };
    const mtimeMs = res.LastModified?.getTime() ?? 0;
    return timeVersion(`${bytes ?? 0}:${mtimeMs}`, mtimeMs, bytes);
  } catch (err) {
    throw new Error(`s3://${bucket}/${key}: ${await describeS3(err)}`, { cause: err });
  }
}

async function* getObject(client: S3Client, bucket: string, key: string): AsyncGenerator<Uint8Array> {
  const { GetObjectCommand } = await s3Module();
  let res: GetObjectCommandOutput;
  try {
    res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  } catch (err) {
    throw new Error(`s3://${bucket}/${key}: ${await describeS3(err)}`, { cause: err });
  }
  const body = res.Body as (AsyncIterable<Uint8Array> & { destroy?: () => void }) | undefined;
  if (body === undefined) return;
  let got = 0;
  try {
    for await (const chunk of body) {
      got += chunk.byteLength;
      yield chunk;
    }
  } catch (err) {
    throw new Error(`s3://${bucket}/${key}: ${await describeS3(err)}`, { cause: err });
  } finally {
    body.destroy?.();
  }
  if (res.ContentLength !== undefined && got !== res.ContentLength)
    throw new Error(`s3://${bucket}/${key}: got ${got} of ${res.ContentLength} bytes (connection lost)`);
}

export class S3UrlBackend implements Backend {
  readonly #client: () => Promise<S3Client>;
  readonly #bucket: string;
  readonly #key: string;
  constructor(client: () => Promise<S3Client>, bucket: string, key: string) {
    this.#client = client;
    this.#bucket = bucket;
    this.#key = key;
  }
  async version(): Promise<Version> {
    return headVersion(await this.#client(), this.#bucket, this.#key);
  }
  open(): AsyncIterable<Uint8Array> {
    const self = this;
    return {
      async *[Symbol.asyncIterator]() {
        yield* getObject(await self.#client(), self.#bucket, self.#key);
      },
    };
  }
}

function isLocal(source: Source): source is Source & { root: string } {
  return source.kind === 'local' && typeof (source as { root?: unknown }).root === 'string';
}

/** A file on a configured source, read through the source itself (its client, its credentials). */
export class SourceFileBackend implements Backend {
  readonly #source: Source;
  readonly #path: string;
  constructor(source: Source, path: string) {
    this.#source = source;
    this.#path = path;
  }
  async version(): Promise<Version> {
    const source = this.#source;
    if (isLocal(source)) {
      // What Source.stat answers, and the inode: a list replaced by a rename (rsync, a
      // deploy) with its size and mtime kept is still a new version. The name itself is not
      // followed, as the source refuses to read a link (O_NOFOLLOW).
      const st = await lstat(join(source.root, ...this.#path.split('/')));
      if (!st.isFile()) throw new Error(`${source.name}: ${this.#path} is not a regular file`);
      return timeVersion(`${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`, st.mtimeMs, st.size);
    }
    // One lstat on SFTP, one HEAD on S3, through the source's own connection or client.
    const st = await source.stat(this.#path);
    if (st === null) throw new Error(`${source.name}: ${this.#path} does not exist`);
    if (st.etag) return { id: `etag:${st.etag}`, settled: true, bytes: st.size };
    return timeVersion(`${st.size}:${st.mtimeMs}`, st.mtimeMs, st.size);
  }
  open(): AsyncIterable<Uint8Array> {
    return this.#source.open(this.#path);
  }
}

export async function* hashing(bytes: AsyncIterable<Uint8Array>, hash: Hash): AsyncGenerator<Uint8Array> {
  for await (const chunk of bytes) {
    hash.update(chunk);
    yield chunk;
  }
}

export async function hashOf(bytes: AsyncIterable<Uint8Array>): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of bytes) hash.update(chunk);
  return `sha256:${hash.digest('hex')}`;
}

/**
 * The client of `s3://` lists: the SDK's default credential chain and region (us-east-1 when
 * none is configured; a bucket elsewhere is followed), the endpoint of AWS_ENDPOINT_URL_S3 or
 * AWS_ENDPOINT_URL (which the SDK reads itself), path-style when one of those is set.
 */
export async function s3UrlClient(extra: S3ClientConfig | undefined): Promise<S3Client> {
  const { S3Client } = await s3Module();
  const env = process.env;
  const ignore = (env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS ?? '').toLowerCase() === 'true';
  const endpoint = ignore ? undefined : env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  const config: S3ClientConfig = {
    forcePathStyle: endpoint !== undefined,
    followRegionRedirects: true,
    // WHEN_SUPPORTED makes the SDK ask every store for checksums some S3-compatibles lack.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { connectionTimeout: 5000, socketTimeout: 30_000 },
    ...extra,
  };
  const client = new S3Client(config);
  if (config.region !== undefined) return client;
  const region = await client.config.region().catch(() => null);
  if (region) return client;
  client.destroy();
  return new S3Client({ ...config, region: 'us-east-1' });
}
