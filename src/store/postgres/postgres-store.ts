// The Store on PostgreSQL: the executor of ./sql.ts. Several workers share one database, so
// concurrency is the database's: SKIP LOCKED acquisition, a sequence for file numbers,
// unique constraints with "on conflict, re-read", advisory locks where a decision spans rows
// (claims of one content, migrations), row locks on a chunk for the decisions about it, and
// one clock (the database's now(), or the `now` option in tests) for timestamps and leases.
// Each compound decision is one statement or one transaction with its precondition inside.

import type pg from 'pg';
import { DroplineError } from '../../errors.ts';
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
  json,
  num,
  patchColumns,
  type Row,
  str,
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
import {
  type BudgetAccount,
  type ChunkDestination,
  type ChunkInsert,
  type ChunkRecord,
  type ChunkResult,
  type ChunkState,
  type ChunkStateGuard,
  type ClaimedFile,
  type ClaimOptions,
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
  type IngestCounts,
  type ListFilesOptions,
  type NewFile,
  type NewReply,
  NOTHING_SENT,
  type PartOutcome,
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
  type WorkerInfo,
  type WorkerRecord,
} from '../store.ts';
import { intArray, textArray } from './arrays.ts';
import { createPool, type Queryable, retried, storeError, transaction } from './connection.ts';
import { copyIn, copyValue } from './copy.ts';
import { loadPostgresMigrations } from './migrations.ts';
import * as S from './sql.ts';

export interface PostgresStoreOptions {
  connectionString: string;
  /** The schema the store's tables live in (created by migrate); search_path of every connection. */
  schema?: string;
  /** The clock for timestamps and lease expiry (tests); the database's now() by default. */
  now?: () => Date;
  poolSize?: number;
  /** Rows per page when iterating recipients. */
  pageSize?: number;
}

const DEFAULT_PAGE = 2000;
/** The largest chunk seq (chunks.seq is an integer). */
/** File numbers remembered by an instance (recordDeliveries). */
const FILE_NO_CACHE = 10_000;

const NO_INGEST: IngestCounts = {
  records: 0,
  valid: 0,
  invalid: 0,
  duplicates: 0,
  suppressed: 0,
  segments: 0,
};

const OUTCOME_OF_CHUNK = S.chunkOutcomeSql(CHUNK_OUTCOME, 'c.state');
const CHUNK_RECIPIENTS = S.chunkRecipientsSql(OUTCOME_OF_CHUNK);
const RECIPIENT_PAGE = S.recipientPageSql(OUTCOME_OF_CHUNK);
const REPORT_PAGE = S.reportPageSql(OUTCOME_OF_CHUNK);
/** Chunk states whose rows still read `pending` (chunkDestinations). */
const PENDING_CHUNK_STATES = (Object.keys(CHUNK_OUTCOME) as ChunkState[]).filter(
  (s) => CHUNK_OUTCOME[s] === 'pending',
);

/** The delivery events as the array parameters of the statements that keep them. */
function eventColumns(events: readonly DeliveryEvent[]): Record<string, unknown> {
  return {
    tns: textArray(events.map((e) => e.transactionNumber)),
    tos: textArray(events.map((e) => e.to)),
    message_ids: textArray(events.map((e) => e.messageId)),
    bulk_ids: textArray(events.map((e) => e.bulkId)),
    callbacks: textArray(events.map((e) => e.callbackData)),
    sms_counts: intArray(events.map((e) => e.smsCount)),
    statuses: textArray(events.map((e) => e.status)),
    received: textArray(events.map((e) => e.receivedAt)),
  };
}

function patchParams(patch: FilePatch | undefined): Record<string, unknown> {
  return patchColumns(patch, (b) => b);
}

/** A report and the recipient it names. */
interface Target {
  readonly e: DeliveryEvent;
  /** As the UPDATE returns it: `line-k` (generated) or the messageId (own). */
  readonly key: string;
  readonly line: number;
  readonly k: number;
}

/** claimBatch met a row it did not see in its lookup: the batch is decided again file by file. */
class ClaimRace extends Error {}

export class PostgresStore implements Store {
  /** Versions of the migrations this instance applied (another instance may have applied them). */
  readonly migrated: number[] = [];
  private readonly pool: pg.Pool;
  private readonly clock: (() => Date) | null;
  private readonly schema: string | null;
  private readonly pageSize: number;
  private closed = false;
  /**
   * File numbers by fileId, as read from committed rows (a number never changes once given,
   * and a file row is never deleted): reports of a file need no lookup of it each time.
   * Filled only after the transaction that read it committed.
   */
  private readonly fileNos = new Map<string, number>();

  constructor(options: PostgresStoreOptions) {
    this.clock = options.now ?? null;
    this.schema = options.schema ?? null;
    this.pageSize = options.pageSize ?? DEFAULT_PAGE;
    this.pool = createPool({
      connectionString: options.connectionString,
      ...(options.schema === undefined ? {} : { schema: options.schema }),
      ...(options.poolSize === undefined ? {} : { poolSize: options.poolSize }),
    });
  }

  /** The :now parameter: the injected clock's instant, or NULL for the database's now(). */
  private now(): string | null {
    return this.clock ? this.clock().toISOString() : null;
  }

  /**
   * One statement: on the pool (its own implicit transaction, run again after a deadlock or
   * serialization failure), or on a transaction's client (the transaction is what retries).
   */
  private async exec(
    what: string,
    s: S.Statement,
    params: Record<string, unknown>,
    on: Queryable,
    rowMode?: 'array',
  ): Promise<pg.QueryResult> {
    const config = {
      name: s.name,
      text: s.text,
      values: S.values(s, params),
      ...(rowMode ? { rowMode } : {}),
    };
    try {
      return on === this.pool ? await retried(() => on.query(config)) : await on.query(config);
    } catch (err) {
      throw storeError(err, what);
    }
  }

  private async rows(
    what: string,
    s: S.Statement,
    params: Record<string, unknown>,
    on: Queryable = this.pool,
  ): Promise<Row[]> {
    return (await this.exec(what, s, params, on)).rows as Row[];
  }

  /** Rows as arrays in the statement's column order (hot reads: no object per row). */
  private async arrays(
    what: string,
    s: S.Statement,
    params: Record<string, unknown>,
    on: Queryable = this.pool,
  ): Promise<unknown[][]> {
    return (await this.exec(what, s, params, on, 'array')).rows as unknown[][];
  }

  private async count(
    what: string,
    s: S.Statement,
    params: Record<string, unknown>,
    on: Queryable = this.pool,
  ): Promise<number> {
    return (await this.exec(what, s, params, on)).rowCount ?? 0;
  }

  private tx<T>(what: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return transaction(this.pool, what, fn);
  }

  // ---- lifecycle ----

