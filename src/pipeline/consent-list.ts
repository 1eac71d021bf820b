// The consent list of a configuration (`consent.list`, NO_CONSENT; docs/opt-outs.md "Consent
// lists"), kept fresh the way opt-out lists are (./suppression-lists.ts): a local path,
// `s3://bucket/key` or `<sourceName>:<path>`, read once at start (unreadable: a start-up
// error), asked before each file's read (waited for at most 10 s while a copy is in use) and
// every minute whether it changed (a stat, a HEAD) and read again whole when it did. A list
// that cannot be read again keeps its last good copy (a warning). A new content of which more
// than half the entry lines are no entry, or that holds fewer than half the entries of the
// copy in use, is refused, at start too: the files wait (DROPLINE_ERR_CONSENT_LIST_REFUSED)
// until it is put right, never sent on an empty list;
// the refusal is published on SUPPRESSION_LIST_CHANNEL (the `suppression-list-refused` alert).
// describe() tells /metrics what it tells of the opt-out lists (docs/metrics.md).
import { createHash } from 'node:crypto';
import diagnosticsChannel from 'node:diagnostics_channel';
import type { S3Client } from '@aws-sdk/client-s3';
import { CHANNELS } from '../channels/names.ts';
import type { Config } from '../config/schema.ts';
import { redactText } from '../core/redact.ts';
import { DroplineError } from '../errors.ts';
import { type ConsentCheck, type ConsentTable, parseConsentList } from '../format/consent.ts';
import { makeNumberRules } from '../format/numbers.ts';
import type { Logger } from '../log.ts';
import type { Source } from '../sources/source.ts';
import type { CheckedList } from '../store/store.ts';
import { SingleCheck } from './single-check.ts';
import {
  type Backend,
  LocalFileBackend,
  S3UrlBackend,
  SourceFileBackend,
  s3UrlClient,
} from './suppression-list-backends.ts';
import {
  CHECK_WAIT_MS,
  lateCheck,
  MAX_INVALID_SHARE,
  MIN_KEPT_SHARE,
  parseListLocation,
  type RefusalReason,
  SUPPRESSION_LIST_CHANNEL,
  type SuppressionListEvent,
  showLocation,
} from './suppression-lists.ts';

const KEY = 'consent.list';
const KNOWN_CHANNELS: ReadonlySet<string> = new Set(CHANNELS);
const CHECK_EVERY_MS = 60_000;
const listChannel = diagnosticsChannel.channel(SUPPRESSION_LIST_CHANNEL);

type ListLogger = Pick<Logger, 'info' | 'warn' | 'error'>;

/** Says nothing, without loading pino (validate prints its own answer). */
const QUIET: ListLogger = { info() {}, warn() {}, error() {} };

/** What describe() tells /metrics and the logs of the consent list (as SuppressionListInfo does). */
export interface ConsentListInfo {
  /** The configuration key: `consent.list`. */
  name: string;
  /** Its location as configured (a path, s3://bucket/key, <sourceName>:<path>). */
  location: string;
  /** Distinct numbers and addresses of the copy in use. */
  entries: number;
  /** Entry lines of the copy in use that were no entry. */
  invalid: number;
  /** When the copy in use was read (null: never). */
  loadedAt: Date | null;
  /** When the list was last asked whether it changed (and answered). */
  checkedAt: Date | null;
  /** Why the last check or reload failed (the copy in use stays), or null. */
  lastError: string | null;
  /** Checks (and reloads) that failed since start. */
  failures: number;
  /** While a new content is refused (the files wait): why, and since when; else null. */
  refused: Refusal | null;
}

interface Refusal {
  reason: RefusalReason;
  message: string;
  since: Date;
}

/** Why a read is no list to use (null: it is); `inUse`: the copy in use, if any. */
export function consentRefusal(
  read: ConsentTable,
  inUse: ConsentTable | null,
): { reason: RefusalReason; detail: string } | null {
  const lines = read.entryLines + read.invalid;
  if (read.invalid > lines * MAX_INVALID_SHARE)
    return {
      reason: 'unparseable',
      detail: `${read.invalid} of its ${lines} lines are no "<number or address>;<channels>" entry (more than half): not a consent list`,
    };
  if (inUse !== null && read.size < inUse.size * MIN_KEPT_SHARE)
    return {
      reason: 'shrank',
      detail: `it holds ${read.size} entries where the copy in use holds ${inUse.size}: more than half would be gone at once (a truncated upload?)`,
    };
  return null;
}

export class ConsentList {
  readonly #backend: Backend;
  readonly #location: string;
  readonly #log: ListLogger;
  #s3: Promise<S3Client> | null = null;
  #table: ConsentTable | null = null;
  #version: string | null = null;
  #sha256: string | null = null;
  #refused: Refusal | null = null;
  readonly #checks = new SingleCheck();
  #timer: NodeJS.Timeout | null = null;
  #everyMs = CHECK_EVERY_MS;
  #loadedAt: Date | null = null;
  #checkedAt: Date | null = null;
  #lastError: string | null = null;
  #warnedAt = 0;
  #lateSaidAt = 0;
  readonly #waitMs: number;
  #failures = 0;
  #stopped = false;

