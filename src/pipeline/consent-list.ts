// The consent list of a configuration (`consent.list`, NO_CONSENT; docs/opt-outs.md "Consent
// lists"), kept fresh the way opt-out lists are (./suppression-lists.ts): a local path,
// `s3://bucket/key` or `<sourceName>:<path>`, read once at start (unreadable: a start-up
// error), asked before each file's read and every minute whether it changed (a stat, a HEAD)
// and read again whole when it did. A list that cannot be read again keeps its last good copy
// (a warning). A new content of which more than half the entry lines are no entry, or that
// holds fewer than half the entries of the copy in use, is refused: the files wait
// (DROPLINE_ERR_SUPPRESSION_LIST_REFUSED) until it is put right, never sent on an empty list.
import { createHash } from 'node:crypto';
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
import {
  type Backend,
  LocalFileBackend,
  S3UrlBackend,
  SourceFileBackend,
  s3UrlClient,
} from './suppression-list-backends.ts';
import { MAX_INVALID_SHARE, MIN_KEPT_SHARE, parseListLocation, showLocation } from './suppression-lists.ts';

const KEY = 'consent.list';
const KNOWN_CHANNELS: ReadonlySet<string> = new Set(CHANNELS);
const CHECK_EVERY_MS = 60_000;

type ListLogger = Pick<Logger, 'info' | 'warn' | 'error'>;

/** Why a read is no list to use (null: it is); `inUse`: the copy in use, if any. */
export function consentRefusal(read: ConsentTable, inUse: ConsentTable | null): string | null {
  const lines = read.entryLines + read.invalid;
  if (read.invalid > lines * MAX_INVALID_SHARE)
    return `${read.invalid} of its ${lines} lines are no "<number or address>;<channels>" entry (more than half): not a consent list`;
  if (inUse !== null && read.size < inUse.size * MIN_KEPT_SHARE)
    return `it holds ${read.size} entries where the copy in use holds ${inUse.size}: more than half would be gone at once (a truncated upload?)`;
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
  #refused: string | null = null;
  #checking: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(
    value: string,
    sources: ReadonlyMap<string, Source>,
    sourceNames: Iterable<string>,
    log: ListLogger,
  ) {
    const loc = parseListLocation(value, new Set(sourceNames), KEY);
    this.#location = showLocation(loc);
    this.#log = log;
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

  /** Reads the list once (a DroplineError when it cannot be), then checks it every minute. */
  async start(checkEveryMs = CHECK_EVERY_MS): Promise<void> {
    await this.#check();
    if (this.#refused) throw this.#refusedError();
    this.#log.info(
      { list: KEY, location: this.#location, entries: this.#table!.size },
      'consent list loaded',
    );
    this.#timer = setInterval(() => void this.#check().catch(() => {}), checkEveryMs);
    this.#timer.unref();
  }

  /** The check of a file of `channel`, the list asked first whether it changed. */
  async forChannel(channel: string): Promise<ConsentCheck> {
    await this.#check().catch((err: Error) => {
      // The copy in use stays: a list that cannot be read now is no reason to stop sending.
      if (this.#table === null) throw err;
      this.#log.warn(
        { list: KEY, location: this.#location, err: redactText(err.message) },
        'consent list: cannot check it; the copy in use stays',
      );
    });
    if (this.#refused) throw this.#refusedError();
    return this.#table!.forChannel(channel);
  }

  /** What compliance keeps of the list a file was read with. */
  checked(): CheckedList[] {
    return this.#sha256 ? [{ kind: 'consent', name: KEY, sha256: this.#sha256 }] : [];
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    void this.#s3?.then((c) => c.destroy()).catch(() => {});
  }

  /** One check at a time: callers arriving meanwhile share it. */
  #check(): Promise<void> {
    this.#checking ??= this.#read().finally(() => {
      this.#checking = null;
    });
    return this.#checking;
  }

  async #read(): Promise<void> {
    let bytes: Buffer;
    let version: string;
    try {
      const v = await this.#backend.version();
      // A settled version already read is the same list: no download.
      if (v.settled && v.id === this.#version) return;
      version = v.id;
      const chunks: Uint8Array[] = [];
      for await (const c of this.#backend.open()) chunks.push(Buffer.from(c));
      bytes = Buffer.concat(chunks);
    } catch (err) {
      throw new DroplineError(
        'DROPLINE_ERR_SUPPRESSION_LIST',
        `${KEY} (${this.#location}): ${redactText((err as Error).message)}`,
        {
          cause: err,
        },
      );
    }
    const sha256 = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    // The copy in use put back after a refusal is taken again without reading it.
    const table =
      sha256 === this.#sha256
        ? this.#table!
        : parseConsentList(bytes.toString('utf8'), makeNumberRules(), KNOWN_CHANNELS);
    const refusal = table === this.#table ? null : consentRefusal(table, this.#table);
    if (refusal !== null) {
      if (this.#refused !== refusal)
        this.#log.error({ list: KEY, location: this.#location }, `${KEY}: refused: ${refusal}`);
      this.#refused = refusal;
      return;
    }
    if (this.#refused !== null)
      this.#log.info({ list: KEY, location: this.#location }, `${KEY}: taken again after a refusal`);
    this.#refused = null;
    this.#table = table;
    this.#version = version;
    this.#sha256 = sha256;
  }

  #refusedError(): DroplineError {
    const kept =
      this.#table === null ? 'no copy of it was read before' : 'the copy read before stays the copy in use';
    return new DroplineError(
      'DROPLINE_ERR_SUPPRESSION_LIST_REFUSED',
      `${KEY} (${this.#location}): refused: ${this.#refused}; ${kept}, and the files wait until it is put right`,
    );
  }
}