  async migrate(): Promise<void> {
    const migrations = loadPostgresMigrations();
    const newest = migrations.at(-1)?.version ?? 0;
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw storeError(err, 'migrating');
    }
    const lock = { schema: this.schema };
    let locked = false;
    let failed = false;
    try {
      // One migrator at a time per schema: N workers starting together migrate once.
      await client.query({ text: S.MIGRATE_LOCK.text, values: S.values(S.MIGRATE_LOCK, lock) });
      locked = true;
      if (this.schema) await client.query(S.createSchema(this.schema));
      await client.query(S.CREATE_MIGRATIONS);
      const applied = new Set(
        (await client.query({ text: S.APPLIED.text })).rows.map((r: Row) => num(r.version)),
      );
      const newer = [...applied].filter((v) => v > newest);
      if (newer.length > 0)
        throw new DroplineError(
          'DROPLINE_ERR_STORE_SCHEMA',
          `the database is at schema version ${Math.max(...newer)}, newer than this dropline knows (${newest}): upgrade dropline`,
        );
      for (const m of migrations) {
        if (applied.has(m.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          await client.query({
            text: S.RECORD_MIGRATION.text,
            values: S.values(S.RECORD_MIGRATION, { version: m.version, name: m.name, now: this.now() }),
          });
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {});
          throw err;
        }
        this.migrated.push(m.version);
      }
    } catch (err) {
      failed = true;
      throw storeError(err, 'migrating');
    } finally {
      if (locked)
        await client
          .query({ text: S.MIGRATE_UNLOCK.text, values: S.values(S.MIGRATE_UNLOCK, lock) })
          .catch(() => {});
      // After a failure the connection may be broken: destroyed, never handed out again.
      client.release(failed ? true : undefined);
    }
  }

  // ---- settings ----

  async keepSetting(key: string, value: string): Promise<string> {
    const read = async () => (await this.rows('reading a setting', S.SETTING, { key }))[0];
    // Read first: once kept, a setting costs no write.
    const kept = await read();
    if (kept) return String(kept.value);
    // Then a separate SELECT: its snapshot sees the row a concurrent first writer committed
    // (the INSERT … ON CONFLICT DO NOTHING waited for it), which one statement's would not.
    await this.count('keeping a setting', S.KEEP_SETTING, { key, value });
    return String((await read())!.value);
  }

  // ---- service tokens ----

  async sharedToken(key: string): Promise<SharedToken | null> {
    const [r] = await this.rows('reading the shared service token', S.SHARED_TOKEN, { key });
    return r ? toSharedToken(r) : null;
  }

  async claimTokenRenewal(key: string, owner: string, seen: number, ms: number): Promise<boolean> {
    const what = 'claiming the service token renewal';
    const params = { key, owner, seen, ms, now: this.now() };
    // No row yet (seen 0): the INSERT makes it claimed, or takes it over when it exists.
    if (seen === 0 && (await this.rows(what, S.CLAIM_TOKEN_RENEWAL, params)).length === 1) return true;
    return (await this.count(what, S.CLAIM_TOKEN_RENEWAL_EXISTING, params)) === 1;
  }

  async storeToken(
    key: string,
    owner: string,
    token: { accessToken: string; refreshToken: string | null; renewAt: string },
  ): Promise<SharedToken | null> {
    const [r] = await this.rows('storing the service token', S.STORE_TOKEN, tokenColumns(key, owner, token));
    return r ? toSharedToken(r) : null;
  }

  async releaseTokenRenewal(key: string, owner: string): Promise<void> {
    await this.count('releasing the service token renewal', S.RELEASE_TOKEN_RENEWAL, { key, owner });
  }

  /** The account's budget row locked in `c` (made when missing), with the clock and the live permits. */
  private async lockBudget(c: pg.PoolClient, what: string, account: BudgetAccount): Promise<Row> {
    const key = { key: account.key };
    if ((await this.count(what, S.LOCK_BUDGET, key, c)) === 0) {
      await this.count(what, S.NEW_BUDGET, { ...key, account: account.name }, c);
      await this.count(what, S.LOCK_BUDGET, key, c);
    }
    const [r] = await this.rows(what, S.READ_BUDGET, { ...key, now: this.now() }, c);
    return r!;
  }

  async takeSendPermit(account: BudgetAccount, req: PermitRequest): Promise<PermitAnswer> {
    const what = 'taking a send permit';
    return this.tx(what, async (c) => {
      const r = await this.lockBudget(c, what, account);
      const now = num(r.now_ms);
      const { state, answer } = decidePermit(toBudget(r), now, num(r.live), req);
      if (answer.granted && state)
        await this.count(
          what,
          S.GRANT_PERMIT,
          {
            key: account.key,
            now_ms: now,
            permit_id: req.permitId,
            owner: req.owner,
            lease_until: now + answer.waitMs + req.leaseMs,
            next_at: state.nextAt,
          },
          c,
        );
      return answer;
    });
  }

  async releaseSendPermit(accountKey: string, permitId: string): Promise<void> {
    await this.count('releasing a send permit', S.RELEASE_PERMIT, { key: accountKey, permit_id: permitId });
  }

  async slowSends(
    account: BudgetAccount,
    trouble: { reason: string; retryAfterMs?: number | undefined },
  ): Promise<void> {
    const what = 'slowing the account down';
    await this.tx(what, async (c) => {
      const r = await this.lockBudget(c, what, account);
      const state = slowedDown(toBudget(r), num(r.now_ms), trouble);
      await this.count(what, S.UPDATE_BUDGET, { key: account.key, ...budgetColumns(state) }, c);
    });
  }

  async heartbeat(worker: WorkerInfo): Promise<void> {
    const now = this.now();
    await this.count('recording a heartbeat', S.HEARTBEAT, { ...workerColumns(worker), now });
    await this.count('dropping old workers', S.DROP_OLD_WORKERS, { kept_ms: WORKERS_KEPT_MS, now });
  }

  async workerStopped(workerId: string): Promise<void> {
    await this.count('recording a stop', S.WORKER_STOPPED, { worker_id: workerId, now: this.now() });
  }

  async listWorkers(): Promise<WorkerRecord[]> {
    const now = this.now();
    const rows = await this.rows('listing workers', S.LIST_WORKERS, { shown_ms: WORKERS_SHOWN_MS, now });
    const held = await this.rows('listing held files', S.HELD_FILES, { now });
    return toWorkers(rows, held, (r) => num(r.age_ms));
  }

  async sendBudgets(): Promise<BudgetView[]> {
    const rows = await this.rows('reading the send budgets', S.SEND_BUDGETS, { now: this.now() });
    return rows.map((r) => budgetView(str(r.account), toBudget(r), num(r.now_ms), num(r.live)));
  }

  async ping(): Promise<void> {
    await this.rows('ping', S.PING, {});
    await this.probeWrite();
  }

  async probeWrite(): Promise<void> {
    try {
      await this.tx('write probe', async (c) => {
        await this.rows('write probe', S.PROBE_INSERT, { now: this.now() }, c);
        await this.rows('write probe', S.PROBE_DELETE, {}, c);
      });
    } catch (err) {
      const e = err as DroplineError;
      if (e.code === 'DROPLINE_ERR_STORE_UNAVAILABLE') throw err;
      throw new DroplineError('DROPLINE_ERR_STORE_READONLY', `the database cannot be written: ${e.message}`, {
        cause: err,
      });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  // ---- files ----

  async registerFile(file: NewFile): Promise<{ file: FileRecord; created: boolean }> {
    const what = `registering ${file.fileId}`;
    const key = { source: file.source, path: file.path, sha256: file.sha256, file_id: file.fileId };
    // Looked up first: an INSERT that conflicts still takes a number of the sequence.
    const [known] = await this.rows(what, S.REGISTERED, key);
    if (known) return { file: toFile(known), created: false };
    const [inserted] = await this.rows(what, S.INSERT_FILE, {
      ...key,
      name: file.name,
      name_folded: foldName(file.name),
      bytes: file.bytes,
      state: file.state,
      forced: file.forced === true,
      rejection_code: file.rejection?.code ?? null,
      rejection_message: file.rejection?.message ?? null,
      reason: file.rejection?.message ?? null,
      now: this.now(),
    });
    if (inserted) return { file: toFile(inserted), created: true };
    // Another writer recorded it meanwhile: its row (the INSERT waited for its commit).
    const [winner] = await this.rows(what, S.REGISTERED, key);
    if (!winner) throw new DroplineError('DROPLINE_ERR_STORE_CONFLICT', `${what}: conflict without a row`);
    return { file: toFile(winner), created: false };
  }

  async claimFiles(
    source: string,
    files: readonly ReadyFile[],
    options: ClaimOptions,
  ): Promise<ClaimedFile[]> {
    if (files.length === 0) return [];
    const what = `claiming files of ${source}`;
    const places = new Set(files.map((f) => `${f.path}\n${f.sha256}`));
    // The batch as a whole (a few statements), unless one place comes twice in it; when an
    // insert meets a row recorded without the claim lock (registerFile), that transaction is
    // rolled back and the batch decided again file by file, each seeing the one before.
    if (places.size === files.length) {
      try {
        return await this.tx(what, (c) => this.claimBatch(c, source, files, options));
      } catch (err) {
        // (transaction() wraps what fn throws in the store's error: the race is its cause)
        if (!(err instanceof ClaimRace || (err as Error).cause instanceof ClaimRace)) throw err;
      }
    }
    return this.tx(what, (c) => this.claimEach(c, source, files, options));
  }

  /** The claim lock of every content of the batch (see CLAIM_LOCKS). */
  private async claimLocks(c: pg.PoolClient, source: string, files: readonly ReadyFile[]): Promise<void> {
    await this.rows(
      `claiming files of ${source}`,
      S.CLAIM_LOCKS,
      { source, shas: files.map((f) => f.sha256) },
      c,
    );
  }

  /**
   * One lookup for the batch, the decisions made here in the batch's order as claimEach makes
   * them (a file claimed earlier in the batch counts for the generation of the next one of its
   * content, and is the file it duplicates), one insert. Throws ClaimRace when a row is missing.
   */
  private async claimBatch(
    c: pg.PoolClient,
    source: string,
    files: readonly ReadyFile[],
    options: ClaimOptions,
  ): Promise<ClaimedFile[]> {
    const what = `claiming files of ${source}`;
    const now = this.now();
    const force = options.force === true;
    await this.claimLocks(c, source, files);
    const found = await this.rows(
      what,
      S.CLAIM_BATCH_LOOKUP,
      {
        source,
        paths: textArray(files.map((f) => f.path)),
        shas: textArray(files.map((f) => f.sha256)),
        names: textArray(files.map((f) => f.name)),
        force,
        active: DUPLICATE_ACTIVE_STATES,
        recent: DUPLICATE_RECENT_STATES,
        since: options.duplicateSince,
        now,
      },
      c,
    );
    const same = new Map<string, Row>();
    const prior = new Map<string, number>();
    /** The file a new one of this content would duplicate: a row, or a file of this batch (its index). */
    const candidate = new Map<string, Row | number>();
    for (const r of found) {
      if (r.kind === 'same') same.set(`${str(r.key)}\n${str(r.sha256)}`, r);
      else {
        const sha = str(r.key);
        prior.set(sha, num(r.prior));
        if (r.file_id !== null) candidate.set(sha, r);
      }
    }
    const out: (ClaimedFile | null)[] = new Array(files.length).fill(null);
    /** Of each file inserted: its index in the batch, fileId, the candidate it duplicates. */
    const inserts: {
      i: number;
      fileId: string;
      state: string;
      dup: Row | number | null;
      code: string | null;
      message: string | null;
    }[] = [];
    const provisional = new Map<number, FileRecord>();
    for (let i = 0; i < files.length; i++) {
      const f = files[i]!;
      const known = same.get(`${f.path}\n${f.sha256}`);
      if (known) {
        out[i] = { file: toFile(known), created: false, duplicateOf: null };
        continue;
      }
      const n = prior.get(f.sha256) ?? 0;
      const cand = n > 0 ? (candidate.get(f.sha256) ?? null) : null;
      const dupRecord =
        cand === null ? null : typeof cand === 'number' ? provisional.get(cand)! : toFile(cand);
      const { state, rejectionCode, message } = claimVerdict(dupRecord);
      const fileId = options.idFor(f.sha256, n + 1);
      inserts.push({ i, fileId, state, dup: cand, code: rejectionCode, message });
      prior.set(f.sha256, n + 1);
      // The file just claimed is the newest of its content: the one the next would duplicate,
      // when its state is one that counts (never with force) and no row is newer (a test clock).
      const newest = cand === null || typeof cand === 'number' || cand.newer !== true;
      if (!force && DUPLICATE_ACTIVE_STATES.includes(state as FileState) && newest) {
        candidate.set(f.sha256, i);
        provisional.set(i, { fileId, name: f.name, state } as FileRecord);
      }
    }
    if (inserts.length === 0) return out as ClaimedFile[];
    const rows = await this.rows(
      what,
      S.INSERT_CLAIMED,
      {
        source,
        force,
        file_ids: textArray(inserts.map((x) => x.fileId)),
        names: textArray(inserts.map((x) => files[x.i]!.name)),
        folded_names: textArray(inserts.map((x) => foldName(files[x.i]!.name))),
        paths: textArray(inserts.map((x) => files[x.i]!.path)),
        shas: textArray(inserts.map((x) => files[x.i]!.sha256)),
        bytes: intArray(inserts.map((x) => files[x.i]!.bytes)),
        states: textArray(inserts.map((x) => x.state)),
        codes: textArray(inserts.map((x) => x.code)),
        messages: textArray(inserts.map((x) => x.message)),
        now,
      },
      c,
    );
    if (rows.length < inserts.length) throw new ClaimRace();
    const byId = new Map(rows.map((r) => [str(r.file_id), toFile(r)]));
    const record = new Map<number, FileRecord>();
    for (const x of inserts) {
      const file = byId.get(x.fileId);
      if (!file) throw new ClaimRace();
      record.set(x.i, file);
    }
    for (const x of inserts) {
      const duplicateOf =
        x.dup === null ? null : typeof x.dup === 'number' ? record.get(x.dup)! : toFile(x.dup);
      out[x.i] = { file: record.get(x.i)!, created: true, duplicateOf };
    }
    return out as ClaimedFile[];
  }

  /** The batch a file at a time: a lookup and an insert each, under the batch's claim locks. */
  private async claimEach(
    c: pg.PoolClient,
    source: string,
    files: readonly ReadyFile[],
    options: ClaimOptions,
  ): Promise<ClaimedFile[]> {
    const what = `claiming files of ${source}`;
    const now = this.now();
    await this.claimLocks(c, source, files);
    const out: ClaimedFile[] = [];
    for (const f of files) {
      const found = await this.rows(
        what,
        S.CLAIM_LOOKUP,
        {
          source,
          path: f.path,
          name: f.name,
          sha256: f.sha256,
          force: options.force === true,
          active: DUPLICATE_ACTIVE_STATES,
          recent: DUPLICATE_RECENT_STATES,
          since: options.duplicateSince,
        },
        c,
      );
      const same = found.find((r) => r.kind === 'same');
      if (same) {
        out.push({ file: toFile(same), created: false, duplicateOf: null });
        continue;
      }
      const counted = found.find((r) => r.kind === 'count')!;
      const prior = num(counted.prior);
      const duplicateOf = prior > 0 && counted.file_id !== null ? toFile(counted) : null;
      const { state, rejectionCode, message } = claimVerdict(duplicateOf);
      const fileId = options.idFor(f.sha256, prior + 1);
      const [row] = await this.rows(
        what,
        S.INSERT_FILE,
        {
          file_id: fileId,
          source,
          name: f.name,
          name_folded: foldName(f.name),
          path: f.path,
          sha256: f.sha256,
          bytes: f.bytes,
          state,
          forced: options.force === true,
          rejection_code: rejectionCode,
          rejection_message: message,
          reason: message,
          now,
        },
        c,
      );
      if (row) {
        out.push({ file: toFile(row), created: true, duplicateOf });
        continue;
      }
      // Recorded meanwhile by a writer that takes no claim lock (registerFile): its row.
      const [again] = await this.rows(
        what,
        S.REGISTERED,
        { source, path: f.path, sha256: f.sha256, file_id: fileId },
        c,
      );
      if (
        again &&
        str(again.source) === source &&
        str(again.path) === f.path &&
        str(again.sha256) === f.sha256
      ) {
        out.push({ file: toFile(again), created: false, duplicateOf: null });
        continue;
      }
      throw new DroplineError(
        'DROPLINE_ERR_STORE_CONFLICT',
        `claiming ${f.path}: fileId ${fileId} already taken`,
      );
    }
    return out;
  }

  async setPaths(paths: readonly { fileId: string; path: string }[]): Promise<void> {
    if (paths.length === 0) return;
    await this.rows('setting paths', S.SET_PATHS, {
      file_ids: paths.map((p) => p.fileId),
      paths: paths.map((p) => p.path),
      now: this.now(),
    });
  }

  async getFile(fileId: string): Promise<FileRecord | null> {
    const [r] = await this.rows(`reading ${fileId}`, S.FILE_BY_ID, { file_id: fileId });
    return r ? toFile(r) : null;
  }

  async listFiles(options: ListFilesOptions = {}): Promise<FileRecord[]> {
    return (
      await this.rows('listing files', S.LIST_FILES, {
        source: options.source ?? null,
        states: options.states ?? null,
        search: options.search ? foldName(options.search) : null,
        before: options.before ?? null,
        limit: options.limit ?? null,
      })
    ).map(toFile);
  }

  async fileEvents(fileId: string, limit = FILE_EVENTS_LIMIT): Promise<FileEvent[]> {
    return (
      await this.rows(`reading the events of ${fileId}`, S.FILE_EVENTS, {
        file_id: fileId,
        limit: Math.max(0, Math.trunc(limit)),
      })
    ).map(toFileEvent);
  }

  async gauges(): Promise<StoreGauges> {
    const files = await this.rows('counting files by state', S.GAUGE_FILES, {});
    const [doubt] = await this.rows('counting chunks in doubt', S.GAUGE_IN_DOUBT, {});
    return {
      files: Object.fromEntries(files.map((r) => [str(r.state), num(r.n)])),
      chunksInDoubt: num(doubt?.n ?? 0),
    };
  }

  async countBySha(source: string, sha256: string): Promise<number> {
    const [r] = await this.rows('counting files', S.COUNT_BY_SHA, { source, sha256 });
    return num(r?.n ?? 0);
  }

  async transition(
    fileId: string,
    to: FileState,
    options: { from?: readonly FileState[]; owner?: string; patch?: FilePatch } = {},
  ): Promise<FileRecord | null> {
    const [r] = await this.rows(`moving ${fileId} to ${to}`, S.PATCH_FILE, {
      ...patchParams(options.patch),
      to,
      now: this.now(),
      file_id: fileId,
      from: options.from ?? null,
      owner: options.owner ?? null,
    });
    return r ? toFile(r) : null;
  }

  async updateFile(fileId: string, patch: FilePatch): Promise<void> {
    await this.rows(`updating ${fileId}`, S.PATCH_FILE, {
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
    if (states.length === 0) return null;
    const [r] = await this.rows('acquiring a file', S.ACQUIRE_FILE, {
      owner,
      states,
      lease_ms: leaseMs,
      now: this.now(),
    });
    return r ? toFile(r) : null;
  }

  async takeLease(fileId: string, owner: string, leaseMs: number): Promise<boolean> {
    return (
      (await this.count(`taking the lease of ${fileId}`, S.TAKE_LEASE, {
        owner,
        file_id: fileId,
        lease_ms: leaseMs,
        now: this.now(),
      })) === 1
    );
  }

  async renewLease(fileId: string, owner: string, leaseMs: number): Promise<boolean> {
    const what = `renewing the lease of ${fileId}`;
    const params = { owner, file_id: fileId, lease_ms: leaseMs, now: this.now() };
    const [r] = await this.rows(what, S.RENEW_LEASE, params);
    if (r?.held === true) return true;
    // Taken over, or renewed meanwhile by a concurrent call (see RENEW_LEASE): the row as it is.
    return (await this.count(what, S.RENEW_LEASE_NOW, params)) === 1;
  }

  async releaseLease(fileId: string, owner: string): Promise<void> {
    await this.count(`releasing the lease of ${fileId}`, S.RELEASE_LEASE, { owner, file_id: fileId });
  }

  // ---- recipient ids ----

  private rememberFileNo(fileId: string, fileNo: number): void {
    // Bounded: a long-running receiver sees many files; the oldest are read again if needed.
    if (this.fileNos.size >= FILE_NO_CACHE) {
      const oldest = this.fileNos.keys().next().value;
      if (oldest !== undefined) this.fileNos.delete(oldest);
    }
    this.fileNos.set(fileId, fileNo);
  }

  /** The file's number (null: unknown file). A number never changes once given. */
  private async fileNo(fileId: string, on: Queryable = this.pool): Promise<number | null> {
    const known = this.fileNos.get(fileId);
    if (known !== undefined) return known;
    const [r] = await this.rows(`reading ${fileId}`, S.FILE_NO, { file_id: fileId }, on);
    if (!r) return null;
    // Remembered from a read on its own (committed), never from inside a transaction.
    if (on === this.pool) this.rememberFileNo(fileId, num(r.file_no));
    return num(r.file_no);
  }

  private async range(fileId: string, on: Queryable = this.pool): Promise<{ lo: number; hi: number } | null> {
    const n = await this.fileNo(fileId, on);
    return n === null ? null : idRange(n);
  }

  // ---- ingest ----

  async clearRecipients(fileId: string): Promise<void> {
    const what = `clearing the recipients of ${fileId}`;
    await this.tx(what, async (c) => {
      const n = await this.fileNo(fileId, c);
      if (n !== null) {
        await this.count(what, S.CLEAR_RECIPIENTS, idRange(n), c);
        await this.count(what, S.CLEAR_SPANS, { file_no: n }, c);
        await this.count(what, S.CLEAR_MINUTES, { file_no: n }, c);
      }
      await this.count(what, S.CLEAR_CHUNKS, { file_id: fileId }, c);
      await this.count(what, S.CLEAR_ATTACHMENTS, { file_id: fileId }, c);
    });
  }

  async setAttachments(fileId: string, attachments: readonly FileAttachment[]): Promise<void> {
    const what = `recording the attachments of ${fileId}`;
    await this.tx(what, async (c) => {
      await this.count(what, S.CLEAR_ATTACHMENTS, { file_id: fileId }, c);
      if (attachments.length > 0)
        await this.count(
          what,
          S.INSERT_ATTACHMENTS,
          {
            file_id: fileId,
            names: attachments.map((a) => a.name),
            content_types: attachments.map((a) => a.contentType),
            contents: attachments.map((a) => a.content),
          },
          c,
        );
    });
  }

  async attachments(fileId: string): Promise<FileAttachment[]> {
    const rows = await this.rows(`reading the attachments of ${fileId}`, S.ATTACHMENTS, { file_id: fileId });
    return rows.map((r) => ({
      name: str(r.name),
      contentType: str(r.content_type),
      content: str(r.content),
    }));
  }

  async insertRecipients(fileId: string, rows: readonly RecipientInsert[]): Promise<void> {
    if (rows.length === 0) return;
    const what = `recording recipients of ${fileId}`;
    for (const r of rows) {
      if (!(Number.isInteger(r.idx) && r.idx >= 0 && r.idx < SPAN))
        throw new DroplineError('DROPLINE_ERR_STORE', `${what}: idx ${r.idx} out of range`);
    }
    // each chunk's id range in this batch (idx; made ids below)
    const spans = new Map<number, [number, number]>();
    for (const r of rows) {
      if (r.chunkSeq === null) continue;
      const span = spans.get(r.chunkSeq);
      if (!span) spans.set(r.chunkSeq, [r.idx, r.idx]);
      else {
        if (r.idx < span[0]) span[0] = r.idx;
        if (r.idx > span[1]) span[1] = r.idx;
      }
    }
    // status takes its default ('pending'); updated_at the database's now() unless a clock is injected
    const now = this.now();
    const tail = now === null ? '\n' : `\t${now}\n`;
    await this.tx(what, async (c) => {
      // The file's number as committed, read inside the write: its rows are its own.
      const fileNo = await this.fileNo(fileId, c);
      if (fileNo === null)
        throw new DroplineError('DROPLINE_ERR_STORE', `recipients of unknown file ${fileId}`);
      if (fileNo >= MAX_FILE_NO)
        throw new DroplineError('DROPLINE_ERR_STORE', `file number ${fileNo} out of range`);
      const base = fileNo * SPAN;
      let data = '';
      for (const r of rows) {
        data += `${base + r.idx}\t${r.line}\t${r.k}\t${copyValue(r.number)}\t${copyValue(r.value)}\t${copyValue(
          storedMessageId(fileId, r),
        )}\t${copyValue(r.text)}\t${copyValue(r.chunkSeq)}\t${copyValue(r.outcome)}\t${copyValue(
          r.code,
        )}\t${copyValue(r.detail)}\t${copyValue(r.smsCount)}${tail}`;
      }
      try {
        await copyIn(c, now === null ? S.COPY_RECIPIENTS : S.COPY_RECIPIENTS_AT, data);
      } catch (err) {
        throw storeError(err, what);
      }
      if (spans.size > 0) {
        const seqs = [...spans.keys()];
        await this.count(
          what,
          S.UPSERT_SPANS,
          {
            file_no: fileNo,
            seqs,
            firsts: seqs.map((s) => base + spans.get(s)![0]),
            lasts: seqs.map((s) => base + spans.get(s)![1]),
          },
          c,
        );
      }
    });
  }

  async insertChunks(fileId: string, chunks: readonly ChunkInsert[]): Promise<void> {
    if (chunks.length === 0) return;
    await this.count(`recording chunks of ${fileId}`, S.INSERT_CHUNKS, {
      file_id: fileId,
      seqs: chunks.map((c) => c.seq),
      sizes: chunks.map((c) => c.size),
      now: this.now(),
    });
  }

  // ---- sending ----

  async listChunks(fileId: string, states?: readonly ChunkState[]): Promise<ChunkRecord[]> {
    return (
      await this.rows(`reading the chunks of ${fileId}`, S.LIST_CHUNKS, {
        file_id: fileId,
        states: states ?? null,
      })
    ).map(toChunk);
  }

  async chunkRecipients(
    fileId: string,
    seq: number,
    outcomes?: readonly RecipientOutcome[],
  ): Promise<RecipientRecord[]> {
    const rows = await this.rows(`reading chunk ${seq} of ${fileId}`, CHUNK_RECIPIENTS, {
      file_id: fileId,
      seq,
      outcomes: outcomes ?? null,
    });
    if (rows.length === 0) return [];
    const base = Math.floor(num(rows[0]!.id) / SPAN) * SPAN;
    return rows.map((r) => toRecipient(r, fileId, base));
  }

  async chunkDestinations(fileId: string, seq: number): Promise<ChunkDestination[]> {
    const rows = await this.arrays(`reading chunk ${seq} of ${fileId}`, S.CHUNK_DESTINATIONS, {
      file_id: fileId,
      seq,
      pending_states: PENDING_CHUNK_STATES,
    });
    return rows.map((r) => toDestination(r, fileId));
  }

  async chunkMessageIds(
    fileId: string,
    seq: number,
    numbers: readonly string[],
  ): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    // A seq an integer column cannot hold names no chunk, and would fail the read (a report's
    // batch with it). Text parameters cannot hold NUL.
    if (numbers.length === 0 || !isChunkSeq(seq)) return out;
    if (fileId.includes('\0')) return out;
    const rows = await this.arrays(
      `reading the messageIds of chunk ${seq} of ${fileId}`,
      S.CHUNK_MESSAGE_IDS,
      {
        file_id: fileId,
        seq,
        numbers: textArray(numbers.filter((n) => !n.includes('\0'))),
      },
    );
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
    return (
      (await this.count(`moving chunk ${seq} of ${fileId} to ${to}`, S.SET_CHUNK_STATE, {
        to,
        from,
        file_id: fileId,
        seq,
        owner: options.owner ?? null,
        file_state: options.fileState ?? null,
        now: this.now(),
      })) === 1
    );
  }

  async recordChunkResult(fileId: string, seq: number, result: ChunkResult): Promise<ChunkState> {
    const what = `recording the result of chunk ${seq} of ${fileId}`;
    const parts = resultParts(result);
    if (!parts.some(needsReportCheck) && !result.finalStatus) {
      const plan = planChunkResult(result, parts, () => false);
      if (plan.byIds.length === 0) return this.finishAlone(fileId, seq, result, plan);
    }
    return this.tx(what, async (c) => {
      const now = this.now();
      const [span] = await this.rows(what, S.LOCK_CHUNK, { file_id: fileId, seq }, c);
      const lo = span?.first_id == null ? 1 : num(span.first_id);
      const hi = span?.last_id == null ? 0 : num(span.last_id);
      const at = { file_id: fileId, seq, lo, hi };
      // Read after the chunk's lock: every report recorded for the chunk so far is seen.
      const reported = new Map<PartOutcome, boolean>();
      for (const part of parts) {
        if (!needsReportCheck(part)) continue;
        const check = reportCheck(part);
        const found =
          check.kind === 'whole'
            ? await this.rows(what, S.REPORTED_WHOLE, at, c)
            : await this.rows(
                what,
                S.REPORTED_PART,
                { ...at, ids: check.kind === 'ids' ? check.ids : null },
                c,
              );
        reported.set(part, found.length > 0);
      }
      const plan = planChunkResult(result, parts, (p) => reported.get(p) === true);
      const write = (w: PartWrite) => ({
        outcome: w.outcome,
        code: w.code,
        detail: w.detail,
        tn: w.transactionNumber,
        now,
      });
      for (const { messageIds, transactionNumbers, write: w } of plan.byIds)
        await this.count(what, S.SET_PART, { ...at, ...w, now, ids: messageIds, tns: transactionNumbers }, c);
      const chunk = {
        ...at,
        state: plan.state,
        attempts: result.attempts,
        chunk_tn: result.transactionNumber ?? null,
        error_code: plan.code,
        error_message: plan.message,
        now,
      };
      if (!plan.whole) await this.count(what, S.FINISH_CHUNK, chunk, c);
      else if (plan.whole.follows) await this.count(what, S.FINISH_CHUNK_FOLLOW_WHOLE, chunk, c);
      else await this.count(what, S.FINISH_CHUNK_SET_WHOLE, { ...chunk, ...write(plan.whole.write) }, c);
      if (result.finalStatus)
        await this.count(
          what,
          S.SET_FINAL_STATUS,
          { ...at, status: result.finalStatus, follows: plan.state === 'accepted', now },
          c,
        );
      return plan.state;
    });
  }

  /**
   * A result that asks nothing of delivery reports and names no recipient by messageId: one
   * statement, its own transaction (no decision rests on a read before it).
   */
  private async finishAlone(
    fileId: string,
    seq: number,
    result: ChunkResult,
    plan: ReturnType<typeof planChunkResult>,
  ): Promise<ChunkState> {
    const what = `recording the result of chunk ${seq} of ${fileId}`;
    const now = this.now();
    const chunk = {
      file_id: fileId,
      seq,
      state: plan.state,
      attempts: result.attempts,
      chunk_tn: result.transactionNumber ?? null,
      error_code: plan.code,
      error_message: plan.message,
      now,
    };
    if (!plan.whole) await this.count(what, S.FINISH_CHUNK, chunk);
    else {
      const fileNo = (await this.fileNo(fileId)) ?? -1;
      if (plan.whole.follows)
        await this.count(what, S.FINISH_CHUNK_FOLLOW_WHOLE_ALONE, { ...chunk, file_no: fileNo });
      else {
        const w = plan.whole.write;
        await this.count(what, S.FINISH_CHUNK_SET_WHOLE_ALONE, {
          ...chunk,
          file_no: fileNo,
          outcome: w.outcome,
          code: w.code,
          detail: w.detail,
          tn: w.transactionNumber,
        });
      }
    }
    return plan.state;
  }

  async markInflightInDoubt(fileId: string): Promise<number> {
    const what = `marking the inflight chunks of ${fileId} in doubt`;
    return this.tx(what, async (c) => {
      const seqs = (await this.rows(what, S.LOCK_INFLIGHT, { file_id: fileId }, c)).map((r) => num(r.seq));
      if (seqs.length === 0) return 0;
      const fileNo = await this.fileNo(fileId, c);
      // Read after the lock: a report recorded before it proves its chunk was accepted.
      const proven = new Set(
        fileNo === null
          ? []
          : (await this.rows(what, S.CHUNKS_REPORTED, { file_no: fileNo, seqs }, c)).map((r) => num(r.seq)),
      );
      await this.count(
        what,
        S.SET_INFLIGHT_STATES,
        {
          file_id: fileId,
          file_no: fileNo ?? -1,
          seqs,
          states: seqs.map((s) => abandonedChunkState(proven.has(s))),
          now: this.now(),
        },
        c,
      );
      return seqs.length;
    });
  }

  async requeueChunks(
    fileId: string,
    states: readonly ChunkState[],
    options: { addPossibleDuplicates?: number } = {},
  ): Promise<number> {
    // Only recipients the service did not take go back: a failed chunk may hold sent ones.
    const outcomes = states.filter((s) => s === 'failed' || s === 'in_doubt' || s === 'rejected');
    const [r] = await this.rows(`requeueing chunks of ${fileId}`, S.REQUEUE_CHUNKS, {
      file_id: fileId,
      states,
      outcomes,
      add_pd: options.addPossibleDuplicates ?? 0,
      now: this.now(),
    });
    return num(r?.n ?? 0);
  }

  async reportFailed(fileId: string, backoff: { baseMs: number; maxMs: number }): Promise<void> {
    await this.count(`recording reports owed by ${fileId}`, S.REPORT_FAILED, {
      file_id: fileId,
      base_ms: backoff.baseMs,
      max_ms: backoff.maxMs,
      now: this.now(),
    });
  }

  async oweReports(fileId: string): Promise<void> {
    await this.count(`recording reports owed by ${fileId}`, S.OWE_REPORTS, {
      file_id: fileId,
      now: this.now(),
    });
  }

  async reportsWritten(fileId: string): Promise<void> {
    await this.count(`recording the reports of ${fileId} written`, S.REPORTS_WRITTEN, { file_id: fileId });
  }

  async reportsDue(limit: number): Promise<string[]> {
    const rows = await this.rows('listing reports owed', S.REPORTS_DUE, { limit, now: this.now() });
    return rows.map((r) => str(r.file_id));
  }

  async cancelUnsent(fileId: string): Promise<number> {
    const [r] = await this.rows(`cancelling the unsent chunks of ${fileId}`, S.CANCEL_UNSENT, {
      file_id: fileId,
      detail: CANCELLED_DETAIL,
      now: this.now(),
    });
    return num(r?.n ?? 0);
  }

  // ---- delivery reports ----

  async recordDeliveries(events: readonly DeliveryEvent[]): Promise<DeliveryResult> {
    const result: DeliveryResult = { recorded: 0, duplicates: 0, orphans: 0, fileIds: [] };
    if (events.length === 0) return result;
    const what = 'recording delivery reports';
    const one = this.oneFileBatch(events);
    if (one) {
      result.fileIds = await this.tx(what, (c) => this.recordGenerated(c, one, events, result));
      return result;
    }
    /** File numbers read in the transaction: remembered once it committed. */
    const read = new Map<string, number>();
    const files = await this.tx(what, async (c) => {
      read.clear();
      const now = this.now();
      const files: string[] = [];
      const inserted = await this.rows(
        what,
        S.INSERT_EVENTS,
        {
          ...eventColumns(events),
          now,
        },
        c,
      );
      // The new ones, in order (of two alike in the batch, the first is the one kept).
      let fresh: DeliveryEvent[];
      if (inserted.length === events.length) fresh = [...events];
      else {
        const keys = new Set(inserted.map((r) => `${str(r.transaction_number)}\n${str(r.to_number)}`));
        fresh = events.filter((e) => keys.delete(`${e.transactionNumber}\n${e.to}`));
      }
      result.recorded = fresh.length;
      result.duplicates = events.length - fresh.length;
      const byFile = byBulk(fresh);
      const orphans: DeliveryEvent[] = [];
      const fileNos = new Map<string, number>();
      const unknown: string[] = [];
      for (const fileId of byFile.keys()) {
        const n = this.fileNos.get(fileId);
        if (n === undefined) unknown.push(fileId);
        else fileNos.set(fileId, n);
      }
      if (unknown.length > 0) {
        for (const r of await this.rows(what, S.FILE_NOS, { file_ids: unknown }, c)) {
          fileNos.set(str(r.file_id), num(r.file_no));
          read.set(str(r.file_id), num(r.file_no));
        }
      }
      for (const [fileId, list] of byFile) {
        const fileNo = fileNos.get(fileId);
        if (fileNo === undefined) {
          orphans.push(...list);
          continue;
        }
        const unmatched = await this.applyDeliveries(c, fileId, fileNo, list, now);
        orphans.push(...unmatched);
        if (unmatched.length < list.length) files.push(fileId);
      }
      await this.markOrphans(c, orphans);
      result.orphans = orphans.length;
      return files;
    });
    for (const [fileId, n] of read) this.rememberFileNo(fileId, n);
    result.fileIds = files;
    return result;
  }

  /**
   * The batch the receiver usually commits: reports of one file whose number is known, every
   * messageId generated, no report and no recipient twice. Null for any other batch.
   */
  private oneFileBatch(
    events: readonly DeliveryEvent[],
  ): { fileId: string; fileNo: number; targets: Target[] } | null {
    const fileId = events[0]!.bulkId;
    const fileNo = this.fileNos.get(fileId);
    if (fileNo === undefined) return null;
    const keys = new Set<string>();
    const reports = new Set<string>();
    const targets: Target[] = [];
    for (const e of events) {
      if (e.bulkId !== fileId) return null;
      const at = parseGenerated(fileId, e.messageId);
      if (!at) return null;
      const key = `${at.line}-${at.k}`;
      const report = `${e.transactionNumber}\n${e.to}`;
      if (keys.has(key) || reports.has(report)) return null;
      keys.add(key);
      reports.add(report);
      targets.push({ e, key, line: at.line, k: at.k });
    }
    return { fileId, fileNo, targets };
  }

  /** Inside the transaction: oneFileBatch's batch, RECORD_GENERATED, then as applyDeliveries. Returns fileIds. */
  private async recordGenerated(
    c: pg.PoolClient,
    batch: { fileId: string; fileNo: number; targets: Target[] },
    events: readonly DeliveryEvent[],
    result: DeliveryResult,
  ): Promise<string[]> {
    const what = 'recording delivery reports';
    const { fileId, fileNo, targets } = batch;
    const now = this.now();
    const { lo, hi } = idRange(fileNo);
    const out = await this.rows(
      what,
      S.RECORD_GENERATED,
      {
        ...eventColumns(events),
        numbers: textArray(events.map((e) => sentForm(e.to))),
        lines: intArray(targets.map((t) => t.line)),
        ks: intArray(targets.map((t) => t.k)),
        file_id: fileId,
        lo,
        hi,
        now,
      },
      c,
    );
    const kept = new Set<string>();
    const rows: Row[] = [];
    const locked = new Map<number, string>();
    for (const r of out) {
      if (r.kind === 'event') kept.add(`${str(r.tn)}\n${str(r.to_number)}`);
      else if (r.kind === 'lock') locked.set(num(r.chunk_seq), str(r.state));
      else rows.push(r);
    }
    const fresh = targets.filter((t) => kept.has(`${t.e.transactionNumber}\n${t.e.to}`));
    result.recorded = fresh.length;
    result.duplicates = events.length - fresh.length;
    // A generated-looking id that names no valid row may be a file's own id.
    const found = new Set(rows.map((r) => str(r.key)));
    const own = fresh
      .filter((t) => !found.has(t.key))
      .map((t): Target => ({ e: t.e, key: t.e.messageId, line: 0, k: 0 }));
    const unmatched = (await this.deliver(c, 'own', own, lo, hi, now, rows, fileId, locked)).map((t) => t.e);
    await this.settleByReports(c, fileId, fileNo, rows, now, locked);
    await this.markOrphans(c, unmatched);
    result.orphans = unmatched.length;
    return unmatched.length < fresh.length ? [fileId] : [];
  }

  /** Inside the transaction: events that matched no recipient kept as orphans. */
  private async markOrphans(c: pg.PoolClient, orphans: readonly DeliveryEvent[]): Promise<void> {
    if (orphans.length === 0) return;
    await this.count(
      'recording delivery reports',
      S.MARK_ORPHANS,
      { tns: orphans.map((e) => e.transactionNumber), tos: orphans.map((e) => e.to) },
      c,
    );
  }

  /**
   * Inside the transaction: one file's new events onto its recipients, then what they prove.
   * A generated messageId is looked up by (line, k), an own one by itself ('' matches nobody).
   * Returns the events that matched no recipient.
   */
  private async applyDeliveries(
    c: pg.PoolClient,
    fileId: string,
    fileNo: number,
    events: readonly DeliveryEvent[],
    now: string | null,
  ): Promise<DeliveryEvent[]> {
    const { lo, hi } = idRange(fileNo);
    const generated: Target[] = [];
    const own: DeliveryEvent[] = [];
    const unmatched: DeliveryEvent[] = [];
    for (const e of events) {
      const at = parseGenerated(fileId, e.messageId);
      if (at) generated.push({ e, key: `${at.line}-${at.k}`, line: at.line, k: at.k });
      else if (e.messageId !== '') own.push(e);
      else unmatched.push(e);
    }
    const rows: Row[] = [];
    /** Chunks locked so far (settleByReports), with their states as locked. */
    const locked = new Map<number, string>();
    // A generated-looking id that names no valid row may be a file's own id.
    for (const t of await this.deliver(c, 'generated', generated, lo, hi, now, rows, fileId, locked))
      own.push(t.e);
    const byId = own.map((e): Target => ({ e, key: e.messageId, line: 0, k: 0 }));
    for (const t of await this.deliver(c, 'own', byId, lo, hi, now, rows, fileId, locked))
      unmatched.push(t.e);
    await this.settleByReports(c, fileId, fileNo, rows, now, locked);
    return unmatched;
  }

  /**
   * One UPDATE per round of targets; a recipient named twice in one batch is updated once per
   * report, in order (rounds), as one UPDATE would apply only one of them. Returns the targets
   * that matched no row; appends the rows changed to `rows`.
   */
  private async deliver(
    c: pg.PoolClient,
    kind: 'generated' | 'own',
    targets: readonly Target[],
    lo: number,
    hi: number,
    now: string | null,
    rows: Row[],
    fileId: string,
    locked: Map<number, string>,
  ): Promise<Target[]> {
    const missed: Target[] = [];
    let round = targets;
    let first = true;
    while (round.length > 0) {
      const [current, later] = firstOfEach(round);
      const common = {
        lo,
        hi,
        now,
        statuses: textArray(current.map((t) => t.e.status)),
        sms_counts: intArray(current.map((t) => t.e.smsCount)),
        tns: textArray(current.map((t) => t.e.transactionNumber)),
        numbers: textArray(current.map((t) => sentForm(t.e.to))),
      };
      // The usual batch (generated ids, each recipient once): its chunks locked in the same
      // statement. Any later round or lookup locks what it adds in settleByReports.
      const withLock = kind === 'generated' && first && later.length === 0;
      first = false;
      const found = withLock
        ? await this.deliverLocking(c, fileId, common, current, locked)
        : kind === 'generated'
          ? await this.rows(
              'recording delivery reports',
              S.DELIVER_GENERATED,
              {
                ...common,
                lines: intArray(current.map((t) => t.line)),
                ks: intArray(current.map((t) => t.k)),
              },
              c,
            )
          : await this.rows(
              'recording delivery reports',
              S.DELIVER_OWN,
              { ...common, message_ids: textArray(current.map((t) => t.e.messageId)) },
              c,
            );
      rows.push(...found);
      // A key names at most one sent recipient: as many rows as targets is every one found.
      if (found.length < current.length) {
        const matched = new Set(found.map((r) => str(r.key)));
        for (const t of current) if (!matched.has(t.key)) missed.push(t);
      }
      round = later;
    }
    return missed;
  }

  /** DELIVER_GENERATED_LOCK: the rows written (as DELIVER_GENERATED), the chunks locked into `locked`. */
  private async deliverLocking(
    c: pg.PoolClient,
    fileId: string,
    common: Record<string, unknown>,
    current: readonly Target[],
    locked: Map<number, string>,
  ): Promise<Row[]> {
    const out = await this.rows(
      'recording delivery reports',
      S.DELIVER_GENERATED_LOCK,
      {
        ...common,
        file_id: fileId,
        lines: intArray(current.map((t) => t.line)),
        ks: intArray(current.map((t) => t.k)),
      },
      c,
    );
    const rows: Row[] = [];
    for (const r of out) {
      if (r.kind === 'lock') locked.set(num(r.chunk_seq), str(r.state));
      else rows.push(r);
    }
    return rows;
  }

  /**
   * What the reported rows prove: the request that carried a reported recipient reached the
   * service. Chunks with a reported row that follows it or is in doubt are looked at; rows
   * already `sent` (an accepted part of a mixed chunk) prove nothing more.
   */
  private async settleByReports(
    c: pg.PoolClient,
    fileId: string,
    fileNo: number,
    rows: readonly Row[],
    now: string | null,
    locked: Map<number, string>,
  ): Promise<void> {
    const seqs = new Set<number>();
    const doubt = new Set<number>();
    for (const r of rows) {
      if (r.chunk_seq === null || r.chunk_seq === undefined) continue;
      const follows = r.outcome === 'pending' && r.code === null;
      if (r.outcome !== 'in_doubt' && !follows) continue;
      const seq = num(r.chunk_seq);
      seqs.add(seq);
      if (r.outcome === 'in_doubt') doubt.add(seq);
    }
    if (seqs.size === 0) return;
    const what = `recording delivery reports of ${fileId}`;
    const ordered = [...seqs].sort((a, b) => a - b);
    const missing = ordered.filter((s) => !locked.has(s));
    if (missing.length > 0)
      for (const r of await this.rows(what, S.LOCK_CHUNKS, { file_id: fileId, seqs: missing }, c))
        locked.set(num(r.seq), str(r.state));
    // States as locked (after any chunk result that held the lock committed): no chunk in
    // doubt, nothing for SETTLE_CHUNKS to settle.
    if (ordered.some((s) => locked.get(s) === 'in_doubt')) {
      const settled = await this.rows(
        what,
        S.SETTLE_CHUNKS,
        { file_id: fileId, file_no: fileNo, seqs: ordered, now },
        c,
      );
      for (const r of settled) doubt.add(num(r.seq));
    }
    if (doubt.size === 0) return;
    await this.count(what, S.SEND_DOUBTFUL, { file_no: fileNo, seqs: [...doubt], now }, c);
  }

  async expireDeliveries(fileId: string): Promise<number> {
    const range = await this.range(fileId);
    if (!range) return 0;
    return this.count(`expiring deliveries of ${fileId}`, S.EXPIRE_DELIVERIES, {
      ...range,
      file_id: fileId,
      now: this.now(),
    });
  }

  async summary(since: string): Promise<StoreSummary> {
    return this.tx('reading the summary', async (c) => {
      await c.query(S.READ_SNAPSHOT);
      const [r] = await this.rows('reading the summary', S.SUMMARY, { since }, c);
      const files = await this.rows('reading the summary', S.SUMMARY_FILES, {}, c);
      const counts = await this.countsOn(
        c,
        files.map((f) => String(f.file_id)),
      );
      let waiting = 0;
      for (const n of counts.values()) waiting += n.pendingDelivery;
      return {
        sending: Number(r!.sending),
        sent: Number(r!.sent),
        delivered: Number(r!.delivered),
        undelivered: Number(r!.undelivered),
        waiting,
      };
    });
  }

  async deliveryTimeline(fileId: string): Promise<DeliveryMinute[]> {
    // Kept by the chunk counters' trigger (migration 0004), in the statements that change statuses.
    return (
      await this.rows(`reading the delivery timeline of ${fileId}`, S.DELIVERY_TIMELINE, { file_id: fileId })
    ).map(toDeliveryMinute);
  }

  // ---- retention ----

  // ---- campaign rules ----

  async holdBack(fileId: string, seq: number, options: HoldBackOptions): Promise<HeldBack> {
    const what = `holding back recipients of chunk ${seq} of ${fileId}`;
    return this.tx(what, async (c): Promise<HeldBack> => {
      const chunk = { file_id: fileId, seq, now: this.now() };
      const held: HeldBack = { suppressed: 0, contactLimited: 0 };
      if (options.optOuts) held.suppressed = await this.count(what, S.HOLD_BACK_OPT_OUTS, chunk, c);
      const limit = options.contactLimit;
      if (!limit) return held;
      const slots = { ...chunk, account: limit.account, timezone: limit.timezone };
      for (let slot = 1; slot <= limit.perDay; slot++)
        await this.count(what, S.TAKE_CONTACT_SLOTS, { ...slots, slot }, c);
      held.contactLimited = await this.count(
        what,
        S.HOLD_BACK_CONTACTS,
        { ...slots, per_day: limit.perDay },
        c,
      );
      return held;
    });
  }

  async pruneContacts(timezone: string): Promise<number> {
    return this.count('pruning contact-limit slots', S.PRUNE_CONTACTS, { timezone, now: this.now() });
  }

  async recordReply(reply: NewReply): Promise<boolean> {
    const rows = await this.rows('recording a reply', S.RECORD_REPLY, {
      received_at: reply.receivedAt,
      from_number: reply.from,
      to_number: reply.to,
      text: reply.text,
      opt_out: reply.optOut,
      message_id: reply.messageId,
    });
    return rows.length > 0;
  }

  async replies(options: {
    since?: string | undefined;
    afterId?: number;
    limit: number;
  }): Promise<ReplyRecord[]> {
    const rows = await this.rows('reading replies', S.REPLIES, {
      after_id: options.afterId ?? 0,
      since: options.since ?? null,
      limit: options.limit,
    });
    return rows.map(toReply);
  }

  async prune(options: { finishedBefore: string; maxRows: number }): Promise<PruneStep> {
    const maxRows = Math.max(1, Math.trunc(options.maxRows));
    const what = 'pruning';
    return this.tx(what, async (c): Promise<PruneStep> => {
      const now = this.now();
      const step: PruneStep = {
        fileId: null,
        marked: false,
        fileDone: false,
        recipients: 0,
        events: 0,
        idle: false,
      };
      // A file being pruned first, else the oldest finished file past the cutoff.
      let [row] = await this.rows(what, S.PRUNING_FILE, {}, c);
      if (!row) {
        [row] = await this.rows(
          what,
          S.PRUNABLE_FILE,
          { states: FINAL_FILE_STATES, before: options.finishedBefore },
          c,
        );
        if (row) {
          const fileId = str(row.file_id);
          // Its counts as they are now: what status shows once its rows are gone.
          const counts = (await this.countsOn(c, [fileId])).get(fileId);
          await this.count(what, S.MARK_PRUNED, { file_id: fileId, counts: JSON.stringify(counts), now }, c);
          step.marked = true;
        }
      }
      if (!row) {
        // No file left: orphan reports recorded before the cutoff, a batch at a time.
        step.events = await this.count(
          what,
          S.PRUNE_ORPHANS,
          { before: options.finishedBefore, max_rows: maxRows },
          c,
        );
        step.idle = step.events < maxRows;
        return step;
      }
      const fileId = str(row.file_id);
      const n = num(row.file_no);
      step.fileId = fileId;
      const tns = new Set<string>();
      const range = idRange(n);
      const [bounds] = await this.rows(what, S.ID_BOUNDS, range, c);
      if (bounds?.first != null) {
        const deleted = await this.rows(
          what,
          S.PRUNE_RECIPIENTS,
          { from: num(bounds.first), hi: range.hi, max_rows: maxRows },
          c,
        );
        step.recipients = deleted.length;
        for (const r of deleted) if (r.transaction_number != null) tns.add(str(r.transaction_number));
      }
      const [left] = await this.rows(what, S.ID_BOUNDS, range, c);
      if (left?.first == null) {
        for (const r of await this.rows(what, S.CHUNK_TNS, { file_id: fileId }, c))
          tns.add(str(r.transaction_number));
        await this.count(what, S.CLEAR_CHUNKS, { file_id: fileId }, c);
        await this.count(what, S.CLEAR_ATTACHMENTS, { file_id: fileId }, c);
        await this.count(what, S.CLEAR_SPANS, { file_no: n }, c);
        await this.count(what, S.PRUNE_DONE, { file_id: fileId }, c);
        step.fileDone = true;
      }
      if (tns.size > 0)
        step.events = await this.count(what, S.PRUNE_EVENTS, { tns: [...tns], file_id: fileId }, c);
      return step;
    });
  }

  // ---- progress and reports ----

  async counts(fileId: string): Promise<FileCounts> {
    return (await this.countsOf([fileId])).get(fileId) ?? { ...NO_INGEST, ...NOTHING_SENT };
  }

  async countsOf(fileIds: readonly string[]): Promise<Map<string, FileCounts>> {
    if (fileIds.length === 0) return new Map();
    // Two reads that see one state of the database, whatever the number of files.
    return this.tx('counting files', async (c) => {
      await c.query(S.READ_SNAPSHOT);
      return this.countsOn(c, fileIds);
    });
  }

  /** The counts of these files (absent: unknown), on a transaction's connection (prune keeps them). */
  private async countsOn(on: Queryable, fileIds: readonly string[]): Promise<Map<string, FileCounts>> {
    const what = 'counting files';
    const out = new Map<string, FileCounts>();
    const live = new Map<string, { ingest: IngestCounts; chunks: ChunkGroup[]; own: OwnGroup[] }>();
    for (const f of await this.rows(what, S.COUNTS_FILES, { file_ids: textArray(fileIds) }, on)) {
      const fileId = str(f.file_id);
      // A pruned file's counts are those it had when it was pruned.
      // Counts pruned before a counter existed have none of it.
      if (f.pruned_counts != null) out.set(fileId, { ...NOTHING_SENT, ...json<FileCounts>(f.pruned_counts) });
      else
        live.set(fileId, {
          ingest: {
            records: num(f.records),
            valid: num(f.valid),
            invalid: num(f.invalid),
            duplicates: num(f.duplicates),
            suppressed: num(f.suppressed),
            segments: num(f.segments),
          },
          chunks: [],
          own: [],
        });
    }
    if (live.size > 0) {
      for (const r of await this.rows(what, S.COUNTS_ROWS, { file_ids: textArray([...live.keys()]) }, on)) {
        const file = live.get(str(r.file_id));
        if (!file) continue;
        if (r.kind === 'chunk')
          file.chunks.push({
            state: str(r.state) as ChunkState,
            chunks: num(r.n),
            size: num(r.size),
            reported: num(r.reported),
            delivered: num(r.delivered),
            unknown: num(r.unknown),
            accepted: num(r.accepted),
            reportedFollow: num(r.reported_follow),
            reportedSent: num(r.reported_sent),
          });
        else
          file.own.push({
            outcome: str(r.outcome) as RecipientOutcome,
            chunkState: r.state === null ? null : (str(r.state) as ChunkState),
            count: num(r.n),
          });
      }
    }
    for (const [fileId, f] of live) out.set(fileId, assembleCounts(f.ingest, f.chunks, f.own));
    return out;
  }

  async *reportPages(fileId: string): AsyncGenerator<ReportRow[]> {
    for await (const rows of this.pages(fileId, REPORT_PAGE, {}, 'array'))
      yield (rows as unknown[][]).map((r) => toReportRow(r, fileId));
  }

  async *recipients(fileId: string, outcomes?: readonly RecipientOutcome[]): AsyncGenerator<RecipientRecord> {
    for await (const page of this.recipientPages(fileId, outcomes)) yield* page;
  }

  async *recipientPages(
    fileId: string,
    outcomes?: readonly RecipientOutcome[],
  ): AsyncGenerator<RecipientRecord[]> {
    const base = (await this.fileNo(fileId)) ?? 0;
    for await (const rows of this.pages(fileId, RECIPIENT_PAGE, { outcomes: outcomes ?? null }, 'object'))
      yield (rows as Row[]).map((r) => toRecipient(r, fileId, idRange(base).lo));
  }

  /**
   * The file's rows in id order, a window of pageSize ids at a time (idx is dense: a window is
   * a page), each its own short read: no cursor stays open while the consumer writes a report.
   * An empty window (a gap, or no row passing the filter) jumps to the next row there is.
   */
  private async *pages(
    fileId: string,
    s: S.Statement,
    params: Record<string, unknown>,
    mode: 'array' | 'object',
  ): AsyncGenerator<Row[] | unknown[][]> {
    const fileNo = await this.fileNo(fileId);
    if (fileNo === null) return;
    const range = idRange(fileNo);
    const what = `reading the recipients of ${fileId}`;
    const [bounds] = await this.rows(what, S.ID_BOUNDS, range);
    if (bounds?.first == null || bounds.last == null) return;
    const last = num(bounds.last);
    let from: number | null = num(bounds.first);
    while (from !== null && from <= last) {
      const to = Math.min(from + this.pageSize - 1, last);
      const values = { ...params, file_id: fileId, file_no: fileNo, from, to };
      const rows = mode === 'array' ? await this.arrays(what, s, values) : await this.rows(what, s, values);
      if (rows.length > 0) {
        yield rows;
        from = to + 1;
      } else {
        const [next] = await this.rows(what, S.ID_BOUNDS, { lo: to + 1, hi: last });
        from = next?.first == null ? null : num(next.first);
      }
    }
  }
}
