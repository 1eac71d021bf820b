// The PostgreSQL connection of the store: a pg.Pool whose connections all work in the store's
// schema and speak UTC, a transaction helper that retries what PostgreSQL asks to retry
// (serialization failures, deadlocks), and the classification of errors into the store's
// error kinds (src/errors.ts). Nothing here knows the store's tables.
import pg from 'pg';
import { DroplineError, type ErrorCode } from '../../errors.ts';
import { num, type Row } from '../mapping.ts';
import { idRange } from '../message-ids.ts';
import { checkSchemaName, redactStoreUrl } from '../url.ts';
import { FILE_NO, SHORT_CODE, type Statement, values } from './sql.ts';

/** What a statement runs on: the pool (one statement) or a checked-out client (a transaction). */
export type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

export interface ConnectionOptions {
  connectionString: string;
  /** search_path of every connection; the database user's default when omitted. */
  schema?: string;
  poolSize?: number;
}

// Types read as the Store interface speaks them. int8 (ids, counts, sums of int) and numeric
// (sum of bigint) as numbers: every value the store keeps is far below 2^53 (recipient ids
// are bounded by MAX_FILE_NO). timestamptz as an ISO-8601 UTC string of millisecond
// precision, straight from the text PostgreSQL sends with TimeZone=UTC and DateStyle=ISO
// (2026-03-01 12:00:00.123456+00), without a Date in between.
const INT8 = 20;
const NUMERIC = 1700;
const TIMESTAMPTZ = 1184;

export function isoFromPg(s: string): string {
  // YYYY-MM-DD HH:MM:SS[.ffffff]+00
  const ms = s.charCodeAt(19) === 46 /* . */ ? s.slice(20, 23).replace(/\D.*$/, '').padEnd(3, '0') : '000';
  return `${s.slice(0, 10)}T${s.slice(11, 19)}.${ms}Z`;
}

const types = {
  getTypeParser(oid: number, format?: string): (value: string) => unknown {
    if (oid === INT8 || oid === NUMERIC) return Number;
    if (oid === TIMESTAMPTZ) return isoFromPg;
    return pg.types.getTypeParser(oid, (format ?? 'text') as 'text');
  },
};

/**
 * The session settings every connection starts with, as the startup packet's `options`
 * (`-c name=value`): set by the server before the first query, no statement of ours to wait
 * for. Those of the connection string come first, ours last: a later `-c` wins.
 */
export function sessionOptions(connectionString: string, schema: string | undefined): string {
  const ours = ['-c TimeZone=UTC', '-c DateStyle=ISO'];
  if (schema) ours.push(`-c search_path=${schema}`);
  const theirs = urlOptions(connectionString);
  return [...(theirs ? [theirs] : []), ...ours].join(' ');
}

/** The `options` parameter of a postgres:// URL, if any (pg lets the URL's override the config's). */
function urlOptions(connectionString: string): string | null {
  try {
    return new URL(connectionString).searchParams.get('options');
  } catch {
    return null;
  }
}

/** The URL without its `options` (they go into sessionOptions). */
function withoutOptions(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    if (!url.searchParams.has('options')) return connectionString;
    url.searchParams.delete('options');
    return url.toString();
  } catch {
    return connectionString;
  }
}

export function createPool(options: ConnectionOptions): pg.Pool {
  const schema = options.schema === undefined ? undefined : checkSchemaName(options.schema);
  const pool = new pg.Pool({
    connectionString: withoutOptions(options.connectionString),
    options: sessionOptions(options.connectionString, schema),
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    types: types as unknown as pg.CustomTypesConfig,
    // The session settings travel in the startup packet (sessionOptions): no statement of
    // ours runs before the holder's first one (pg 8 warned about a query sent while one ran).
    onConnect: (client) => {
      // The pool listens for 'error' only while a client is idle. One checked out (a
      // transaction between its statements, or in one) whose connection is lost emits
      // 'error' too, which unheard would end the process. The loss reaches its holder anyway:
      // the statement in flight rejects, and the next one fails as "not queryable"; both are
      // unavailable(), and transaction() then destroys the client instead of returning it.
      client.on('error', () => {});
    },
  });
  // An idle client loses its connection (PostgreSQL restarting): the pool drops it and emits
  // 'error' here; without a listener that error would end the process.
  pool.on('error', () => {});
  return pool;
}

