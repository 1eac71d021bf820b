// The Store on PostgreSQL: the executor of ./sql.ts. Several workers share one database, so
// concurrency is the database's: SKIP LOCKED acquisition, a sequence for file numbers,
// unique constraints with "on conflict, re-read", advisory locks where a decision spans rows
// (claims of one content, migrations), row locks on a chunk for the decisions about it, and
// one clock (the database's now(), or the `now` option in tests) for timestamps and leases.
// Each compound decision is one statement or one transaction with its precondition inside.
//
// This class composes the store's areas (one file each, the same names as the SQLite store's:
// docs/architecture.md "Stores"): each area is functions of the connection (PgDb,
// ./connection.ts), and a method of the Store is one line here.

import type pg from 'pg';
import { DroplineError } from '../../errors.ts';
import type { Store } from '../store.ts';
import * as accounts from './accounts.ts';
import * as campaign from './campaign.ts';
import { createPool, PgDb } from './connection.ts';
import * as deliveries from './deliveries.ts';
import * as files from './files.ts';
import * as ingest from './ingest.ts';
import * as leases from './leases.ts';
import * as ledger from './ledger.ts';
import { migrate } from './migrations.ts';
import * as reads from './reads.ts';
import * as retention from './retention.ts';
import * as sending from './sending.ts';
import * as S from './sql.ts';
import * as standing from './standing.ts';

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

export class PostgresStore implements Store {
  /** Versions of the migrations this instance applied (another instance may have applied them). */
  readonly migrated: number[] = [];
  private readonly pool: pg.Pool;
  private readonly schema: string | null;
  private readonly db: PgDb;
  private closed = false;

  constructor(options: PostgresStoreOptions) {
    this.schema = options.schema ?? null;
    this.pool = createPool({
      connectionString: options.connectionString,
      ...(options.schema === undefined ? {} : { schema: options.schema }),
      ...(options.poolSize === undefined ? {} : { poolSize: options.poolSize }),
    });
    this.db = new PgDb(this.pool, options.now ?? null, options.pageSize ?? DEFAULT_PAGE);
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
  readonly setChunkState: Store['setChunkState'] = (...a) => sending.setChunkState(this.db, ...a);
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
    await migrate(this.db, this.schema, this.migrated);
  }

  async ping(): Promise<void> {
    await this.db.rows('ping', S.PING, {});
    await this.probeWrite();
  }

  async probeWrite(): Promise<void> {
    try {
      await this.db.tx('write probe', async (c) => {
        await this.db.rows('write probe', S.PROBE_INSERT, { now: this.db.now() }, c);
        await this.db.rows('write probe', S.PROBE_DELETE, {}, c);
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
}
