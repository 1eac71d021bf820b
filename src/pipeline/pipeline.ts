// One file's way through dropline: claim → ingest (read, validate, record every line) →
// send (write-ahead per chunk) → delivery reports → completed. The store is the truth at
// every step, so a process killed at any moment is resumed by the next one that takes the
// file's lease (DESIGN-NOTES 1).
import { createHash } from 'node:crypto';
import diagnosticsChannel from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';
import pLimit from 'p-limit';
import type { Config, SourceConfig } from '../config/schema.ts';
import { DroplineError, type FileReasonCode } from '../errors.ts';
import { type Sniff, sniff } from '../format/decode.ts';
import type { Priority } from '../format/directives.ts';
import { refuseUnknownTemplate } from '../format/email.ts';
import { makeNumberRules, type NumberRules } from '../format/numbers.ts';
import { type ReadSummary, readDropFile, refuseOtherChannel } from '../format/reader.ts';
import type { SuppressionList } from '../format/suppression.ts';
import type { Logger } from '../log.ts';
import { ChunkPlanner, planChunk } from '../plan/chunks.ts';
import { fileIdFor } from '../plan/ids.ts';
import { localTime, type SendWindow, sendWindowOf } from '../plan/send-window.ts';
import type { ChunkSendResult } from '../service/channel-account.ts';
import type { SendResult, ServiceClient } from '../service/client.ts';
import type { Flow } from '../service/dispatch.ts';
import { EMAIL_MAX_RECIPIENTS } from '../service/email.ts';
import type { EmailAccount } from '../service/email-account.ts';
import { WHATSAPP_CHUNK_RECIPIENTS, type WhatsAppAccount } from '../service/whatsapp-account.ts';
import type { MtMessageVia, PlannedChunk } from '../service/wire.ts';
import { mapLimited, markerMismatch } from '../sources/readiness.ts';
import { fileRefusalOf, type Source, type SourceEntry, SourceFileError } from '../sources/source.ts';
import {
  type ChunkDestination,
  type ChunkResult,
  type ChunkState,
  type FileContent,
  type FileCounts,
  type FileEmail,
  type FilePatch,
  type FileRecord,
  type FileState,
  type FileWhatsApp,
  type HoldBackOptions,
  NOTHING_SENT,
  type PartOutcome,
  type ReadyFile,
  type RecipientInsert,
  type Store,
} from '../store/store.ts';
import { RETRY_FROM } from './actions.ts';
import { readAttachments } from './attachments.ts';
import { patientStore } from './patient-store.ts';
import {
  buildManifest,
  cutToBytes,
  errorsCsv,
  type Manifest,
  manifestOf,
  reportCsv,
  reportFileName,
} from './reports.ts';

// Rows per insertRecipients transaction (~500 for a million rows). 10,000 cost no less time
// but kept ~10k row objects alive across young-generation GCs: V8 grew its new space to
// 128 MB during ingest (peak RSS ~380 MB at 1M recipients against ~290 MB with 2,000).
const INSERT_BATCH = 2000;
/** Batches of recipients being inserted while the reader goes on (ingest). */
const INSERTS_IN_FLIGHT = 2;
/** Claim-time sniffs kept for their ingest: a claim batch's worth, and more. */
const SNIFFS_KEPT = 2000;
/** Files of a claim batch read (hashed) and moved at once (round trips, not bandwidth, on SFTP/S3). */
const CLAIM_READ_CONCURRENCY = 16;

export interface PipelineOptions {
  config: Config;
  store: Store;
  /** The account "default" (the `api` credentials, or `accounts.default`). */
  client: ServiceClient;
  /** The clients of `accounts` by name (a source's `account` chooses one). */
  accounts?: ReadonlyMap<string, ServiceClient>;
  /** The email accounts of `accounts` by name (an email source's `account`). */
  emailAccounts?: ReadonlyMap<string, EmailAccount>;
  /** The WhatsApp accounts of `accounts` by name (a WhatsApp source's `account`). */
  whatsappAccounts?: ReadonlyMap<string, WhatsAppAccount>;
  sources: ReadonlyMap<string, Source>;
  logger: Logger;
  /** This worker's lease owner id. */
  owner: string;
  /** The opt-out lists (SuppressionLists): asked before each file is read, whether they changed. */
  suppression?: { forSource(sourceName: string): Promise<SuppressionList | null> } | null;
  now?: () => Date;
}

/**
 * States whose report.csv is on the source (written when the file finished or stopped); the
 * others have their manifest only.
 */
const REPORT_CSV_STATES: ReadonlySet<FileState> = new Set([
  'completed',
  'partial',
  'cancelled',
  'paused',
  'rejected',
  'duplicate',
]);

/** The states in which a worker drives a file (holding its lease). */
export const DRIVEN_STATES: readonly FileState[] = ['validating', 'scheduled', 'sending'];
/** How often a caller that waits for a file's lease (a command beside the daemon) asks again. */
const LEASE_POLL_MS = 100;

/**
 * This worker no longer holds the file's lease: another one took it over (ours expired while
 * this one was stalled), so this one stops working on the file at once and writes nothing
 * more for it. Thrown inside withLease and ended there.
 */
export class LeaseLost extends Error {
  readonly fileId: string;
  constructor(fileId: string) {
    super(`the lease of ${fileId} is held by another worker now`);
    this.name = 'LeaseLost';
    this.fileId = fileId;
  }
}

/** A lease this worker holds while it works on a file. */
interface Held {
  lost: boolean;
}

/** A file whose drive failed is started again (by any worker) this long after. */
const DRIVE_RETRY_MS = 2000;
/** Files read at once by one worker (each holds its duplicate index and read buffers). */
const READS_AT_ONCE = 2;
/** A file's share of its account among the files sending at once, by its priority. */
const PRIORITY_WEIGHT = { high: 4, normal: 2, low: 1 } as const;

/** diagnostics_channel: every change of a file's state this worker made (alerts, metrics). */
export const FILE_STATE_CHANNEL = 'dropline:file:state';
const fileStateChannel = diagnosticsChannel.channel(FILE_STATE_CHANNEL);

export interface FileStateEvent {
  readonly file: FileRecord;
  readonly from: string;
}

function stateChanged(file: FileRecord, from: string): void {
  if (fileStateChannel.hasSubscribers) fileStateChannel.publish({ file, from } satisfies FileStateEvent);
}

export class Pipeline {
  readonly store: Store;
  readonly config: Config;
  private readonly client: ServiceClient;
  private readonly accounts: ReadonlyMap<string, ServiceClient>;
  private readonly emailAccounts: ReadonlyMap<string, EmailAccount>;
  private readonly whatsappAccounts: ReadonlyMap<string, WhatsAppAccount>;
  private readonly sources: ReadonlyMap<string, Source>;
  private readonly log: Logger;
  private readonly owner: string;
  private readonly suppression: { forSource(sourceName: string): Promise<SuppressionList | null> } | null;
  private readonly now: () => Date;
  private readonly rules = new Map<string, NumberRules>();
  /** The files this process works on now, under their lease: never two works on one file at once. */
  private readonly held = new Map<string, Held>();
  /** Claim-time sniffs by sha256, for the ingest that follows (rememberSniff). */
  private readonly sniffs = new Map<string, Sniff>();
  /** Per-file read errors at claim already logged (source + path → message). */
  private readonly unreadableSaid = new Map<string, string>();
  /** Records read so far of the files this process is reading (progress before the counts exist). */
  readonly reading = new Map<string, number>();
  /** When work last moved (a batch read, a chunk answered, a transition): the daemon's watchdog. */
  lastProgress = Date.now();
  /** The same per file being driven (the daemon forgets a file's entry when its drive ends). */
  readonly progressAt = new Map<string, number>();
  /** Files read and recorded at once, whatever the files in flight (memory stays flat). */
  private readonly reads = pLimit(READS_AT_ONCE);
  /** Aborted by stop(): no new chunk starts, and a chunk waiting to retry gives up as pending. */
  private readonly stopping = new AbortController();

  constructor(options: PipelineOptions) {
    this.store = patientStore(options.store, { logger: options.logger, signal: this.stopping.signal });
    this.config = options.config;
    this.client = options.client;
    this.accounts = options.accounts ?? new Map();
    this.emailAccounts = options.emailAccounts ?? new Map();
    this.whatsappAccounts = options.whatsappAccounts ?? new Map();
    this.sources = options.sources;
    this.log = options.logger;
    this.owner = options.owner;
    this.suppression = options.suppression ?? null;
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Graceful stop: every send stops between chunks. A chunk whose request is in flight gets its
   * answer; one waiting to retry after a 5xx (not accepted) goes back to pending, as do the
   * chunks never tried, so the file stays `sending` and the next start resumes it.
   */
  stop(): void {
    this.stopping.abort();
  }

  sourceConfig(name: string): SourceConfig {
    const cfg = this.config.sources.find((s) => s.name === name);
    if (!cfg) throw new Error(`unknown source ${name}`);
    return cfg;
  }

  /**
   * The account a file is sent with (its source's `account`): its client, and how many of
   * its chunks are in flight at once (the account's concurrency).
   */
  private accountOf(file: FileRecord): { client: ServiceClient; concurrency: number } {
    const name = this.sourceConfig(file.source).account;
    const client = this.accounts.get(name) ?? (name === 'default' ? this.client : undefined);
    // The configuration names only accounts it defines (schema.ts): this is a defect, not input.
    if (!client) throw new Error(`source ${file.source}: no account ${name}`);
    const concurrency = this.config.accounts[name]?.concurrency ?? this.config.api.concurrency;
    return { client, concurrency };
  }

  /**
   * How a file whose content the service keeps per request (email, WhatsApp) is sent: its
   * source's account of that channel, and how many of its chunks are in flight at once.
   */
  private async contentAccountOf(
    file: FileRecord,
    content: FileEmail | FileWhatsApp,
    bulkText: string | null,
  ): Promise<{ concurrency: number; send: ContentSend }> {
    const name = this.sourceConfig(file.source).account;
    const account =
      content.channel === 'email' ? this.emailAccounts.get(name) : this.whatsappAccounts.get(name);
    if (!account)
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        `source ${file.source}: ${name} is not a ${content.channel} account`,
      );
    if (content.channel === 'email') {
      const email = account as EmailAccount;
      // Its shared attachments as read with the file (the folder may have changed since).
      const { attachments: listed, ...rest } = content;
      const message = listed?.length
        ? { ...rest, attachments: await this.store.attachments(file.fileId) }
        : rest;
      return {
        concurrency: email.concurrency,
        send: (rows, options) => email.sendChunk(message, rows, options),
      };
    }
    const whatsapp = account as WhatsAppAccount;
    return {
      concurrency: whatsapp.concurrency,
      // A bulk file's recipients after its first share the first one's parameters (stored once).
      send: (rows, options) =>
        whatsapp.sendChunk(
          content,
          bulkText === null ? rows : rows.map((r) => (r.text === null ? { ...r, text: bulkText } : r)),
          options,
        ),
    };
  }