  constructor(
    value: string,
    sources: ReadonlyMap<string, Source>,
    sourceNames: Iterable<string>,
    log: ListLogger,
    options: {
      /** How long a file waits for a check while a copy is in use (default 10 s, as opt-out lists). */
      checkWaitMs?: number;
    } = {},
  ) {
    const loc = parseListLocation(value, new Set(sourceNames), KEY);
    this.#location = showLocation(loc);
    this.#log = log;
    this.#waitMs = options.checkWaitMs ?? CHECK_WAIT_MS;
    if (loc.kind === 'local') this.#backend = new LocalFileBackend(loc.path);
    else if (loc.kind === 's3') {
      this.#backend = new S3UrlBackend(() => (this.#s3 ??= s3UrlClient(undefined)), loc.bucket, loc.key);
    } else {
      const source = sources.get(loc.source);
      if (!source)
        throw new DroplineError(
          'DROPLINE_ERR_CONFIG',
          `${KEY}: the source "${loc.source}" is not available here`,
        );
      this.#backend = new SourceFileBackend(source, loc.path);
    }
  }

  static fromConfig(
    config: Pick<Config, 'consent' | 'sources'>,
    sources: ReadonlyMap<string, Source>,
    log: ListLogger,
  ): ConsentList | null {
    if (!config.consent) return null;
    return new ConsentList(
      config.consent.list,
      sources,
      config.sources.map((s) => s.name),
      log,
    );
  }