/** PostgreSQL says: run the transaction again (it did nothing). */
const RETRY_CODES = new Set(['40001', '40P01']);
const RETRIES = 5;

export interface TransactionOptions {
  /** Label for error messages ("recording a chunk result"). */
  what: string;
}

/**
 * Runs `fn` in one transaction on a client of its own: BEGIN, fn, COMMIT; ROLLBACK when fn
 * throws. A serialization failure or deadlock (PostgreSQL rolled the transaction back) runs
 * it again, a few times, after a short jittered pause: `fn` must be safe to run again.
 */
export async function transaction<T>(
  pool: pg.Pool,
  what: string,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      throw storeError(err, what);
    }
    let failure: unknown;
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      client.release();
      return result;
    } catch (err) {
      failure = err;
    }
    let broken = false;
    try {
      await client.query('ROLLBACK');
    } catch {
      broken = true;
    }
    // The store's statements wrap what PostgreSQL said in a DroplineError: decide on that.
    const said = pgError(failure);
    // A client whose connection broke is destroyed, never handed out again.
    client.release(broken || unavailable(said) ? true : undefined);
    if (mustRetry(said) && attempt < RETRIES) {
      await backOff(attempt);
      continue;
    }
    throw storeError(failure, what);
  }
}

/**
 * One statement outside a transaction (its own implicit one): a serialization failure or
 * deadlock rolled it back whole, so it runs again.
 */
export async function retried<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!mustRetry(err) || attempt >= RETRIES) throw err;
      await backOff(attempt);
    }
  }
}

/** The driver's error under the store's wrapping (storeError keeps it as the cause). */
function pgError(err: unknown): unknown {
  let e = err;
  while (e instanceof DroplineError && e.cause !== undefined) e = e.cause;
  return e;
}

function mustRetry(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRY_CODES.has(code);
}

/** ~10, 20, 40, 80 ms, jittered: two retrying writers do not meet again at once. */
function backOff(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 5 * 2 ** attempt * (0.5 + Math.random())));
}

/** Connection lost or refused, PostgreSQL shutting down, starting or in recovery. */
export function unavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (
    ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH'].includes(
      code,
    )
  )
    return true;
  if (code === '57P01' || code === '57P02' || code === '57P03' || code.startsWith('08')) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  return /Connection terminated|connection timeout|Client has encountered a connection error|not queryable|timeout exceeded when trying to connect|Connection ended/i.test(
    message,
  );
}

/** The store's error for a failure of PostgreSQL (or of the connection to it). */
export function storeError(err: unknown, what: string): DroplineError {
  if (err instanceof DroplineError) return err;
  const e = err as { code?: unknown; message?: unknown; constraint?: unknown };
  const message = typeof e.message === 'string' ? e.message : String(err);
  let code: ErrorCode = 'DROPLINE_ERR_STORE';
  if (unavailable(err)) code = 'DROPLINE_ERR_STORE_UNAVAILABLE';
  else if (e.code === '23505') code = 'DROPLINE_ERR_STORE_CONFLICT';
  const pgCode = typeof e.code === 'string' ? ` (${e.code})` : '';
  return new DroplineError(code, `${what}: ${redactStoreUrl(message)}${pgCode}`, { cause: err });
}

/** File numbers remembered by a store (recordDeliveries). */
const FILE_NO_CACHE = 10_000;

/**
 * What every area of the PostgreSQL store works with (the store's areas are functions of it):
 * the pool, the clock, statements run on the pool or a transaction's client, and the file
 * numbers that make a file's recipient ids one range (../message-ids.ts).
 */