  /**
   * An email file's templateId must be one of its account's stored templates (GET
   * /email/v1/templates): else it is rejected UNKNOWN_TEMPLATE before anything is sent. When
   * the list cannot be had (the service away, the key refused), the file goes on: the service
   * checks the templateId of each recipient anyway, and a refused key pauses the file.
   */
  private async checkEmailTemplate(file: FileRecord, summary: ReadSummary): Promise<void> {
    const account = this.emailAccounts.get(this.sourceConfig(file.source).account);
    if (!account) return;
    let available: readonly string[];
    try {
      available = await account.templateIds();
      // Not there: asked again unless the list is a few seconds old (a template created just
      // now, the file dropped again at once).
      const templateId = summary.email?.templateId;
      if (templateId && !available.includes(templateId)) available = await account.templateIds(5_000);
    } catch (err) {
      this.log.warn(
        { fileId: file.fileId, err: (err as Error).message },
        'the email templates could not be listed: the service checks the templateId when sending',
      );
      return;
    }
    refuseUnknownTemplate(summary, available);
  }

  private readonly windows = new Map<string, SendWindow | null>();

  /** The send window of a source's files: its own `sendWindow`, else the global one; null: any hour. */
  windowOf(sourceName: string): SendWindow | null {
    let w = this.windows.get(sourceName);
    if (w === undefined) {
      const own = this.sourceConfig(sourceName).sendWindow;
      w = sendWindowOf(own === undefined ? this.config.sendWindow : own);
      this.windows.set(sourceName, w);
    }
    return w;
  }

  /**
   * When a file may start sending, at `now`: its `#! sendAt:` when later, then the send window's
   * next opening. null: the window never opens (within 400 days).
   */
  private startOf(file: Pick<FileRecord, 'source' | 'sendAt'>, now: Date): Date | null {
    const notBefore =
      file.sendAt !== null && Date.parse(file.sendAt) > now.getTime() ? new Date(file.sendAt) : now;
    const w = this.windowOf(file.source);
    return w ? w.nextOpening(notBefore) : notBefore;
  }

  /** Why a file waits until `start` (the file's reason while it is `scheduled`). */
  private waitReason(file: Pick<FileRecord, 'source' | 'sendAt'>, start: Date | null): string {
    const w = this.windowOf(file.source);
    // Without a window, Bogotá's time, the zone a `#! sendAt:` without offset is read in.
    const zone = w?.spec.timezone ?? 'America/Bogota';
    if (start === null) return 'the send window never opens in the next 400 days: check sendWindow';
    const when = `${localTime(start, zone)} (${zone})`;
    if (file.sendAt !== null && Date.parse(file.sendAt) === start.getTime())
      return `#! sendAt: starts ${when}`;
    return `outside the send window: starts ${when}`;
  }

  /**
   * A `scheduled` file's start and reason. A window that never opens is looked at again in a
   * day (the configuration may have changed).
   */
  private scheduledPatch(file: Pick<FileRecord, 'source' | 'sendAt'>, start: Date | null): FilePatch {
    const until = start ?? new Date(this.now().getTime() + 86_400_000);
    return { scheduledUntil: until.toISOString(), reason: this.waitReason(file, start) };
  }

  /** The file's `#! priority:` directive, else its source's `priority`. */
  private priorityOf(file: FileRecord): Priority {
    return file.priority ?? this.sourceConfig(file.source).priority;
  }

  source(name: string): Source {
    const s = this.sources.get(name);
    if (!s) throw new Error(`source ${name} is not started`);
    return s;
  }

  private numberRules(cfg: SourceConfig): NumberRules {
    let r = this.rules.get(cfg.name);
    if (!r) {
      r = makeNumberRules(cfg.defaultCountry, cfg.allowedCountries);
      this.rules.set(cfg.name, r);
    }
    return r;
  }

  private touch(fileId?: string): void {
    this.lastProgress = Date.now();
    if (fileId) this.progressAt.set(fileId, this.lastProgress);
  }

  private transitionLog(file: FileRecord, from: string, extra: Record<string, unknown> = {}): void {
    this.touch(file.fileId);
    stateChanged(file, from);
    // A partial file waits for an operator (retry); a rejected one is warned about where it is rejected.
    this.log[file.state === 'partial' ? 'error' : 'info'](
      { fileId: file.fileId, source: file.source, file: file.name, from, to: file.state, ...extra },
      `file ${file.name} ${from} → ${file.state}`,
    );
  }

  /**
   * A transition of a file this worker holds: refused by the store when the lease is another
   * worker's now (fencing), and then this worker stops (LeaseLost). null: the state had moved
   * on (a user paused or cancelled it meanwhile).
   */
  private async transition(
    fileId: string,
    to: FileState,
    from: readonly FileState[],
    patch?: FilePatch,
  ): Promise<FileRecord | null> {
    this.fence(fileId);
    const before = await this.store.getFile(fileId);
    const file = await this.store.transition(fileId, to, {
      from,
      owner: this.owner,
      ...(patch ? { patch } : {}),
    });
    if (file) {
      this.transitionLog(file, before?.state ?? '?');
      return file;
    }
    if ((await this.store.getFile(fileId))?.leaseOwner !== this.owner) throw this.lose(fileId);
    return null;
  }

  // ---- the lease: one way to work on a file ----------------------------------------------

  /**
   * The one way to work on a file (drive it, check its progress, write its reports): its
   * lease taken (`target` a fileId) or just acquired (`target` the record acquireFile
   * returned), renewed while `fn` runs, released after. null, without running `fn`, when
   * another live worker holds the file (after `waitMs` of asking again) or this process
   * works on it already; null too when the lease was taken over while `fn` ran (it stopped
   * at once, see fence and confirm).
   */
  async withLease<T>(
    target: string | FileRecord,
    fn: (file: FileRecord) => Promise<T>,
    options: { waitMs?: number; holdOnFailureMs?: number } = {},
  ): Promise<T | null> {
    const fileId = typeof target === 'string' ? target : target.fileId;
    if (this.held.has(fileId)) return null;
    const lease: Held = { lost: false };
    // Before the first await: a second call in this process finds it held.
    this.held.set(fileId, lease);
    let taken = typeof target !== 'string';
    let failed = false;
    let renew: NodeJS.Timeout | undefined;
    try {
      const deadline = Date.now() + (options.waitMs ?? 0);
      while (!taken) {
        taken = await this.store.takeLease(fileId, this.owner, this.config.leaseMs);
        if (taken) break;
        if (Date.now() >= deadline || this.stopping.signal.aborted) return null;
        await sleep(LEASE_POLL_MS);
      }
      let renewing = false;
      renew = setInterval(
        () => {
          if (renewing || lease.lost) return;
          renewing = true;
          this.store
            .renewLease(fileId, this.owner, this.config.leaseMs)
            .then(
              (ok) => {
                if (!ok) this.lose(fileId);
              },
              // The store unreachable past the patient wait: the next write or renewal says.
              () => {},
            )
            .finally(() => {
              renewing = false;
            });
        },
        Math.max(200, Math.floor(this.config.leaseMs / 3)),
      );
      return await fn(await this.mustGet(fileId));
    } catch (err) {
      if (err instanceof LeaseLost && err.fileId === fileId) return null;
      failed = true;
      throw err;
    } finally {
      clearInterval(renew);
      this.held.delete(fileId);
      // The file's message, cached for its sends: read again by the next drive if need be.
      this.bulkTexts.delete(fileId);
      if (taken && !lease.lost) {
        // A failed drive keeps the lease a little while, so that neither this worker nor
        // another starts it again at once (a source that is down would spin).
        const hold = failed ? (options.holdOnFailureMs ?? 0) : 0;
        await (hold > 0
          ? this.store.takeLease(fileId, this.owner, hold)
          : this.store.releaseLease(fileId, this.owner)
        ).catch(() => {});
      }
    }
  }

  /** Marks the lease lost (said once) and returns the error that ends the work on the file. */
  private lose(fileId: string): LeaseLost {
    const lease = this.held.get(fileId);
    if (lease && !lease.lost) {
      lease.lost = true;
      this.log.warn(
        { fileId },
        `the lease of ${fileId} was taken over by another worker: this one stops and writes nothing more for it`,
      );
    }
    return new LeaseLost(fileId);
  }

