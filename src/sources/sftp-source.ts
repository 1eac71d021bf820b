// An SFTP directory as a Source (issue 5): inbox/ processing/ done/ failed/ reports/ under
// `path` on a partner's server. One connection, pinned host key, reconnect with backoff
// (sftp-connection.ts); a server that is down never crashes the process: ping() and every
// operation fail with a clear error until the connection is back (the daemon logs and
// retries on its next poll). Reads are sftp-read.ts's, attachment folders sftp-folders.ts's.
// Secrets (password, key, passphrase) are the connection's private fields only: never
// logged, never in an error message.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Stats } from 'ssh2';
import type { SourceConfig } from '../config/schema.ts';
import { DroplineError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { SftpConnection } from './sftp-connection.ts';
import { listFolder, openFolder } from './sftp-folders.ts';
import {
  isSftpError,
  NO_SUCH_FILE,
  parseHostKeySha256,
  S_IFDIR,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  sftpCode,
} from './sftp-protocol.ts';
import { readRemote } from './sftp-read.ts';
import {
  type FolderFile,
  type HeldFolder,
  ignoredReason,
  isDropFileName,
  type ListOptions,
  MARKER_MAX_BYTES,
  type Source,
  type SourceEntry,
  SourceFileError,
  type SourceStat,
  takenMarkerPath,
} from './source.ts';

export { fingerprintOfHex, fingerprintOfKey, parseHostKeySha256 } from './sftp-protocol.ts';

export interface SftpSourceOptions {
  name: string;
  host: string;
  port?: number;
  username: string;
  password?: string | undefined;
  privateKey?: Buffer | string | undefined;
  passphrase?: string | undefined;
  /** OpenSSH form, as `ssh-keygen -lf` prints it: `SHA256:<base64 without padding>`. */
  hostKeySha256?: string | undefined;
  insecureSkipHostKeyCheck?: boolean;
  /** The source root on the server (absolute, or relative to the login directory). */
  path: string;
  logger: Logger;
  /** First reconnect delay; doubles up to maxBackoffMs. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  readyTimeoutMs?: number;
  /** Longest wait for the server's answer to one SFTP request (default 30 s). */
  opTimeoutMs?: number;
}

/** Strings from an async iterable are gathered up to this size per SFTP write. */
const WRITE_BATCH_CHARS = 64 * 1024;

export class SftpSource implements Source {
  readonly name: string;
  readonly kind = 'sftp' as const;
  readonly host: string;
  readonly port: number;
  readonly username: string;
  readonly root: string;
  readonly #insecure: boolean;
  readonly #log: Logger;
  readonly #link: SftpConnection;

  constructor(options: SftpSourceOptions) {
    this.name = options.name;
    this.host = options.host;
    this.port = options.port ?? 22;
    this.username = options.username;
    this.root = options.path.replace(/\/+$/, '') || '/';
    this.#insecure = options.insecureSkipHostKeyCheck === true;
    this.#log = options.logger;
    const key = `sources.${this.name}`;
    let pinned: string | null;
    if (options.hostKeySha256 !== undefined) {
      pinned = parseHostKeySha256(options.hostKeySha256);
      if (pinned === null)
        throw new DroplineError(
          'DROPLINE_ERR_CONFIG',
          `${key}.hostKeySha256: expected the SHA256:… fingerprint that ssh-keygen -lf prints`,
        );
    } else if (this.#insecure) pinned = null;
    else
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        `${key}.hostKeySha256: required (the server's host key as ssh-keygen -lf <key.pub> prints it, SHA256:…); only insecureSkipHostKeyCheck: true turns pinning off`,
      );
    if (options.password === undefined && options.privateKey === undefined)
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        `${key}: set privateKeyPath or password (or passwordFile) for the SFTP login`,
      );
    this.#link = new SftpConnection({
      name: this.name,
      host: this.host,
      port: this.port,
      username: this.username,
      password: options.password,
      privateKey: options.privateKey,
      passphrase: options.passphrase,
      pinned,
      root: this.root,
      logger: options.logger,
      initialBackoffMs: options.initialBackoffMs ?? 250,
      maxBackoffMs: options.maxBackoffMs ?? 30_000,
      readyTimeoutMs: options.readyTimeoutMs ?? 15_000,
      opTimeoutMs: options.opTimeoutMs ?? 30_000,
    });
  }

  /** SFTP operations made so far, each one awaited answer (a listing is one): what a poll or a claim costs. */
  get operations(): number {
    return this.#link.operations;
  }

  /** Connects (in the background when the server is down) and creates the folders. */
  async start(): Promise<void> {
    if (this.#insecure)
      this.#log.warn(
        { source: this.name, host: this.host, port: this.port },
        `sftp source ${this.name}: host key checking is OFF (insecureSkipHostKeyCheck): anyone between dropline and ${this.host} can read and change the files; set hostKeySha256`,
      );
    await this.#link.start();
  }

  close(): Promise<void> {
    return this.#link.close();
  }

  async ping(): Promise<void> {
    const link = this.#link;
    const conn = await link.get();
    await link.call<Stats>(conn, 'ping', 'inbox', (cb) => conn.sftp.stat(link.remote('inbox'), cb));
  }

  async list(options: ListOptions = {}): Promise<SourceEntry[]> {
    const link = this.#link;
    const conn = await link.get();
    const entries = await link.call<{ filename: string; attrs: Stats }[]>(conn, 'list', 'inbox', (cb) =>
      conn.sftp.readdir(link.remote('inbox'), cb),
    );
    const out: SourceEntry[] = [];
    for (const { filename, attrs } of entries) {
      // Regular files only: a directory or a symbolic link named x.txt is not a drop file.
      if ((attrs.mode & S_IFMT) !== S_IFREG || !isDropFileName(filename)) {
        const type = attrs.mode & S_IFMT;
        const kind =
          type === S_IFREG ? 'file' : type === S_IFDIR ? 'folder' : type === S_IFLNK ? 'link' : 'other';
        const why = ignoredReason(filename, kind);
        if (why !== null) options.ignored?.(filename, why);
        continue;
      }
      out.push({
        name: filename,
        path: `inbox/${filename}`,
        size: attrs.size,
        mtimeMs: attrs.mtime * 1000,
      });
    }
    return out;
  }

  async exists(path: string): Promise<boolean> {
    const remote = this.#link.remote(path);
    const conn = await this.#link.get();
    return this.#link.existsOn(conn, remote, path);
  }

  /** One lstat (the name itself: a link is not followed, as reads refuse links). */
  async stat(path: string): Promise<SourceStat | null> {
    const link = this.#link;
    const remote = link.remote(path);
    const conn = await link.get();
    let st: Stats;
    try {
      st = await link.raw<Stats>(conn, (cb) => conn.sftp.lstat(remote, cb));
    } catch (err) {
      // OpenSSH answers "no such file" for ENOENT and ENOTDIR alike.
      if (sftpCode(err) === NO_SUCH_FILE) return null;
      throw link.readError('stat', path, err);
    }
    const type = st.mode & S_IFMT;
    if (type !== S_IFREG) {
      const what =
        type === S_IFDIR ? 'a folder' : type === S_IFLNK ? 'a symbolic link' : 'not a regular file';
      throw new SourceFileError(
        'NOT_A_REGULAR_FILE',
        `${path} is ${what}${what.startsWith('not') ? '' : ', not a regular file'} on the server`,
      );
    }
    // SFTP v3 mtimes are whole seconds.
    return { size: st.size, mtimeMs: st.mtime * 1000 };
  }

  async listFolder(path: string): Promise<FolderFile[]> {
    return [...(await listFolder(this.#link, path)).files];
  }

  openFolder(path: string): Promise<HeldFolder> {
    return openFolder(this.#link, path);
  }

  open(path: string): AsyncIterable<Uint8Array> {
    const remote = this.#link.remote(path);
    return readRemote(this.#link, path, remote);
  }

  async readTail(path: string, bytes: number): Promise<string> {
    const link = this.#link;
    const remote = link.remote(path);
    const conn = await link.get();
    const st = await link.call<Stats>(conn, 'stat', path, (cb) => conn.sftp.lstat(remote, cb));
    // Not a regular file: no trailer; the claim refuses it.
    if ((st.mode & S_IFMT) !== S_IFREG) return '';
    const n = Math.max(0, Math.min(bytes, st.size));
    if (n === 0) return '';
    const parts: Buffer[] = [];
    for await (const chunk of readRemote(link, path, remote, { start: st.size - n, end: st.size - 1 }, conn))
      parts.push(Buffer.from(chunk));
    return Buffer.concat(parts).toString('latin1');
  }

  async move(from: string, to: string): Promise<boolean> {
    const link = this.#link;
    const src = link.remote(from);
    const dst = link.remote(to);
    if (src === dst)
      throw new DroplineError('DROPLINE_ERR_SFTP', `${this.name}: cannot move ${from} onto itself`);
    const conn = await link.get();
    // posix-rename replaces a target silently (and plain SFTP v3 rename is not the same on
    // every server): look first. A target that exists while the source is gone is another
    // worker's finished move of the same file, not a conflict.
    if (await link.existsOn(conn, dst, to)) {
      if (!(await link.existsOn(conn, src, from))) return false;
      throw new DroplineError('DROPLINE_ERR_SFTP', `${this.name}: cannot move ${from}: ${to} already exists`);
    }
    try {
      await link.call(conn, 'rename', from, (cb) => conn.sftp.ext_openssh_rename(src, dst, cb));
      return true;
    } catch (err) {
      // Gone: another worker moved it first. Otherwise (the target's folder is missing…) an error.
      if (!(await link.existsOn(conn, src, from))) return false;
      throw err;
    }
  }

  async takeMarker(path: string): Promise<string | null> {
    const link = this.#link;
    const remote = link.remote(path);
    const takenPath = takenMarkerPath();
    const taken = link.remote(takenPath);
    const conn = await link.get();
    // One rename takes it: a marker uploaded after it stays in inbox/.
    try {
      await link.raw(conn, (cb) => conn.sftp.ext_openssh_rename(remote, taken, cb));
    } catch (err) {
      if (!(await link.existsOn(conn, remote, path))) return null;
      throw link.opError('rename', path, err);
    }
    try {
      const st = await link.raw<Stats>(conn, (cb) => conn.sftp.lstat(taken, cb));
      // A link, FIFO or folder as a marker: no content (never followed nor opened).
      if ((st.mode & S_IFMT) !== S_IFREG) return '';
      const n = Math.min(st.size, MARKER_MAX_BYTES);
      if (n === 0) return '';
      const parts: Buffer[] = [];
      for await (const chunk of readRemote(link, takenPath, taken, { start: 0, end: n - 1 }, conn))
        parts.push(Buffer.from(chunk));
      return Buffer.concat(parts).toString('utf8');
    } catch (err) {
      // One dropline may not read: taken all the same, it declares nothing.
      if (err instanceof SourceFileError) return '';
      throw err instanceof DroplineError ? err : link.opError('read', path, err);
    } finally {
      await link
        .raw(conn, (cb) => conn.sftp.unlink(taken, cb))
        .catch(() => link.raw(conn, (cb) => conn.sftp.rmdir(taken, cb)).catch(() => {}));
    }
  }

  async remove(path: string): Promise<void> {
    const link = this.#link;
    const remote = link.remote(path);
    const conn = await link.get();
    try {
      await link.raw(conn, (cb) => conn.sftp.unlink(remote, cb));
    } catch (err) {
      // Already gone is what the caller wanted (a resumed cleanup after a crash).
      if (sftpCode(err) === NO_SUCH_FILE) return;
      throw link.opError('remove', path, err);
    }
  }

  async write(path: string, content: string | AsyncIterable<string>): Promise<void> {
    const link = this.#link;
    const dst = link.remote(path);
    const slash = dst.lastIndexOf('/');
    // A dot-name in the same folder: never a drop file; the rename makes the new file
    // appear whole, so a reader sees the old report or the new one, never a part.
    const tmp = `${dst.slice(0, slash + 1)}.${dst.slice(slash + 1)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    const conn = await link.get();
    // open/write/close one request at a time, each with its time limit: a server that stops
    // answering fails the write instead of holding it (and the work queue) forever.
    let handle: Buffer | null = null;
    try {
      const h = await link.call<Buffer>(conn, 'write', path, (cb) =>
        conn.sftp.open(tmp, 'w', { mode: 0o640 }, cb),
      );
      handle = h;
      let position = 0;
      for await (const buf of batches(content)) {
        await link.call(conn, 'write', path, (cb) => conn.sftp.write(h, buf, 0, buf.length, position, cb));
        position += buf.length;
      }
      handle = null;
      await link.call(conn, 'write', path, (cb) => conn.sftp.close(h, cb));
      await link.call(conn, 'rename', path, (cb) => conn.sftp.ext_openssh_rename(tmp, dst, cb));
    } catch (err) {
      if (!conn.lost) {
        const h = handle;
        if (h) await link.raw(conn, (cb) => conn.sftp.close(h, cb)).catch(() => {});
        await link.raw(conn, (cb) => conn.sftp.unlink(tmp, cb)).catch(() => {});
      }
      if (err instanceof DroplineError) throw err;
      // The caller's own failure (its iterable threw) is passed on as is.
      if (conn.lost || isSftpError(err)) throw link.opError('write', path, err);
      throw err;
    }
  }
}

async function* batches(content: string | AsyncIterable<string>): AsyncGenerator<Buffer> {
  if (typeof content === 'string') {
    // In pieces: each write request has its own time limit, whatever the report's size.
    const all = Buffer.from(content, 'utf8');
    for (let at = 0; at < all.length; at += WRITE_BATCH_CHARS) yield all.subarray(at, at + WRITE_BATCH_CHARS);
    return;
  }
  let pending = '';
  for await (const piece of content) {
    pending += piece;
    if (pending.length >= WRITE_BATCH_CHARS) {
      yield Buffer.from(pending, 'utf8');
      pending = '';
    }
  }
  if (pending.length > 0) yield Buffer.from(pending, 'utf8');
}

export type SftpSourceConfig = Extract<SourceConfig, { type: 'sftp' }>;

/** A secret or key file's content; the error names the key and the path, never the content. */
function readSecret(path: string, key: string, trim: boolean): string | Buffer {
  try {
    return trim ? readFileSync(resolve(path), 'utf8').trim() : readFileSync(resolve(path));
  } catch (err) {
    throw new DroplineError(
      'DROPLINE_ERR_CONFIG',
      `${key}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
}

/** The source of a `type: "sftp"` config entry: `…File` secrets and the key file read here. */
export function sftpSourceFromConfig(cfg: SftpSourceConfig, logger: Logger): SftpSource {
  const key = `sources.${cfg.name}`;
  const password = cfg.passwordFile
    ? (readSecret(cfg.passwordFile, `${key}.passwordFile`, true) as string)
    : cfg.password;
  const passphrase = cfg.passphraseFile
    ? (readSecret(cfg.passphraseFile, `${key}.passphraseFile`, true) as string)
    : cfg.passphrase;
  const privateKey = cfg.privateKeyPath
    ? (readSecret(cfg.privateKeyPath, `${key}.privateKeyPath`, false) as Buffer)
    : undefined;
  return new SftpSource({
    name: cfg.name,
    host: cfg.host,
    port: cfg.port,
    username: cfg.username,
    password,
    privateKey,
    passphrase,
    hostKeySha256: cfg.hostKeySha256,
    insecureSkipHostKeyCheck: cfg.insecureSkipHostKeyCheck,
    path: cfg.path,
    logger,
  });
}
