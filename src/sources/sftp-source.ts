// An SFTP directory as a Source (issue 5): inbox/ processing/ done/ failed/ reports/ under
// `path` on a partner's server. One connection, pinned host key, reconnect with backoff; a
// server that is down never crashes the process: ping() and every operation fail with a
// clear error until the connection is back (the daemon logs and retries on its next poll).
// Secrets (password, key, passphrase) live in private fields only: never logged, never in
// an error message.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { SFTPWrapper, Stats } from 'ssh2';
import SftpClient from 'ssh2-sftp-client';
import type { SourceConfig } from '../config/schema.ts';
import { DroplineError, ERRORS } from '../errors.ts';
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
  takenMarkerPath,
} from './source.ts';

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
const READ_CHUNK = 64 * 1024;
/** SFTP status codes (draft-ietf-secsh-filexfer-02). */
const NO_SUCH_FILE = 2;
const PERMISSION_DENIED = 3;
const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

type Cb<T> = (err?: Error | null, value?: T) => void;

interface Conn {
  client: SftpClient;
  sftp: SFTPWrapper;
  lost: boolean;
  /** Requests awaiting an answer: failed at once when the connection goes. */
  pending: Set<(err: Error) => void>;
}

function sftpCode(err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code;
}

/** `SHA256:abc…` (padding optional) → the raw base64 without padding, or null when malformed. */
export function parseHostKeySha256(value: string): string | null {
  const m = /^SHA256:([A-Za-z0-9+/]{43})=?$/.exec(value.trim());
  return m ? m[1]! : null;
}

/** ssh2's hex digest of the host key → OpenSSH's `SHA256:` form. */
export function fingerprintOfHex(hex: string): string {
  return `SHA256:${Buffer.from(hex, 'hex').toString('base64').replace(/=+$/, '')}`;
}

/** OpenSSH's `SHA256:` fingerprint of a host key blob (for messages and tests). */
export function fingerprintOfKey(key: Buffer): string {
  return fingerprintOfHex(createHash('sha256').update(key).digest('hex'));
}

export class SftpSource implements Source {
  readonly name: string;
  readonly kind = 'sftp' as const;
  readonly host: string;
  readonly port: number;
  readonly username: string;
  readonly root: string;
  readonly #password: string | undefined;
  readonly #privateKey: Buffer | string | undefined;
  readonly #passphrase: string | undefined;
  readonly #pinned: string | null;
  readonly #insecure: boolean;
  readonly #log: Logger;
  readonly #initialBackoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #readyTimeoutMs: number;
  readonly #opTimeoutMs: number;
  #operations = 0;

  #conn: Conn | null = null;
  #connecting: Promise<Conn> | null = null;
  #lastError: DroplineError | null = null;
  #backoffMs: number;
  #retryTimer: NodeJS.Timeout | null = null;
  #started = false;
  #closed = false;

  constructor(options: SftpSourceOptions) {
    this.name = options.name;
    this.host = options.host;
    this.port = options.port ?? 22;
    this.username = options.username;
    this.root = options.path.replace(/\/+$/, '') || '/';
    this.#password = options.password;
    this.#privateKey = options.privateKey;
    this.#passphrase = options.passphrase;
    this.#insecure = options.insecureSkipHostKeyCheck === true;
    this.#log = options.logger;
    this.#initialBackoffMs = options.initialBackoffMs ?? 250;
    this.#maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.#readyTimeoutMs = options.readyTimeoutMs ?? 15_000;
    this.#opTimeoutMs = options.opTimeoutMs ?? 30_000;
    this.#backoffMs = this.#initialBackoffMs;
    const key = `sources.${this.name}`;
    if (options.hostKeySha256 !== undefined) {
      const pinned = parseHostKeySha256(options.hostKeySha256);
      if (pinned === null)
        throw new DroplineError(
          'DROPLINE_ERR_CONFIG',
          `${key}.hostKeySha256: expected the SHA256:… fingerprint that ssh-keygen -lf prints`,
        );
      this.#pinned = pinned;
    } else if (this.#insecure) this.#pinned = null;
    else
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        `${key}.hostKeySha256: required (the server's host key as ssh-keygen -lf <key.pub> prints it, SHA256:…); only insecureSkipHostKeyCheck: true turns pinning off`,
      );
    if (this.#password === undefined && this.#privateKey === undefined)
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        `${key}: set privateKeyPath or password (or passwordFile) for the SFTP login`,
      );
  }