  /** Before a write that only the lease holder may make: LeaseLost once the lease is gone. */
  private fence(fileId: string): void {
    const lease = this.held.get(fileId);
    if (!lease || lease.lost) throw new LeaseLost(fileId);
  }

  /**
   * Before a write outside the store (report.csv, the manifest, a stale report removed),
   * which the store cannot refuse: the lease confirmed now, or LeaseLost. The write then has
   * at least two thirds of leaseMs before anyone may take the file over (PostgreSQL renews only
   * past that point; SQLite renews every time).
   */
  private async confirm(fileId: string): Promise<void> {
    this.fence(fileId);
    if (!(await this.store.renewLease(fileId, this.owner, this.config.leaseMs))) throw this.lose(fileId);
  }

  // ---- claim ----------------------------------------------------------------------------

  /**
   * Claims ready inbox files: hashes each, records them all in one store transaction
   * (unique per source, path and content; DUPLICATE_FILE decided there), moves the new ones
   * to processing/ and records their paths in one more. An inbox of thousands of files
   * costs two store calls a batch, not a round trip a file. Returns every record; those in
   * state `validating` are the files to drive, duplicates are already in failed/.
   */
  async claimReady(
    source: Source,
    entries: readonly SourceEntry[],
    options: { force?: boolean } = {},
  ): Promise<FileRecord[]> {
    const { maxFileBytes: maxBytes, readiness } = this.sourceConfig(source.name);
    type Refused = {
      entry: SourceEntry;
      refusal: { reason: FileReasonCode; message: string };
      read?: { sha256: string; bytes: number };
    };
    // Several files read at once: on SFTP or S3 a claim costs round trips, not bandwidth,
    // and one at a time made a claim of 500 small files wait for 4,000 answers in a row.
    const read = await mapLimited(
      entries,
      CLAIM_READ_CONCURRENCY,
      async (entry): Promise<ReadyFile | Refused | null> => {
        try {
          const r = await this.readForClaim(source, entry, maxBytes);
          // A marker source: the marker goes with the claim, whatever becomes of the file, so
          // that it never stands for the next upload of the name (docs/sources.md "Markers").
          const marker =
            readiness === 'marker' && entry.path.startsWith('inbox/')
              ? await source.takeMarker(`${entry.path}.done`)
              : undefined;
          // Taken by another worker's claim of the same file: that claim goes on.
          if (marker === null) return null;
          if ('refusal' in r) return { entry, refusal: r.refusal };
          const read = { sha256: r.sniffed.sha256!, bytes: r.sniffed.bytes };
          const mismatch = marker === undefined ? null : markerMismatch(marker, read.sha256);
          if (mismatch !== null)
            return { entry, refusal: { reason: 'MARKER_MISMATCH', message: mismatch }, read };
          this.rememberSniff(r.sniffed);
          return { name: entry.name, path: entry.path, sha256: r.sniffed.sha256!, bytes: r.sniffed.bytes };
        } catch (err) {
          // One file's trouble is that file's: the others of the batch are claimed all the same.
          if (!(await this.unreadableNow(source, entry, err))) throw err;
          return null;
        }
      },
    );
    const ready: ReadyFile[] = [];
    const refused: Refused[] = [];
    for (const r of read) {
      if (r === null) continue;
      if ('refusal' in r) refused.push(r);
      else ready.push(r);
    }
    const claimed = await this.claimFiles(source, ready, options.force ?? false);
    const paths: { fileId: string; path: string }[] = [];
    const files = await mapLimited(
      claimed,
      CLAIM_READ_CONCURRENCY,
      async ({ file, created, duplicateOf }) => {
        // Recorded before (a crash between recording and moving): whoever takes the lease goes on.
        if (!created) return file;
        this.log.info(
          { fileId: file.fileId, source: source.name, file: file.name, bytes: file.bytes, state: file.state },
          `claimed ${file.name}`,
        );
        if (duplicateOf) {
          await this.withLease(file.fileId, (f) => this.finishFailed(f, source));
          return this.mustGet(file.fileId);
        }
        const path = await this.moveTo(file, source, 'processing', { record: false });
        if (path !== file.path) paths.push({ fileId: file.fileId, path });
        return { ...file, path };
      },
    );
    await this.store.setPaths(paths);
    for (const { entry, refusal, read } of refused) {
      const file = await this.rejectAtClaim(source, entry, refusal.reason, refusal.message, read);
      if (file) files.push(file);
    }
    return files;
  }

