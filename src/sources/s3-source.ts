// An S3 prefix (AWS or any S3-compatible store) as a Source: `<prefix>inbox/`,
// `<prefix>processing/`, … are key prefixes in one bucket (docs/contract.md "Folders inside every
// source").
//
// - Listing reads `<prefix>inbox/` only, with Delimiter "/" (sub-"folders" are not drop
//   files), page by page: one ListObjectsV2 request per 1000 keys per poll.
// - Objects are whole once listed, so the daemon's default readiness is immediate for S3
//   (stableMs 0); `marker` and `trailer` still apply when configured.
// - A move is copy + delete. S3 has no rename and this code does not rely on conditional
//   writes (s3rver and some S3-compatibles ignore If-None-Match): "target exists" is a HEAD
//   before the copy, and concurrent moves of one key in this process are serialised. Across
//   processes the store is the guard: only the worker that recorded a file and holds its
//   lease moves it. The delete removes only the object copied: a HEAD compares its ETag
//   first, and the delete carries If-Match where the store honours it (#deleteIfSame).
// - Credentials come from the SDK's standard chain (env, shared profile, web identity,
//   container/instance roles) and are never logged; SDK messages pass through redactText.
import { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  type GetObjectCommandOutput,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  type ListObjectsV2CommandOutput,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { redactText } from '../core/redact.ts';
import { DroplineError } from '../errors.ts';
import type { Logger } from '../log.ts';
import {
  byName,
  FOLDERS,
  type FolderFile,
  type HeldFolder,
  ignoredReason,
  isDropFileName,
  isFolderFileName,
  type ListOptions,
  listedFileOf,
  MARKER_MAX_BYTES,
  type Source,
  type SourceEntry,
  SourceFileError,
  type SourceStat,
} from './source.ts';

export type ChecksumMode = 'WHEN_REQUIRED' | 'WHEN_SUPPORTED';

export interface S3SourceOptions {
  name: string;
  bucket: string;
  /** Key prefix of the source's folders (`drop/` → `drop/inbox/x.txt`); "" for the bucket root. */
  prefix?: string;
  region?: string;
  /** Any S3-compatible endpoint (MinIO, Ceph, R2, …); AWS when absent. */
  endpoint?: string | undefined;
  /** `http://host/bucket/key` instead of `http://bucket.host/key` (MinIO, s3rver). */
  forcePathStyle?: boolean;
  /**
   * SDK request checksums and response validation. `WHEN_REQUIRED` (the default) works with
   * every S3-compatible store: with `WHEN_SUPPORTED` the SDK sends streamed uploads in the
   * aws-chunked encoding with CRC trailers, which s3rver and some S3-compatibles store
   * corrupted or refuse. `WHEN_SUPPORTED` adds end-to-end CRCs on AWS itself.
   */
  checksums?: ChecksumMode;
  /** MaxKeys of each ListObjectsV2 page (S3's maximum and default: 1000). */
  listPageSize?: number;
  /** Part size of multipart report uploads (S3's minimum: 5 MiB). */
  partSize?: number;
  /**
   * How long a request may wait without a byte from the endpoint (default 30 s): a stalled
   * endpoint fails the listing or read instead of holding it (and the work queue) forever.
   */
  opTimeoutMs?: number;
  /** Merged over the client configuration built from the options (tests: static credentials). */
  clientConfig?: S3ClientConfig;
  logger?: Logger;
}

/** A missing folder marker is made at start within this time, or left for later. */
const START_TIMEOUT_MS = 5000;
/** Strings from an async iterable are gathered up to this size per Buffer. */
const WRITE_BATCH_CHARS = 64 * 1024;
const DEFAULT_PART_SIZE = 8 * 1024 * 1024;
const MIN_PART_SIZE = 5 * 1024 * 1024;

interface SdkError {
  name?: string;
  message?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
}

function statusOf(err: unknown): number | undefined {
  return (err as SdkError | null)?.$metadata?.httpStatusCode;
}

function isNotFound(err: unknown): boolean {
  const name = (err as SdkError | null)?.name;
  return statusOf(err) === 404 || name === 'NoSuchKey' || name === 'NotFound';
}

/** An SDK error for a log line or an exception message: name, status, redacted text. */
export function describeS3Error(err: unknown): string {
  const e = (err ?? {}) as SdkError;
  const status = statusOf(err);
  const name = e.name && e.name !== 'Error' ? e.name : (e.code ?? 'Error');
  // HEAD answers have no body: the SDK's message is then "UnknownError", which says nothing.
  const message = e.message && e.message !== 'UnknownError' ? redactText(e.message) : '';
  return `${name}${status ? ` (HTTP ${status})` : ''}${message ? `: ${message}` : ''}`;
}

function contentType(key: string): string {
  const lower = key.toLowerCase();
  if (lower.endsWith('.csv')) return 'text/csv; charset=utf-8';
  if (lower.endsWith('.json')) return 'application/json';
  return 'text/plain; charset=utf-8';
}

/** `drop` → `drop/`, `/drop/` → `drop/`, `` → ``. */
export function normalisePrefix(prefix: string | undefined): string {
  const p = (prefix ?? '').replace(/^\/+/, '');
  return p === '' || p.endsWith('/') ? p : `${p}/`;
}

export class S3Source implements Source {
  readonly name: string;
  readonly kind = 's3' as const;
  readonly bucket: string;
  readonly prefix: string;
  readonly client: S3Client;
  readonly #listPageSize: number;
  readonly #partSize: number;
  readonly #logger: Logger | undefined;
  /** Moves in flight per source key: one at a time, so exactly one caller wins. */
  readonly #moving = new Map<string, Promise<unknown>>();

  constructor(options: S3SourceOptions) {
    this.name = options.name;
    this.bucket = options.bucket;
    this.prefix = normalisePrefix(options.prefix);
    this.#listPageSize = Math.max(1, Math.min(1000, options.listPageSize ?? 1000));
    this.#partSize = Math.max(MIN_PART_SIZE, options.partSize ?? DEFAULT_PART_SIZE);
    this.#logger = options.logger;
    const checksums = options.checksums ?? 'WHEN_REQUIRED';
    this.client = new S3Client({
      region: options.region ?? 'us-east-1',
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      forcePathStyle: options.forcePathStyle ?? false,
      requestChecksumCalculation: checksums,
      responseChecksumValidation: checksums,
      // A black-holed endpoint fails in seconds instead of hanging a poll; an endpoint that
      // stops answering fails after opTimeoutMs of silence (an idle limit, not a total one:
      // a large object may stream for a long time).
      requestHandler: { connectionTimeout: 5000, socketTimeout: options.opTimeoutMs ?? 30_000 },
      ...options.clientConfig,
    });
  }

  /**
   * Makes an empty `<prefix><folder>/` marker for each folder that has none, so that
   * partners browsing the bucket (console, WinSCP, Cyberduck) see where to drop. Never
   * throws: an unreachable endpoint is for ping (readiness) to report.
   */
  async start(): Promise<void> {
    const abortSignal = AbortSignal.timeout(START_TIMEOUT_MS);
    try {
      for (const folder of FOLDERS) {
        const Key = `${this.prefix}${folder}/`;
        try {
          await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key }), { abortSignal });
        } catch (err) {
          if (!isNotFound(err)) throw err;
          await this.client.send(
            new PutObjectCommand({ Bucket: this.bucket, Key, Body: '', ContentLength: 0 }),
            {
              abortSignal,
            },
          );
        }
      }
    } catch (err) {
      this.#logger?.warn(
        { source: this.name, bucket: this.bucket, err: describeS3Error(err) },
        'S3 source: cannot check its folders now (readiness reports the bucket until it answers)',
      );
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  async ping(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      throw this.#error(`bucket ${this.bucket}`, err);
    }
  }

  async list(options: ListOptions = {}): Promise<SourceEntry[]> {
    const inbox = `${this.prefix}inbox/`;
    const out: SourceEntry[] = [];
    for await (const page of this.#pages(inbox, 'list inbox/')) {
      for (const o of page.Contents ?? []) {
        const name = o.Key?.slice(inbox.length) ?? '';
        if (name === '' || name.includes('/')) continue;
        if (!isDropFileName(name)) {
          const why = ignoredReason(name, 'file');
          if (why !== null) options.ignored?.(name, why);
          continue;
        }
        out.push({
          name,
          path: `inbox/${name}`,
          size: o.Size ?? 0,
          mtimeMs: o.LastModified?.getTime() ?? 0,
          etag: o.ETag,
        });
      }
      // `inbox/<folder>/` keys: listed as prefixes with the delimiter, never as objects.
      for (const p of page.CommonPrefixes ?? []) {
        const name = p.Prefix?.slice(inbox.length).replace(/\/$/, '') ?? '';
        const why = name === '' ? null : ignoredReason(name, 'folder');
        if (why !== null) options.ignored?.(name, why);
      }
    }
    return out;
  }

  /** The pages of the keys directly under `prefix` (Delimiter "/": deeper keys are prefixes). */
  async *#pages(prefix: string, what: string): AsyncGenerator<ListObjectsV2CommandOutput> {
    let token: string | undefined;
    do {
      let page: ListObjectsV2CommandOutput;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: prefix,
            Delimiter: '/',
            MaxKeys: this.#listPageSize,
            ...(token ? { ContinuationToken: token } : {}),
          }),
        );
      } catch (err) {
        throw this.#error(what, err);
      }
      yield page;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async exists(path: string): Promise<boolean> {
    return (await this.#head(path)) !== null;
  }

  /** One HEAD. S3 has no folders or links: a key is an object or nothing. */
  async stat(path: string): Promise<SourceStat | null> {
    return this.#head(path);
  }

  /**
   * The keys directly under `<prefix><path>/`, page by page (Delimiter "/": keys further
   * down come back as common prefixes, left out). S3 has no folders or links: a folder is
   * the keys under its name, and a folder with none is [].
   */
  async listFolder(path: string): Promise<FolderFile[]> {
    return [...(await this.openFolder(path)).files];
  }

  /**
   * S3 has no links: a folder is the keys under its name, and each file is read by its exact
   * key (`<prefix><path>/<name>`, a name from the listing: no `/`, never `.` or `..`, so no
   * read leaves the folder), and must be the version listed: its ETag and size (If-Match,
   * then checked on the answer, for stores that ignore it); another is FILE_CHANGED.
   */
  async openFolder(path: string): Promise<HeldFolder> {
    const folder = `${this.#key(path)}/`;
    const files: FolderFile[] = [];
    const etags = new Map<string, string | undefined>();
    for await (const page of this.#pages(folder, `list ${path}/`))
      for (const o of page.Contents ?? []) {
        const name = o.Key?.slice(folder.length) ?? '';
        // '': the folder's own marker (`attachments/x/`, as consoles make them).
        if (name === '' || name.includes('/') || !isFolderFileName(name)) continue;
        files.push({ name, size: o.Size ?? 0, kind: 'file' });
        etags.set(name, o.ETag);
      }
    files.sort(byName);
    const self = this;
    async function* read(name: string): AsyncGenerator<Uint8Array> {
      const listed = listedFileOf(files, name, path);
      const where = `${path}/${name}`;
      const etag = etags.get(name);
      let res: GetObjectCommandOutput;
      try {
        res = await self.client.send(
          new GetObjectCommand({ Bucket: self.bucket, Key: folder + name, IfMatch: etag }),
        );
      } catch (err) {
        if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 412)
          throw new SourceFileError('FILE_CHANGED', `${where} was replaced since it was listed`);
        throw self.#error(`open ${where}`, err);
      }
      const body = res.Body as Readable | undefined;
      if ((etag !== undefined && res.ETag !== etag) || (res.ContentLength ?? 0) !== listed.size) {
        body?.destroy();
        throw new SourceFileError('FILE_CHANGED', `${where} was replaced since it was listed`);
      }
      yield* self.#body(res, where);
    }
    return { files, read, close: async () => {} };
  }

  open(path: string): AsyncIterable<Uint8Array> {
    const key = this.#key(path);
    const self = this;
    return {
      async *[Symbol.asyncIterator]() {
        let res: GetObjectCommandOutput;
        try {
          res = await self.client.send(new GetObjectCommand({ Bucket: self.bucket, Key: key }));
        } catch (err) {
          throw self.#error(`open ${path}`, err);
        }
        yield* self.#body(res, path);
      },
    };
  }

  /** A GetObject answer's bytes, whole or an error. */
  async *#body(res: GetObjectCommandOutput, path: string): AsyncGenerator<Uint8Array> {
    const body = res.Body as Readable | undefined;
    if (body === undefined) return;
    let got = 0;
    try {
      for await (const chunk of body) {
        got += (chunk as Uint8Array).byteLength;
        yield chunk as Uint8Array;
      }
    } catch (err) {
      throw this.#error(`read ${path}`, err);
    } finally {
      // The consumer may stop early (a rejected file): free the connection.
      body.destroy();
    }
    // Without response checksums, a connection cut between chunks must not pass for EOF.
    if (res.ContentLength !== undefined && got !== res.ContentLength) {
      throw new DroplineError(
        'DROPLINE_ERR_S3',
        `${this.name}: read ${path}: got ${got} of ${res.ContentLength} bytes (connection lost)`,
      );
    }
  }

  async readTail(path: string, bytes: number): Promise<string> {
    // Range "bytes=-N" (a suffix) is not understood by every S3-compatible store (s3rver
    // reads it as the first N bytes): ask for the size, then an explicit range.
    const head = await this.#head(path);
    if (head === null) throw new DroplineError('DROPLINE_ERR_S3', `${this.name}: ${path} does not exist`);
    const n = Math.max(0, Math.min(bytes, head.size));
    if (n === 0) return '';
    const parts: Buffer[] = [];
    try {
      const res = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: this.#key(path),
          Range: `bytes=${head.size - n}-${head.size - 1}`,
        }),
      );
      for await (const chunk of res.Body as Readable) parts.push(Buffer.from(chunk as Uint8Array));
    } catch (err) {
      throw this.#error(`read the tail of ${path}`, err);
    }
    const buf = Buffer.concat(parts);
    // A store that ignored the range sent the whole object: keep its end.
    return buf.subarray(Math.max(0, buf.length - n)).toString('latin1');
  }

  move(from: string, to: string): Promise<boolean> {
    const src = this.#key(from);
    const dst = this.#key(to);
    if (src === dst) return Promise.reject(new Error(`${this.name}: cannot move ${from} onto itself`));
    return this.#oneAtATime(src, () => this.#move(from, to, src, dst));
  }

  /** Runs `fn` after the moves (or takes) of `key` already under way: exactly one of them wins. */
  #oneAtATime<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#moving.get(key) ?? Promise.resolve();
    const run = previous.catch(() => {}).then(fn);
    this.#moving.set(key, run);
    const forget = () => {
      if (this.#moving.get(key) === run) this.#moving.delete(key);
    };
    run.then(forget, forget);
    return run;
  }

  async #move(from: string, to: string, src: string, dst: string): Promise<boolean> {
    const head = await this.#head(from);
    if (head === null) return false;
    if ((await this.#head(to)) !== null)
      throw new DroplineError('DROPLINE_ERR_S3', `${this.name}: cannot move ${from}: ${to} already exists`);
    try {
      await this.client.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: dst,
          CopySource: `${this.bucket}/${src.split('/').map(encodeURIComponent).join('/')}`,
          // The object the HEAD saw, where the store honours it.
          ...(head.etag ? { CopySourceIfMatch: head.etag } : {}),
        }),
      );
    } catch (err) {
      if (isNotFound(err)) return false;
      throw this.#error(`copy ${from} to ${to}`, err);
    }
    try {
      await this.#deleteIfSame(from, head.etag);
    } catch (err) {
      // Leave one copy, not two: the file stays where it was, the move failed.
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: dst })).catch(() => {});
      throw this.#error(`delete ${from} after copying it to ${to}`, err);
    }
    return true;
  }

  /**
   * Deletes `path` only while it is the object of ETag `etag`: a newer object PUT there since
   * (a partner's next upload of the same name, a marker for the next file) is left in place
   * and logged. A HEAD compares first, since several S3-compatible stores ignore If-Match;
   * the delete then carries If-Match for the stores that honour it (AWS S3 does). false when
   * a newer object was left.
   */
  async #deleteIfSame(path: string, etag: string | undefined): Promise<boolean> {
    const Key = this.#key(path);
    const now = await this.#head(path);
    if (now === null) return true;
    const newer = () => {
      this.#logger?.warn(
        { source: this.name, path },
        `S3 source ${this.name}: ${path} was uploaded again meanwhile; the newer object is left in place`,
      );
      return false;
    };
    if (etag !== undefined && now.etag !== etag) return newer();
    const remove = (IfMatch: string | undefined) =>
      this.client.send(
        new DeleteObjectCommand({ Bucket: this.bucket, Key, ...(IfMatch ? { IfMatch } : {}) }),
      );
    try {
      await remove(etag);
    } catch (err) {
      if (statusOf(err) === 412) return newer();
      if (isNotFound(err)) return true;
      // A store that refuses the header itself: the HEAD above compared already.
      if (statusOf(err) !== 501) throw err;
      await remove(undefined);
    }
    return true;
  }

  takeMarker(path: string): Promise<string | null> {
    const Key = this.#key(path);
    return this.#oneAtATime(Key, () => this.#takeMarker(path, Key));
  }

  async #takeMarker(path: string, Key: string): Promise<string | null> {
    let res: GetObjectCommandOutput;
    try {
      // No Range: an empty object has no byte 0 to ask for (s3rver then cuts the connection).
      res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key }));
    } catch (err) {
      if (isNotFound(err)) return null;
      throw this.#error(`read ${path}`, err);
    }
    const body = res.Body as Readable | undefined;
    const parts: Buffer[] = [];
    let got = 0;
    try {
      for await (const chunk of body ?? []) {
        parts.push(Buffer.from(chunk as Uint8Array));
        got += (chunk as Uint8Array).byteLength;
        if (got >= MARKER_MAX_BYTES) break;
      }
    } catch (err) {
      throw this.#error(`read ${path}`, err);
    } finally {
      body?.destroy();
    }
    // Removed only while it is the marker read: one PUT since is the next file's.
    try {
      await this.#deleteIfSame(path, res.ETag);
    } catch (err) {
      throw this.#error(`remove ${path}`, err);
    }
    return Buffer.concat(parts).subarray(0, MARKER_MAX_BYTES).toString('utf8');
  }

  async remove(path: string): Promise<void> {
    const Key = this.#key(path);
    try {
      // S3 answers 204 for a key that is not there: missing is fine.
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key }));
    } catch (err) {
      if (isNotFound(err)) return;
      throw this.#error(`remove ${path}`, err);
    }
  }

  /**
   * A PutObject for a string; a streamed (multipart above `partSize`) upload for an async
   * iterable. Either way the object appears whole when the upload completes, and a failed
   * upload leaves the previous object as it was (parts are aborted).
   */
  async write(path: string, content: string | AsyncIterable<string>): Promise<void> {
    const Key = this.#key(path);
    const ContentType = contentType(Key);
    if (typeof content === 'string') {
      try {
        await this.client.send(
          new PutObjectCommand({ Bucket: this.bucket, Key, Body: Buffer.from(content, 'utf8'), ContentType }),
        );
      } catch (err) {
        throw this.#error(`write ${path}`, err);
      }
      return;
    }
    // An error of the caller's iterable is the caller's: passed on as it is.
    let producerError: { err: unknown } | null = null;
    async function* buffers(): AsyncGenerator<Buffer> {
      let pending = '';
      try {
        for await (const piece of content) {
          pending += piece;
          if (pending.length >= WRITE_BATCH_CHARS) {
            yield Buffer.from(pending, 'utf8');
            pending = '';
          }
        }
      } catch (err) {
        producerError = { err };
        throw err;
      }
      if (pending.length > 0) yield Buffer.from(pending, 'utf8');
    }
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key, Body: Readable.from(buffers()), ContentType },
      partSize: this.#partSize,
      queueSize: 2,
    });
    try {
      await upload.done();
    } catch (err) {
      const produced = producerError as { err: unknown } | null;
      if (produced !== null) throw produced.err;
      throw this.#error(`write ${path}`, err);
    }
  }

  async #head(path: string): Promise<{ size: number; mtimeMs: number; etag: string | undefined } | null> {
    const Key = this.#key(path);
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key }));
      return { size: res.ContentLength ?? 0, mtimeMs: res.LastModified?.getTime() ?? 0, etag: res.ETag };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw this.#error(`check ${path}`, err);
    }
  }

  #key(path: string): string {
    const parts = path.split('/');
    if (path.startsWith('/') || parts.some((p) => p === '..' || p === '' || p === '.')) {
      throw new Error(`${this.name}: invalid source path ${JSON.stringify(path)}`);
    }
    return `${this.prefix}${path}`;
  }

  #error(what: string, err: unknown): DroplineError {
    if (err instanceof DroplineError) return err;
    return new DroplineError(
      'DROPLINE_ERR_S3',
      `${this.name}: ${what} in s3://${this.bucket}/${this.prefix}: ${describeS3Error(err)}`,
      { cause: err },
    );
  }
}
