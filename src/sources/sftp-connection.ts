// The SFTP source's one connection (docs/sources.md "SFTP sources"): opened with the pinned
// host key, reconnected with backoff, every request with its time limit. A server that is
// down never crashes the process: each operation fails with a clear error until the
// connection is back. Secrets (password, key, passphrase) live in private fields only:
// never logged, never in an error message.
import type { Stats } from 'ssh2';
import SftpClient from 'ssh2-sftp-client';
import { DroplineError, ERRORS } from '../errors.ts';
import type { Logger } from '../log.ts';
import {
  type Cb,
  type Conn,
  failPending,
  fingerprintOfHex,
  NO_SUCH_FILE,
  PERMISSION_DENIED,
  sftpCode,
} from './sftp-protocol.ts';
import { FOLDERS, SourceFileError } from './source.ts';

export interface SftpConnectionOptions {
  name: string;
  host: string;
  port: number;
  username: string;
  password: string | undefined;
  privateKey: Buffer | string | undefined;
  passphrase: string | undefined;
  /** The host key's SHA-256 (base64, no padding), or null: not checked. */
  pinned: string | null;
  /** The source root on the server, without a trailing slash. */
  root: string;
  logger: Logger;
  initialBackoffMs: number;
  maxBackoffMs: number;
  readyTimeoutMs: number;
  opTimeoutMs: number;
}

export class SftpConnection {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly username: string;
  readonly root: string;
  readonly #password: string | undefined;
  readonly #privateKey: Buffer | string | undefined;
  readonly #passphrase: string | undefined;
  readonly #pinned: string | null;
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

  constructor(options: SftpConnectionOptions) {
    this.name = options.name;
    this.host = options.host;
    this.port = options.port;
    this.username = options.username;
    this.root = options.root;
    this.#password = options.password;
    this.#privateKey = options.privateKey;
    this.#passphrase = options.passphrase;
    this.#pinned = options.pinned;
    this.#log = options.logger;
    this.#initialBackoffMs = options.initialBackoffMs;
    this.#maxBackoffMs = options.maxBackoffMs;
    this.#readyTimeoutMs = options.readyTimeoutMs;
    this.#opTimeoutMs = options.opTimeoutMs;
    this.#backoffMs = this.#initialBackoffMs;
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

  /** The live connection, a connection attempt in progress, or a clear error. */
  async get(): Promise<Conn> {
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
      const remote = this.remote(folder);
      if (await this.existsOn(conn, remote, folder)) continue;
      try {
        await conn.client.mkdir(remote, true);
      } catch (err) {
        // Another worker made it meanwhile.
        if (!(await this.existsOn(conn, remote, folder))) throw this.opError('mkdir', folder, err);
      }
    }
  }

  async existsOn(conn: Conn, remote: string, path: string): Promise<boolean> {
    try {
      await this.raw<Stats>(conn, (cb) => conn.sftp.lstat(remote, cb));
      return true;
    } catch (err) {
      if (sftpCode(err) === NO_SUCH_FILE) return false;
      throw this.opError('stat', path, err);
    }
  }

  /**
   * A callback-style ssh2 call as a promise (errors as ssh2 gives them), within the
   * per-operation time limit. A server that does not answer in time (stopped, wedged) fails
   * the operation and loses the connection: its later answers could not be trusted, and
   * the next operation reconnects.
   */
  raw<T = void>(conn: Conn, fn: (cb: Cb<T>) => void): Promise<T> {
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

  /** raw with the error made a DroplineError naming the operation and path. */
  async call<T = void>(conn: Conn, op: string, path: string, fn: (cb: Cb<T>) => void): Promise<T> {
    try {
      return await this.raw(conn, fn);
    } catch (err) {
      throw this.opError(op, path, err);
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

  /** opError, but a file the login may not read is that file's refusal, not the source's. */
  readError(op: string, path: string, err: unknown): Error {
    if (sftpCode(err) === PERMISSION_DENIED)
      return new SourceFileError('FILE_UNREADABLE', `${path}: permission denied on the server`, {
        cause: err,
      });
    return this.opError(op, path, err);
  }

  opError(op: string, path: string, err: unknown): DroplineError {
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

  /** A source path (`inbox/x.txt`) on the server, under the root; `..` and the like refused. */
  remote(path: string): string {
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

/** A DroplineError's message without its code's general text and the source name. */
function detailOf(err: DroplineError, source: string): string {
  let m = err.message;
  const general = `${ERRORS[err.code].message}: `;
  if (m.startsWith(general)) m = m.slice(general.length);
  if (m.startsWith(`${source}: `)) m = m.slice(source.length + 2);
  return m;
}