  /**
   * One store transaction for the batch; a claim that raced another worker's for the same
   * content (DROPLINE_ERR_STORE_CONFLICT: the fileId it computed was taken meanwhile) is made
   * again, and then reads the other's records.
   */
  private async claimFiles(source: Source, ready: readonly ReadyFile[], force: boolean) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.store.claimFiles(source.name, ready, {
          idFor: (sha256, generation) => fileIdFor(source.name, sha256, generation),
          duplicateSince: new Date(this.now().getTime() - this.config.duplicateWindowMs).toISOString(),
          force,
        });
      } catch (err) {
        if ((err as { code?: unknown }).code !== 'DROPLINE_ERR_STORE_CONFLICT' || attempt >= 3) throw err;
        this.log.info(
          { source: source.name, err: (err as Error).message },
          'a claim raced another worker: claiming again',
        );
      }
    }
  }

  /**
   * The claim's read of a file (encoding, BOM, line count), kept by content for its ingest:
   * the reader then reads the file once more instead of twice. Keyed by sha256, so it can
   * never describe other bytes than those it was made of; and the ingest's one read is
   * checked against the same sha256 (claimedBytes).
   */
  private rememberSniff(sniffed: Sniff): void {
    if (sniffed.sha256 === null) return;
    if (this.sniffs.size >= SNIFFS_KEPT) this.sniffs.delete(this.sniffs.keys().next().value!);
    this.sniffs.set(sniffed.sha256, sniffed);
  }

  /**
   * A file that could not be read at claim for a reason that is not a refusal: gone
   * (claimed by another worker, removed), or an I/O error of its own while the source
   * answers. Logged, left for a later poll, and true: the rest of the batch goes on. false
   * when the source itself does not answer: the batch waits for the next poll.
   */
  private async unreadableNow(source: Source, entry: SourceEntry, err: unknown): Promise<boolean> {
    const answers = await source.ping().then(
      () => true,
      () => false,
    );
    if (!answers) return false;
    const message = (err as Error).message;
    const key = `${source.name}\n${entry.path}`;
    // Said once while the same error repeats (a poll a second would repeat it a second).
    if (this.unreadableSaid.get(key) !== message && (await source.exists(entry.path).catch(() => true))) {
      if (this.unreadableSaid.size >= 10_000) this.unreadableSaid.clear();
      this.unreadableSaid.set(key, message);
      this.log.warn(
        { source: source.name, file: entry.name, err: message },
        `cannot read ${entry.path} now; it is tried again on a later poll`,
      );
    }
    return true;
  }

  /**
   * A listed file rejected at its claim: before a byte of it was read (not a regular file any
   * more, unreadable: recorded with an empty sha256), or once read (`read`: its marker does
   * not match it). Moved to failed/ with its errors.csv and manifest. null when it was
   * recorded before (its move failed): nothing new to say.
   */
  private async rejectAtClaim(
    source: Source,
    entry: SourceEntry,
    code: FileReasonCode,
    message: string,
    read?: { sha256: string; bytes: number },
  ): Promise<FileRecord | null> {
    const sha256 = read?.sha256 ?? '';
    const prior = await this.store.countBySha(source.name, sha256);
    const { file, created } = await this.store.registerFile({
      fileId: fileIdFor(source.name, sha256, prior + 1),
      source: source.name,
      name: entry.name,
      path: entry.path,
      sha256,
      bytes: read?.bytes ?? entry.size,
      state: 'rejected',
      rejection: { code, message },
    });
    if (!created) return null;
    this.log.warn(
      { fileId: file.fileId, source: source.name, file: entry.name, code },
      `${entry.name} rejected ${code}: ${message}`,
    );
    stateChanged(file, 'claimed');
    await this.withLease(file.fileId, (f) => this.finishFailed(f, source));
    return this.mustGet(file.fileId);
  }

  /** One file claimed (send): its record, driven next under its lease (drive). */
  async claim(
    source: Source,
    entry: SourceEntry,
    options: { force?: boolean } = {},
  ): Promise<FileRecord | null> {
    const [file = null] = await this.claimReady(source, [entry], options);
    return file;
  }

  /**
   * A listed file read as a claim reads it (hashed, at most `maxBytes`), or why it is refused:
   * too large (from the listing first: an oversize file is never read, not even to hash it),
   * not a regular file, changed… Other errors are thrown.
   */
  private async readForClaim(
    source: Source,
    entry: SourceEntry,
    maxBytes: number,
  ): Promise<{ sniffed: Sniff } | { refusal: { reason: FileReasonCode; message: string } }> {
    if (entry.size > maxBytes) return { refusal: tooLarge(maxBytes, entry.size) };
    let sniffed: Sniff;
    try {
      sniffed = await sniff(source.open(entry.path), { hash: true, maxBytes });
    } catch (err) {
      const refusal = fileRefusalOf(err, entry.path);
      if (!refusal) throw err;
      return { refusal };
    }
    this.touch();
    // It grew past the limit after the listing: the hash stopped there.
    if (sniffed.tooLarge) return { refusal: tooLarge(maxBytes, sniffed.bytes) };
    return { sniffed };
  }

  /**
   * A file that never became complete (no trailer, or no marker, before incompleteTimeout):
   * rejected MISSING_TRAILER, moved to failed/ with its errors.csv.
   */
  async rejectIncomplete(source: Source, entry: SourceEntry): Promise<FileRecord | null> {
    const cfg = this.sourceConfig(source.name);
    // Its marker came at the last moment: claimed on the next poll (which consumes the marker),
    // not rejected with the marker left behind to stand for the next upload of the name.
    if (cfg.readiness === 'marker' && (await source.exists(`${entry.path}.done`))) return null;
    const r = await this.readForClaim(source, entry, cfg.maxFileBytes);
    if ('refusal' in r) return this.rejectAtClaim(source, entry, r.refusal.reason, r.refusal.message);
    const { sniffed } = r;
    const sha256 = sniffed.sha256!;
    const prior = await this.store.countBySha(source.name, sha256);
    const waited = cfg.readiness === 'marker' ? `its marker ${entry.name}.done` : 'a trailer line (EOF;<n>)';
    const rejection = {
      code: 'MISSING_TRAILER',
      message: `the source waits for ${waited}, and none came within ${Math.round(cfg.incompleteTimeoutMs / 1000)} s`,
    };
    const { file, created } = await this.store.registerFile({
      fileId: fileIdFor(source.name, sha256, prior + 1),
      source: source.name,
      name: entry.name,
      path: entry.path,
      sha256,
      bytes: sniffed.bytes,
      state: 'rejected',
      rejection,
    });
    if (!created) return null;
    this.log.warn({ fileId: file.fileId, file: entry.name }, rejection.message);
    stateChanged(file, 'claimed');
    await this.withLease(file.fileId, (f) => this.finishFailed(f, source));
    return this.mustGet(file.fileId);
  }

  private async mustGet(fileId: string): Promise<FileRecord> {
    const f = await this.store.getFile(fileId);
    if (!f) throw new Error(`file ${fileId} vanished from the store`);
    return f;
  }

  /** Moves a file into `folder/`, under a name of its own when that one is taken. */
  private async moveTo(
    file: FileRecord,
    source: Source,
    folder: string,
    options: { record?: boolean } = {},
  ): Promise<string> {
    if (file.path.startsWith(`${folder}/`)) return file.path;
    if (options.record !== false) this.fence(file.fileId);
    let target = `${folder}/${file.name}`;
    try {
      let moved: boolean;
      try {
        moved = await source.move(file.path, target);
      } catch (err) {
        // The name is taken there (move never replaces a file): a name of its own, prefixed
        // with the fileId and cut so that it still fits NAME_MAX (255 bytes). Asked only
        // then, so a move costs no extra look-up (a round trip per file on SFTP).
        if (!(await source.exists(target))) throw err;
        const prefix = `${file.fileId}-`;
        const ext = /\.txt$/i.exec(file.name)?.[0] ?? '';
        const base = file.name.slice(0, file.name.length - ext.length);
        target = `${folder}/${prefix}${cutToBytes(base, 255 - prefix.length - ext.length)}${ext}`;
        moved = await source.move(file.path, target);
      }
      if (!moved) {
        this.log.warn({ fileId: file.fileId, path: file.path }, 'original already moved away');
        return file.path;
      }
    } catch (err) {
      this.log.warn(
        { fileId: file.fileId, err: (err as Error).message },
        `could not move the original to ${folder}/`,
      );
      return file.path;
    }
    if (options.record !== false) {
      this.fence(file.fileId);
      await this.store.updateFile(file.fileId, { path: target });
    }
    return target;
  }

  private async toProcessing(file: FileRecord, source: Source): Promise<void> {
    if (file.path.startsWith('inbox/')) await this.moveTo(file, source, 'processing');
  }

  // ---- drive ----------------------------------------------------------------------------

  /**
   * Drives a file as far as it goes now, under its lease. null when another worker holds
   * it, or took it over meanwhile (this worker then stopped at once).
   */
  async drive(fileId: string): Promise<FileRecord | null> {
    return this.withLease(fileId, (file) => this.driveHeld(file));
  }

  /**
   * The file waiting longest to be driven: claimed and not started yet, or left by its worker
   * (dead, or stalled past its lease) in a driven state. Its lease is this worker's; null when
   * there is none. driveAcquired drives it.
   */
  async acquireNext(): Promise<FileRecord | null> {
    return this.store.acquireFile(this.owner, DRIVEN_STATES, this.config.leaseMs);
  }

  async driveAcquired(file: FileRecord): Promise<FileRecord | null> {
    if (file.takenOverFrom)
      this.log.info(
        { fileId: file.fileId, state: file.state, from: file.takenOverFrom },
        `taking over ${file.name} from ${file.takenOverFrom}`,
      );
    else this.log.info({ fileId: file.fileId, state: file.state }, `driving ${file.name} (${file.state})`);
    return this.withLease(file, (f) => this.driveHeld(f), { holdOnFailureMs: DRIVE_RETRY_MS });
  }

  private async driveHeld(held: FileRecord): Promise<FileRecord> {
    const fileId = held.fileId;
    this.fence(fileId);
    // Chunks in flight were left by the worker that held the lease before (dead or stalled).
    await this.store.markInflightInDoubt(fileId);
    for (;;) {
      this.fence(fileId);
      const file = await this.mustGet(fileId);
      // Files read at once are few (each holds its duplicate index); the others wait here.
      if (file.state === 'validating') await this.reads(() => this.ingest(file));
      else if (file.state === 'scheduled') {
        // Its time has come (acquireFile takes it then), or not yet (a pause resumed early).
        const now = this.now();
        const start = this.startOf(file, now);
        if (start === null || start.getTime() > now.getTime()) {
          this.fence(fileId);
          await this.store.updateFile(fileId, this.scheduledPatch(file, start));
          return this.mustGet(fileId);
        }
        await this.transition(fileId, 'sending', ['scheduled'], { scheduledUntil: null, reason: null });
      } else if (file.state === 'cancelled') return this.closeCancelled(file);
      else if (file.state === 'sending') {
        const after = await this.send(file);
        if (after.state === 'sending') return after; // stopped
        // submitted() has just checked its progress: no second count of the file.
        if (after.state === 'submitted') return after;
      } else return await this.progressHeld(file);
    }
  }

  // ---- ingest ---------------------------------------------------------------------------

  private async ingest(file: FileRecord): Promise<void> {
    const source = this.source(file.source);
    const cfg = this.sourceConfig(file.source);
    await this.toProcessing(file, source);
    file = await this.mustGet(file.fileId);
    this.fence(file.fileId);
    await this.store.clearRecipients(file.fileId);
    // An email request carries at most 50 recipients (spec 8): so does an email file's chunk. A
    // WhatsApp request carries one: a chunk is the few sent at once.
    const planner = new ChunkPlanner(
      Math.min(
        cfg.channel === 'email'
          ? EMAIL_MAX_RECIPIENTS
          : cfg.channel === 'whatsapp'
            ? WHATSAPP_CHUNK_RECIPIENTS
            : Number.POSITIVE_INFINITY,
        this.config.api.chunkSize,
      ),
    );
    let rows: RecipientInsert[] = [];
    let idx = 0;
    let summary: ReadSummary | null = null;
    let bulkTextStored = false;
    if (file.bytes > cfg.maxFileBytes) {
      const { reason, message } = tooLarge(cfg.maxFileBytes, file.bytes);
      await this.refuse(file, source, { reason, message });
      return;
    }
    const seen = { records: 0, valid: 0, invalid: 0, duplicates: 0, suppressed: 0 };
    let readShownAt = Date.now();
    const claimed = file;
    const sniffed = this.sniffs.get(file.sha256);
    this.sniffs.delete(file.sha256);
    // A refusal (changed since the claim, not a regular file…) ends the read; its rows go.
    const refused: { error: SourceFileError | null } = { error: null };
    const read = readDropFile(() => claimedBytes(source.open(claimed.path), claimed), {
      ...(sniffed?.bytes === file.bytes ? { sniffed } : {}),
      name: file.name,
      layout: cfg.layout,
      numberRules: this.numberRules(cfg),
      suppression: (await this.suppression?.forSource(file.source)) ?? null,
      maxInvalidRatio: cfg.maxInvalidRatio,
      maxFileBytes: cfg.maxFileBytes,
      allowDirectives: cfg.allowDirectives,
      transliterate: cfg.transliterate,
      sendAtTimeZone: this.windowOf(file.source)?.spec.timezone ?? 'America/Bogota',
      channel: cfg.channel,
      email: cfg.email ?? null,
      whatsapp: cfg.whatsapp ?? null,
    });
    // Inserts in flight while the next batch is read and validated: a store in another process
    // (PostgreSQL) writes batches on connections of their own while this thread parses. Each
    // batch's rows carry their ids (idx), so the order they commit in does not matter; all are
    // settled before anything else writes the file's rows.
    const inserting = new Set<Promise<void>>();
    /** The first insert that failed: thrown by the next settleInserts, however long ago it ended. */
    let insertFailed: { err: unknown } | null = null;
    /** Until at most `max` inserts are in flight; then the first failure is thrown. */
    const settleInserts = async (max: number): Promise<void> => {
      while (inserting.size > max) await Promise.race(inserting);
      if (insertFailed) throw insertFailed.err;
    };
    // The progress entry goes whatever ends the read (a store error too).
    try {
      for await (const batch of untilRefused(read, file.path, refused)) {
        for (const item of batch) {
          switch (item.kind) {
            case 'recipient': {
              // A bulk file's text is kept once, on its first recipient (k > 0 only in bulk files).
              const text = item.k === 0 ? item.text : bulkTextStored ? null : item.text;
              if (item.k > 0) bulkTextStored = true;
              rows.push({
                idx: ++idx,
                line: item.line,
                k: item.k,
                number: item.number,
                value: null,
                messageId: item.messageId,
                generatedMessageId: item.messageId === null,
                text,
                chunkSeq: planner.place(item.number),
                outcome: 'pending',
                code: null,
                detail: null,
                smsCount: item.segments,
              });
              break;
            }
            case 'invalid':
            case 'duplicate':
            case 'suppressed':
              rows.push({
                idx: ++idx,
                line: item.line,
                k: item.k,
                number: item.number,
                value: item.value,
                messageId: null,
                text: null,
                chunkSeq: null,
                outcome: item.kind,
                code: item.code,
                detail: item.message,
                smsCount: null,
              });
              break;
            case 'summary':
              summary = item;
              break;
            default:
              break;
          }
        }
        if (rows.length >= INSERT_BATCH) {
          await settleInserts(INSERTS_IN_FLIGHT - 1);
          this.fence(file.fileId);
          const inserted = rows;
          const last = idx;
          rows = [];
          const insert = this.store.insertRecipients(file.fileId, inserted).then(async () => {
            this.reading.set(file.fileId, Math.max(last, this.reading.get(file.fileId) ?? 0));
            for (const r of inserted) {
              // One row a record, but a bulk line of several numbers: counted at its first.
              if (r.k <= 1) seen.records++;
              if (r.outcome === 'pending') seen.valid++;
              else if (r.outcome === 'invalid') seen.invalid++;
              else if (r.outcome === 'duplicate') seen.duplicates++;
              else if (r.outcome === 'suppressed') seen.suppressed++;
            }
            this.touch(file.fileId);
            // `status` in another process shows how far the read got (rows committed): one
            // small UPDATE at most every half second, the final counts replace it.
            if (Date.now() - readShownAt < 500) return;
            readShownAt = Date.now();
            this.fence(file.fileId);
            await this.store.updateFile(file.fileId, { counts: { ...seen, segments: 0 } });
          });
          const tracked: Promise<void> = insert
            .catch((err: unknown) => {
              insertFailed ??= { err };
            })
            .finally(() => inserting.delete(tracked));
          inserting.add(tracked);
        }
      }
      await settleInserts(0);
    } finally {
      // A read that failed: its inserts end before anything else touches the file's rows.
      await Promise.all(inserting);
      this.reading.delete(file.fileId);
    }
    if (refused.error) {
      await this.refuse(file, source, refused.error);
      return;
    }
    this.fence(file.fileId);
    if (rows.length > 0) await this.store.insertRecipients(file.fileId, rows);
    if (!summary) throw new Error('the reader ended without a summary');

    const patch = {
      layout: summary.layout,
      encoding: summary.encoding,
      separator: summary.separator,
      header: summary.header,
      priority: summary.directives.priority,
      counts: {
        records: summary.records,
        valid: summary.valid,
        invalid: summary.invalid,
        duplicates: summary.duplicates,
        suppressed: summary.suppressed,
        segments: summary.segments,
      },
      errorCounts: summary.errorCounts as Record<string, number>,
      cost: { segmentsByCountry: summary.segmentsByCountry, transliteration: summary.transliteration },
      content: fileContent(summary),
      errors: summary.errors
        .slice(0, 100)
        .map((e) => ({ line: e.line, code: e.code, message: e.message, value: e.value })),
    };
    refuseOtherChannel(summary, cfg.channel);
    if (summary.accepted && summary.email?.templateId) await this.checkEmailTemplate(file, summary);
    // An email file's shared attachments, read now and kept with it (nothing is sent yet).
    let refusedAttachments: { code: string; message: string } | null = null;
    if (summary.accepted && patch.content?.channel === 'email') {
      const read = await readAttachments(source, file.name);
      if (!read.ok) refusedAttachments = { code: read.reason, message: read.message };
      else if (read.attachments.length > 0) {
        this.fence(file.fileId);
        await this.store.setAttachments(file.fileId, read.attachments);
        patch.content = { ...patch.content, attachments: read.listed };
      }
    }
    if (!summary.accepted || refusedAttachments) {
      const rejection = refusedAttachments ?? {
        code: summary.rejection!.code,
        message: summary.rejection!.message,
      };
      const rejected = await this.transition(file.fileId, 'rejected', ['validating'], {
        ...patch,
        rejection,
        reason: rejection.message,
      });
      if (rejected) await this.finishFailed(rejected, source);
      return;
    }
    const planned = planner.chunks();
    const chunks = planned.length;
    this.fence(file.fileId);
    await this.store.insertChunks(file.fileId, planned);
    const sendAt = summary.directives.sendAt?.at ?? null;
    const now = this.now();
    const start = this.startOf({ source: file.source, sendAt }, now);
    if (start === null || start.getTime() > now.getTime())
      await this.transition(file.fileId, 'scheduled', ['validating'], {
        ...patch,
        sendAt,
        ...this.scheduledPatch({ source: file.source, sendAt }, start),
      });
    else await this.transition(file.fileId, 'sending', ['validating'], { ...patch, sendAt });
    // The manifest only: every row of the report would still say pending. Its counts are
    // known without counting a million rows: nothing of the file was sent yet (sending
    // starts after validating, and clearRecipients wiped any earlier attempt).
    await this.writeReports(file.fileId, {
      report: false,
      counts: { ...patch.counts, ...NOTHING_SENT, chunks, chunksPending: chunks },
    });
  }

  /**
   * A claimed file that cannot be read as claimed (changed since, a link or FIFO in its
   * place, unreadable): rejected alone, with none of the rows read from it kept.
   */
  private async refuse(
    file: FileRecord,
    source: Source,
    refusal: { reason: FileReasonCode; message: string },
  ): Promise<void> {
    this.fence(file.fileId);
    await this.store.clearRecipients(file.fileId);
    const rejection = { code: refusal.reason, message: refusal.message };
    this.log.warn(
      { fileId: file.fileId, source: file.source, file: file.name, code: refusal.reason },
      `${file.name} rejected ${refusal.reason}: ${refusal.message}`,
    );
    const rejected = await this.transition(file.fileId, 'rejected', ['validating'], {
      rejection,
      reason: rejection.message,
      // The records-read progress of a read it ended: none of those rows is kept.
      counts: { records: 0, valid: 0, invalid: 0, duplicates: 0, suppressed: 0, segments: 0 },
    });
    if (rejected) await this.finishFailed(rejected, source);
  }

  /** A rejected or duplicate file: original to failed/ with its errors.csv, and the reports. */
  private async finishFailed(file: FileRecord, source: Source): Promise<void> {
    await this.moveTo(file, source, 'failed');
    await this.writeErrorsCsv(file);
    await this.writeReports(file.fileId);
  }

  /** failed/<name>.<fileId>.errors.csv; false (and owed) when the source refused it. */
  private async writeErrorsCsv(file: FileRecord): Promise<boolean> {
    const source = this.sources.get(file.source);
    if (!source) return false;
    await this.confirm(file.fileId);
    try {
      await source.write(
        `failed/${reportFileName(file.name, file.fileId, 'errors.csv')}`,
        errorsCsv(this.store, file),
      );
      return true;
    } catch (err) {
      this.log.error({ fileId: file.fileId, err: (err as Error).message }, 'could not write errors.csv');
      await this.owe(file.fileId);
      return false;
    }
  }

  // ---- send -----------------------------------------------------------------------------

  private bulkTexts = new Map<string, string>();

  private async bulkText(fileId: string): Promise<string | null> {
    const cached = this.bulkTexts.get(fileId);
    if (cached !== undefined) return cached;
    // The text is kept on the file's first valid recipient, the first of chunk 1.
    const first = (await this.store.chunkRecipients(fileId, 1)).find((r) => r.text !== null);
    if (first?.text != null) {
      this.bulkTexts.set(fileId, first.text);
      return first.text;
    }
    for await (const r of this.store.recipients(fileId, [
      'pending',
      'sent',
      'rejected',
      'failed',
      'in_doubt',
    ])) {
      if (r.text !== null) {
        this.bulkTexts.set(fileId, r.text);
        return r.text;
      }
    }
    return null;
  }

  /** Sends the file's pending chunks (write-ahead: inflight is committed before each request). */
  private async send(file: FileRecord): Promise<FileRecord> {
    const fileId = file.fileId;
    // Resumed, retried or taken over outside its window (or before its sendAt): it waits.
    const began = this.now();
    const start = this.startOf(file, began);
    if (start === null || start.getTime() > began.getTime()) return this.reschedule(file, start);
    // The window closes at this instant: no chunk starts after it.
    const closes = this.windowOf(file.source)?.closesAt(began)?.getTime() ?? Number.POSITIVE_INFINITY;
    let closed = false;
    const closing = (): boolean => {
      if (!closed && this.now().getTime() >= closes) closed = true;
      return closed;
    };
    const holding = this.holdBackOptions(file);
    await this.dropStaleReport(file);
    const pending = await this.store.listChunks(fileId, ['pending']);
    const bulkText = file.layout === 'bulk' ? await this.bulkText(fileId) : null;
    // An email or WhatsApp file goes to its source's account of that channel, an sms or RCS
    // file to its SMS (or RCS) account: POST /mtmessage for RCS and flash, else the massive one.
    const kept = file.content;
    const content =
      kept?.channel === 'email' || kept?.channel === 'whatsapp'
        ? await this.contentAccountOf(file, kept, bulkText)
        : null;
    const sms = content ? null : this.accountOf(file);
    const mt = kept?.channel === 'rcs' || kept?.channel === 'sms' ? kept : null;
    const plan = (seq: number, rows: readonly ChunkDestination[]): PlannedChunk => {
      const chunk = planChunk(fileId, seq, rows, bulkText);
      if (!mt) return chunk;
      const via: MtMessageVia = {
        channel: mt.channel === 'rcs' ? 'RCS' : 'SMS',
        flash: mt.flash === true,
        customMessageId: chunk.chunkId,
        callbackData: { f: fileId, c: seq },
      };
      return { ...chunk, via };
    };
    // Its share of the account when other files send at once.
    const flow = { id: fileId, weight: PRIORITY_WEIGHT[this.priorityOf(file)] };
    let stop = false;
    const lease = this.held.get(fileId);
    // Ends this worker's sends of the file (a lost lease): the others see `stop` between chunks.
    const lost = (): void => {
      this.lose(fileId);
      stop = true;
    };
    // The next chunk's destinations are read while this one is sent (a read: its rows change
    // only under this worker's lease, and it still goes inflight before its request).
    const ahead = new Map<number, Promise<ChunkDestination[]>>();
    const destinations = async (seq: number): Promise<ChunkDestination[]> => {
      // Opted out since the read, or contacted already today: left out of the request.
      if (holding) {
        const held = await this.store.holdBack(fileId, seq, holding);
        if (held.suppressed + held.contactLimited > 0)
          this.log.info({ fileId, chunk: seq, ...held }, `chunk ${seq}: recipients held back`);
      }
      return this.store.chunkDestinations(fileId, seq);
    };
    const readAhead = (): void => {
      const next = pending[0];
      if (!next || ahead.has(next.seq) || stop) return;
      const read = destinations(next.seq);
      read.catch(() => {});
      ahead.set(next.seq, read);
    };
    // Fenced in one statement: a chunk goes inflight only while this worker holds the file's
    // lease, unexpired (withLease's timer renews it), and the file is still sending (not
    // paused or cancelled).
    const guard = { owner: this.owner, fileState: 'sending' } as const;
    /** The chunk is inflight; false when it is not this worker's to send (stop or lost said why). */
    const begin = async (seq: number): Promise<boolean> => {
      // A chunk whose turn comes after closing time waits for the next opening, pending.
      if (closing()) {
        stop = true;
        return false;
      }
      if (await this.store.setChunkState(fileId, seq, 'inflight', ['pending'], guard)) return true;
      const current = await this.store.getFile(fileId);
      if (current?.leaseOwner !== this.owner) {
        lost();
        return false;
      }
      if (current.state !== 'sending') {
        stop = true;
        return false;
      }
      // Still this worker's and sending: the chunk was no longer pending, or the lease lapsed
      // with nobody taking the file (its renewal held up): renewed, then asked once more.
      if (!(await this.store.renewLease(fileId, this.owner, this.config.leaseMs))) {
        lost();
        return false;
      }
      return this.store.setChunkState(fileId, seq, 'inflight', ['pending'], guard);
    };
    const worker = async (): Promise<void> => {
      // A chunk's result is recorded while the worker starts and sends its next chunk, one
      // result of this worker at a time: a crash meanwhile leaves it inflight, in doubt at the
      // next start, as a crash during its request would.
      let recording: Promise<void> | null = null;
      const record = async (seq: number, chunkResult: ChunkResult, destinations: number): Promise<void> => {
        // The previous result first; this one is recorded even when that one failed.
        const prior = await recording?.then(
          () => null,
          (err: unknown) => ({ err }),
        );
        // Not fenced: what the service answered is a fact, whoever holds the lease now (a
        // worker that took over meanwhile has this chunk in doubt, and this settles it).
        recording = this.store.recordChunkResult(fileId, seq, chunkResult).then((state) => {
          this.touch(fileId);
          this.log[
            state === 'failed' ? 'error' : state === 'in_doubt' || state === 'rejected' ? 'warn' : 'info'
          ](
            {
              fileId,
              chunk: seq,
              destinations,
              state,
              attempts: chunkResult.attempts,
              ...(chunkResult.errorCode ? { code: chunkResult.errorCode } : {}),
            },
            `chunk ${seq} ${state}`,
          );
        });
        // Awaited by the next chunk or when the worker ends; until then its failure is not unhandled.
        recording.catch(() => {});
        if (prior) throw prior.err;
      };
      const stopping = this.stopping.signal;
      const loop = async (): Promise<void> => {
        for (let chunk = pending.shift(); chunk && !stop && !stopping.aborted; chunk = pending.shift()) {
          if (!lease || lease.lost) return lost();
          if (closing()) {
            // Not sent: it stays pending for the next opening.
            stop = true;
            return;
          }
          const read = ahead.get(chunk.seq) ?? destinations(chunk.seq);
          ahead.delete(chunk.seq);
          const rows = await read;
          readAhead();
          if (rows.length === 0 && holding) {
            // Every recipient of the chunk was held back: nothing to send, the chunk is done.
            await this.store.setChunkState(fileId, chunk.seq, 'accepted', ['pending'], guard);
            continue;
          }
          // The chunk goes inflight only once its turn on the account has come (it may wait
          // behind other files' chunks): a chunk that only waited is never in doubt.
          const seq = chunk.seq;
          const options = { signal: stopping, flow, start: () => begin(seq) };
          let refused: string | null = null;
          if (content) {
            const sent = await content.send(rows, options);
            if (!sent) continue;
            await record(seq, sent.result, rows.length);
            refused = sent.refused;
          } else if (sms) {
            const result = await sms.client.sendChunk(plan(seq, rows), options);
            if (!result) continue;
            await record(seq, toChunkResult(result, { stopped: stopping.aborted }), rows.length);
            const blocked = result.parts.find(
              (p) => p.outcome.kind === 'forbidden' || p.outcome.kind === 'unauthorized',
            );
            if (blocked && blocked.outcome.kind !== 'accepted') refused = blocked.outcome.reason;
          }
          // 401/403: the account was refused; the file pauses with the service's reason.
          if (refused !== null) {
            stop = true;
            await recording;
            try {
              await this.transition(fileId, 'paused', ['sending'], { reason: refused });
            } catch (err) {
              if (err instanceof LeaseLost) return;
              throw err;
            }
          }
        }
      };
      // The worker's last result is recorded before it ends, whatever ended it.
      // (`recording` is set inside record(), which the compiler does not follow.)
      const last = (): Promise<void> | null => recording as Promise<void> | null;
      try {
        await loop();
      } catch (err) {
        await last()?.catch(() => {});
        throw err;
      }
      await last();
    };
    const concurrency = content?.concurrency ?? sms?.concurrency ?? 1;
    await Promise.all(Array.from({ length: concurrency }, worker));
    this.fence(fileId);
    const after = await this.mustGet(fileId);
    // Paused meanwhile: whoever did it wrote the report before the chunks in flight here were
    // recorded, so it is written again with their outcomes (cancelled: driveHeld closes it).
    if (after.state === 'paused') await this.writeAllReports(fileId);
    // Closing time: the chunks not started wait, pending, for the next opening.
    if (closed && after.state === 'sending' && !this.stopping.signal.aborted && !lease?.lost)
      return this.reschedule(after, this.startOf(after, this.now()));
    if (after.state !== 'sending' || stop) return after;
    // Chunk states only: the chunks table, not a count over every recipient of the file.
    const open = await this.store.listChunks(fileId, ['pending', 'inflight', 'failed', 'in_doubt']);
    if (open.some((c) => c.state === 'pending' || c.state === 'inflight')) return after;
    if (open.length > 0) {
      const failed = open.filter((c) => c.state === 'failed').length;
      const reason = `${failed} chunk(s) failed, ${open.length - failed} in doubt: dropline retry ${fileId} resends them`;
      const partial = await this.finish(fileId, 'partial', ['sending'], { reason });
      return partial ?? after;
    }
    return this.submitted(fileId, ['sending']);
  }

  /** A sending file back to `scheduled` until `start` (its manifest says so). */
  private async reschedule(file: FileRecord, start: Date | null): Promise<FileRecord> {
    const scheduled = await this.transition(
      file.fileId,
      'scheduled',
      ['sending'],
      this.scheduledPatch(file, start),
    );
    if (!scheduled) return this.mustGet(file.fileId);
    await this.writeReports(file.fileId, { report: false });
    return scheduled;
  }

  /**
   * What a chunk is checked against just before it is sent (Store.holdBack: the contact
   * limit's day is the store's, on its clock); null when there is nothing to check (no
   * replies received, no contact limit).
   */
  private holdBackOptions(file: FileRecord): HoldBackOptions | null {
    const limit = this.config.contactLimit;
    const optOuts = this.config.optOut.smpp !== null;
    if (!limit && !optOuts) return null;
    const account = this.sourceConfig(file.source).account;
    // The contact limit's day is the store's (its clock), not this worker's.
    const contactLimit = limit ? { account, timezone: limit.timezone, perDay: limit.perDay } : null;
    return { optOuts, contactLimit };
  }

  private async submitted(fileId: string, from: readonly FileState[]): Promise<FileRecord> {
    const deadline = new Date(this.now().getTime() + this.config.deliveryTimeoutMs).toISOString();
    const file = await this.transition(fileId, 'submitted', from, {
      reason: null,
      deliveryDeadline: deadline,
    });
    if (!file) return this.mustGet(fileId);
    await this.dropStaleReport(file);
    await this.moveTo(file, this.source(file.source), 'done');
    // The manifest only: report.csv is the per-line account of a finished file, written
    // when it completes (or stops: partial, rejected, cancelled). At this point every row
    // of it would say "sent, pending delivery", and a million-row report costs seconds;
    // `dropline report <fileId>` prints the current one at any time.
    const manifest = await this.writeReports(fileId, { report: false });
    // The manifest's counts were read after the file became submitted: good enough for
    // checkProgress (pending deliveries only go down), one count of the file fewer.
    return this.progressHeld(await this.mustGet(fileId), manifest?.counts);
  }

  // ---- progress -------------------------------------------------------------------------

  /**
   * Submitted: completed when every submitted recipient has a final status, or at the
   * delivery deadline (the rest UNKNOWN). Partial: submitted once delivery reports have
   * settled every in-doubt chunk, sending again when one left a chunk pending (recipients a
   * 403 held back); in-doubt chunks resent after the grace period when `api.inDoubt` is
   * "resend". Whatever it changes, under the file's lease: null when another worker holds
   * the file (that one checks it).
   */
  async checkProgress(file: FileRecord | string): Promise<FileRecord | null> {
    const seen = typeof file === 'string' ? await this.store.getFile(file) : file;
    if (!seen) return null;
    // The daemon checks every submitted file every few seconds: one that has nothing to do
    // costs a read, not two lease writes. The decision is made again under the lease.
    if (!(await this.progressDue(seen))) return seen;
    return this.withLease(seen.fileId, (f) => this.progressHeld(f));
  }

  /** Whether progressHeld would change something now (read only). */
  private async progressDue(file: FileRecord): Promise<boolean> {
    if (file.state !== 'submitted' && file.state !== 'partial') return false;
    const counts = await this.store.counts(file.fileId);
    if (file.state === 'submitted')
      return (
        counts.pendingDelivery === 0 ||
        (file.deliveryDeadline !== null && this.now().getTime() >= Date.parse(file.deliveryDeadline))
      );
    if (counts.chunksPending > 0 || counts.chunksFailed + counts.chunksInDoubt === 0) return true;
    return this.config.api.inDoubt === 'resend' && counts.chunksFailed === 0 && counts.chunksInDoubt > 0;
  }

  private async progressHeld(
    file: FileRecord,
    known?: Pick<FileCounts, 'pendingDelivery'>,
  ): Promise<FileRecord> {
    const fileId = file.fileId;
    if (file.state === 'partial') {
      const counts = await this.store.counts(fileId);
      // A report proved an in-doubt chunk that also holds recipients a 403 held back: the
      // chunk is pending again for them, so the file goes back to sending.
      if (counts.chunksPending > 0)
        return (await this.transition(fileId, 'sending', ['partial'], { reason: null })) ?? file;
      if (counts.chunksFailed + counts.chunksInDoubt === 0) return this.submitted(fileId, ['partial']);
      if (this.config.api.inDoubt === 'resend' && counts.chunksFailed === 0 && counts.chunksInDoubt > 0) {
        const chunks = await this.store.listChunks(fileId, ['in_doubt']);
        const graceOver = chunks.every(
          (c) => this.now().getTime() - Date.parse(c.updatedAt) >= this.config.api.inDoubtGraceMs,
        );
        if (graceOver) return this.resendInDoubt(file);
      }
      return file;
    }
    if (file.state !== 'submitted') return file;
    const counts = known ?? (await this.store.counts(fileId));
    if (counts.pendingDelivery > 0) {
      if (!file.deliveryDeadline || this.now().getTime() < Date.parse(file.deliveryDeadline)) return file;
      this.fence(fileId);
      const expired = await this.store.expireDeliveries(fileId);
      this.log.info({ fileId, expired }, 'delivery timeout: recipients without a report are UNKNOWN');
    }
    const done = await this.finish(fileId, 'completed', ['submitted']);
    return done ?? this.mustGet(fileId);
  }

  /**
   * A file whose rows are final (completed, partial): report.csv first, then the state, then
   * the manifest. Whoever sees the state (`dropline status`, the API) finds the report, which
   * for a million rows takes seconds to write.
   */
  private async finish(
    fileId: string,
    to: FileState,
    from: readonly FileState[],
    patch?: FilePatch,
  ): Promise<FileRecord | null> {
    const before = await this.store.getFile(fileId);
    if (before) await this.writeReportCsv(before);
    // A lease taken over while the report was written: refused here, and nothing more written.
    const file = await this.transition(fileId, to, from, patch);
    if (file) await this.writeReports(fileId, { report: false });
    return file;
  }

  /** api.inDoubt "resend": in-doubt chunks go out again, counted as possible duplicates. */
  private async resendInDoubt(file: FileRecord): Promise<FileRecord> {
    const counts = await this.store.counts(file.fileId);
    this.fence(file.fileId);
    // Counted in the same transaction: a requeue repeated after a lost commit counts nothing twice.
    const requeued = await this.store.requeueChunks(file.fileId, ['in_doubt'], {
      addPossibleDuplicates: counts.inDoubt,
    });
    if (requeued === 0) return file;
    this.log.warn(
      { fileId: file.fileId, chunks: requeued, recipients: counts.inDoubt },
      'resending in-doubt chunks: their recipients may get the message twice',
    );
    return (await this.transition(file.fileId, 'sending', ['partial'])) ?? file;
  }

  /**
   * `retry`, under the file's lease (asked for up to `waitMs`): failed and in-doubt chunks
   * back to pending, the file back to sending, then driven here. In-doubt recipients may have
   * been accepted already: they are counted as possible duplicates. null when another worker
   * holds the file. With `drive: false` the file is left, lease free, for the daemon to take.
   */
  async retry(fileId: string, options: { waitMs?: number; drive?: boolean } = {}): Promise<number | null> {
    return this.withLease(
      fileId,
      async (file) => {
        // Checked under the lease: a file cancelled or paused meanwhile is not requeued.
        if (!RETRY_FROM.includes(file.state))
          throw new DroplineError(
            'DROPLINE_ERR_FILE_STATE',
            `${fileId} is ${file.state}; retry applies to a file that is ${RETRY_FROM.join(' or ')}`,
          );
        const { inDoubt } = await this.store.counts(fileId);
        this.fence(fileId);
        const requeued = await this.store.requeueChunks(fileId, ['failed', 'in_doubt'], {
          addPossibleDuplicates: inDoubt,
        });
        if (requeued > 0) {
          if (inDoubt > 0)
            this.log.warn(
              { fileId, recipients: inDoubt },
              'retry resends in-doubt chunks: their recipients may get the message twice',
            );
          // The partial file's reason (chunks failed, retry resends them) no longer holds.
          await this.transition(fileId, 'sending', RETRY_FROM, { reason: null });
        }
        if (options.drive !== false) await this.driveHeld(file);
        return requeued;
      },
      options.waitMs === undefined ? {} : { waitMs: options.waitMs },
    );
  }

  /**
   * report.csv and the manifest written again under the file's lease (asked for up to
   * `waitMs`), when its state is one of `states`: delivery reports changed its rows, or a
   * user paused or cancelled it. false when another worker holds the file: that one writes
   * them (a send that finds its file paused or cancelled does).
   */
  async rewriteReports(
    fileId: string,
    options: { states?: ReadonlySet<string>; waitMs?: number } = {},
  ): Promise<boolean> {
    const done = await this.withLease(
      fileId,
      async (file) => {
        if (options.states && !options.states.has(file.state)) return true;
        if (file.state === 'cancelled') await this.closeCancelled(file);
        else await this.writeAllReports(fileId);
        return true;
      },
      options.waitMs === undefined ? {} : { waitMs: options.waitMs },
    );
    return done === true;
  }

  /**
   * A cancelled file, under its lease, once nothing of it is sent any more: its chunks not
   * sent are `cancelled` (their recipients too), its original goes to done/ like a finished
   * file's, and its reports say so. Idempotent: whoever holds the file next may do it again.
   */
  private async closeCancelled(file: FileRecord): Promise<FileRecord> {
    await this.settleCancelled(file);
    await this.writeAllReports(file.fileId);
    return this.mustGet(file.fileId);
  }

  /** closeCancelled without the reports: its unsent chunks cancelled, the original in done/. */
  private async settleCancelled(file: FileRecord): Promise<void> {
    this.fence(file.fileId);
    const chunks = await this.store.cancelUnsent(file.fileId);
    if (chunks > 0)
      this.log.info({ fileId: file.fileId, chunks }, `${chunks} chunk(s) cancelled, never sent`);
    const source = this.sources.get(file.source);
    if (source && (file.path.startsWith('processing/') || file.path.startsWith('inbox/')))
      await this.moveTo(file, source, 'done');
  }

  // ---- reports --------------------------------------------------------------------------

  /**
   * reports/<name>.<fileId>.manifest.json and .report.csv, rewritten at milestones, by the
   * lease holder only. A report of a million rows costs seconds, so it is written only where
   * its rows changed.
   */
  private async writeReports(
    fileId: string,
    options: { report?: boolean; counts?: FileCounts } = {},
  ): Promise<Manifest | null> {
    let manifest: Manifest | null;
    if (options.counts) {
      const file = await this.store.getFile(fileId);
      manifest = file ? buildManifest(file, options.counts) : null;
    } else manifest = await manifestOf(this.store, fileId);
    if (!manifest) return null;
    const source = this.sources.get(manifest.source);
    if (!source) return manifest;
    // The manifest last: whoever sees its state sees a report.csv at least as recent.
    if (options.report !== false && !(await this.writeReportCsv(manifest))) return manifest;
    await this.writeManifest(manifest);
    return manifest;
  }

  /** reports/<name>.<fileId>.manifest.json; false (and owed) when the source refused it. */
  private async writeManifest(manifest: Manifest): Promise<boolean> {
    const source = this.sources.get(manifest.source);
    if (!source) return false;
    await this.confirm(manifest.fileId);
    try {
      await source.write(
        `reports/${reportFileName(manifest.name, manifest.fileId, 'manifest.json')}`,
        `${JSON.stringify(manifest, null, 2)}\n`,
      );
      return true;
    } catch (err) {
      this.log.error(
        { fileId: manifest.fileId, err: (err as Error).message },
        'could not write the manifest',
      );
      await this.owe(manifest.fileId);
      return false;
    }
  }

  /**
   * A report write failed: the store records the file's reports as owed, tried again with
   * back-off (report.retryBaseMs doubled per failure, up to retryMaxMs) by whichever worker
   * finds them due, after a restart too (writeOwedReports; docs/runbook.md "Report pending").
   */
  private async owe(fileId: string): Promise<void> {
    const { retryBaseMs: baseMs, retryMaxMs: maxMs } = this.config.report;
    await this.store.reportFailed(fileId, { baseMs, maxMs }).catch((err: unknown) => {
      this.log.error({ fileId, err: (err as Error).message }, 'could not record the reports as owed');
    });
  }

  /**
   * The reports a file owes (Store.reportsDue), written again under its lease: every one its
   * state calls for (errors.csv of a rejected or duplicate file, report.csv of a file that
   * has one, the manifest), and nothing owed any more once all went through. A failure
   * backs off again. null when another worker holds the file (it stays due).
   */
  async writeOwedReports(fileId: string): Promise<boolean | null> {
    return this.withLease(fileId, async (file) => {
      if (!file.reportPending) return true;
      // A source this worker does not have (configured elsewhere): backed off for the others.
      if (!this.sources.has(file.source)) {
        await this.owe(fileId);
        return false;
      }
      // A cancel a user made while no worker could close it (owed by changeFileState).
      if (file.state === 'cancelled') await this.settleCancelled(file);
      const ok = await this.writeAllReports(fileId);
      if (ok) this.log.info({ fileId, failures: file.reportPending.failures }, 'owed reports written');
      return ok;
    });
  }

  /**
   * Every report the file's state calls for (errors.csv of a rejected or duplicate file,
   * report.csv of one that has one, the manifest last), under the lease; then nothing is
   * owed any more. false when one was refused (it is owed, backed off).
   */
  private async writeAllReports(fileId: string): Promise<boolean> {
    const file = await this.mustGet(fileId);
    if (!this.sources.has(file.source)) return false;
    let ok = true;
    if (file.state === 'rejected' || file.state === 'duplicate') ok = await this.writeErrorsCsv(file);
    const current = await manifestOf(this.store, fileId);
    if (!current) return false;
    // Written last, once everything else went through: then nothing is owed any more.
    const manifest: Manifest = { ...current, reportPending: null };
    if (ok && REPORT_CSV_STATES.has(file.state)) ok = await this.writeReportCsv(manifest);
    if (ok) ok = await this.writeManifest(manifest);
    if (!ok) return false;
    this.fence(fileId);
    await this.store.reportsWritten(fileId);
    return true;
  }

  /**
   * A file that was paused or partial has a report.csv from then; once it sends again (or is
   * submitted) its rows change, and report.csv comes back when it finishes. Meanwhile
   * no stale account of it stays in reports/.
   */
  private async dropStaleReport(file: FileRecord): Promise<void> {
    if (!file.timestamps.paused && !file.timestamps.partial) return;
    await this.confirm(file.fileId);
    const source = this.sources.get(file.source);
    try {
      await source?.remove(`reports/${reportFileName(file.name, file.fileId, 'report.csv')}`);
    } catch (err) {
      this.log.warn({ fileId: file.fileId, err: (err as Error).message }, 'could not remove a stale report');
    }
  }

  /** reports/<name>.<fileId>.report.csv: one row per record of the file, as the store has it now. */
  private async writeReportCsv(file: Pick<FileRecord, 'fileId' | 'source' | 'name'>): Promise<boolean> {
    const source = this.sources.get(file.source);
    if (!source) return false;
    await this.confirm(file.fileId);
    try {
      await source.write(
        `reports/${reportFileName(file.name, file.fileId, 'report.csv')}`,
        reportCsv(this.store, file.fileId, { includeText: this.config.report.includeText }),
      );
      return true;
    } catch (err) {
      this.log.error({ fileId: file.fileId, err: (err as Error).message }, 'could not write the report');
      await this.owe(file.fileId);
      return false;
    }
  }
}