export class PgDb {
  readonly pool: pg.Pool;
  /** The injected clock (tests), or null for the database's now(). */
  readonly clock: (() => Date) | null;
  /** Rows per page when iterating recipients. */
  readonly pageSize: number;
  /**
   * File numbers by fileId, as read from committed rows (a number never changes once given,
   * and a file row is never deleted): reports of a file need no lookup of it each time.
   * Filled only after the transaction that read it committed.
   */
  readonly fileNos = new Map<string, number>();
  /**
   * Short codes by fileId, read when a file's first chunk result is recorded: set when the file
   * is read, before any chunk is sent, and never changed after (docs/replies.md).
   */
  readonly shortCodes = new Map<string, string | null>();

  constructor(pool: pg.Pool, clock: (() => Date) | null, pageSize: number) {
    this.pool = pool;
    this.clock = clock;
    this.pageSize = pageSize;
  }

  /** The :now parameter: the injected clock's instant, or NULL for the database's now(). */
  now(): string | null {
    return this.clock ? this.clock().toISOString() : null;
  }

  /**
   * One statement: on the pool (its own implicit transaction, run again after a deadlock or
   * serialization failure), or on a transaction's client (the transaction is what retries).
   */
  async exec(
    what: string,
    s: Statement,
    params: Record<string, unknown>,
    on: Queryable,
    rowMode?: 'array',
  ): Promise<pg.QueryResult> {
    const config = {
      name: s.name,
      text: s.text,
      values: values(s, params),
      ...(rowMode ? { rowMode } : {}),
    };
    try {
      return on === this.pool ? await retried(() => on.query(config)) : await on.query(config);
    } catch (err) {
      throw storeError(err, what);
    }
  }

  async rows(
    what: string,
    s: Statement,
    params: Record<string, unknown>,
    on: Queryable = this.pool,
  ): Promise<Row[]> {
    return (await this.exec(what, s, params, on)).rows as Row[];
  }

  /** Rows as arrays in the statement's column order (hot reads: no object per row). */
  async arrays(
    what: string,
    s: Statement,
    params: Record<string, unknown>,
    on: Queryable = this.pool,
  ): Promise<unknown[][]> {
    return (await this.exec(what, s, params, on, 'array')).rows as unknown[][];
  }

  async count(
    what: string,
    s: Statement,
    params: Record<string, unknown>,
    on: Queryable = this.pool,
  ): Promise<number> {
    return (await this.exec(what, s, params, on)).rowCount ?? 0;
  }

  tx<T>(what: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return transaction(this.pool, what, fn);
  }

  rememberFileNo(fileId: string, fileNo: number): void {
    // Bounded: a long-running receiver sees many files; the oldest are read again if needed.
    if (this.fileNos.size >= FILE_NO_CACHE) {
      const oldest = this.fileNos.keys().next().value;
      if (oldest !== undefined) this.fileNos.delete(oldest);
    }
    this.fileNos.set(fileId, fileNo);
  }

  /** The file's number (null: unknown file). A number never changes once given. */
  async fileNo(fileId: string, on: Queryable = this.pool): Promise<number | null> {
    const known = this.fileNos.get(fileId);
    if (known !== undefined) return known;
    const [r] = await this.rows(`reading ${fileId}`, FILE_NO, { file_id: fileId }, on);
    if (!r) return null;
    // Remembered from a read on its own (committed), never from inside a transaction.
    if (on === this.pool) this.rememberFileNo(fileId, num(r.file_no));
    return num(r.file_no);
  }

  /** The short code of a file being sent (null: none). */
  async shortCode(fileId: string): Promise<string | null> {
    const known = this.shortCodes.get(fileId);
    if (known !== undefined) return known;
    const [r] = await this.rows(`reading ${fileId}`, SHORT_CODE, { file_id: fileId });
    const code = r?.short_code == null ? null : String(r.short_code);
    if (this.shortCodes.size >= FILE_NO_CACHE) {
      const oldest = this.shortCodes.keys().next().value;
      if (oldest !== undefined) this.shortCodes.delete(oldest);
    }
    this.shortCodes.set(fileId, code);
    return code;
  }

  async range(fileId: string, on: Queryable = this.pool): Promise<{ lo: number; hi: number } | null> {
    const n = await this.fileNo(fileId, on);
    return n === null ? null : idRange(n);
  }
}
