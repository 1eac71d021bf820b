// The Store on node:sqlite. Several dropline processes (a `run` daemon, a `send` command)
// may open one database file: WAL lets readers run beside the one writer, busy_timeout
// makes a writer wait for the lock instead of failing, and every multi-statement write is
// BEGIN IMMEDIATE so it takes the write lock up front (a deferred transaction that reads
// first and then writes can fail with SQLITE_BUSY_SNAPSHOT without waiting at all).
//
// The work is synchronous: each method runs to completion inside one call, so no
// transaction stays open across an await.

import { statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { DatabaseSync, SQLInputValue, SQLOutputValue, StatementSync } from 'node:sqlite';
import type { Worker } from 'node:worker_threads';
import { DroplineError } from '../../errors.ts';
import { localDate } from '../../plan/send-window.ts';
import {
  type BudgetView,
  budgetView,
  decidePermit,
  type PermitAnswer,
  type PermitRequest,
  slowedDown,
} from '../../service/budget.ts';
import { assembleCounts, type ChunkGroup, type OwnGroup } from '../counts.ts';
import { claimVerdict, DUPLICATE_ACTIVE_STATES, DUPLICATE_RECENT_STATES } from '../lifecycle.ts';
import {
  budgetColumns,
  byBulk,
  FILE_EVENTS_LIMIT,
  firstOfEach,
  foldName,
  num,
  numOrNull,
  str,
  strOrNull,
  toBudget,
  toChunk,
  toDeliveryMinute,
  toDestination,
  toFile,
  toFileEvent,
  tokenColumns,
  toRecipient,
  toReply,
  toReportRow,
  toSharedToken,
  toWorkers,
  WORKERS_KEPT_MS,
  WORKERS_SHOWN_MS,
  workerColumns,
} from '../mapping.ts';
import {
  idRange,
  isChunkSeq,
  MAX_FILE_NO,
  parseGenerated,
  SPAN,
  sentForm,
  storedMessageId,
} from '../message-ids.ts';
import type { Migration } from '../migrations.ts';
import {
  abandonedChunkState,
  CANCELLED_DETAIL,
  CHUNK_OUTCOME,
  needsReportCheck,
  type PartWrite,
  planChunkResult,
  reportCheck,
  resultParts,
} from '../outcomes.ts';
import { GAUGE_FILES, GAUGE_IN_DOUBT, TAKEN_OVER_FROM } from '../shared-sql.ts';
import {
  ACCEPTED_DELIVERY,
  type BudgetAccount,
  type ChunkDestination,
  type ChunkInsert,
  type ChunkRecord,
  type ChunkResult,
  type ChunkState,
  type ChunkStateGuard,
  type ClaimedFile,
  type ClaimOptions,
  DELIVERED,
  type DeliveryEvent,
  type DeliveryMinute,
  type DeliveryResult,
  FINAL_FILE_STATES,
  type FileAttachment,
  type FileCounts,
  type FileEvent,
  type FilePatch,
  type FileRecord,
  type FileState,
  type HeldBack,
  type HoldBackOptions,
  type ListFilesOptions,
  type NewFile,
  type NewReply,
  NOTHING_SENT,
  type PartOutcome,
  PENDING_DELIVERY,
  type PruneStep,
  type ReadyFile,
  type RecipientInsert,
  type RecipientOutcome,
  type RecipientRecord,
  type ReplyRecord,
  type ReportRow,
  type SharedToken,
  type Store,
  type StoreGauges,
  type StoreSummary,
  UNKNOWN_DELIVERY,
  WORKER_SILENT_MS,
  type WorkerInfo,
  type WorkerRecord,
} from '../store.ts';
import { connect, sqliteMigrations } from './connection.ts';
import {
  DELIVERY_SET,
  MESSAGE_ID_SQL,
  OUTCOME_SQL,
  PATCH_SQL,
  patchParams,
  RECIPIENT_SQL,
  REPORT_SQL,
  UPDATE_BUDGET,
  WITH_CHUNK,
} from './sql.ts';

export interface SqliteStoreOptions {
  /** Database file, or `:memory:`. */
  path: string;
  /** The clock for timestamps, lease expiry and since-checks (tests move it). */
  now?: () => Date;
  /** How long a writer waits for another connection's write lock (ms). */
  busyTimeoutMs?: number;
  /** Rows per page when iterating recipients. */
  pageSize?: number;
  /** Migrations to apply (tests); the numbered files in ./migrations by default. */
  migrations?: Migration[];
  /**
   * Checkpoint the WAL on a worker thread (a long-running process): a commit then never
   * copies pages back into the database file, nor waits for that copy's fsync.
   */
  backgroundCheckpoints?: boolean;
}

/** Free bytes under which the store's file system counts as full (readiness). */
const MIN_FREE_BYTES = 16 * 1024 ** 2;

// Rows per page of recipients and reports: a page and the CSV text built from it stay small
// young-generation garbage (5,000 rows of a personalized file made ~0.5 MB strings).
const DEFAULT_PAGE = 2000;
/**
 * Rows per multi-row statement (pending recipients, delivery reports): one call into SQLite
 * for 64 rows instead of one per row.
 */
const ROWS_PER_STATEMENT = 64;

/** [from, to) pieces of n items, ROWS_PER_STATEMENT each but the last. */
function pieces(n: number): [number, number][] {
  const out: [number, number][] = [];
  for (let from = 0; from < n; from += ROWS_PER_STATEMENT)
    out.push([from, Math.min(n, from + ROWS_PER_STATEMENT)]);
  return out;
}

/** A report and the recipient it names: `key` as the UPDATE returns it, `values` the two VALUES columns that find it. */
interface Target {
  readonly e: DeliveryEvent;
  readonly key: string;
  readonly values: SQLInputValue[];
}

function changes(r: { changes: number | bigint }): number {
  return Number(r.changes);
}

/** The largest chunk seq (a 32-bit integer, as on PostgreSQL). */

const ACTIVE = JSON.stringify(DUPLICATE_ACTIVE_STATES);
const RECENT = JSON.stringify(DUPLICATE_RECENT_STATES);

/** Rows given a final delivery status, by delivery_minutes' category (migration 0011). */
interface MinuteCounts {
  delivered: number;
  undelivered: number;
  unknown: number;
  accepted: number;
}

function countStatus(counts: MinuteCounts, status: SQLOutputValue | undefined): void {
  if (status === DELIVERED) counts.delivered++;
  else if (status === UNKNOWN_DELIVERY) counts.unknown++;
  else if (status === ACCEPTED_DELIVERY) counts.accepted++;
  else if (status !== PENDING_DELIVERY) counts.undelivered++;
}

/** The minute of an ISO-8601 UTC instant, as delivery_minutes keys it (2026-03-01T12:34:00.000Z). */
function minuteOf(iso: string): string {
  return `${iso.slice(0, 16)}:00.000Z`;
}

/** Lists travel as one JSON parameter (`IN (SELECT value FROM json_each(?))`): one cached statement for any length. */
function list(values: readonly string[] | undefined): string | null {
  return values === undefined ? null : JSON.stringify(values);
}

export class SqliteStore implements Store {
  readonly path: string;
  /** Explicit transactions committed by this instance (batching is observable in tests). */
  transactions = 0;
  private readonly db: DatabaseSync;
  private readonly clock: () => Date;
  private readonly pageSize: number;
  private readonly migrations: Migration[] | undefined;
  private readonly statements = new Map<string, StatementSync>();
  private checkpointer: Worker | null = null;

  constructor(options: SqliteStoreOptions) {
    this.path = options.path;
    this.clock = options.now ?? (() => new Date());
    this.pageSize = options.pageSize ?? DEFAULT_PAGE;
    this.migrations = options.migrations;
    ({ db: this.db, checkpointer: this.checkpointer } = connect(options.path, {
      busyTimeoutMs: options.busyTimeoutMs ?? 10_000,
      checkpointer: options.backgroundCheckpoints === true,
    }));
  }

  private now(): string {
    return this.clock().toISOString();
  }

  private stmt(sql: string): StatementSync {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  /** A cached statement whose rows come back as arrays (no per-row object with 16 keys). */
  private arrays(sql: string): StatementSync {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      s.setReturnArrays(true);
      this.statements.set(sql, s);
    }
    return s;
  }

  private tx<T>(fn: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    // What the transaction learns is remembered only once it commits: nothing cached may
    // outlive a rollback (a file number read inside it may be gone after one).
    const learnt = new Map<string, number>();
    this.learnt = learnt;
    try {
      const result = fn();
      this.db.exec('COMMIT');
      this.transactions++;
      for (const [fileId, n] of learnt) this.fileNos.set(fileId, n);
      return result;
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw err;
    } finally {
      this.learnt = null;
    }
  }

  async migrate(): Promise<void> {
    const migrations = this.migrations ?? sqliteMigrations();
    try {
      // What is applied already is read without the write lock: a command opening an
      // up-to-date database (status beside a busy daemon) never waits for another writer.
      const applied = new Set(this.appliedVersions());
      const missing = migrations.filter((m) => !applied.has(m.version));
      if (missing.length > 0)
        this.tx(() =>
          this.db.exec(
            'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
          ),
        );
      const newest = migrations.at(-1)?.version ?? 0;
      for (const m of missing) {
        // Checked again inside the transaction: another process may be migrating the same file.
        this.tx(() => {
          const done = this.db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version);
          if (done) return;
          this.db.exec(m.sql);
          this.db
            .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
            .run(m.version, m.name, this.now());
        });
      }
      const top = this.db.prepare('SELECT max(version) AS v FROM schema_migrations').get();
      const version = numOrNull(top?.v) ?? 0;
      if (version > newest) {
        throw new DroplineError(
          'DROPLINE_ERR_STORE_SCHEMA',
          `${this.path} is at schema version ${version}, newer than this dropline knows (${newest})`,
        );
      }
    } catch (err) {
      if (err instanceof DroplineError) throw err;
      throw new DroplineError('DROPLINE_ERR_STORE', `migrating ${this.path}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  /** The versions recorded in schema_migrations (none when the table does not exist yet). */
  private appliedVersions(): number[] {
    const table = this.db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
      .get();
    if (!table) return [];
    return this.db
      .prepare('SELECT version FROM schema_migrations WHERE version > 0')
      .all()
      .map((r) => num(r.version));
  }

  // ---- settings ----

  async keepSetting(key: string, value: string): Promise<string> {
    // Read first: a store that is only read (status on a read-only file) writes nothing.
    const read = () => this.stmt('SELECT value FROM settings WHERE key = ?').get(key);
    const kept = read();
    if (kept) return String(kept.value);
    this.stmt('INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)').run(key, value);
    return String(read()!.value);
  }

  // ---- service tokens ----

  async sharedToken(key: string): Promise<SharedToken | null> {
    const r = this.stmt(
      `SELECT access_token, refresh_token, renew_at, generation FROM service_tokens
       WHERE account_key = ? AND generation > 0`,
    ).get(key);
    return r ? toSharedToken(r) : null;
  }

  async claimTokenRenewal(key: string, owner: string, seen: number, ms: number): Promise<boolean> {
    const now = this.now();
    const until = new Date(Date.parse(now) + ms).toISOString();
    return this.tx(() => {
      this.stmt('INSERT OR IGNORE INTO service_tokens (account_key) VALUES (?)').run(key);
      const r = this.stmt(
        `UPDATE service_tokens SET renewing_owner = :owner, renewing_until = :until
         WHERE account_key = :key AND generation = :seen
           AND (renewing_owner IS NULL OR renewing_until <= :now OR renewing_owner = :owner)`,
      ).run({ key, owner, until, seen, now });
      return changes(r) === 1;
    });
  }

  async storeToken(
    key: string,
    owner: string,
    token: { accessToken: string; refreshToken: string | null; renewAt: string },
  ): Promise<SharedToken | null> {
    const [r] = this.stmt(
      `UPDATE service_tokens SET access_token = :access, refresh_token = :refresh, renew_at = :renew_at,
         generation = generation + 1, renewing_owner = NULL, renewing_until = NULL
       WHERE account_key = :key AND renewing_owner = :owner
       RETURNING access_token, refresh_token, renew_at, generation`,
    ).all(tokenColumns(key, owner, token));
    return r ? toSharedToken(r) : null;
  }

  async releaseTokenRenewal(key: string, owner: string): Promise<void> {
    this.stmt(
      'UPDATE service_tokens SET renewing_owner = NULL, renewing_until = NULL WHERE account_key = ? AND renewing_owner = ?',
    ).run(key, owner);
  }

  /** The account's budget row (made when missing), inside a write transaction. */
  private budgetRow(account: BudgetAccount): Record<string, SQLOutputValue> {
    this.stmt('INSERT OR IGNORE INTO send_budgets (account_key, account) VALUES (?, ?)').run(
      account.key,
      account.name,
    );
    return this.stmt('SELECT * FROM send_budgets WHERE account_key = ?').get(account.key)!;
  }

  async takeSendPermit(account: BudgetAccount, req: PermitRequest): Promise<PermitAnswer> {
    return this.tx(() => {
      // Read once the write lock is held: a decision is never dated before its wait.
      const now = Date.parse(this.now());
      const key = account.key;
      const row = this.budgetRow(account);
      // Expired, or held by a worker silent past WORKER_SILENT_MS (killed): they no longer count.
      this.stmt(
        `DELETE FROM send_permits WHERE account_key = ? AND (lease_until <= ? OR owner IN
           (SELECT worker_id FROM workers WHERE heartbeat_at < ?))`,
      ).run(key, now, new Date(now - WORKER_SILENT_MS).toISOString());
      const live = num(this.stmt('SELECT count(*) AS n FROM send_permits WHERE account_key = ?').get(key)!.n);
      const { state, answer } = decidePermit(toBudget(row), now, live, req);
      if (state) this.stmt(UPDATE_BUDGET).run({ key, ...budgetColumns(state) });
      if (answer.granted)
        this.stmt(
          'INSERT INTO send_permits (permit_id, account_key, owner, lease_until) VALUES (?, ?, ?, ?)',
        ).run(req.permitId, key, req.owner, now + answer.waitMs + req.leaseMs);
      return answer;
    });
  }

  async releaseSendPermit(accountKey: string, permitId: string): Promise<void> {
    this.stmt('DELETE FROM send_permits WHERE permit_id = ? AND account_key = ?').run(permitId, accountKey);
  }

  async slowSends(
    account: BudgetAccount,
    trouble: { reason: string; retryAfterMs?: number | undefined },
  ): Promise<void> {
    this.tx(() => {
      const now = Date.parse(this.now());
      const row = this.budgetRow(account);
      this.stmt(UPDATE_BUDGET).run({
        key: account.key,
        ...budgetColumns(slowedDown(toBudget(row), now, trouble)),
      });
    });
  }

  async sendBudgets(): Promise<BudgetView[]> {
    const now = Date.parse(this.now());
    return this.stmt(
      `SELECT b.*, (SELECT count(*) FROM send_permits p WHERE p.account_key = b.account_key
                     AND p.lease_until > ? AND p.owner NOT IN
                       (SELECT worker_id FROM workers WHERE heartbeat_at < ?)) AS live
       FROM send_budgets b ORDER BY b.account`,
    )
      .all(now, new Date(now - WORKER_SILENT_MS).toISOString())
      .map((r) => budgetView(str(r.account), toBudget(r), now, num(r.live)));
  }

  async heartbeat(worker: WorkerInfo): Promise<void> {
    const now = this.now();
    this.stmt(
      `INSERT INTO workers (worker_id, host, pid, version, started_at, heartbeat_at)
       VALUES (:worker_id, :host, :pid, :version, :now, :now)
       ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = :now, stopped_at = NULL`,
    ).run({ ...workerColumns(worker), now });
    const old = new Date(Date.parse(now) - WORKERS_KEPT_MS).toISOString();
    this.stmt('DELETE FROM workers WHERE heartbeat_at < ?').run(old);
  }

  async workerStopped(workerId: string): Promise<void> {
    this.stmt('UPDATE workers SET stopped_at = ? WHERE worker_id = ?').run(this.now(), workerId);
  }

  async listWorkers(): Promise<WorkerRecord[]> {
    const now = this.now();
    const since = new Date(Date.parse(now) - WORKERS_SHOWN_MS).toISOString();
    const rows = this.stmt(
      'SELECT * FROM workers WHERE heartbeat_at >= ? ORDER BY started_at DESC, worker_id',
    ).all(since);
    const held = this.stmt(
      `SELECT file_id, name, state, lease_owner, taken_over_from FROM files
       WHERE lease_owner IS NOT NULL AND lease_until > ? ORDER BY file_no`,
    ).all(now);
    return toWorkers(rows, held, (r) => Date.parse(now) - Date.parse(str(r.heartbeat_at)));
  }

  async ping(): Promise<void> {
    try {
      this.stmt('SELECT count(*) AS n FROM schema_migrations').get();
    } catch (err) {
      throw new DroplineError('DROPLINE_ERR_STORE', `${this.path}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    await this.probeWrite();
    if (this.path === ':memory:') return;
    // A WAL that reuses its frames can still commit on a full disk, until it has to grow or
    // a file is ingested: the free space says it first.
    const fs = await statfs(dirname(this.path));
    const free = fs.bavail * fs.bsize;
    if (free < MIN_FREE_BYTES) {
      throw new DroplineError(
        'DROPLINE_ERR_STORE_READONLY',
        `${this.path}: the disk is full (${Math.floor(free / 1024)} KiB free, under ${MIN_FREE_BYTES / 1024 ** 2} MiB)`,
      );
    }
  }

  async probeWrite(): Promise<void> {
    // A row written and deleted in one committed transaction: a real write to the WAL (a
    // rolled-back one never reaches the disk), and nothing left behind.
    try {
      this.tx(() => {
        this.stmt('INSERT INTO schema_migrations (version, name, applied_at) VALUES (-1, ?, ?)').run(
          'write-probe',
          this.now(),
        );
        this.stmt('DELETE FROM schema_migrations WHERE version = -1').run();
      });
    } catch (err) {
      throw new DroplineError(
        'DROPLINE_ERR_STORE_READONLY',
        `${this.path} cannot be written: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  async close(): Promise<void> {
    const checkpointer = this.checkpointer;
    if (checkpointer) {
      this.checkpointer = null;
      // ref(): this thread waits for it to close its connection (it is unref'd to not keep a
      // process alive on its own).
      checkpointer.ref();
      const stopped = new Promise((resolve) => checkpointer.once('exit', resolve));
      checkpointer.postMessage('stop');
      await stopped;
    }
    if (!this.db.isOpen) return;
    this.statements.clear();
    this.db.close();
  }

  // ---- files ----

  async registerFile(file: NewFile): Promise<{ file: FileRecord; created: boolean }> {
    const now = this.now();
    const inserted = this.stmt(
      `INSERT INTO files (file_id, source, name, path, sha256, bytes, state, forced,
         rejection_code, rejection_message, reason, created_at, updated_at, timestamps)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, json_object(?, ?))
       ON CONFLICT DO NOTHING RETURNING *`,
    ).all(
      file.fileId,
      file.source,
      file.name,
      file.path,
      file.sha256,
      file.bytes,
      file.state,
      file.forced ? 1 : 0,
      file.rejection?.code ?? null,
      file.rejection?.message ?? null,
      file.rejection?.message ?? null,
      now,
      now,
      file.state,
      now,
    )[0];
    if (inserted) return { file: toFile(inserted), created: true };
    // Same content at the same place, or the same fileId (the same bytes dropped again).
    const existing = this.stmt(
      `SELECT * FROM files WHERE (source = ? AND path = ? AND sha256 = ?) OR file_id = ?
       ORDER BY file_id = ? LIMIT 1`,
    ).get(file.source, file.path, file.sha256, file.fileId, file.fileId);
    if (!existing)
      throw new DroplineError('DROPLINE_ERR_STORE', `registering ${file.fileId}: conflict without a row`);
    return { file: toFile(existing), created: false };
  }

  async claimFiles(
    source: string,
    files: readonly ReadyFile[],
    options: ClaimOptions,
  ): Promise<ClaimedFile[]> {
    if (files.length === 0) return [];
    const now = this.now();
    const same = this.stmt(
      `SELECT * FROM files WHERE source = :source AND sha256 = :sha
         AND (path = :path OR (name = :name AND state IN (SELECT value FROM json_each(:active))))
       ORDER BY path = :path DESC LIMIT 1`,
    );
    const count = this.stmt('SELECT count(*) AS n FROM files WHERE source = ? AND sha256 = ?');
    const active = this.stmt(
      `SELECT * FROM files WHERE source = :source AND sha256 = :sha
         AND (state IN (SELECT value FROM json_each(:active))
              OR (state IN (SELECT value FROM json_each(:recent))
                  AND (json_extract(timestamps, '$.submitted') >= :since OR json_extract(timestamps, '$.completed') >= :since)))
       ORDER BY created_at DESC, rowid DESC LIMIT 1`,
    );
    const insert = this.stmt(
      `INSERT INTO files (file_id, source, name, path, sha256, bytes, state, forced, rejection_code, rejection_message,
         reason, created_at, updated_at, timestamps)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, json_object(?, ?))
       ON CONFLICT DO NOTHING RETURNING *`,
    );
    return this.tx(() =>
      files.map((f): ClaimedFile => {
        const existing = same.get({ source, sha: f.sha256, path: f.path, name: f.name, active: ACTIVE });
        if (existing) return { file: toFile(existing), created: false, duplicateOf: null };
        const prior = num(count.get(source, f.sha256)?.n);
        const dup =
          prior > 0 && !options.force
            ? active.get({
                source,
                sha: f.sha256,
                since: options.duplicateSince,
                active: ACTIVE,
                recent: RECENT,
              })
            : undefined;
        const duplicateOf = dup ? toFile(dup) : null;
        const { state, rejectionCode, message } = claimVerdict(duplicateOf);
        const row = insert.get(
          options.idFor(f.sha256, prior + 1),
          source,
          f.name,
          f.path,
          f.sha256,
          f.bytes,
          state,
          options.force ? 1 : 0,
          rejectionCode,
          message,
          message,
          now,
          now,
          state,
          now,
        );
        if (!row)
          throw new DroplineError('DROPLINE_ERR_STORE_CONFLICT', `claiming ${f.path}: fileId already taken`);
        return { file: toFile(row), created: true, duplicateOf };
      }),
    );
  }

  async setPaths(paths: readonly { fileId: string; path: string }[]): Promise<void> {
    if (paths.length === 0) return;
    const now = this.now();
    const update = this.stmt('UPDATE files SET path = ?, updated_at = ? WHERE file_id = ?');
    this.tx(() => {
      for (const p of paths) update.run(p.path, now, p.fileId);
    });
  }

  async getFile(fileId: string): Promise<FileRecord | null> {
    const r = this.stmt('SELECT * FROM files WHERE file_id = ?').get(fileId);
    return r ? toFile(r) : null;
  }

  async listFiles(options: ListFilesOptions = {}): Promise<FileRecord[]> {
    // rowid breaks ties between files registered within one millisecond (insertion order).
    // The search: the name folded by the store's own function (connection.ts: SQLite's lower()
    // folds ASCII only), instr and substr comparing text as it is (no LIKE: % and _ are
    // plain). A scan of the files newest first until the page is full: ~11 ms at 20,000 files
    // when none matches, no index needed.
    return this.stmt(
      `SELECT * FROM files
       WHERE (:source IS NULL OR source = :source)
         AND (:states IS NULL OR state IN (SELECT value FROM json_each(:states)))
         AND (:search IS NULL OR instr(dropline_fold(name), :search) > 0
              OR substr(lower(file_id), 1, length(:search)) = :search)
         AND (:before IS NULL OR (created_at, rowid) < (SELECT created_at, rowid FROM files WHERE file_id = :before))
       ORDER BY created_at DESC, rowid DESC LIMIT :limit`,
    )
      .all({
        source: options.source ?? null,
        states: list(options.states),
        search: options.search ? foldName(options.search) : null,
        before: options.before ?? null,
        limit: options.limit ?? -1,
      })
      .map(toFile);
  }

  async fileEvents(fileId: string, limit = FILE_EVENTS_LIMIT): Promise<FileEvent[]> {
    // The newest `limit` by the index (file_id, id), then oldest first.
    return this.stmt(
      `SELECT at, state, reason FROM (
         SELECT id, at, state, reason FROM file_events WHERE file_id = ? ORDER BY id DESC LIMIT ?)
       ORDER BY id`,
    )
      .all(fileId, Math.max(0, Math.trunc(limit)))
      .map(toFileEvent);
  }

  async gauges(): Promise<StoreGauges> {
    const files = this.stmt(GAUGE_FILES).all() as { state: FileState; n: number }[];
    const doubt = this.stmt(GAUGE_IN_DOUBT).get() as { n: number };
    return {
      files: Object.fromEntries(files.map((r) => [r.state, Number(r.n)])),
      chunksInDoubt: Number(doubt.n),
    };
  }

  async countBySha(source: string, sha256: string): Promise<number> {
    const r = this.stmt('SELECT count(*) AS n FROM files WHERE source = ? AND sha256 = ?').get(
      source,
      sha256,
    );
    return num(r?.n);
  }

  async transition(
    fileId: string,
    to: FileState,
    options: { from?: readonly FileState[]; owner?: string; patch?: FilePatch } = {},
  ): Promise<FileRecord | null> {
    // all(), never get(), for a write outside a transaction: get() stops at the first row
    // and resets the statement, and node:sqlite drops the error of the commit that reset
    // does (a full disk). The row would come back for a write the database does not hold.
    const [r] = this.stmt(PATCH_SQL).all({
      ...patchParams(options.patch),
      to,
      now: this.now(),
      file_id: fileId,
      from: list(options.from),
      owner: options.owner ?? null,
    });
    return r ? toFile(r) : null;
  }

  async updateFile(fileId: string, patch: FilePatch): Promise<void> {
    this.stmt(PATCH_SQL).all({
      ...patchParams(patch),
      to: null,
      now: this.now(),
      file_id: fileId,
      from: null,
      owner: null,
    });
  }

  // ---- leases ----

  async acquireFile(
    owner: string,
    states: readonly FileState[],
    leaseMs: number,
  ): Promise<FileRecord | null> {
    const now = this.clock();
    // One statement: the pick and the take cannot be split by another writer (SQLite
    // serialises writers; the repeated lease condition states the rule all the same).
    const r = this.stmt(
      `UPDATE files SET lease_owner = :owner, lease_until = :until, ${TAKEN_OVER_FROM}
       WHERE file_id = (
           SELECT file_id FROM files
           WHERE state IN (SELECT value FROM json_each(:states))
             AND (lease_owner IS NULL OR lease_until <= :now)
             AND (state <> 'scheduled' OR scheduled_until <= :now)
           ORDER BY updated_at, file_id LIMIT 1)
         AND (lease_owner IS NULL OR lease_until <= :now)
       RETURNING *`,
    ).all({
      owner,
      until: new Date(now.getTime() + leaseMs).toISOString(),
      states: JSON.stringify(states),
      now: now.toISOString(),
    })[0];
    return r ? toFile(r) : null;
  }

  async takeLease(fileId: string, owner: string, leaseMs: number): Promise<boolean> {
    const now = this.clock();
    const r = this.stmt(
      `UPDATE files SET lease_owner = :owner, lease_until = :until
       WHERE file_id = :file_id AND (lease_owner IS NULL OR lease_until <= :now OR lease_owner = :owner)`,
    ).run({
      owner,
      until: new Date(now.getTime() + leaseMs).toISOString(),
      file_id: fileId,
      now: now.toISOString(),
    });
    return changes(r) === 1;
  }

  async renewLease(fileId: string, owner: string, leaseMs: number): Promise<boolean> {
    const until = new Date(this.clock().getTime() + leaseMs).toISOString();
    const r = this.stmt('UPDATE files SET lease_until = ? WHERE file_id = ? AND lease_owner = ?').run(
      until,
      fileId,
      owner,
    );
    return changes(r) === 1;
  }

  async releaseLease(fileId: string, owner: string): Promise<void> {
    this.stmt(
      'UPDATE files SET lease_owner = NULL, lease_until = NULL WHERE file_id = ? AND lease_owner = ?',
    ).run(fileId, owner);
  }

  // ---- recipient ids ----

  /** File numbers read from committed state: a file's number never changes once given. */
  private readonly fileNos = new Map<string, number>();
  /** File numbers read inside the open transaction (tx), cached when it commits. */
  private learnt: Map<string, number> | null = null;

  /** The file's file_no (null: unknown file, or a row from before migration 0005 that has none). */
  private fileNo(fileId: string): number | null {
    const cached = this.fileNos.get(fileId) ?? this.learnt?.get(fileId);
    if (cached !== undefined) return cached;
    return this.readFileNo(fileId);
  }

  /** The file's file_no as the database has it now (inside a write: what this write may touch). */
  private readFileNo(fileId: string): number | null {
    const n = numOrNull(this.stmt('SELECT file_no FROM files WHERE file_id = ?').get(fileId)?.file_no);
    if (n !== null) (this.learnt ?? this.fileNos).set(fileId, n);
    return n;
  }

  /** The file's id range [lo, hi], or null when it has no file_no (so no recipients). */
  private range(fileId: string): { lo: number; hi: number } | null {
    const n = this.fileNo(fileId);
    return n === null ? null : { lo: n * SPAN, hi: n * SPAN + SPAN - 1 };
  }

  /** The id range holding a chunk's recipients ([1, 0]: none). */
  private span(fileId: string, seq: number): { lo: number; hi: number } {
    const n = this.fileNo(fileId);
    const r =
      n === null
        ? undefined
        : this.stmt('SELECT first_id, last_id FROM chunk_spans WHERE file_no = ? AND seq = ?').get(n, seq);
    return r ? { lo: num(r.first_id), hi: num(r.last_id) } : { lo: 1, hi: 0 };
  }

  /**
   * Inside a write transaction: the file's number, read from the database (never from a
   * cache), so the rows written or deleted are the file's own.
   */
  private ownFileNo(fileId: string): number {
    const n = this.readFileNo(fileId);
    if (n === null) throw new DroplineError('DROPLINE_ERR_STORE', `recipients of unknown file ${fileId}`);
    if (n >= MAX_FILE_NO) throw new DroplineError('DROPLINE_ERR_STORE', `file number ${n} out of range`);
    return n;
  }

  // ---- ingest ----

  async clearRecipients(fileId: string): Promise<void> {
    this.tx(() => {
      // The file's own number as committed, not a cached one: only its own rows go.
      const n = this.readFileNo(fileId);
      if (n !== null) {
        this.stmt('DELETE FROM recipients WHERE id BETWEEN ? AND ?').run(n * SPAN, n * SPAN + SPAN - 1);
        this.stmt('DELETE FROM chunk_spans WHERE file_no = ?').run(n);
        // Its delivery minutes count rows no longer there (as the spans' counters did).
        this.stmt('DELETE FROM delivery_minutes WHERE file_no = ?').run(n);
      }
      this.stmt('DELETE FROM chunks WHERE file_id = ?').run(fileId);
      this.stmt('DELETE FROM file_attachments WHERE file_id = ?').run(fileId);
    });
  }

  async setAttachments(fileId: string, attachments: readonly FileAttachment[]): Promise<void> {
    this.tx(() => {
      this.stmt('DELETE FROM file_attachments WHERE file_id = ?').run(fileId);
      const insert = this.stmt(
        'INSERT INTO file_attachments (file_id, seq, name, content_type, content) VALUES (?, ?, ?, ?, ?)',
      );
      attachments.forEach((a, i) => {
        insert.run(fileId, i + 1, a.name, a.contentType, a.content);
      });
    });
  }

  async attachments(fileId: string): Promise<FileAttachment[]> {
    return this.stmt(
      'SELECT name, content_type, content FROM file_attachments WHERE file_id = ? ORDER BY seq',
    )
      .all(fileId)
      .map((r) => ({ name: str(r.name), contentType: str(r.content_type), content: str(r.content) }));
  }

  async insertRecipients(fileId: string, rows: readonly RecipientInsert[]): Promise<void> {
    if (rows.length === 0) return;
    const now = this.now();
    const insert = this.stmt(
      `INSERT INTO recipients (id, line, k, number, value, message_id, text, chunk_seq, outcome, code,
         detail, sms_count, status, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    // Pending valid recipients (most rows) go ROWS_PER_STATEMENT to a statement, 8 values each:
    // one call into SQLite per 64 rows instead of one per row (~40% less time a row).
    const insertPending = (n: number): StatementSync =>
      this.rowsStatement(
        'pending',
        n,
        `(?, ?, ?, ?, ?, ?, ?, 'pending', ?, '${PENDING_DELIVERY}', :now)`,
        (list) =>
          `INSERT INTO recipients (id, line, k, number, message_id, text, chunk_seq, outcome, sms_count, status, updated_at)
           VALUES ${list}`,
      );
    const pending: SQLInputValue[] = [];
    const span = this.stmt(
      `INSERT INTO chunk_spans (file_no, seq, first_id, last_id) VALUES (?, ?, ?, ?)
       ON CONFLICT (file_no, seq) DO UPDATE SET first_id = min(first_id, excluded.first_id),
         last_id = max(last_id, excluded.last_id)`,
    );
    this.tx(() => {
      const fileNo = this.ownFileNo(fileId);
      const base = fileNo * SPAN;
      // the id range of each chunk in this batch
      let seq = -1;
      let first = 0;
      let last = 0;
      for (const r of rows) {
        if (r.chunkSeq !== null) {
          if (r.chunkSeq !== seq) {
            if (seq !== -1) span.run(fileNo, seq, base + first, base + last);
            seq = r.chunkSeq;
            first = r.idx;
            last = r.idx;
          } else {
            if (r.idx < first) first = r.idx;
            if (r.idx > last) last = r.idx;
          }
        }
        if (!(r.idx >= 0 && r.idx < SPAN))
          throw new DroplineError('DROPLINE_ERR_STORE', `idx ${r.idx} out of range`);
        if (r.outcome === 'pending' && r.value === null && r.code === null && r.detail === null) {
          pending.push(
            base + r.idx,
            r.line,
            r.k,
            r.number,
            storedMessageId(fileId, r),
            r.text,
            r.chunkSeq,
            r.smsCount,
          );
          if (pending.length === ROWS_PER_STATEMENT * 8) {
            insertPending(ROWS_PER_STATEMENT).run({ now }, ...pending);
            pending.length = 0;
          }
          continue;
        }
        insert.run(
          base + r.idx,
          r.line,
          r.k,
          r.number,
          r.value,
          storedMessageId(fileId, r),
          r.text,
          r.chunkSeq,
          r.outcome,
          r.code,
          r.detail,
          r.smsCount,
          PENDING_DELIVERY,
          now,
        );
      }
      if (seq !== -1) span.run(fileNo, seq, base + first, base + last);
      if (pending.length > 0) insertPending(pending.length / 8).run({ now }, ...pending);
    });
  }

  async insertChunks(fileId: string, chunks: readonly ChunkInsert[]): Promise<void> {
    if (chunks.length === 0) return;
    const now = this.now();
    const insert = this.stmt(
      `INSERT INTO chunks (file_id, seq, size, state, attempts, updated_at) VALUES (?, ?, ?, 'pending', 0, ?)`,
    );
    this.tx(() => {
      for (const c of chunks) insert.run(fileId, c.seq, c.size, now);
    });
  }

  // ---- sending ----

  async listChunks(fileId: string, states?: readonly ChunkState[]): Promise<ChunkRecord[]> {
    return this.stmt(
      `SELECT * FROM chunks WHERE file_id = :file_id
         AND (:states IS NULL OR state IN (SELECT value FROM json_each(:states)))
       ORDER BY seq`,
    )
      .all({ file_id: fileId, states: list(states) })
      .map(toChunk);
  }

  async chunkRecipients(
    fileId: string,
    seq: number,
    outcomes?: readonly RecipientOutcome[],
  ): Promise<RecipientRecord[]> {
    const range = this.range(fileId);
    if (!range) return [];
    const { lo, hi } = this.span(fileId, seq);
    return this.stmt(
      `SELECT ${RECIPIENT_SQL} FROM ${WITH_CHUNK}
       WHERE r.id BETWEEN :lo AND :hi AND r.chunk_seq = :seq
         AND (:outcomes IS NULL OR ${OUTCOME_SQL} IN (SELECT value FROM json_each(:outcomes)))
       ORDER BY r.id`,
    )
      .all({ fid: fileId, seq, lo, hi, outcomes: list(outcomes) })
      .map((r) => toRecipient(r, fileId, range.lo));
  }

  async chunkDestinations(fileId: string, seq: number): Promise<ChunkDestination[]> {
    // Rows saying `pending` follow their chunk: pending only while the chunk is (or inflight).
    const chunk = this.stmt('SELECT state FROM chunks WHERE file_id = ? AND seq = ?').get(fileId, seq);
    if (chunk && CHUNK_OUTCOME[str(chunk.state) as ChunkState] !== 'pending') return [];
    const { lo, hi } = this.span(fileId, seq);
    const rows = this.arrays(
      `SELECT number, message_id, text, line, k FROM recipients
       WHERE id BETWEEN ? AND ? AND chunk_seq = ? AND outcome = 'pending' ORDER BY id`,
    ).all(lo, hi, seq) as unknown as SQLOutputValue[][];
    return rows.map((r) => toDestination(r, fileId));
  }

  async chunkMessageIds(
    fileId: string,
    seq: number,
    numbers: readonly string[],
  ): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    // A seq the chunks table cannot hold names no chunk (and, on PostgreSQL, would fail the read).
    if (numbers.length === 0 || !isChunkSeq(seq)) return out;
    const { lo, hi } = this.span(fileId, seq);
    if (lo > hi) return out;
    // The chunk's span (a range scan of its rows), then its numbers; '' (no messageId) reads NULL.
    const rows = this.arrays(
      `SELECT number, ${MESSAGE_ID_SQL} FROM recipients
       WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq AND number IN (SELECT value FROM json_each(:numbers))
       ORDER BY id`,
    ).all({ fid: fileId, lo, hi, seq, numbers: JSON.stringify(numbers) }) as unknown as SQLOutputValue[][];
    for (const [number, messageId] of rows) {
      if (messageId === null || messageId === undefined) continue;
      const n = str(number);
      if (!out.has(n)) out.set(n, str(messageId));
    }
    return out;
  }

  async setChunkState(
    fileId: string,
    seq: number,
    to: ChunkState,
    from: readonly ChunkState[],
    options: ChunkStateGuard = {},
  ): Promise<boolean> {
    const r = this.stmt(
      `UPDATE chunks SET state = :to, attempts = attempts + (:to = 'inflight'), updated_at = :now
       WHERE file_id = :file_id AND seq = :seq AND state IN (SELECT value FROM json_each(:from))
         AND (:owner IS NULL AND :file_state IS NULL
              OR EXISTS (SELECT 1 FROM files WHERE file_id = :file_id
                AND (:owner IS NULL OR (lease_owner = :owner AND lease_until > :now))
                AND (:file_state IS NULL OR state = :file_state)))`,
    ).run({
      to,
      now: this.now(),
      file_id: fileId,
      seq,
      from: JSON.stringify(from),
      owner: options.owner ?? null,
      file_state: options.fileState ?? null,
    });
    return changes(r) === 1;
  }

  async recordChunkResult(fileId: string, seq: number, result: ChunkResult): Promise<ChunkState> {
    const now = this.now();
    const reportedPart = this.stmt(
      `SELECT 1 FROM recipients WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq
         AND (:ids IS NULL OR ${MESSAGE_ID_SQL} IN (SELECT value FROM json_each(:ids)))
         AND status <> '${PENDING_DELIVERY}' LIMIT 1`,
    );
    // :ids maps each row's messageId to its transaction number (null: the row keeps its own);
    // the chunk's message ids are made once, then joined.
    const setPart = this.stmt(
      `WITH r AS MATERIALIZED (
         SELECT id AS rid, ${MESSAGE_ID_SQL} AS mid FROM recipients
         WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq)
       UPDATE recipients SET outcome = :outcome, code = :code, detail = :detail,
         transaction_number = coalesce(m.value, transaction_number), updated_at = :now
       FROM json_each(:ids) AS m JOIN r ON r.mid = m.key
       WHERE recipients.id = r.rid`,
    );
    // A part that is the whole request (PartOutcome.wholeChunk): its recipients are the
    // chunk's unsettled ones, found by the chunk index without a list to match.
    const reportedWhole = this.stmt(
      `SELECT 1 FROM recipients WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq
         AND outcome IN ('pending', 'in_doubt') AND status <> '${PENDING_DELIVERY}' LIMIT 1`,
    );
    const setWhole = this.stmt(
      `UPDATE recipients SET outcome = :outcome, code = :code, detail = :detail,
         transaction_number = coalesce(:tn, transaction_number), updated_at = :now
       WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq AND outcome IN ('pending', 'in_doubt')`,
    );
    // The usual case: the whole request has the chunk's result, so its recipients follow the
    // chunk (migration 0003). Only rows an earlier result marked (in doubt, held) are touched.
    const followWhole = this.stmt(
      `UPDATE recipients SET outcome = 'pending', code = NULL, detail = NULL, updated_at = :now
       WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq
         AND (outcome = 'in_doubt' OR (outcome = 'pending' AND code IS NOT NULL))`,
    );
    const { lo, hi } = this.span(fileId, seq);
    const parts = resultParts(result);
    const row = (w: PartWrite) => ({
      outcome: w.outcome,
      code: w.code,
      detail: w.detail,
      tn: w.transactionNumber,
      now,
      seq,
      lo,
      hi,
    });
    return this.tx(() => {
      const reported = (part: PartOutcome): boolean => {
        const check = reportCheck(part);
        if (check.kind === 'whole') return reportedWhole.get({ seq, lo, hi }) !== undefined;
        const ids = check.kind === 'ids' ? JSON.stringify(check.ids) : null;
        return reportedPart.get({ seq, lo, hi, ids, fid: fileId }) !== undefined;
      };
      const plan = planChunkResult(result, parts, (p) => needsReportCheck(p) && reported(p));
      for (const { messageIds, transactionNumbers, write } of plan.byIds) {
        const ids: Record<string, string | null> = Object.create(null);
        messageIds.forEach((id, i) => {
          ids[id] = transactionNumbers[i]!;
        });
        setPart.run({ ...write, now, seq, lo, hi, ids: JSON.stringify(ids), fid: fileId });
      }
      if (plan.whole) {
        if (plan.whole.follows) followWhole.run({ now, seq, lo, hi });
        else setWhole.run(row(plan.whole.write));
      }
      if (result.finalStatus) {
        // Its sent rows' final status (a channel without delivery reports): sent themselves,
        // or following a chunk that is accepted.
        const given = changes(
          this.stmt(
            `UPDATE recipients SET status = :status, updated_at = :now
             WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq AND status = '${PENDING_DELIVERY}'
               AND (outcome = 'sent' OR (:follows AND outcome = 'pending' AND code IS NULL))`,
          ).run({ status: result.finalStatus, now, lo, hi, seq, follows: plan.state === 'accepted' ? 1 : 0 }),
        );
        const file = { lo: Math.floor(lo / SPAN) * SPAN };
        this.addDeliveryMinute(file, now, { delivered: 0, undelivered: 0, unknown: 0, accepted: given });
      }
      this.stmt(
        `UPDATE chunks SET state = :state, attempts = :attempts, transaction_number = coalesce(:tn, transaction_number),
           error_code = :code, error_message = :message, updated_at = :now
         WHERE file_id = :file_id AND seq = :seq`,
      ).run({
        state: plan.state,
        attempts: result.attempts,
        tn: result.transactionNumber ?? null,
        code: plan.code,
        message: plan.message,
        now,
        file_id: fileId,
        seq,
      });
      return plan.state;
    });
  }

  async markInflightInDoubt(fileId: string): Promise<number> {
    const now = this.now();
    return this.tx(() => {
      const inflight = this.stmt(
        `SELECT seq FROM chunks WHERE file_id = ? AND state = 'inflight' ORDER BY seq`,
      ).all(fileId);
      for (const row of inflight) {
        const seq = num(row.seq);
        const { lo, hi } = this.span(fileId, seq);
        const chunkState = abandonedChunkState(
          this.stmt(
            `SELECT 1 FROM recipients WHERE id BETWEEN ? AND ? AND chunk_seq = ? AND status <> '${PENDING_DELIVERY}' LIMIT 1`,
          ).get(lo, hi, seq) !== undefined,
        );
        // Its pending recipients follow the chunk (migration 0003), held ones too: they were
        // in the request.
        this.stmt('UPDATE chunks SET state = ?, updated_at = ? WHERE file_id = ? AND seq = ?').run(
          chunkState,
          now,
          fileId,
          seq,
        );
        this.stmt(
          `UPDATE recipients SET code = NULL, detail = NULL, updated_at = ?
           WHERE id BETWEEN ? AND ? AND chunk_seq = ? AND outcome = 'pending' AND code IS NOT NULL`,
        ).run(now, lo, hi, seq);
      }
      return inflight.length;
    });
  }

  async requeueChunks(
    fileId: string,
    states: readonly ChunkState[],
    options: { addPossibleDuplicates?: number } = {},
  ): Promise<number> {
    const now = this.now();
    // Only recipients the service did not take go back: a failed chunk may hold sent ones.
    const outcomes = states.filter((s) => s === 'failed' || s === 'in_doubt' || s === 'rejected');
    return this.tx(() => {
      const requeue = this.stmt(
        `UPDATE recipients SET outcome = 'pending', code = NULL, detail = NULL, updated_at = ?
         WHERE id BETWEEN ? AND ? AND chunk_seq = ? AND outcome IN (SELECT value FROM json_each(?))`,
      );
      const seqs = this.stmt(
        `SELECT seq FROM chunks WHERE file_id = ? AND state IN (SELECT value FROM json_each(?)) ORDER BY seq`,
      ).all(fileId, JSON.stringify(states));
      for (const row of seqs) {
        const seq = num(row.seq);
        const { lo, hi } = this.span(fileId, seq);
        requeue.run(now, lo, hi, seq, JSON.stringify(outcomes));
      }
      const r = this.stmt(
        `UPDATE chunks SET state = 'pending', error_code = NULL, error_message = NULL, updated_at = :now
         WHERE file_id = :file_id AND state IN (SELECT value FROM json_each(:states))`,
      ).run({ now, file_id: fileId, states: JSON.stringify(states) });
      const moved = changes(r);
      const add = options.addPossibleDuplicates ?? 0;
      if (moved > 0 && add > 0)
        this.stmt(
          'UPDATE files SET possible_duplicates = possible_duplicates + ?, updated_at = ? WHERE file_id = ?',
        ).run(add, now, fileId);
      return moved;
    });
  }

  async reportFailed(fileId: string, backoff: { baseMs: number; maxMs: number }): Promise<void> {
    const now = this.now();
    this.tx(() => {
      const row = this.stmt('SELECT report_failures FROM files WHERE file_id = ?').get(fileId);
      if (!row) return;
      const delay = Math.min(backoff.baseMs * 2 ** Math.min(num(row.report_failures), 40), backoff.maxMs);
      this.stmt(
        `UPDATE files SET report_owed_at = coalesce(report_owed_at, :now), report_failures = report_failures + 1,
           report_retry_at = :retry WHERE file_id = :file_id`,
      ).run({ now, retry: new Date(Date.parse(now) + delay).toISOString(), file_id: fileId });
    });
  }

  async oweReports(fileId: string): Promise<void> {
    const now = this.now();
    this.stmt(
      `UPDATE files SET report_owed_at = coalesce(report_owed_at, :now), report_retry_at = :now
       WHERE file_id = :file_id`,
    ).run({ now, file_id: fileId });
  }

  async reportsWritten(fileId: string): Promise<void> {
    this.stmt(
      `UPDATE files SET report_owed_at = NULL, report_failures = 0, report_retry_at = NULL
       WHERE file_id = ? AND report_owed_at IS NOT NULL`,
    ).run(fileId);
  }

  async reportsDue(limit: number): Promise<string[]> {
    return this.stmt(
      `SELECT file_id FROM files WHERE report_retry_at IS NOT NULL AND report_retry_at <= ?
       ORDER BY report_retry_at LIMIT ?`,
    )
      .all(this.now(), limit)
      .map((r) => str(r.file_id));
  }

  async cancelUnsent(fileId: string): Promise<number> {
    const now = this.now();
    return this.tx(() => {
      const cancelled = this.stmt("SELECT 1 FROM files WHERE file_id = ? AND state = 'cancelled'").get(
        fileId,
      );
      if (!cancelled) return 0;
      const seqs = this.stmt(
        "SELECT seq FROM chunks WHERE file_id = ? AND state = 'pending' ORDER BY seq",
      ).all(fileId);
      // Rows a 403 held back on their own (pending with a code); the others follow their chunk.
      const held = this.stmt(
        `UPDATE recipients SET outcome = 'cancelled', code = NULL, detail = ?, updated_at = ?
         WHERE id BETWEEN ? AND ? AND chunk_seq = ? AND outcome = 'pending' AND code IS NOT NULL`,
      );
      for (const row of seqs) {
        const seq = num(row.seq);
        const { lo, hi } = this.span(fileId, seq);
        held.run(CANCELLED_DETAIL, now, lo, hi, seq);
      }
      return changes(
        this.stmt(
          `UPDATE chunks SET state = 'cancelled', error_code = NULL, error_message = ?, updated_at = ?
           WHERE file_id = ? AND state = 'pending'`,
        ).run(CANCELLED_DETAIL, now, fileId),
      );
    });
  }

  // ---- delivery reports ----

  async recordDeliveries(events: readonly DeliveryEvent[]): Promise<DeliveryResult> {
    const result: DeliveryResult = { recorded: 0, duplicates: 0, orphans: 0, fileIds: [] };
    if (events.length === 0) return result;
    const now = this.now();
    const files = new Set<string>();
    this.tx(() => {
      const fresh = this.appendDeliveries(events, now);
      result.recorded = fresh.length;
      result.duplicates = events.length - fresh.length;
      const byFile = byBulk(fresh);
      const orphans: DeliveryEvent[] = [];
      for (const [fileId, list] of byFile) {
        const range = this.range(fileId);
        if (!range) {
          orphans.push(...list);
          continue;
        }
        const { rows, unmatched, first } = this.applyDeliveries(fileId, range, list, now);
        orphans.push(...unmatched);
        if (unmatched.length < list.length) files.add(fileId);
        this.addDeliveryMinute(range, now, first);
        this.settleByReports(fileId, rows, now);
      }
      const orphan = this.stmt(
        'UPDATE delivery_events SET orphan = 1 WHERE transaction_number = ? AND to_number = ?',
      );
      for (const e of orphans) orphan.run(e.transactionNumber, e.to);
      result.orphans = orphans.length;
    });
    result.fileIds = [...files];
    return result;
  }

  /**
   * A statement over `rows` rows of values (`row` each), cached by its kind and row count, not
   * looked up by a 40 KB SQL text: at most ROWS_PER_STATEMENT statements of each kind. A group
   * of reports is one statement of its own size rather than pieces (~15% less a report).
   */
  private rowsStatement(kind: string, rows: number, row: string, sql: (values: string) => string) {
    const key = `${kind}:${rows}`;
    let s = this.statements.get(key);
    if (!s) {
      s = this.db.prepare(sql(Array.from({ length: rows }, () => row).join(', ')));
      s.setReturnArrays(true);
      this.statements.set(key, s);
    }
    return s;
  }

  /** Inside a transaction: appends the events, returning those new to the store, in order. */
  private appendDeliveries(events: readonly DeliveryEvent[], now: string): DeliveryEvent[] {
    const fresh: DeliveryEvent[] = [];
    for (const [from, to] of pieces(events.length)) {
      const values: SQLInputValue[] = [];
      for (let i = from; i < to; i++) {
        const e = events[i]!;
        values.push(
          e.transactionNumber,
          e.to,
          e.messageId,
          e.bulkId,
          e.callbackData,
          e.smsCount,
          e.status,
          e.receivedAt,
        );
      }
      const rows = this.rowsStatement(
        'append',
        to - from,
        '(?, ?, ?, ?, ?, ?, ?, ?, :now, 0)',
        (
          list,
        ) => `INSERT INTO delivery_events (transaction_number, to_number, message_id, bulk_id, callback_data,
           sms_count, status, received_at, recorded_at, orphan) VALUES ${list}
           ON CONFLICT (transaction_number, to_number) DO NOTHING RETURNING transaction_number, to_number`,
      ).all({ now }, ...values) as unknown as SQLOutputValue[][];
      if (rows.length === to - from) {
        for (let i = from; i < to; i++) fresh.push(events[i]!);
        continue;
      }
      // Some were recorded before, or twice in this batch (the first one is the one inserted).
      const inserted = new Set(rows.map((r) => `${str(r[0])}\n${str(r[1])}`));
      for (let i = from; i < to; i++) {
        const e = events[i]!;
        if (inserted.delete(`${e.transactionNumber}\n${e.to}`)) fresh.push(e);
      }
    }
    return fresh;
  }

  /**
   * Inside a transaction: the events' statuses onto the file's recipients. A generated messageId
   * (<fileId>-<line>[-<k>], most reports) is looked up by (line, k) alone; an id from the file's
   * own column (or one that only looks generated) by the id itself; '' stands for "no messageId"
   * (storedMessageId) and matches nobody. Returns the rows changed ([key, chunk_seq, outcome,
   * code, status]), the events that matched no recipient (orphans), and the first final
   * statuses of rows (their row was `pending`) by delivery_minutes' category.
   */
  private applyDeliveries(
    fileId: string,
    range: { lo: number; hi: number },
    events: readonly DeliveryEvent[],
    now: string,
  ): { rows: SQLOutputValue[][]; unmatched: DeliveryEvent[]; first: MinuteCounts } {
    const rows: SQLOutputValue[][] = [];
    const first: MinuteCounts = { delivered: 0, undelivered: 0, unknown: 0, accepted: 0 };
    const generated: Target[] = [];
    const own: DeliveryEvent[] = [];
    const unmatched: DeliveryEvent[] = [];
    for (const e of events) {
      const at = parseGenerated(fileId, e.messageId);
      if (at) generated.push({ e, key: `${at.line}-${at.k}`, values: [at.line, at.k] });
      else if (e.messageId !== '') own.push(e);
      else unmatched.push(e);
    }
    // A generated-looking id that names no valid row may be a file's own id.
    for (const t of this.updateRecipients('generated', generated, range, now, rows, first)) own.push(t.e);
    const byId = own.map((e) => ({ e, key: e.messageId, values: [e.messageId, null] }));
    for (const t of this.updateRecipients('own', byId, range, now, rows, first)) unmatched.push(t.e);
    return { rows, unmatched, first };
  }

  /**
   * Reports onto recipients, in rounds: a recipient named twice in one batch is updated once
   * per report, in order, as one UPDATE would apply only one of them. Each round first onto
   * rows without a report yet (`pending`: nearly every report), whose new statuses are counted
   * into `first`; the targets left then onto rows that had one (a second report, one after
   * UNKNOWN), which the trigger recipients_delivery_counters moves between categories (migration
   * 0011). Returns the targets that matched no row.
   */
  private updateRecipients(
    kind: 'generated' | 'own',
    targets: Target[],
    range: { lo: number; hi: number },
    now: string,
    rows: SQLOutputValue[][],
    first: MinuteCounts,
  ): Target[] {
    const missed: Target[] = [];
    let round = targets;
    while (round.length > 0) {
      const [current, later] = firstOfEach(round);
      const found = this.deliverRound(kind, true, current, range, now);
      for (const r of found) countStatus(first, r[4]);
      rows.push(...found);
      // A key names at most one sent recipient: as many rows as targets is every one found.
      if (found.length < current.length) {
        const matched = new Set(found.map((r) => str(r[0])));
        const rest = current.filter((t) => !matched.has(t.key));
        const again = this.deliverRound(kind, false, rest, range, now);
        rows.push(...again);
        const matchedAgain = new Set(again.map((r) => str(r[0])));
        for (const t of rest) if (!matchedAgain.has(t.key)) missed.push(t);
      }
      round = later;
    }
    return missed;
  }

  /**
   * One UPDATE … FROM (VALUES …) per piece of targets, onto the rows still `pending` (`fresh`)
   * or onto those with a status already; returns the rows changed.
   */
  private deliverRound(
    kind: 'generated' | 'own',
    fresh: boolean,
    current: readonly Target[],
    range: { lo: number; hi: number },
    now: string,
  ): SQLOutputValue[][] {
    const found: SQLOutputValue[][] = [];
    const status = fresh ? `status = '${PENDING_DELIVERY}'` : `status <> '${PENDING_DELIVERY}'`;
    for (const [from, to] of pieces(current.length)) {
      const values: SQLInputValue[] = [];
      for (let i = from; i < to; i++) {
        const { e, values: match } = current[i]!;
        values.push(...match, e.status, e.smsCount, e.transactionNumber, sentForm(e.to));
      }
      // chunk_seq IS NOT NULL: invalid and duplicate rows were never sent. INDEXED BY: without
      // statistics SQLite may pick the id range and scan every recipient of the file for each
      // report (~20 ms a report at 100k recipients).
      const statement = this.rowsStatement(
        `${kind}${fresh ? '' : '-again'}`,
        to - from,
        '(?, ?, ?, ?, ?, ?)',
        (list) =>
          kind === 'generated'
            ? `UPDATE recipients INDEXED BY recipients_line ${DELIVERY_SET} FROM (VALUES ${list}) AS v
             WHERE line = v.column1 AND k = v.column2 AND id BETWEEN :lo AND :hi
               AND message_id IS NULL AND chunk_seq IS NOT NULL AND number = v.column6 AND ${status}
             RETURNING line || '-' || k, chunk_seq, outcome, code, status`
            : `UPDATE recipients INDEXED BY recipients_message ${DELIVERY_SET} FROM (VALUES ${list}) AS v
             WHERE message_id = v.column1 AND id BETWEEN :lo AND :hi AND chunk_seq IS NOT NULL
               AND number = v.column6 AND ${status}
             RETURNING message_id, chunk_seq, outcome, code, status`,
      );
      for (const r of statement.all(
        { now, lo: range.lo, hi: range.hi },
        ...values,
      ) as unknown as SQLOutputValue[][])
        found.push(r);
    }
    return found;
  }

  /**
   * Inside the transaction that recorded them: first final statuses of the file's rows into
   * its minute of the store's clock (delivery_minutes, migration 0011), one statement a batch.
   */
  private addDeliveryMinute(range: { lo: number }, now: string, add: MinuteCounts): void {
    if (add.delivered === 0 && add.undelivered === 0 && add.unknown === 0 && add.accepted === 0) return;
    this.stmt(
      `INSERT INTO delivery_minutes (file_no, minute, delivered, undelivered, unknown, accepted)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (file_no, minute) DO UPDATE SET delivered = delivered + excluded.delivered,
         undelivered = undelivered + excluded.undelivered, unknown = unknown + excluded.unknown,
         accepted = accepted + excluded.accepted`,
    ).run(range.lo / SPAN, minuteOf(now), add.delivered, add.undelivered, add.unknown, add.accepted);
  }

  /**
   * Inside a transaction: what the reported rows ([key, chunk_seq, outcome, code]) prove. The
   * request that carried a reported recipient reached the service: an in-doubt chunk is
   * accepted (its pending rows follow it), or pending again when it holds rows a 403 held
   * back, and rows of its own in doubt are sent. Recipients already `sent` (an accepted part
   * of a mixed chunk) prove nothing more.
   */
  private settleByReports(fileId: string, rows: readonly SQLOutputValue[][], now: string): void {
    // A part held back by a 403 (rows `pending` with a code) was never sent: its chunk goes back
    // to pending rather than accepted, so those rows still go out (the rest are settled here).
    const settleChunk = this.stmt(
      `UPDATE chunks SET state = CASE WHEN EXISTS (SELECT 1 FROM chunk_spans s JOIN recipients r
           ON r.id BETWEEN s.first_id AND s.last_id AND r.chunk_seq = s.seq
           WHERE s.file_no = :no AND s.seq = :seq AND r.outcome = 'pending' AND r.code IS NOT NULL)
         THEN 'pending' ELSE 'accepted' END,
         error_code = NULL, error_message = NULL, updated_at = :now
       WHERE file_id = :fid AND seq = :seq AND state = 'in_doubt'`,
    );
    const no = this.fileNo(fileId);
    const sendDoubtful = this.stmt(
      `UPDATE recipients SET outcome = 'sent', updated_at = ? WHERE id BETWEEN ? AND ? AND chunk_seq = ? AND outcome = 'in_doubt'`,
    );
    // Reports come in runs of one chunk: its state is looked at once per group.
    const checked = new Set<number>();
    for (const [, chunkSeq, outcome, code] of rows) {
      const follows = outcome === 'pending' && code === null;
      if ((outcome !== 'in_doubt' && !follows) || chunkSeq === null || chunkSeq === undefined) continue;
      const seq = num(chunkSeq);
      if (follows && checked.has(seq)) continue;
      checked.add(seq);
      const settled = changes(settleChunk.run({ no, seq, now, fid: fileId })) > 0;
      if (!settled && outcome !== 'in_doubt') continue;
      const { lo, hi } = this.span(fileId, seq);
      sendDoubtful.run(now, lo, hi, seq);
    }
  }

  async expireDeliveries(fileId: string): Promise<number> {
    const range = this.range(fileId);
    if (!range) return 0;
    const now = this.now();
    // Sent recipients: their own outcome, or that of their accepted chunk. Rows still
    // `pending`: each is a first final status of its row, counted in this minute with it.
    const expire = this.stmt(
      `UPDATE recipients SET status = :unknown, updated_at = :now
       WHERE id BETWEEN :lo AND :hi AND status = :pending AND chunk_seq IS NOT NULL
         AND (outcome = 'sent' OR (outcome = 'pending' AND code IS NULL
           AND chunk_seq IN (SELECT seq FROM chunks WHERE file_id = :fid AND state = 'accepted')))`,
    );
    return this.tx(() => {
      const expired = changes(
        expire.run({
          unknown: UNKNOWN_DELIVERY,
          now,
          lo: range.lo,
          hi: range.hi,
          pending: PENDING_DELIVERY,
          fid: fileId,
        }),
      );
      this.addDeliveryMinute(range, now, { delivered: 0, undelivered: 0, unknown: expired, accepted: 0 });
      return expired;
    });
  }

  async summary(since: string): Promise<StoreSummary> {
    // One read transaction: the figures of one moment.
    this.db.exec('BEGIN');
    try {
      const r = this.stmt(
        `SELECT (SELECT count(*) FROM files WHERE state = 'sending') AS sending,
           (SELECT total(size) FROM chunks WHERE state = 'accepted' AND updated_at >= ?) AS sent,
           (SELECT total(delivered) FROM delivery_minutes WHERE minute >= ?) AS delivered,
           (SELECT total(undelivered) FROM delivery_minutes WHERE minute >= ?) AS undelivered`,
      ).get(since, since, since)!;
      let waiting = 0;
      for (const f of this.stmt(
        `SELECT file_id FROM files WHERE state IN ('sending', 'submitted', 'paused', 'partial')`,
      ).all())
        waiting += this.countsNow(str(f.file_id)).pendingDelivery;
      return {
        sending: num(r.sending),
        sent: num(r.sent),
        delivered: num(r.delivered),
        undelivered: num(r.undelivered),
        waiting,
      };
    } finally {
      this.db.exec('COMMIT');
    }
  }

  async deliveryTimeline(fileId: string): Promise<DeliveryMinute[]> {
    // One row per minute (the primary key's range of the file), kept with the statuses
    // (addDeliveryMinute, and the trigger of migration 0011); a minute whose changes cancelled
    // out is no change.
    const n = this.fileNo(fileId);
    if (n === null) return [];
    return this.stmt(
      `SELECT minute, delivered, undelivered, unknown, accepted FROM delivery_minutes
       WHERE file_no = ? AND (delivered <> 0 OR undelivered <> 0 OR unknown <> 0 OR accepted <> 0)
       ORDER BY minute`,
    )
      .all(n)
      .map(toDeliveryMinute);
  }

  // ---- retention ----

  // ---- campaign rules ----

  async holdBack(fileId: string, seq: number, options: HoldBackOptions): Promise<HeldBack> {
    const now = this.now();
    const { lo, hi } = this.span(fileId, seq);
    const chunk = { lo, hi, seq, now };
    return this.tx((): HeldBack => {
      const held: HeldBack = { suppressed: 0, contactLimited: 0 };
      if (options.optOuts)
        held.suppressed = changes(
          this.stmt(
            `UPDATE recipients SET outcome = 'suppressed', code = 'SUPPRESSED', updated_at = :now,
               detail = 'opted out by a reply after the file was read'
             WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq AND outcome = 'pending'
               AND number IN (SELECT number FROM opt_outs)`,
          ).run(chunk),
        );
      const limit = options.contactLimit;
      if (!limit) return held;
      // The local day on the store's clock: SQLite is one process's, so that process's clock.
      const day = localDate(new Date(now), limit.timezone);
      const slots = { lo, hi, seq, account: limit.account, day };
      // A slot per round: a number twice in the chunk takes two slots, or is held back.
      for (let slot = 1; slot <= limit.perDay; slot++)
        this.stmt(
          `INSERT INTO contacts (account, day, number, slot, recipient)
           SELECT :account, :day, r.number, :slot, r.id FROM recipients r
           WHERE r.id BETWEEN :lo AND :hi AND r.chunk_seq = :seq AND r.outcome = 'pending'
             AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.recipient = r.id AND c.account = :account AND c.day = :day)
           ORDER BY r.id
           ON CONFLICT DO NOTHING`,
        ).run({ ...slots, slot });
      held.contactLimited = changes(
        this.stmt(
          `UPDATE recipients SET outcome = 'contact_limit', code = 'CONTACT_LIMIT', updated_at = :now,
             detail = 'already sent a message this day by the account (contactLimit ' || :per_day || ' a day)'
           WHERE id BETWEEN :lo AND :hi AND chunk_seq = :seq AND outcome = 'pending'
             AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.recipient = recipients.id AND c.account = :account AND c.day = :day)`,
        ).run({ ...slots, now, per_day: limit.perDay }),
      );
      return held;
    });
  }

  async pruneContacts(timezone: string): Promise<number> {
    const yesterday = localDate(new Date(Date.parse(this.now()) - 86_400_000), timezone);
    return changes(this.stmt('DELETE FROM contacts WHERE day < ?').run(yesterday));
  }

  async recordReply(reply: NewReply): Promise<boolean> {
    return this.tx(() => {
      const r = this.stmt(
        `INSERT INTO replies (received_at, from_number, to_number, text, opt_out, message_id)
         VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING RETURNING id`,
      ).get(reply.receivedAt, reply.from, reply.to, reply.text, reply.optOut ? 1 : 0, reply.messageId);
      if (!r) return false;
      if (reply.optOut)
        this.stmt('INSERT INTO opt_outs (number, at, reply) VALUES (?, ?, ?) ON CONFLICT DO NOTHING').run(
          reply.from,
          reply.receivedAt,
          num(r.id),
        );
      return true;
    });
  }

  async replies(options: {
    since?: string | undefined;
    afterId?: number;
    limit: number;
  }): Promise<ReplyRecord[]> {
    return this.stmt(`SELECT * FROM replies WHERE id > ? AND received_at >= ? ORDER BY id LIMIT ?`)
      .all(options.afterId ?? 0, options.since ?? '', options.limit)
      .map(toReply);
  }

  async prune(options: { finishedBefore: string; maxRows: number }): Promise<PruneStep> {
    const now = this.now();
    const maxRows = Math.max(1, Math.trunc(options.maxRows));
    return this.tx((): PruneStep => {
      const step: PruneStep = {
        fileId: null,
        marked: false,
        fileDone: false,
        recipients: 0,
        events: 0,
        idle: false,
      };
      // A file being pruned first, else the oldest finished file past the cutoff.
      let row = this.stmt('SELECT file_id FROM files WHERE pruning = 1 LIMIT 1').get();
      if (!row) {
        row = this.stmt(
          `SELECT file_id FROM files WHERE state IN (SELECT value FROM json_each(:states))
             AND updated_at < :before AND pruned_at IS NULL ORDER BY updated_at LIMIT 1`,
        ).get({ states: JSON.stringify(FINAL_FILE_STATES), before: options.finishedBefore });
        if (row) {
          const fileId = str(row.file_id);
          // Its counts as they are now: what status shows once its rows are gone.
          this.stmt(
            'UPDATE files SET pruned_counts = ?, pruned_at = ?, pruning = 1 WHERE file_id = ? AND pruned_at IS NULL',
          ).run(JSON.stringify(this.countsNow(fileId)), now, fileId);
          step.marked = true;
        }
      }
      if (!row) {
        // No file left: orphan reports recorded before the cutoff, a batch at a time.
        step.events = changes(
          this.stmt(
            `DELETE FROM delivery_events WHERE (transaction_number, to_number) IN (
               SELECT transaction_number, to_number FROM delivery_events
               WHERE orphan = 1 AND recorded_at < ? LIMIT ?)`,
          ).run(options.finishedBefore, maxRows),
        );
        step.idle = step.events < maxRows;
        return step;
      }
      const fileId = str(row.file_id);
      step.fileId = fileId;
      // A report names its request's transactionNumber: the file's reports are found by the
      // transaction numbers of its rows and chunks (and bulkId), not by a scan of every report.
      const dropEvents = this.stmt(
        'DELETE FROM delivery_events WHERE transaction_number = ? AND bulk_id = ?',
      );
      const tns = new Set<string>();
      const n = this.readFileNo(fileId);
      if (n !== null) {
        const deleted = this.arrays(
          `DELETE FROM recipients WHERE id IN (SELECT id FROM recipients WHERE id BETWEEN ? AND ? LIMIT ?)
           RETURNING transaction_number`,
        ).all(n * SPAN, n * SPAN + SPAN - 1, maxRows) as unknown as SQLOutputValue[][];
        step.recipients = deleted.length;
        for (const [tn] of deleted) if (tn !== null && tn !== undefined) tns.add(str(tn));
      }
      if (step.recipients < maxRows) {
        for (const c of this.stmt(
          'SELECT transaction_number FROM chunks WHERE file_id = ? AND transaction_number IS NOT NULL',
        ).all(fileId))
          tns.add(str(c.transaction_number));
        this.stmt('DELETE FROM chunks WHERE file_id = ?').run(fileId);
        this.stmt('DELETE FROM file_attachments WHERE file_id = ?').run(fileId);
        if (n !== null) this.stmt('DELETE FROM chunk_spans WHERE file_no = ?').run(n);
        this.stmt('UPDATE files SET pruning = 0 WHERE file_id = ?').run(fileId);
        step.fileDone = true;
      }
      for (const tn of tns) step.events += changes(dropEvents.run(tn, fileId));
      return step;
    });
  }

  // ---- progress and reports ----

  async counts(fileId: string): Promise<FileCounts> {
    return this.countsNow(fileId);
  }

  async countsOf(fileIds: readonly string[]): Promise<Map<string, FileCounts>> {
    const out = new Map<string, FileCounts>();
    // In-process, a file's counts are a few indexed reads with no round trip; one read
    // transaction gives the whole page one snapshot.
    this.db.exec('BEGIN');
    try {
      for (const r of this.stmt(
        'SELECT file_id FROM files WHERE file_id IN (SELECT value FROM json_each(?))',
      ).all(JSON.stringify(fileIds)))
        out.set(str(r.file_id), this.countsNow(str(r.file_id)));
    } finally {
      this.db.exec('COMMIT');
    }
    return out;
  }

  /** counts(), synchronous: also read inside a transaction (prune keeps them). */
  private countsNow(fileId: string): FileCounts {
    const file = this.stmt(
      'SELECT records, valid, invalid, duplicates, suppressed, segments, pruned_counts FROM files WHERE file_id = ?',
    ).get(fileId);
    // Counts pruned before a counter existed have none of it.
    if (file?.pruned_counts != null)
      return { ...NOTHING_SENT, ...(JSON.parse(str(file.pruned_counts)) as FileCounts) };
    const ingest = {
      records: num(file?.records ?? 0),
      valid: num(file?.valid ?? 0),
      invalid: num(file?.invalid ?? 0),
      duplicates: num(file?.duplicates ?? 0),
      suppressed: num(file?.suppressed ?? 0),
      segments: num(file?.segments ?? 0),
    };
    // One row per chunk state with the delivery counters of its chunks (migration 0006),
    // whatever the number of delivery reports.
    const n = this.fileNo(fileId);
    const chunks: ChunkGroup[] = this.stmt(
      `SELECT c.state, count(*) AS n, total(c.size) AS size, total(s.reported) AS reported,
         total(s.delivered) AS delivered, total(s.unknown) AS unknown, total(s.accepted) AS accepted,
         total(s.reported_follow) AS reported_follow, total(s.reported_sent) AS reported_sent
       FROM chunks c LEFT JOIN chunk_spans s ON s.file_no = :no AND s.seq = c.seq
       WHERE c.file_id = :fid GROUP BY c.state`,
    )
      .all({ fid: fileId, no: n })
      .map((r) => ({
        state: str(r.state) as ChunkState,
        chunks: num(r.n),
        size: num(r.size),
        reported: num(r.reported),
        delivered: num(r.delivered),
        unknown: num(r.unknown),
        accepted: num(r.accepted),
        reportedFollow: num(r.reported_follow),
        reportedSent: num(r.reported_sent),
      }));
    // Valid recipients only (chunk_seq set) with an outcome of their own: few (an index of
    // them), so a count of the file is a read of its chunks, not of a million rows.
    const { lo, hi } = n === null ? { lo: 1, hi: 0 } : idRange(n);
    const own: OwnGroup[] = this.stmt(
      `SELECT r.outcome, c.state, count(*) AS n
       FROM recipients r INDEXED BY recipients_settled LEFT JOIN chunks c ON c.file_id = ? AND c.seq = r.chunk_seq
       WHERE r.id BETWEEN ? AND ? AND r.chunk_seq IS NOT NULL AND (r.outcome <> 'pending' OR r.code IS NOT NULL)
       GROUP BY r.outcome, c.state`,
    )
      .all(fileId, lo, hi)
      .map((r) => ({
        outcome: str(r.outcome),
        chunkState: strOrNull(r.state) as ChunkState | null,
        count: num(r.n),
      }));
    return assembleCounts(ingest, chunks, own);
  }

  async *reportPages(fileId: string): AsyncGenerator<ReportRow[]> {
    const range = this.range(fileId);
    if (!range) return;
    const page = this.arrays(
      `SELECT ${REPORT_SQL} FROM ${WITH_CHUNK} WHERE r.id > :after AND r.id <= :hi ORDER BY r.id LIMIT :limit`,
    );
    let after = range.lo - 1;
    for (;;) {
      // Keyset paging, as recipientPages.
      const rows = page.all({
        fid: fileId,
        after,
        hi: range.hi,
        limit: this.pageSize,
      }) as unknown as SQLOutputValue[][];
      if (rows.length > 0) {
        yield rows.map((r) => toReportRow(r, fileId));
        after = num(rows.at(-1)![0]);
      }
      if (rows.length < this.pageSize) return;
    }
  }

  async *recipients(fileId: string, outcomes?: readonly RecipientOutcome[]): AsyncGenerator<RecipientRecord> {
    for await (const page of this.recipientPages(fileId, outcomes)) yield* page;
  }

  async *recipientPages(
    fileId: string,
    outcomes?: readonly RecipientOutcome[],
  ): AsyncGenerator<RecipientRecord[]> {
    const range = this.range(fileId);
    if (!range) return;
    const page = this.stmt(
      `SELECT ${RECIPIENT_SQL} FROM ${WITH_CHUNK} WHERE r.id > :after AND r.id <= :hi
         AND (:outcomes IS NULL OR ${OUTCOME_SQL} IN (SELECT value FROM json_each(:outcomes)))
       ORDER BY r.id LIMIT :limit`,
    );
    const filter = list(outcomes);
    let after = range.lo - 1;
    for (;;) {
      // Keyset paging: each page is its own short read, so no read transaction (and no
      // WAL checkpoint block) is held while the consumer writes a report.
      const rows = page.all({ fid: fileId, after, hi: range.hi, outcomes: filter, limit: this.pageSize });
      if (rows.length > 0) yield rows.map((r) => toRecipient(r, fileId, range.lo));
      if (rows.length < this.pageSize) return;
      after = num(rows.at(-1)!.id);
    }
  }
}