function tooLarge(maxBytes: number, bytes: number): { reason: 'FILE_TOO_LARGE'; message: string } {
  return {
    reason: 'FILE_TOO_LARGE',
    message: `the file is larger than ${maxBytes} bytes (maxFileBytes): ${bytes} bytes or more`,
  };
}

/**
 * The bytes of a claimed file, checked against its claim as they pass: never more than the
 * claimed size, and at the end exactly its size and sha256. Whatever reads through it
 * (the reader's sniff and parse passes) fails with FILE_CHANGED before it can finish on
 * content other than the claimed one, so nothing of it reaches `sending`.
 */
export async function* claimedBytes(
  chunks: AsyncIterable<Uint8Array>,
  claimed: Pick<FileRecord, 'path' | 'bytes' | 'sha256'>,
): AsyncGenerator<Uint8Array> {
  const hash = createHash('sha256');
  let bytes = 0;
  const changed = (what: string): SourceFileError =>
    new SourceFileError(
      'FILE_CHANGED',
      `${claimed.path} changed after it was claimed (${what}; claimed ${claimed.bytes} bytes, sha256 ${claimed.sha256})`,
    );
  for await (const chunk of chunks) {
    bytes += chunk.byteLength;
    if (bytes > claimed.bytes) throw changed(`more than ${claimed.bytes} bytes now`);
    hash.update(chunk);
    yield chunk;
  }
  if (bytes !== claimed.bytes) throw changed(`${bytes} bytes now`);
  const sha256 = hash.digest('hex');
  if (sha256 !== claimed.sha256) throw changed(`sha256 ${sha256} now`);
}