  /** SFTP operations made so far, each one awaited answer (a listing is one): what a poll or a claim costs. */
  get operations(): number {
    return this.#operations;
  }

  get #where(): string {
    return `${this.username}@${this.host}:${this.port}`;
  }

  /** Connects (in the background when the server is down) and creates the folders. */
  async start(): Promise<void> {
    this.#closed = false;
    if (this.#insecure)
      this.#log.warn(
        { source: this.name, host: this.host, port: this.port },
        `sftp source ${this.name}: host key checking is OFF (insecureSkipHostKeyCheck): anyone between dropline and ${this.host} can read and change the files; set hostKeySha256`,
      );
    this.#started = true;
    if (this.#conn) {
      await this.#ensureFolders(this.#conn);
      return;
    }
    try {
      await this.#connect();
    } catch {
      // Logged by #connect; retried with backoff. ping() says not ready meanwhile.
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#retryTimer = null;
    const pending = this.#connecting;
    if (pending) await pending.catch(() => {});
    const conn = this.#conn;
    this.#conn = null;
    if (conn) {
      conn.lost = true;
      failPending(conn, `${this.name}: the source is closed`);
      // A server that stopped answering never says goodbye: wait for it no longer than for
      // any other answer.
      let timer: NodeJS.Timeout | undefined;
      const ended = await Promise.race([
        conn.client.end().then(
          () => true,
          () => true,
        ),
        new Promise<false>((done) => {
          timer = setTimeout(() => done(false), this.#opTimeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (!ended) (conn.client as unknown as { client?: { destroy?: () => void } }).client?.destroy?.();
    }
  }

  async ping(): Promise<void> {
    const conn = await this.#get();
    await this.#call<Stats>(conn, 'ping', 'inbox', (cb) => conn.sftp.stat(this.#remote('inbox'), cb));
  }

  async list(options: ListOptions = {}): Promise<SourceEntry[]> {
    const conn = await this.#get();
    const entries = await this.#call<{ filename: string; attrs: Stats }[]>(conn, 'list', 'inbox', (cb) =>
      conn.sftp.readdir(this.#remote('inbox'), cb),
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
    const remote = this.#remote(path);
    const conn = await this.#get();
    return this.#existsOn(conn, remote, path);
  }

  /** One lstat (the name itself: a link is not followed, as #read refuses links). */
  async stat(path: string): Promise<SourceStat | null> {
    const remote = this.#remote(path);
    const conn = await this.#get();
    let st: Stats;
    try {
      st = await this.#raw<Stats>(conn, (cb) => conn.sftp.lstat(remote, cb));
    } catch (err) {
      // OpenSSH answers "no such file" for ENOENT and ENOTDIR alike.
      if (sftpCode(err) === NO_SUCH_FILE) return null;
      throw this.#readError('stat', path, err);
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

  /**
   * An lstat of the folder (a link there is not followed: the server's readdir would follow
   * it), then one readdir: OpenSSH gives each entry's lstat attributes, so links, folders and
   * FIFOs are told from regular files without following them.
   */
  async listFolder(path: string): Promise<FolderFile[]> {
    return [...(await this.#listFolder(path)).files];
  }

  async #listFolder(path: string): Promise<{ files: FolderFile[]; attrs: Map<string, Stats> }> {
    const remote = this.#remote(path);
    const conn = await this.#get();
    const attrs = new Map<string, Stats>();
    if (!(await this.#folderChain(conn, path))) return { files: [], attrs };
    let entries: { filename: string; attrs: Stats }[];
    try {
      entries = await this.#raw(conn, (cb) => conn.sftp.readdir(remote, cb));
    } catch (err) {
      // Removed (or replaced by a file) since the lstat.
      if (sftpCode(err) === NO_SUCH_FILE) return { files: [], attrs };
      throw this.#readError('list', path, err);
    }
    // The server tells each entry's type without following it (readdir's attrs are lstat's).
    const files = entries
      .filter(({ filename, attrs }) => (attrs.mode & S_IFMT) !== S_IFDIR && isFolderFileName(filename))
      .map(({ filename, attrs: st }): FolderFile => {
        const type = st.mode & S_IFMT;
        if (type === S_IFREG) {
          attrs.set(filename, st);
          return { name: filename, size: st.size, kind: 'file' };
        }
        return { name: filename, size: 0, kind: type === S_IFLNK ? 'link' : 'other' };
      })
      .sort(byName);
    return { files, attrs };
  }

  /**
   * Neither the folder nor any folder on the way to it is followed (a link there could lead
   * anywhere the login may read): each lstat'ed. false: no such folder (or a file on the way).
   */
  async #folderChain(conn: Conn, path: string): Promise<boolean> {
    const parts = path.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const sub = parts.slice(0, i).join('/');
      let dir: Stats;
      try {
        dir = await this.#raw<Stats>(conn, (cb) => conn.sftp.lstat(this.#remote(sub), cb));
      } catch (err) {
        // OpenSSH answers "no such file" for ENOENT and ENOTDIR alike.
        if (sftpCode(err) === NO_SUCH_FILE) return false;
        throw this.#readError('stat', sub, err);
      }
      const type = dir.mode & S_IFMT;
      if (type === S_IFLNK)
        throw new SourceFileError(
          'NOT_A_REGULAR_FILE',
          `${sub} is a symbolic link on the server, not a folder: links are never followed`,
        );
      if (type !== S_IFDIR) return false;
    }
    return true;
  }

  /**
   * SFTP (v3) opens by path and the server follows links: there is no openat. Each file is
   * read through its handle, checked on both sides of the open (docs/sources.md
   * "Attachments"): before, the folders on the way and the name itself lstat'ed (a link
   * refused, never opened); the handle's attributes must be the listed file's (type, size,
   * mtime, owner, mode); after the read, the folders and the name again. A change seen at
   * any of these is NOT_A_REGULAR_FILE (a link) or FILE_CHANGED, and nothing read is used.
   */
  async openFolder(path: string): Promise<HeldFolder> {
    const { files, attrs } = await this.#listFolder(path);
    const remote = this.#remote(path);
    const self = this;
    async function* read(name: string): AsyncGenerator<Uint8Array> {
      listedFileOf(files, name, path);
      const where = `${path}/${name}`;
      const listed = attrs.get(name)!;
      const changed = () => new SourceFileError('FILE_CHANGED', `${where} was replaced since it was listed`);
      const check = (st: Stats) => {
        if (!sameFile(st, listed)) throw changed();
      };
      const conn = await self.#get();
      if (!(await self.#folderChain(conn, path))) throw changed();
      yield* self.#read(where, `${remote}/${name}`, null, conn, check);
      if (!(await self.#folderChain(conn, path))) throw changed();
      let after: Stats;
      try {
        after = await self.#raw<Stats>(conn, (cb) => conn.sftp.lstat(`${remote}/${name}`, cb));
      } catch (err) {
        if (sftpCode(err) === NO_SUCH_FILE) throw changed();
        throw self.#readError('stat', where, err);
      }
      if ((after.mode & S_IFMT) === S_IFLNK)
        throw new SourceFileError('NOT_A_REGULAR_FILE', `${where} is a symbolic link on the server`);
      check(after);
    }
    return { files, read, close: async () => {} };
  }

  open(path: string): AsyncIterable<Uint8Array> {
    const remote = this.#remote(path);
    return this.#read(path, remote);
  }

  async readTail(path: string, bytes: number): Promise<string> {
    const remote = this.#remote(path);
    const conn = await this.#get();
    const st = await this.#call<Stats>(conn, 'stat', path, (cb) => conn.sftp.lstat(remote, cb));
    // Not a regular file: no trailer; the claim refuses it.
    if ((st.mode & S_IFMT) !== S_IFREG) return '';
    const n = Math.max(0, Math.min(bytes, st.size));
    if (n === 0) return '';
    const parts: Buffer[] = [];
    for await (const chunk of this.#read(path, remote, { start: st.size - n, end: st.size - 1 }, conn))
      parts.push(Buffer.from(chunk));
    return Buffer.concat(parts).toString('latin1');
  }

  async move(from: string, to: string): Promise<boolean> {
    const src = this.#remote(from);
    const dst = this.#remote(to);
    if (src === dst)
      throw new DroplineError('DROPLINE_ERR_SFTP', `${this.name}: cannot move ${from} onto itself`);
    const conn = await this.#get();
    // posix-rename replaces a target silently (and plain SFTP v3 rename is not the same on
    // every server): look first. A target that exists while the source is gone is another
    // worker's finished move of the same file, not a conflict.
    if (await this.#existsOn(conn, dst, to)) {
      if (!(await this.#existsOn(conn, src, from))) return false;
      throw new DroplineError('DROPLINE_ERR_SFTP', `${this.name}: cannot move ${from}: ${to} already exists`);
    }
    try {
      await this.#call(conn, 'rename', from, (cb) => conn.sftp.ext_openssh_rename(src, dst, cb));
      return true;
    } catch (err) {
      // Gone: another worker moved it first. Otherwise (the target's folder is missing…) an error.
      if (!(await this.#existsOn(conn, src, from))) return false;
      throw err;
    }
  }

  async takeMarker(path: string): Promise<string | null> {
    const remote = this.#remote(path);
    const takenPath = takenMarkerPath();
    const taken = this.#remote(takenPath);
    const conn = await this.#get();
    // One rename takes it: a marker uploaded after it stays in inbox/.
    try {
      await this.#raw(conn, (cb) => conn.sftp.ext_openssh_rename(remote, taken, cb));
    } catch (err) {
      if (!(await this.#existsOn(conn, remote, path))) return null;
      throw this.#opError('rename', path, err);
    }
    try {
      const st = await this.#raw<Stats>(conn, (cb) => conn.sftp.lstat(taken, cb));
      // A link, FIFO or folder as a marker: no content (never followed nor opened).
      if ((st.mode & S_IFMT) !== S_IFREG) return '';
      const n = Math.min(st.size, MARKER_MAX_BYTES);
      if (n === 0) return '';
      const parts: Buffer[] = [];
      for await (const chunk of this.#read(takenPath, taken, { start: 0, end: n - 1 }, conn))
        parts.push(Buffer.from(chunk));
      return Buffer.concat(parts).toString('utf8');
    } catch (err) {
      // One dropline may not read: taken all the same, it declares nothing.
      if (err instanceof SourceFileError) return '';
      throw err instanceof DroplineError ? err : this.#opError('read', path, err);
    } finally {
      await this.#raw(conn, (cb) => conn.sftp.unlink(taken, cb)).catch(() =>
        this.#raw(conn, (cb) => conn.sftp.rmdir(taken, cb)).catch(() => {}),
      );
    }
  }

  async remove(path: string): Promise<void> {
    const remote = this.#remote(path);
    const conn = await this.#get();
    try {
      await this.#raw(conn, (cb) => conn.sftp.unlink(remote, cb));
    } catch (err) {
      // Already gone is what the caller wanted (a resumed cleanup after a crash).
      if (sftpCode(err) === NO_SUCH_FILE) return;
      throw this.#opError('remove', path, err);
    }
  }

  async write(path: string, content: string | AsyncIterable<string>): Promise<void> {
    const dst = this.#remote(path);
    const slash = dst.lastIndexOf('/');
    // A dot-name in the same folder: never a drop file; the rename makes the new file
    // appear whole, so a reader sees the old report or the new one, never a part.
    const tmp = `${dst.slice(0, slash + 1)}.${dst.slice(slash + 1)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    const conn = await this.#get();
    // open/write/close one request at a time, each with its time limit: a server that stops
    // answering fails the write instead of holding it (and the work queue) forever.
    let handle: Buffer | null = null;
    try {
      const h = await this.#call<Buffer>(conn, 'write', path, (cb) =>
        conn.sftp.open(tmp, 'w', { mode: 0o640 }, cb),
      );
      handle = h;
      let position = 0;
      for await (const buf of batches(content)) {
        await this.#call(conn, 'write', path, (cb) => conn.sftp.write(h, buf, 0, buf.length, position, cb));
        position += buf.length;
      }
      handle = null;
      await this.#call(conn, 'write', path, (cb) => conn.sftp.close(h, cb));
      await this.#call(conn, 'rename', path, (cb) => conn.sftp.ext_openssh_rename(tmp, dst, cb));
    } catch (err) {
      if (!conn.lost) {
        const h = handle;
        if (h) await this.#raw(conn, (cb) => conn.sftp.close(h, cb)).catch(() => {});
        await this.#raw(conn, (cb) => conn.sftp.unlink(tmp, cb)).catch(() => {});
      }
      if (err instanceof DroplineError) throw err;
      // The caller's own failure (its iterable threw) is passed on as is.
      if (conn.lost || isSftpError(err)) throw this.#opError('write', path, err);
      throw err;
    }
  }

  // ---- connection ---------------------------------------------------------------------

  /** The live connection, a connection attempt in progress, or a clear error. */
  async #get(): Promise<Conn> {
    if (this.#closed) throw new DroplineError('DROPLINE_ERR_SFTP', `${this.name}: the source is closed`);
    if (this.#conn) return this.#conn;
    if (this.#connecting) return this.#connecting;
    if (this.#retryTimer === null) return this.#connect();
    // Waiting out the backoff: say why, the next attempt comes by itself.
    const last = this.#lastError;
    if (last?.code === 'DROPLINE_ERR_SFTP_HOST_KEY') throw last;
    throw new DroplineError(
      'DROPLINE_ERR_SFTP',
      `${this.name}: not connected to ${this.#where}${last ? ` (${detailOf(last, this.name)})` : ''}; retrying`,
    );
  }

  #connect(): Promise<Conn> {
    if (this.#connecting) return this.#connecting;
    if (this.#retryTimer) {
      clearTimeout(this.#retryTimer);
      this.#retryTimer = null;
    }
    const attempt = this.#open().then(
      (conn) => {
        this.#connecting = null;
        if (this.#closed) {
          conn.lost = true;
          void conn.client.end().catch(() => {});
          throw new DroplineError('DROPLINE_ERR_SFTP', `${this.name}: the source is closed`);
        }
        const recovered = this.#lastError !== null;
        this.#conn = conn;
        this.#lastError = null;
        this.#backoffMs = this.#initialBackoffMs;
        this.#log.info(
          { source: this.name, host: this.host, port: this.port },
          `sftp source ${this.name}: ${recovered ? 'reconnected' : 'connected'} to ${this.#where}`,
        );
        return conn;
      },
      (err: unknown) => {
        this.#connecting = null;
        const e = err as DroplineError;
        this.#lastError = e;
        if (!this.#closed) {
          const level = e.code === 'DROPLINE_ERR_SFTP_HOST_KEY' ? 'error' : 'warn';
          this.#log[level](
            { source: this.name, host: this.host, port: this.port, code: e.code, retryInMs: this.#backoffMs },
            e.message,
          );
          this.#scheduleRetry();
        }
        throw e;
      },
    );
    this.#connecting = attempt;
    return attempt;
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#retryTimer) return;
    const delay = this.#backoffMs;
    this.#backoffMs = Math.min(this.#backoffMs * 2, this.#maxBackoffMs);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      if (!this.#closed && !this.#conn) void this.#connect().catch(() => {});
    }, delay);
    this.#retryTimer.unref();
  }

  async #open(): Promise<Conn> {
    let presented: string | null = null;
    const holder: { conn: Conn | null } = { conn: null };
    const onLost = (): void => {
      const conn = holder.conn;
      if (!conn || conn.lost) return;
      conn.lost = true;
      failPending(conn, `${this.name}: connection to ${this.#where} lost`);
      if (this.#conn === conn) {
        this.#conn = null;
        this.#lastError = new DroplineError(
          'DROPLINE_ERR_SFTP',
          `${this.name}: connection to ${this.#where} lost`,
        );
        if (!this.#closed) {
          this.#log.warn(
            { source: this.name, host: this.host, port: this.port },
            `sftp source ${this.name}: connection lost; reconnecting`,
          );
          this.#scheduleRetry();
        }
      }
    };
    // Our own callbacks: ssh2-sftp-client console.logs without them.
    const client = new SftpClient(`dropline:${this.name}`, {
      error: onLost,
      end: onLost,
      close: onLost,
    });
    const pinned = this.#pinned;
    try {
      const sftp = await client.connect({
        host: this.host,
        port: this.port,
        username: this.username,
        ...(this.#password !== undefined ? { password: this.#password } : {}),
        ...(this.#privateKey !== undefined ? { privateKey: this.#privateKey } : {}),
        ...(this.#passphrase !== undefined ? { passphrase: this.#passphrase } : {}),
        readyTimeout: this.#readyTimeoutMs,
        keepaliveInterval: 10_000,
        keepaliveCountMax: 3,
        hostHash: 'sha256',
        hostVerifier: (hex: string): boolean => {
          presented = fingerprintOfHex(hex);
          return pinned === null || presented === `SHA256:${pinned}`;
        },
      });
      const conn: Conn = { client, sftp, lost: false, pending: new Set() };
      holder.conn = conn;
      sftp.on('close', onLost);
      await this.#ensureFolders(conn);
      return conn;
    } catch (err) {
      holder.conn = null;
      await client.end().catch(() => {});
      if (pinned !== null && presented !== null && presented !== `SHA256:${pinned}`) {
        throw new DroplineError(
          'DROPLINE_ERR_SFTP_HOST_KEY',
          `${this.name}: ${this.host}:${this.port} presented host key ${presented}, but hostKeySha256 pins SHA256:${pinned}; connection refused`,
        );
      }
      if (err instanceof DroplineError) throw err;
      throw new DroplineError(
        'DROPLINE_ERR_SFTP',
        `${this.name}: cannot connect to ${this.#where}: ${this.#clean(err)}`,
      );
    }
  }

  async #ensureFolders(conn: Conn): Promise<void> {
    if (!this.#started) return;
    for (const folder of FOLDERS) {
      const remote = this.#remote(folder);
      if (await this.#existsOn(conn, remote, folder)) continue;
      try {
        await conn.client.mkdir(remote, true);
      } catch (err) {
        // Another worker made it meanwhile.
        if (!(await this.#existsOn(conn, remote, folder))) throw this.#opError('mkdir', folder, err);
      }
    }
  }

  // ---- helpers ------------------------------------------------------------------------

  async *#read(
    path: string,
    remote: string,
    range: { start: number; end: number } | null = null,
    given?: Conn,
    /** Throws when the opened handle's attributes are not the file expected (openFolder). */
    check?: (st: Stats) => void,
  ): AsyncGenerator<Uint8Array> {
    const conn = given ?? (await this.#get());
    // SFTP has no O_NOFOLLOW: look at the name itself first. A link, folder or FIFO put in
    // place of a listed file is refused before it is opened (a FIFO would hold the server).
    // (A ranged read is readTail's, which looked already.)
    if (range === null) {
      let st: Stats;
      try {
        st = await this.#raw<Stats>(conn, (cb) => conn.sftp.lstat(remote, cb));
      } catch (err) {
        throw this.#readError('stat', path, err);
      }
      if ((st.mode & S_IFMT) !== S_IFREG)
        throw new SourceFileError('NOT_A_REGULAR_FILE', `${path} is not a regular file on the server`);
    }
    let handle: Buffer;
    try {
      handle = await this.#raw<Buffer>(conn, (cb) => conn.sftp.open(remote, 'r', cb));
    } catch (err) {
      throw this.#readError('open', path, err);
    }
    const h = handle;
    if (check) {
      try {
        check(await this.#raw<Stats>(conn, (cb) => conn.sftp.fstat(h, cb)));
      } catch (err) {
        if (!conn.lost) await this.#raw(conn, (cb) => conn.sftp.close(h, cb)).catch(() => {});
        throw err instanceof SourceFileError ? err : this.#readError('stat', path, err);
      }
    }
    const end = range ? range.end + 1 : Number.POSITIVE_INFINITY;
    let position = range ? range.start : 0;
    // One read ahead: the next request is on the wire while the consumer works on a chunk.
    const readAt = (at: number): Promise<Buffer> => {
      const len = Math.min(READ_CHUNK, end - at);
      if (len <= 0) return Promise.resolve(Buffer.alloc(0));
      const ahead = this.#raw<Buffer>(conn, (cb) =>
        conn.sftp.read(h, Buffer.allocUnsafe(len), 0, len, at, (err, n, data) =>
          cb(err, err ? undefined : data.subarray(0, n)),
        ),
      );
      // It may fail (the connection lost) while the consumer still works on the chunk before
      // it, with nobody awaiting it yet: an unhandled rejection would end the process. The
      // failure still reaches the consumer, at its next read.
      ahead.catch(() => {});
      return ahead;
    };
    let next = readAt(position);
    try {
      for (;;) {
        let chunk: Buffer;
        try {
          chunk = await next;
        } catch (err) {
          throw this.#readError('read', path, err);
        }
        if (chunk.length === 0) break;
        position += chunk.length;
        next = readAt(position);
        yield chunk;
      }
    } finally {
      await next.catch(() => {});
      if (!conn.lost) await this.#raw(conn, (cb) => conn.sftp.close(h, cb)).catch(() => {});
    }
    // A connection that dropped may end the reads quietly: never pass a short file as whole.
    if (conn.lost)
      throw new DroplineError('DROPLINE_ERR_SFTP', `${this.name}: connection lost while reading ${path}`);
  }

  async #existsOn(conn: Conn, remote: string, path: string): Promise<boolean> {
    try {
      await this.#raw<Stats>(conn, (cb) => conn.sftp.lstat(remote, cb));
      return true;
    } catch (err) {
      if (sftpCode(err) === NO_SUCH_FILE) return false;
      throw this.#opError('stat', path, err);
    }
  }

  /**
   * A callback-style ssh2 call as a promise (errors as ssh2 gives them), within the
   * per-operation time limit. A server that does not answer in time (stopped, wedged) fails
   * the operation and loses the connection: its later answers could not be trusted, and
   * the next operation reconnects.
   */
  #raw<T = void>(conn: Conn, fn: (cb: Cb<T>) => void): Promise<T> {
    this.#operations++;
    return new Promise<T>((done, fail) => {
      if (conn.lost) {
        fail(new DroplineError('DROPLINE_ERR_SFTP', `${this.name}: connection to ${this.#where} lost`));
        return;
      }
      const settle = (err: Error): void => {
        clearTimeout(timer);
        conn.pending.delete(settle);
        fail(err);
      };
      conn.pending.add(settle);
      const timer = setTimeout(() => {
        conn.pending.delete(settle);
        fail(
          new DroplineError(
            'DROPLINE_ERR_SFTP',
            `${this.name}: no answer from ${this.#where} within ${this.#opTimeoutMs} ms`,
          ),
        );
        this.#abandon(conn);
      }, this.#opTimeoutMs);
      try {
        fn((err, value) => {
          clearTimeout(timer);
          conn.pending.delete(settle);
          if (err) fail(err);
          else done(value as T);
        });
      } catch (err) {
        settle(err as Error);
      }
    });
  }

  /** #raw with the error made a DroplineError naming the operation and path. */
  async #call<T = void>(conn: Conn, op: string, path: string, fn: (cb: Cb<T>) => void): Promise<T> {
    try {
      return await this.#raw(conn, fn);
    } catch (err) {
      throw this.#opError(op, path, err);
    }
  }

  /** A connection whose server stopped answering: dropped, reconnected with backoff. */
  #abandon(conn: Conn): void {
    if (conn.lost) return;
    conn.lost = true;
    failPending(conn, `${this.name}: ${this.#where} stopped answering`);
    if (this.#conn === conn) {
      this.#conn = null;
      this.#lastError = new DroplineError(
        'DROPLINE_ERR_SFTP',
        `${this.name}: ${this.#where} stopped answering (no answer within ${this.#opTimeoutMs} ms)`,
      );
      if (!this.#closed) {
        this.#log.warn(
          { source: this.name, host: this.host, port: this.port, timeoutMs: this.#opTimeoutMs },
          `sftp source ${this.name}: ${this.#where} stopped answering; reconnecting`,
        );
        this.#scheduleRetry();
      }
    }
    // end() waits for the server's goodbye, which a stopped server never sends.
    (conn.client as unknown as { client?: { destroy?: () => void } }).client?.destroy?.();
    void conn.client.end().catch(() => {});
  }

  /** #opError, but a file the login may not read is that file's refusal, not the source's. */
  #readError(op: string, path: string, err: unknown): Error {
    if (sftpCode(err) === PERMISSION_DENIED)
      return new SourceFileError('FILE_UNREADABLE', `${path}: permission denied on the server`, {
        cause: err,
      });
    return this.#opError(op, path, err);
  }

  #opError(op: string, path: string, err: unknown): DroplineError {
    if (err instanceof DroplineError) return err;
    const code = sftpCode(err);
    const what = code === NO_SUCH_FILE ? 'no such file' : this.#clean(err);
    return new DroplineError('DROPLINE_ERR_SFTP', `${this.name}: ${op} ${path}: ${what}`, { cause: err });
  }

  /** An error's message with any secret of this source blanked out (belt and braces). */
  #clean(err: unknown): string {
    let msg = err instanceof Error ? err.message : String(err);
    for (const secret of [this.#password, this.#passphrase]) {
      if (secret) msg = msg.split(secret).join('[redacted]');
    }
    return msg;
  }

  #remote(path: string): string {
    const parts = path.split('/');
    if (path.startsWith('/') || parts.some((p) => p === '..' || p === '' || p === '.')) {
      throw new DroplineError(
        'DROPLINE_ERR_SFTP',
        `${this.name}: invalid source path ${JSON.stringify(path)}`,
      );
    }
    return this.root === '/' ? `/${path}` : `${this.root}/${path}`;
  }
}

/** Whether two SFTP attributes are of the same regular file as far as v3 tells (no inode). */
function sameFile(a: Stats, b: Stats): boolean {
  return (
    (a.mode & S_IFMT) === S_IFREG &&
    a.mode === b.mode &&
    a.size === b.size &&
    a.mtime === b.mtime &&
    a.uid === b.uid &&
    a.gid === b.gid
  );
}

/** A DroplineError's message without its code's general text and the source name. */
function detailOf(err: DroplineError, source: string): string {
  let m = err.message;
  const general = `${ERRORS[err.code].message}: `;
  if (m.startsWith(general)) m = m.slice(general.length);
  if (m.startsWith(`${source}: `)) m = m.slice(source.length + 2);
  return m;
}

function failPending(conn: Conn, message: string): void {
  const pending = [...conn.pending];
  conn.pending.clear();
  for (const fail of pending) fail(new DroplineError('DROPLINE_ERR_SFTP', message));
}

function isSftpError(err: unknown): boolean {
  return typeof sftpCode(err) === 'number';
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
