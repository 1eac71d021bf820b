// What every stage of the pipeline shares (docs/architecture.md "The pipeline"): the store,
// the configuration, the accounts and sources, the clock, the leases, and a file's
// transitions and folders.

import { createHash } from 'node:crypto';
import diagnosticsChannel from 'node:diagnostics_channel';
import type { SendingAccount } from '../channels/channel.ts';
import { MtAccount } from '../channels/sms/account.ts';
import type { Config, SourceConfig } from '../config/schema.ts';
import type { ConsentCheck } from '../format/consent.ts';
import type { SuppressionList } from '../format/suppression.ts';
import type { Logger } from '../log.ts';
import type { ServiceClient } from '../service/client.ts';
import { type Source, SourceFileError, type SourceVersion } from '../sources/source.ts';
import type { CheckedList, FilePatch, FileRecord, FileState, Store } from '../store/store.ts';
import { Leases } from './lease.ts';
import { patientStore } from './patient-store.ts';
import { cutToBytes } from './reports.ts';

export interface PipelineOptions {
  config: Config;
  store: Store;
  /** The account "default" (the `api` credentials, or `accounts.default`). */
  client: ServiceClient;
  /** The accounts of `accounts` by name, of every channel (a source's `account` chooses one). */
  accounts?: ReadonlyMap<string, SendingAccount>;
  sources: ReadonlyMap<string, Source>;
  logger: Logger;
  /** This worker's lease owner id. */
  owner: string;
  /** The opt-out lists (SuppressionLists): asked before each file is read, whether they changed. */
  suppression?: {
    forSource(sourceName: string): Promise<SuppressionList | null>;
    checked?(sourceName: string): CheckedList[];
  } | null;
  /** The consent list (ConsentList): asked before each file is read, whether it changed. */
  consent?: { forChannel(channel: string): Promise<ConsentCheck>; checked(): CheckedList[] } | null;
  now?: () => Date;
}

/** diagnostics_channel: every change of a file's state this worker made (alerts, metrics). */
export const FILE_STATE_CHANNEL = 'dropline:file:state';
const fileStateChannel = diagnosticsChannel.channel(FILE_STATE_CHANNEL);

export interface FileStateEvent {
  readonly file: FileRecord;
  readonly from: string;
}

export function stateChanged(file: FileRecord, from: string): void {
  if (fileStateChannel.hasSubscribers) fileStateChannel.publish({ file, from } satisfies FileStateEvent);
}

/** The state and services the stages share. */
export class PipelineContext {
  readonly store: Store;
  readonly config: Config;
  readonly client: ServiceClient;
  readonly accounts: ReadonlyMap<string, SendingAccount>;
  /** The account "default" when the configuration names none so: the `api` credentials' client. */
  readonly #defaultAccount: SendingAccount;
  readonly sources: ReadonlyMap<string, Source>;
  readonly log: Logger;
  readonly owner: string;
  readonly suppression: NonNullable<PipelineOptions['suppression']> | null;
  readonly consent: NonNullable<PipelineOptions['consent']> | null;
  readonly now: () => Date;
  /** When work last moved (a batch read, a chunk answered, a transition): the daemon's watchdog. */
  lastProgress = Date.now();
  /** The same per file being driven (the daemon forgets a file's entry when its drive ends). */
  readonly progressAt = new Map<string, number>();
  /** Aborted by stop(): no new chunk starts, and a chunk waiting to retry gives up as pending. */
  readonly stopping = new AbortController();

  readonly leases: Leases;