/** `items` until one fails with a file refusal, which is kept in `out`; other errors pass. */
async function* untilRefused<T>(
  items: AsyncIterable<T>,
  path: string,
  out: { error: SourceFileError | null },
): AsyncGenerator<T> {
  try {
    yield* items;
  } catch (err) {
    const refusal = fileRefusalOf(err, path);
    if (!refusal) throw err;
    out.error = refusal;
  }
}

/**
 * The client's per-part outcomes → what the store records for the chunk. `stopped`: the send
 * was cut short by a stop, so a retryable failure (the service never took the part) is
 * pending again rather than failed for good.
 */
/**
 * What an email, WhatsApp, RCS or flash SMS file's read says it sends, as the store keeps it
 * (no empty keys); null for a plain sms file.
 */
function fileContent(summary: ReadSummary): FileContent | null {
  const { email, whatsapp } = summary;
  if (summary.channel === 'rcs') return { channel: 'rcs' };
  if (summary.channel === 'sms')
    return summary.directives.flash?.flash ? { channel: 'sms', flash: true } : null;
  if (email) {
    const out: FileContent = { channel: 'email' };
    if (email.templateId !== null) out.templateId = email.templateId;
    if (email.subject !== null) out.subject = email.subject;
    if (email.html !== null) out.html = email.html;
    return out;
  }
  if (whatsapp)
    return whatsapp.source === null
      ? { channel: 'whatsapp', templateId: whatsapp.templateId }
      : { channel: 'whatsapp', templateId: whatsapp.templateId, source: whatsapp.source };
  return null;
}

