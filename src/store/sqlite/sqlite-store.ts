// The Store on node:sqlite. Several dropline processes (a `run` daemon, a `send` command)
// may open one database file: WAL lets readers run beside the one writer, busy_timeout
// makes a writer wait for the lock instead of failing, and every multi-statement write is
// BEGIN IMMEDIATE so it takes the write lock up front (a deferred transaction that reads
// first and then writes can fail with SQLITE_BUSY_SNAPSHOT without waiting at all).
//
// The work is synchronous: each method runs to completion inside one call, so no
// transaction stays open across an await.
//
// This class composes the store's areas (one file each, the same names as the PostgreSQL
// store's: docs/architecture.md "Stores"): each area is functions of the connection
// (SqliteDb, ./connection.ts), and a method of the Store is one line here.

import { statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { DroplineError } from '../../errors.ts';
import type { Migration } from '../migrations.ts';
import type { Store } from '../store.ts';
import * as accounts from './accounts.ts';
import * as campaign from './campaign.ts';
import { connect, SqliteDb } from './connection.ts';
import * as deliveries from './deliveries.ts';
import * as files from './files.ts';
import * as ingest from './ingest.ts';
import * as leases from './leases.ts';
import * as ledger from './ledger.ts';
import { migrate } from './migrations.ts';
import * as reads from './reads.ts';
import * as retention from './retention.ts';
import * as sending from './sending.ts';
import * as standing from './standing.ts';

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

export class SqliteStore implements Store {
  readonly path: string;
  private readonly db: SqliteDb;
  private readonly migrations: Migration[] | undefined;
  private checkpointer: Worker | null = null;

  constructor(options: SqliteStoreOptions) {
    this.path = options.path;
    this.migrations = options.migrations;
    const { db, checkpointer } = connect(options.path, {
      busyTimeoutMs: options.busyTimeoutMs ?? 10_000,
      checkpointer: options.backgroundCheckpoints === true,
    });
    this.checkpointer = checkpointer;
    this.db = new SqliteDb(
      db,
      options.path,
      options.now ?? (() => new Date()),
      options.pageSize ?? DEFAULT_PAGE,
    );
  }

  /** Explicit transactions committed by this instance (batching is observable in tests). */
  get transactions(): number {
    return this.db.transactions;
  }

  // files
  readonly registerFile: Store['registerFile'] = (...a) => files.registerFile(this.db, ...a);
  readonly claimFiles: Store['claimFiles'] = (...a) => files.claimFiles(this.db, ...a);
  readonly setPaths: Store['setPaths'] = (...a) => files.setPaths(this.db, ...a);
  readonly countBySha: Store['countBySha'] = (...a) => files.countBySha(this.db, ...a);
  readonly transition: Store['transition'] = (...a) => files.transition(this.db, ...a);
  readonly updateFile: Store['updateFile'] = (...a) => files.updateFile(this.db, ...a);
  // leases
  readonly heartbeat: Store['heartbeat'] = (...a) => leases.heartbeat(this.db, ...a);
  readonly workerStopped: Store['workerStopped'] = (...a) => leases.workerStopped(this.db, ...a);
  readonly listWorkers: Store['listWorkers'] = (...a) => leases.listWorkers(this.db, ...a);
  readonly acquireFile: Store['acquireFile'] = (...a) => leases.acquireFile(this.db, ...a);
  readonly takeLease: Store['takeLease'] = (...a) => leases.takeLease(this.db, ...a);
  readonly renewLease: Store['renewLease'] = (...a) => leases.renewLease(this.db, ...a);
  readonly releaseLease: Store['releaseLease'] = (...a) => leases.releaseLease(this.db, ...a);
  // ingest
  readonly clearRecipients: Store['clearRecipients'] = (...a) => ingest.clearRecipients(this.db, ...a);
  readonly setAttachments: Store['setAttachments'] = (...a) => ingest.setAttachments(this.db, ...a);
  readonly attachments: Store['attachments'] = (...a) => ingest.attachments(this.db, ...a);
  readonly insertRecipients: Store['insertRecipients'] = (...a) => ingest.insertRecipients(this.db, ...a);
  readonly insertChunks: Store['insertChunks'] = (...a) => ingest.insertChunks(this.db, ...a);
  // sending
  readonly listChunks: Store['listChunks'] = (...a) => sending.listChunks(this.db, ...a);
  readonly chunkRecipients: Store['chunkRecipients'] = (...a) => sending.chunkRecipients(this.db, ...a);
  readonly chunkDestinations: Store['chunkDestinations'] = (...a) => sending.chunkDestinations(this.db, ...a);
  readonly chunkMessageIds: Store['chunkMessageIds'] = (...a) => sending.chunkMessageIds(this.db, ...a);
  readonly setChunkState: Store['setChunkState'] = async (...a) => sending.setChunkState(this.db, ...a);
  readonly recordChunkResult: Store['recordChunkResult'] = (...a) => sending.recordChunkResult(this.db, ...a);
  readonly markInflightInDoubt: Store['markInflightInDoubt'] = (...a) =>
    sending.markInflightInDoubt(this.db, ...a);
  readonly requeueChunks: Store['requeueChunks'] = (...a) => sending.requeueChunks(this.db, ...a);
  readonly cancelUnsent: Store['cancelUnsent'] = (...a) => sending.cancelUnsent(this.db, ...a);
  // deliveries
  readonly recordDeliveries: Store['recordDeliveries'] = (...a) => deliveries.recordDeliveries(this.db, ...a);
  readonly expireDeliveries: Store['expireDeliveries'] = (...a) => deliveries.expireDeliveries(this.db, ...a);
  readonly deliveryTimeline: Store['deliveryTimeline'] = (...a) => deliveries.deliveryTimeline(this.db, ...a);
  readonly summary: Store['summary'] = (...a) => reads.summary(this.db, ...a);
  // campaign
  readonly holdBack: Store['holdBack'] = (...a) => campaign.holdBack(this.db, ...a);
  readonly beginChunk: Store['beginChunk'] = (...a) => campaign.beginChunk(this.db, ...a);
  readonly pruneContacts: Store['pruneContacts'] = (...a) => campaign.pruneContacts(this.db, ...a);
  readonly recordFileChecks: Store['recordFileChecks'] = (...a) => ledger.recordFileChecks(this.db, ...a);
  readonly contacts: Store['contacts'] = (...a) => ledger.contacts(this.db, ...a);
  readonly recordReply: Store['recordReply'] = (...a) => campaign.recordReply(this.db, ...a);
  readonly replies: Store['replies'] = (...a) => campaign.replies(this.db, ...a);
  readonly fileReplies: Store['fileReplies'] = (...a) => campaign.fileReplies(this.db, ...a);
  readonly replyCounts: Store['replyCounts'] = (...a) => campaign.replyCounts(this.db, ...a);
  // standing
  readonly standing: Store['standing'] = (...a) => standing.standing(this.db, ...a);
  readonly changeStanding: Store['changeStanding'] = (...a) => standing.changeStanding(this.db, ...a);
  readonly takeConfirmation: Store['takeConfirmation'] = (...a) => standing.takeConfirmation(this.db, ...a);
  readonly claimAnswer: Store['claimAnswer'] = (...a) => standing.claimAnswer(this.db, ...a);
  readonly settleAnswer: Store['settleAnswer'] = (...a) => standing.settleAnswer(this.db, ...a);
  readonly answersOwed: Store['answersOwed'] = (...a) => standing.answersOwed(this.db, ...a);
  readonly abandonAnswers: Store['abandonAnswers'] = () => standing.abandonAnswers(this.db);
  readonly replyAnswer: Store['replyAnswer'] = (...a) => standing.replyAnswer(this.db, ...a);
  readonly repliesToReview: Store['repliesToReview'] = (...a) => standing.repliesToReview(this.db, ...a);
  readonly countRepliesToReview: Store['countRepliesToReview'] = () => standing.countRepliesToReview(this.db);
  // accounts
  readonly keepSetting: Store['keepSetting'] = (...a) => accounts.keepSetting(this.db, ...a);
  readonly settingsUnder: Store['settingsUnder'] = (...a) => accounts.settingsUnder(this.db, ...a);
  readonly sharedToken: Store['sharedToken'] = (...a) => accounts.sharedToken(this.db, ...a);
  readonly claimTokenRenewal: Store['claimTokenRenewal'] = (...a) =>
    accounts.claimTokenRenewal(this.db, ...a);
  readonly storeToken: Store['storeToken'] = (...a) => accounts.storeToken(this.db, ...a);
  readonly releaseTokenRenewal: Store['releaseTokenRenewal'] = (...a) =>
    accounts.releaseTokenRenewal(this.db, ...a);
  readonly takeSendPermit: Store['takeSendPermit'] = (...a) => accounts.takeSendPermit(this.db, ...a);
  readonly releaseSendPermit: Store['releaseSendPermit'] = (...a) =>
    accounts.releaseSendPermit(this.db, ...a);
  readonly slowSends: Store['slowSends'] = (...a) => accounts.slowSends(this.db, ...a);
  readonly sendBudgets: Store['sendBudgets'] = (...a) => accounts.sendBudgets(this.db, ...a);
  // retention
  readonly prune: Store['prune'] = (...a) => retention.prune(this.db, ...a);
  // reads
  readonly getFile: Store['getFile'] = (...a) => reads.getFile(this.db, ...a);
  readonly listFiles: Store['listFiles'] = (...a) => reads.listFiles(this.db, ...a);
  readonly fileEvents: Store['fileEvents'] = (...a) => reads.fileEvents(this.db, ...a);
  readonly gauges: Store['gauges'] = (...a) => reads.gauges(this.db, ...a);
  readonly reportFailed: Store['reportFailed'] = (...a) => reads.reportFailed(this.db, ...a);
  readonly oweReports: Store['oweReports'] = (...a) => reads.oweReports(this.db, ...a);
  readonly reportsWritten: Store['reportsWritten'] = (...a) => reads.reportsWritten(this.db, ...a);
  readonly reportsDue: Store['reportsDue'] = (...a) => reads.reportsDue(this.db, ...a);
  readonly counts: Store['counts'] = (...a) => reads.counts(this.db, ...a);
  readonly countsOf: Store['countsOf'] = (...a) => reads.countsOf(this.db, ...a);
  readonly reportPages: Store['reportPages'] = (...a) => reads.reportPages(this.db, ...a);
  readonly recipients: Store['recipients'] = (...a) => reads.recipients(this.db, ...a);
  readonly recipientPages: Store['recipientPages'] = (...a) => reads.recipientPages(this.db, ...a);

  async migrate(): Promise<void> {
    await migrate(this.db, this.migrations);
  }

  async ping(): Promise<void> {
    try {
      this.db.stmt('SELECT count(*) AS n FROM schema_migrations').get();
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
      this.db.tx(() => {
        this.db
          .stmt('INSERT INTO schema_migrations (version, name, applied_at) VALUES (-1, ?, ?)')
          .run('write-probe', this.db.now());
        this.db.stmt('DELETE FROM schema_migrations WHERE version = -1').run();
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
    this.db.close();
  }
}