  constructor(options: PipelineOptions) {
    this.store = patientStore(options.store, { logger: options.logger, signal: this.stopping.signal });
    this.config = options.config;
    this.client = options.client;
    this.accounts = options.accounts ?? new Map();
    this.#defaultAccount = new MtAccount({
      name: 'default',
      channel: 'sms',
      client: options.client,
      concurrency: options.config.accounts.default?.concurrency ?? options.config.api.concurrency,
    });
    this.sources = options.sources;
    this.log = options.logger;
    this.owner = options.owner;
    this.suppression = options.suppression ?? null;
    this.consent = options.consent ?? null;
    this.now = options.now ?? (() => new Date());
    this.leases = new Leases(this);
  }

  sourceConfig(name: string): SourceConfig {
    const cfg = this.config.sources.find((s) => s.name === name);
    if (!cfg) throw new Error(`unknown source ${name}`);
    return cfg;
  }

  /**
   * The short code a source's files are sent from (docs/replies.md): its own `shortCode`, else
   * its account's (two-way accounts have one); null: none.
   */
  shortCodeOf(sourceName: string): string | null {
    const cfg = this.sourceConfig(sourceName);
    if (cfg.shortCode !== undefined) return cfg.shortCode;
    const account: object | undefined = this.config.accounts[cfg.account];
    const code = account && 'shortCode' in account ? account.shortCode : undefined;
    return typeof code === 'string' ? code : null;
  }

  /** The account a source's files are sent with (its `account`: "default" unless it names one). */
  accountOf(sourceName: string): SendingAccount {
    const name = this.sourceConfig(sourceName).account;
    const account = this.accounts.get(name) ?? (name === 'default' ? this.#defaultAccount : undefined);
    // The configuration names only accounts it defines (schema.ts): this is a defect, not input.
    if (!account) throw new Error(`source ${sourceName}: no account ${name}`);
    return account;
  }

  source(name: string): Source {
    const s = this.sources.get(name);
    if (!s) throw new Error(`source ${name} is not started`);
    return s;
  }

  touch(fileId?: string): void {
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
  async transition(
    fileId: string,
    to: FileState,
    from: readonly FileState[],
    patch?: FilePatch,
  ): Promise<FileRecord | null> {
    this.leases.fence(fileId);
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
    if ((await this.store.getFile(fileId))?.leaseOwner !== this.owner) throw this.leases.lose(fileId);
    return null;
  }

  async mustGet(fileId: string): Promise<FileRecord> {
    const f = await this.store.getFile(fileId);
    if (!f) throw new Error(`file ${fileId} vanished from the store`);
    return f;
  }

  /**
   * Moves a file into `folder/`, under a name of its own when that one is taken. With
   * `expect` (a claim's move): a file that is not the version read is not moved, and the
   * move's FILE_CHANGED is thrown, not logged.
   */
  async moveTo(
    file: FileRecord,
    source: Source,
    folder: string,
    options: { record?: boolean; expect?: SourceVersion | undefined } = {},
  ): Promise<string> {
    const how = options.expect ? { expect: options.expect } : undefined;
    if (file.path.startsWith(`${folder}/`)) return file.path;
    if (options.record !== false) this.leases.fence(file.fileId);
    let target = `${folder}/${file.name}`;
    try {
      let moved: boolean;
      try {
        moved = await source.move(file.path, target, how);
      } catch (err) {
        if (isChanged(err)) throw err;
        // The name is taken there (move never replaces a file): a name of its own. Asked
        // only then, so a move costs no extra look-up (a round trip per file on SFTP).
        if (!(await source.exists(target))) throw err;
        target = ownName(file, folder);
        moved = await source.move(file.path, target, how);
      }
      if (!moved) {
        this.log.warn({ fileId: file.fileId, path: file.path }, 'original already moved away');
        return file.path;
      }
    } catch (err) {
      if (isChanged(err)) throw err;
      this.log.warn(
        { fileId: file.fileId, err: (err as Error).message },
        `could not move the original to ${folder}/`,
      );
      return file.path;
    }
    if (options.record !== false) {
      this.leases.fence(file.fileId);
      await this.store.updateFile(file.fileId, { path: target });
    }
    return target;
  }

  async toProcessing(file: FileRecord, source: Source): Promise<void> {
    if (!file.path.startsWith('inbox/')) return;
    if ((await this.moveTo(file, source, 'processing')) !== file.path) return;
    if ((await source.stat(file.path)) !== null) return;
    // Gone from inbox/ while its record says inbox/: a claim moved it and has not recorded
    // where (claim.ts records a batch's paths after its moves). That claim may be dead (a
    // crash between the two) or still running; either way the file is where it moved it, and
    // this worker, which holds the file, records that itself: a live claim's record changes
    // only a path that still says inbox/ (Store.setPaths `from`), so it cannot undo a later
    // move (docs/runbook.md "Restarts and crashes").
    const found = await this.movedByClaim(file, source);
    // Not there either (removed by hand): the read says the file is gone, as before.
    if (found === null) return;
    this.leases.fence(file.fileId);
    await this.store.updateFile(file.fileId, { path: found });
    this.log.info(
      { fileId: file.fileId, source: file.source, file: file.name, path: found },
      `${file.name} found in processing/ (its claim moved it and did not record where): read from there`,
    );
  }

  /**
   * Where a claim's move put the file (moveTo's names: its name, or the fileId-prefixed one
   * when that was taken), checked to be the very bytes claimed; null: in neither. The
   * prefixed name first: it can only be this file's, while its plain name may hold another
   * file of the same content (a forced resend).
   */
  private async movedByClaim(file: FileRecord, source: Source): Promise<string | null> {
    for (const path of [ownName(file, 'processing'), `processing/${file.name}`]) {
      if ((await source.stat(path))?.size !== file.bytes) continue;
      const hash = createHash('sha256');
      try {
        for await (const chunk of source.open(path)) hash.update(chunk);
      } catch {
        continue; // not a file to read there (a link in its place, unreadable): not this one
      }
      if (hash.digest('hex') === file.sha256) return path;
    }
    return null;
  }
}

/**
 * A file's name of its own in `folder` when its name is taken there (moveTo): prefixed with
 * the fileId and cut so that it still fits NAME_MAX (255 bytes).
 */
function ownName(file: FileRecord, folder: string): string {
  const prefix = `${file.fileId}-`;
  const ext = /\.txt$/i.exec(file.name)?.[0] ?? '';
  const base = file.name.slice(0, file.name.length - ext.length);
  return `${folder}/${prefix}${cutToBytes(base, 255 - prefix.length - ext.length)}${ext}`;
}

/** A claim's move refused: the file at its name is no longer the version read. */
function isChanged(err: unknown): boolean {
  return err instanceof SourceFileError && err.reason === 'FILE_CHANGED';
}