/** One chunk of a content file sent with its account (null: not sent). */
type ContentSend = (
  rows: readonly ChunkDestination[],
  options: { signal: AbortSignal; flow: Flow; start: () => Promise<boolean> },
) => Promise<ChunkSendResult | null>;

export function toChunkResult(result: SendResult, options: { stopped?: boolean } = {}): ChunkResult {
  const parts: PartOutcome[] = [];
  let attempts = 0;
  let accepted = 0;
  let rejected = 0;
  let failed = 0;
  let inDoubt = 0;
  let blocked = 0;
  let transactionNumber: string | null = null;
  let errorCode: string | null = null;
  let errorMessage: string | null = null;
  for (const p of result.parts) {
    const o = p.outcome;
    attempts += o.attempts;
    const messageIds = p.destinations.map((d) => d.messageId);
    // One part carrying every destination of the request: the store may record it by chunk.
    const whole = result.parts.length === 1 && p.destinations.length === result.destinations;
    const scope = whole ? { messageIds, wholeChunk: true } : { messageIds };
    if (o.kind === 'accepted') {
      accepted++;
      transactionNumber ??= o.transactionNumber;
      parts.push({ ...scope, outcome: 'sent', transactionNumber: o.transactionNumber });
      continue;
    }
    errorCode ??= o.code;
    errorMessage ??= o.reason;
    switch (o.kind) {
      case 'rejected':
        rejected++;
        parts.push({ ...scope, outcome: 'rejected', code: o.code, detail: o.reason });
        break;
      case 'in_doubt':
        inDoubt++;
        parts.push({ ...scope, outcome: 'in_doubt', code: o.code, detail: o.reason });
        break;
      case 'forbidden':
      case 'unauthorized':
        blocked++;
        parts.push({ ...scope, outcome: 'pending', code: o.code, detail: o.reason });
        break;
      default:
        if (options.stopped && o.retryable) {
          blocked++;
          parts.push({ ...scope, outcome: 'pending', code: o.code, detail: o.reason });
        } else {
          failed++;
          parts.push({ ...scope, outcome: 'failed', code: o.code, detail: o.reason });
        }
    }
  }
  let state: ChunkState;
  if (inDoubt > 0) state = 'in_doubt';
  else if (failed > 0) state = 'failed';
  else if (blocked > 0) state = 'pending';
  else if (accepted === 0 && rejected > 0) state = 'rejected';
  else state = 'accepted';
  return { state, attempts, transactionNumber, errorCode, errorMessage, parts };
}