  /**
   * Reads the list once (a DroplineError when it cannot be), then checks it every minute. A
   * content refused is no start-up error, as with opt-out lists: said (#refuse), the files
   * wait (forChannel) while delivery reports and replies go on being received.
   */
  async start(checkEveryMs = CHECK_EVERY_MS): Promise<void> {
    this.#everyMs = checkEveryMs;
    await this.#check();
    if (!this.#refused)
      this.#log.info(
        { list: KEY, location: this.#location, entries: this.#table!.size },
        'consent list loaded',
      );
    this.#timer = setInterval(() => void this.check(), checkEveryMs);
    this.#timer.unref();
  }

  /**
   * Asks the list now whether it changed (what the timer does), and reads it again when it
   * did. A failure is counted and warned (describe()): the copy in use stays.
   */
  async check(): Promise<void> {
    try {
      await this.#check();
    } catch {
      // Counted and warned by #check (stopping, the client of an s3:// list destroyed under a
      // check, is no news).
      return;
    }
    if (this.#lastError === null) return;
    this.#lastError = null;
    this.#log.info({ list: KEY, location: this.#location }, `${KEY}: readable again`);
  }

  /**
   * The check of a file of `channel`, the list asked first whether it changed: waited for at
   * most checkWaitMs while a copy is in use (a store that does not answer), then the file goes
   * on with that copy.
   */
  async forChannel(channel: string): Promise<ConsentCheck> {
    // Never read: a file must not go without it, so a list that cannot be read (or does not
    // answer in time) fails it; the file is tried again later.
    if (this.#table === null) {
      // Read meanwhile by the check it waited behind: the file goes on with that copy.
      if ((await lateCheck(this.#check(), this.#waitMs)) && this.#table === null)
        throw new DroplineError(
          'DROPLINE_ERR_CONSENT_LIST',
          `${KEY} (${this.#location}): no answer within ${this.#waitMs} ms, and no copy of it was read before`,
        );
    } else if (
      (await lateCheck(this.check(), this.#waitMs)) &&
      Date.now() - this.#lateSaidAt >= this.#everyMs
    ) {
      this.#lateSaidAt = Date.now();
      this.#log.warn(
        { list: KEY, location: this.#location, waitedMs: this.#waitMs },
        `${KEY}: no answer yet whether it changed; the file goes on with the copy read ${this.#loadedAt?.toISOString()}`,
      );
    }
    return this.inUse(channel);
  }

  /** The check of a file of `channel` with the copy in use, as it is (a refused list throws). */
  inUse(channel: string): ConsentCheck {
    if (this.#refused) throw this.#refusedError();
    return this.#table!.forChannel(channel);
  }

  /** What compliance keeps of the list a file was read with. */
  checked(): CheckedList[] {
    return this.#sha256 ? [{ kind: 'consent', name: KEY, sha256: this.#sha256 }] : [];
  }

  /** Its size, when it was read and checked, and what failed (/metrics, docs/metrics.md). */
  describe(): ConsentListInfo {
    return {
      name: KEY,
      location: this.#location,
      entries: this.#table?.size ?? 0,
      invalid: this.#table?.invalid ?? 0,
      loadedAt: this.#loadedAt,
      checkedAt: this.#checkedAt,
      lastError: this.#lastError,
      failures: this.#failures,
      refused: this.#refused,
    };
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    void this.#s3?.then((c) => c.destroy()).catch(() => {});
  }

  /** A failed check: the copy in use stays; warned when the reason changes, else once a period. */
  #failed(err: Error): void {
    const reason = redactText(err.message);
    this.#failures++;
    const now = Date.now();
    if (reason !== this.#lastError || now - this.#warnedAt >= this.#everyMs) {
      this.#warnedAt = now;
      this.#log.warn(
        { list: KEY, location: this.#location, err: reason },
        'consent list: cannot check it; the copy in use stays',
      );
    }
    this.#lastError = reason;
  }

  /**
   * One check at a time; a caller arriving while one runs waits for the next one (a file that
   * starts right after a change sees it: ./single-check.ts).
   */
  #check(): Promise<void> {
    // A failed check of the copy in use is counted here, once, however many callers share it
    // (a first read that fails is its caller's error: the start, or the file).
    return this.#checks.run(() =>
      this.#read().catch((err: Error) => {
        if (!this.#stopped && this.#table !== null) this.#failed(err);
        throw err;
      }),
    );
  }

  async #read(): Promise<void> {
    let bytes: Buffer;
    let version: string;
    try {
      const v = await this.#backend.version();
      // A settled version already read is the same list: no download.
      if (v.settled && v.id === this.#version) {
        this.#checkedAt = new Date();
        return;
      }
      version = v.id;
      const chunks: Uint8Array[] = [];
      for await (const c of this.#backend.open()) chunks.push(Buffer.from(c));
      bytes = Buffer.concat(chunks);
    } catch (err) {
      throw new DroplineError(
        'DROPLINE_ERR_CONSENT_LIST',
        `${KEY} (${this.#location}): ${redactText((err as Error).message)}`,
        {
          cause: err,
        },
      );
    }
    this.#checkedAt = new Date();
    const sha256 = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    // The copy in use put back after a refusal is taken again without reading it.
    const table =
      sha256 === this.#sha256
        ? this.#table!
        : parseConsentList(bytes.toString('utf8'), makeNumberRules(), KNOWN_CHANNELS);
    const refusal = table === this.#table ? null : consentRefusal(table, this.#table);
    if (refusal !== null) {
      this.#refuse(refusal);
      return;
    }
    if (this.#refused !== null) {
      this.#log.info({ list: KEY, location: this.#location }, `${KEY}: taken again after a refusal`);
      this.#publish(null, 'taken again');
    }
    this.#refused = null;
    if (table !== this.#table) this.#loadedAt = this.#checkedAt;
    this.#table = table;
    this.#version = version;
    this.#sha256 = sha256;
  }

  /** A new content refused: said (log, alert) once a refusal. */
  #refuse(refusal: { reason: RefusalReason; detail: string }): void {
    if (this.#refused?.message === refusal.detail) return;
    this.#refused = {
      reason: refusal.reason,
      message: refusal.detail,
      since: this.#refused?.since ?? new Date(),
    };
    this.#log.error(
      { list: KEY, location: this.#location, reason: refusal.reason },
      `${KEY}: refused: ${refusal.detail}`,
    );
    this.#publish(refusal.reason, refusal.detail);
  }

  #publish(reason: RefusalReason | null, message: string): void {
    if (!listChannel.hasSubscribers) return;
    listChannel.publish({
      kind: 'consent',
      refused: reason !== null,
      names: [KEY],
      location: this.#location,
      reason,
      message,
      at: new Date().toISOString(),
    } satisfies SuppressionListEvent);
  }

  #refusedError(): DroplineError {
    const kept =
      this.#table === null ? 'no copy of it was read before' : 'the copy read before stays the copy in use';
    return new DroplineError(
      'DROPLINE_ERR_CONSENT_LIST_REFUSED',
      `${KEY} (${this.#location}): refused: ${this.#refused!.message}; ${kept}, and the files wait until it is put right`,
    );
  }
}

/**
 * The consent list of a configuration read once (validate): the check of `channel`'s files,
 * or null when none is configured. A `<sourceName>:` list is read through a source built from
 * `config` (not started: nothing is created on it) and closed again. Throws what the daemon's
 * start would: DROPLINE_ERR_CONSENT_LIST (unreadable) or _REFUSED (no consent list).
 */
export async function readConsentOnce(options: {
  config: Pick<Config, 'consent' | 'sources'>;
  channel: string;
  /** Default: silent (validate prints its own answer). */
  logger?: Logger;
}): Promise<ConsentCheck | null> {
  const { config } = options;
  if (!config.consent) return null;
  const names = config.sources.map((s) => s.name);
  const loc = parseListLocation(config.consent.list, new Set(names), KEY);
  const sources = new Map<string, Source>();
  let list: ConsentList | null = null;
  try {
    const cfg = loc.kind === 'source' ? config.sources.find((s) => s.name === loc.source) : undefined;
    if (cfg) {
      // A source wants a whole logger: pino is loaded (~40 ms) only then.
      const full = options.logger ?? (await import('../log.ts')).silentLogger;
      const { createSource } = await import('../sources/index.ts');
      sources.set(cfg.name, await createSource(cfg, full));
    }
    list = new ConsentList(config.consent.list, sources, names, options.logger ?? QUIET);
    // Read as the daemon's start reads it: however long a large list takes.
    await list.start();
    return list.inUse(options.channel);
  } finally {
    list?.stop();
    for (const s of sources.values()) await s.close().catch(() => {});
  }
}
