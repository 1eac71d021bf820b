// The opt-out lists of a configuration (SUPPRESSED; docs/opt-outs.md "Opt-out lists"):
// the global `suppressionList` and each source's own, each a local path, `s3://bucket/key`
// or `<sourceName>:<path>` on a configured source, read through that source's own client.
//
// - start() reads every list once: a list that cannot be read is a start-up error.
// - Every minute (checkEveryMs), and before a file starts (forSource), each list is asked
//   whether it changed: a stat (on a source: Source.stat, one lstat on SFTP), a HEAD (ETag),
//   no download. Exception: a size and mtime written within the last 2 s (a same-size
//   rewrite may keep both: the bytes decide). SFTP mtimes are whole seconds of the server's
//   clock: one behind this machine's can settle a version early (a same-size rewrite within
//   that same second would then go unseen until the list changes again). A list that
//   changed is read again and replaces the old copy whole. A list that cannot be read again
//   keeps its last good copy (a warning, no secret in it) and is tried again at the next
//   check.
// - A list read whole whose content is no list of numbers is refused (refusalOf: more than
//   half its lines are no number, or it holds fewer than half the numbers of the copy in use):
//   never used as an empty list. The files it applies to wait (forSource throws
//   DROPLINE_ERR_SUPPRESSION_LIST_REFUSED) until it is put right, the copy read before stays
//   the copy in use, and an error line and an event on SUPPRESSION_LIST_CHANNEL (the
//   `suppression-list-refused` alert) say why. docs/opt-outs.md, "Refused lists".
// - One check of a list runs at a time; a caller that arrives while one runs waits for the
//   next one (started after it arrived), so a file that starts right after a change sees it.
// - Memory: ~11 bytes a number (src/format/suppression.ts's HashedNumbers); a list used
//   by several sources (or by a source and the global setting) with the same country is read
//   and kept once. While a list is read again its old copy is still in use: at most two.
import { createHash } from 'node:crypto';
import diagnosticsChannel from 'node:diagnostics_channel';
import { resolve } from 'node:path';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import type { Config } from '../config/schema.ts';
import { redactText } from '../core/redact.ts';
import { DroplineError } from '../errors.ts';
import { makeNumberRules, type NumberRules } from '../format/numbers.ts';
import { type ReadList, readSuppressionList, type SuppressionList } from '../format/suppression.ts';
import type { Logger } from '../log.ts';
import type { Source } from '../sources/source.ts';
import type { CheckedList } from '../store/store.ts';
import { SingleCheck } from './single-check.ts';
import {
  type Backend,
  hashing,
  hashOf,
  LocalFileBackend,
  S3UrlBackend,
  SourceFileBackend,
  s3UrlClient,
  type Version,
} from './suppression-list-backends.ts';

/** Where a list is, as the configuration says it. */
export type ListLocation =
  | { kind: 'local'; path: string }
  | { kind: 's3'; bucket: string; key: string }
  | { kind: 'source'; source: string; path: string };

/** What describe() tells /metrics and the logs about one configured list. */
export interface SuppressionListInfo {
  /** The configuration key: `suppressionList` or `sources.<name>.suppressionList`. */
  name: string;
  /** null for the global list, else the source whose list it is. */
  source: string | null;
  /** The list's location as configured (a path, s3://bucket/key, <sourceName>:<path>). */
  location: string;
  /** Distinct numbers of the copy in use. */
  numbers: number;
  /** Lines of the copy in use that were not a mobile number. */
  invalid: number;
  /** When the copy in use was read (null: never). */
  loadedAt: Date | null;
  /** When the list was last asked whether it changed (and answered: read again when it had). */
  checkedAt: Date | null;
  /** Why the last check or reload failed (the last good copy is in use), or null. */
  lastError: string | null;
  /** Checks (and reloads) that failed since start: the copy read before stayed in use. */
  failures: number;
  /** While the list's content is refused (its files wait): why, and since when; else null. */
  refused: { reason: RefusalReason; message: string; since: Date } | null;
}

/** Why a list's content was refused: most lines no number, or most numbers gone at once. */
export type RefusalReason = 'unparseable' | 'shrank';

/**
 * diagnostics_channel: a list refused (`refused` true) or taken again after a refusal (false),
 * once each (src/ops/alerts.ts sends `suppression-list-refused`).
 */
export const SUPPRESSION_LIST_CHANNEL = 'dropline:suppression-lists';
const listChannel = diagnosticsChannel.channel(SUPPRESSION_LIST_CHANNEL);
export interface SuppressionListEvent {
  /** An opt-out list, or the consent list (./consent-list.ts): both are refused alike. */
  readonly kind: 'suppression' | 'consent';
  readonly refused: boolean;
  /** The configuration keys that name the list. */
  readonly names: readonly string[];
  /** Its location as configured (never a secret: credentials are refused there). */
  readonly location: string;
  /** null when taken again. */
  readonly reason: RefusalReason | null;
  readonly message: string;
  readonly at: string;
}

/** Refused when more than this share of a list's lines (blank and comment lines aside) is no number. */
export const MAX_INVALID_SHARE = 0.5;
/** Refused when a reload keeps less than this share of the copy in use's numbers. */
export const MIN_KEPT_SHARE = 0.5;

/**
 * Why `read` is no list to use (null: it is). More than half its lines no mobile number: a
 * compressed file, UTF-16 without its BOM, another file. Fewer than half the numbers of
 * `inUse` (the copy in use; null on a first read, when only the first rule applies): a
 * truncated upload. An empty list is taken on a first read (nothing says it is wrong).
 */
export function refusalOf(
  read: ReadList,
  inUse: SuppressionList | null,
): { reason: RefusalReason; detail: string } | null {
  const lines = read.numberLines + read.invalid;
  if (read.invalid > lines * MAX_INVALID_SHARE)
    return {
      reason: 'unparseable',
      detail: `${read.invalid} of its ${lines} lines are no mobile number (more than half): not a list of numbers (compressed, UTF-16 without a BOM, another file?)`,
    };
  if (inUse !== null && read.size < inUse.size * MIN_KEPT_SHARE)
    return {
      reason: 'shrank',
      detail: `it holds ${read.size} numbers where the copy in use holds ${inUse.size}: more than half would be gone at once (a truncated upload?)`,
    };
  return null;
}

export interface SuppressionListsOptions {
  /** The global list (config.suppressionList): every source's files. */
  global: string | null;
  /** What messages call the global list (default `suppressionList`, its configuration key). */
  globalName?: string;
  /** Each source's own list, applied to that source's files in addition to the global one. */
  perSource?: readonly { source: string; location: string | null; defaultCountry?: string }[];
  /** The configured sources by name: `<sourceName>:<path>` lists are read through them. */
  sources: ReadonlyMap<string, Source>;
  /**
   * Every configured source name (default: the keys of `sources`): what tells
   * `<sourceName>:<path>` from a local path. validate builds only the sources it reads.
   */
  sourceNames?: Iterable<string>;
  logger: ListLogger;
  /** How often every list is checked for changes (default one minute). */
  checkEveryMs?: number;
  /**
   * How long forSource waits for a check (a HEAD to a store that does not answer): past it
   * the file goes on with the copy in use, and the check goes on (default 10 s).
   */
  checkWaitMs?: number;
  /** Merged over the client of `s3://` lists (tests). */
  s3ClientConfig?: S3ClientConfig;
  now?: () => Date;
}

const CHECK_EVERY_MS = 60_000;
export const CHECK_WAIT_MS = 10_000;

/**
 * Waits for `check` at most `waitMs`: true when it was late (it goes on; its outcome is its
 * own business, a failure counted where it is made).
 */
export async function lateCheck(check: Promise<void>, waitMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((done) => {
    timer = setTimeout(() => done(true), waitMs);
  });
  try {
    return await Promise.race([check.then(() => false), late]);
  } finally {
    clearTimeout(timer);
  }
}
/** A source name (schema.ts): the part before the first colon that may name one. */
const SOURCE_NAME = /^[A-Za-z0-9._-]+$/;
/** dropline moves what is in these: a list there would be sent, or moved away. */
const MOVED_FOLDERS = new Set(['inbox', 'processing']);

/**
 * A configured list location, or a DroplineError DROPLINE_ERR_CONFIG naming `key`.
 *
 * - `s3://bucket/key`: an S3 object (the SDK's credentials, region and endpoint).
 * - `<sourceName>:<path>`: when the part before the first colon is a source name (letters,
 *   digits, `.`, `_`, `-`), it must be a configured source's, and the path is relative to
 *   that source's root (`partner:lists/optout.txt`).
 * - Anything else is a local path. A local file whose name holds a colon is written with a
 *   slash before the colon (`./a:b.txt`, `/srv/lists/a:b.txt`).
 * - A Windows path (`C:\…`, `C:/…`, `\\server\…`) and any other URL scheme are refused.
 */
export function parseListLocation(
  value: string,
  sourceNames: ReadonlySet<string>,
  key: string,
): ListLocation {
  const bad = (why: string) => new DroplineError('DROPLINE_ERR_CONFIG', `${key}: "${value}" ${why}`);
  if (/^s3:\/\//i.test(value)) {
    const rest = value.slice('s3://'.length);
    const slash = rest.indexOf('/');
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    const objectKey = slash < 0 ? '' : rest.slice(slash + 1);
    // `s3://key:secret@bucket/…` is no S3 form; the value is not repeated (it may hold a secret).
    if (bucket.includes('@') || bucket.includes(':'))
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        `${key}: an s3:// location holds no credentials (user:password@): give s3://bucket/key; the SDK's credential chain (environment, profile, role) signs the requests`,
      );
    if (bucket === '' || objectKey === '' || objectKey.endsWith('/'))
      throw bad('is not an S3 object: expected s3://bucket/key');
    return { kind: 's3', bucket, key: objectKey };
  }
  if (/^[A-Za-z]:[\\/]/.test(value) || value.startsWith('\\\\'))
    throw bad(
      'is a Windows path: give a POSIX path (/srv/lists/optout.txt), s3://bucket/key or <sourceName>:<path>',
    );
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(value))
    throw bad('is a URL: only s3://bucket/key is read (or a local path, or <sourceName>:<path>)');
  const colon = value.indexOf(':');
  if (colon > 0 && SOURCE_NAME.test(value.slice(0, colon))) {
    const source = value.slice(0, colon);
    const path = value.slice(colon + 1);
    if (!sourceNames.has(source)) {
      const known = [...sourceNames];
      throw bad(
        `names no configured source "${source}" (${known.length > 0 ? `sources: ${known.join(', ')}` : 'no source is configured'}); a local file whose name holds a colon is written with a slash before it: ./${value}`,
      );
    }
    const parts = path.split('/');
    if (path === '' || path.startsWith('/') || parts.some((p) => p === '' || p === '.' || p === '..'))
      throw bad(`needs a path relative to the source's root after "${source}:" (${source}:lists/optout.txt)`);
    if (parts.length > 1 && MOVED_FOLDERS.has(parts[0]!))
      throw bad(
        `is in ${parts[0]}/, where dropline takes or moves drop files; keep lists in a folder of their own (lists/)`,
      );
    return { kind: 'source', source, path };
  }
  return { kind: 'local', path: value };
}

/** The location as written in the configuration (what messages and describe() show). */
export function showLocation(loc: ListLocation): string {
  if (loc.kind === 's3') return `s3://${loc.bucket}/${loc.key}`;
  if (loc.kind === 'source') return `${loc.source}:${loc.path}`;
  return loc.path;
}

/** The copy in use of several lists at once: a number on any of them is suppressed. */
class UnionList implements SuppressionList {
  readonly #lists: readonly SuppressionList[];
  constructor(lists: readonly SuppressionList[]) {
    this.#lists = lists;
  }
  has(sentNumber: string): boolean {
    for (const l of this.#lists) if (l.has(sentNumber)) return true;
    return false;
  }
  /** The sum of the lists' sizes (a number on two lists counts twice). */
  get size(): number {
    let n = 0;
    for (const l of this.#lists) n += l.size;
    return n;
  }
  get invalid(): number {
    let n = 0;
    for (const l of this.#lists) n += l.invalid;
    return n;
  }
}

function reasonOf(err: unknown): string {
  return redactText(err instanceof Error ? err.message : String(err));
}

function isRefusal(err: unknown): boolean {
  return err instanceof DroplineError && err.code === 'DROPLINE_ERR_SUPPRESSION_LIST_REFUSED';
}

/** What a file that waits for a refused list is told (and the error line says). */
function refusedError(entry: Loaded): DroplineError {
  const r = entry.refused!;
  const kept =
    entry.list === null
      ? 'no copy of it was read before'
      : `the copy read ${entry.loadedAt?.toISOString()} stays the copy in use`;
  return new DroplineError(
    'DROPLINE_ERR_SUPPRESSION_LIST_REFUSED',
    `${entry.what}: refused since ${r.since.toISOString()}: ${r.message}; ${kept}, and the files it applies to wait until it is put right`,
  );
}

function listError(what: string, err: unknown): DroplineError {
  if (err instanceof DroplineError && (err.code === 'DROPLINE_ERR_SUPPRESSION_LIST' || isRefusal(err)))
    return err;
  return new DroplineError('DROPLINE_ERR_SUPPRESSION_LIST', `${what}: ${reasonOf(err)}`, { cause: err });
}

/** One list as read: shared by every configured name with the same location and country. */
class Loaded {
  readonly names: string[] = [];
  readonly location: string;
  readonly rules: NumberRules;
  readonly backend: Backend;
  list: SuppressionList | null = null;
  /** The version of the copy in use (taken before it was read), and whether it is settled. */
  version: string | null = null;
  settled = false;
  /** The sha256 of the copy in use's bytes. */
  hash: string | null = null;
  loadedAt: Date | null = null;
  checkedAt: Date | null = null;
  lastError: string | null = null;
  failures = 0;
  refused: { reason: RefusalReason; message: string; since: Date } | null = null;
  /** The version refused: not read again until it changes (when settled). */
  refusedVersion: string | null = null;
  refusedSettled = false;
  warnedAt = 0;
  lateSaidAt = 0;
  readonly #checks = new SingleCheck();

  constructor(location: string, rules: NumberRules, backend: Backend) {
    this.location = location;
    this.rules = rules;
    this.backend = backend;
  }

  /** `names (location)`: what a message calls the list. */
  get what(): string {
    return `${this.names.join(', ')} (${this.location})`;
  }

  /** Runs `fn` (a check) now, or after the one running (./single-check.ts). */
  single(fn: () => Promise<void>): Promise<void> {
    return this.#checks.run(fn);
  }
}

/** Each configured list's copy in use, kept fresh; see the file's header. */
export class SuppressionLists {
  readonly #entries = new Map<string, Loaded>();
  /** Named lists in configuration order: [name, source (null: global), entry]. */
  readonly #named: { name: string; source: string | null; entry: Loaded }[] = [];
  readonly #global: Loaded | null;
  readonly #perSource = new Map<string, Loaded>();
  readonly #unions = new Map<string, { parts: readonly SuppressionList[]; union: SuppressionList }>();
  readonly #log: ListLogger;
  readonly #everyMs: number;
  readonly #waitMs: number;
  readonly #s3Config: S3ClientConfig | undefined;
  readonly #now: () => Date;
  #s3: Promise<S3Client> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;

  /** Throws DroplineError DROPLINE_ERR_CONFIG for a location that cannot be (an unknown source…). */
  constructor(options: SuppressionListsOptions) {
    this.#log = options.logger;
    this.#everyMs = options.checkEveryMs ?? CHECK_EVERY_MS;
    this.#waitMs = options.checkWaitMs ?? CHECK_WAIT_MS;
    this.#s3Config = options.s3ClientConfig;
    this.#now = options.now ?? (() => new Date());
    const names = new Set(options.sourceNames ?? options.sources.keys());
    const add = (name: string, source: string | null, value: string, country: string | undefined) => {
      const loc = parseListLocation(value, names, name);
      const rules = makeNumberRules(country);
      const id = `${rules.defaultCountry}|${loc.kind}|${loc.kind === 'local' ? resolve(loc.path) : showLocation(loc)}`;
      let entry = this.#entries.get(id);
      if (!entry) {
        entry = new Loaded(showLocation(loc), rules, this.#backendOf(loc, options.sources, name));
        this.#entries.set(id, entry);
      }
      entry.names.push(name);
      this.#named.push({ name, source, entry });
      return entry;
    };
    this.#global = options.global
      ? add(options.globalName ?? 'suppressionList', null, options.global, undefined)
      : null;
    for (const s of options.perSource ?? []) {
      if (!s.location) continue;
      this.#perSource.set(
        s.source,
        add(`sources.${s.source}.suppressionList`, s.source, s.location, s.defaultCountry),
      );
    }
  }

  /** The global list and each source's own, from a configuration (null when there is none). */
  static fromConfig(
    config: Pick<Config, 'suppressionList' | 'sources'>,
    sources: ReadonlyMap<string, Source>,
    logger: Logger,
    options: Omit<SuppressionListsOptions, 'global' | 'perSource' | 'sources' | 'logger'> = {},
  ): SuppressionLists | null {
    if (!config.suppressionList && !config.sources.some((s) => s.suppressionList)) return null;
    return new SuppressionLists({
      sourceNames: config.sources.map((s) => s.name),
      ...options,
      global: config.suppressionList,
      perSource: config.sources.map((s) => ({
        source: s.name,
        location: s.suppressionList,
        defaultCountry: s.defaultCountry,
      })),
      sources,
      logger,
    });
  }

  /**
   * Reads every list once, then checks them every checkEveryMs. A list that cannot be read
   * is a DroplineError DROPLINE_ERR_SUPPRESSION_LIST naming it.
   */
  async start(): Promise<void> {
    for (const entry of this.#entries.values()) {
      try {
        await entry.single(() => this.#refresh(entry));
      } catch (err) {
        // Refused content is no start-up error: the files it applies to wait (forSource).
        if (isRefusal(err)) continue;
        throw err;
      }
      const list = entry.list!;
      this.#log.info(
        { lists: entry.names, location: entry.location, numbers: list.size, invalid: list.invalid },
        'suppression list loaded',
      );
    }
    if (!this.#stopped && this.#timer === null && this.#entries.size > 0) {
      this.#timer = setInterval(() => void this.checkAll(), this.#everyMs);
      this.#timer.unref();
    }
  }

  /** Checks every list now (what the timer does): a list that changed is read again. */
  async checkAll(): Promise<void> {
    await Promise.all([...this.#entries.values()].map((e) => e.single(() => this.#reload(e))));
  }

  /**
   * The lists of a file of `sourceName` as they are now: each (global, the source's own) asked
   * first whether it changed, and read again when it did. A `has()` that asks both; null when
   * neither is configured.
   */
  async forSource(sourceName: string): Promise<SuppressionList | null> {
    const entries: Loaded[] = [];
    if (this.#global) entries.push(this.#global);
    const own = this.#perSource.get(sourceName);
    if (own && own !== this.#global) entries.push(own);
    if (entries.length === 0) return null;
    if (!this.#stopped) await Promise.all(entries.map((e) => this.#fresh(e)));
    // Nor against a list whose new content was refused: it waits until the list is put right.
    const refused = entries.find((e) => e.refused !== null);
    if (refused) throw refusedError(refused);
    // A file never goes without a list it should be checked against.
    const unread = entries.find((e) => e.list === null);
    if (unread) throw listError(unread.what, new Error(unread.lastError ?? 'not read yet'));
    const parts = entries.map((e) => e.list!);
    if (parts.length === 1) return parts[0]!;
    const cached = this.#unions.get(sourceName);
    if (cached && cached.parts.length === parts.length && cached.parts.every((p, i) => p === parts[i]))
      return cached.union;
    const union = new UnionList(parts);
    this.#unions.set(sourceName, { parts, union });
    return union;
  }

  /**
   * The configured lists whose copy in use holds `sentNumber`, by name (`suppressionList`,
   * `sources.<name>.suppressionList`): an opt-in by reply does not lift them.
   */
  holding(sentNumber: string): string[] {
    return this.#named.filter(({ entry }) => entry.list?.has(sentNumber) === true).map(({ name }) => name);
  }

  /** The lists a file of `sourceName` is read against, each its copy in use's sha256 (compliance). */
  checked(sourceName: string): CheckedList[] {
    const entries = [this.#global, this.#perSource.get(sourceName)];
    return this.#named
      .filter(
        (n) => entries.includes(n.entry) && (n.source === null || n.source === sourceName) && n.entry.hash,
      )
      .map((n) => ({ kind: 'suppression', name: n.name, sha256: n.entry.hash! }));
  }

  /** Each configured list: its size and when its copy in use was read (/metrics, logs). */
  describe(): SuppressionListInfo[] {
    return this.#named.map(({ name, source, entry }) => ({
      name,
      source,
      location: entry.location,
      numbers: entry.list?.size ?? 0,
      invalid: entry.list?.invalid ?? 0,
      loadedAt: entry.loadedAt,
      checkedAt: entry.checkedAt,
      lastError: entry.lastError,
      failures: entry.failures,
      refused: entry.refused,
    }));
  }

  /** No more checks: the timer goes, and the client of s3:// lists. The copies stay in use. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    const s3 = this.#s3;
    this.#s3 = null;
    if (s3) (await s3.catch(() => null))?.destroy();
  }

  /** Before a file: a check, waited for at most checkWaitMs while a copy is in use. */
  async #fresh(entry: Loaded): Promise<void> {
    // Never read (start() not called, or stopped before): a file must not go without it, so
    // a list that cannot be read fails the file's start (it is tried again later).
    if (entry.list === null) return entry.single(() => this.#refresh(entry));
    const wasLate = await lateCheck(
      entry.single(() => this.#reload(entry)),
      this.#waitMs,
    );
    const now = Date.now();
    if (wasLate && now - entry.lateSaidAt >= this.#everyMs) {
      entry.lateSaidAt = now;
      this.#log.warn(
        { lists: entry.names, location: entry.location, waitedMs: this.#waitMs },
        `suppression list ${entry.what}: no answer yet whether it changed; the file goes on with the copy read ${entry.loadedAt?.toISOString()}`,
      );
    }
  }

  /** A check whose failure is a warning: the last good copy stays. */
  async #reload(entry: Loaded): Promise<void> {
    if (this.#stopped) return;
    const before = entry.list;
    try {
      await this.#refresh(entry);
    } catch (err) {
      // Stopping (the client of s3:// lists destroyed under a check) is no news; a refusal
      // was said when it was made.
      if (this.#stopped || isRefusal(err)) return;
      const reason = (err as Error).message;
      const now = Date.now();
      if (reason !== entry.lastError || now - entry.warnedAt >= this.#everyMs) {
        entry.warnedAt = now;
        this.#log.warn(
          {
            lists: entry.names,
            location: entry.location,
            loadedAt: entry.loadedAt?.toISOString() ?? null,
            err: reason,
          },
          `suppression list ${entry.what}: cannot check or read it; the copy read ${entry.loadedAt?.toISOString() ?? 'never'} stays in use, tried again at the next check`,
        );
      }
      entry.lastError = reason;
      entry.failures++;
      return;
    }
    if (entry.lastError !== null) {
      this.#log.info(
        { lists: entry.names, location: entry.location },
        `suppression list ${entry.what}: readable again`,
      );
      entry.lastError = null;
    }
    if (entry.list !== before && entry.list)
      this.#log.info(
        {
          lists: entry.names,
          location: entry.location,
          numbers: entry.list.size,
          invalid: entry.list.invalid,
        },
        'suppression list changed: read again',
      );
  }

  /** Reads the list when it is new or changed; throws DROPLINE_ERR_SUPPRESSION_LIST. */
  async #refresh(entry: Loaded): Promise<void> {
    const what = entry.what;
    let version: Version;
    try {
      version = await entry.backend.version();
      if (entry.refused && entry.refusedSettled && version.id === entry.refusedVersion) {
        entry.checkedAt = this.#now();
        throw refusedError(entry);
      }
      if (entry.list !== null && version.id === entry.version) {
        if (entry.settled) {
          entry.checkedAt = this.#now();
          this.#refuse(entry, null);
          return;
        }
        // A version that cannot tell yet (just written): the bytes do.
        if ((await hashOf(entry.backend.open())) === entry.hash) {
          entry.settled = version.settled;
          entry.checkedAt = this.#now();
          this.#refuse(entry, null);
          return;
        }
      }
    } catch (err) {
      throw listError(what, err);
    }
    // The bytes' hash tells the next check of an unsettled version whether they changed
    // (above), and compliance which copy a file was read against; a settled version is never
    // hashed again, and a list is ~10 ms a million numbers.
    const hash = createHash('sha256');
    const bytes = entry.backend.open();
    const list = await readSuppressionList(hashing(bytes, hash), entry.rules, what, version.bytes);
    entry.checkedAt = this.#now();
    const refusal = refusalOf(list, entry.list);
    if (refusal) {
      entry.refusedVersion = version.id;
      entry.refusedSettled = version.settled;
      this.#refuse(entry, refusal);
      throw refusedError(entry);
    }
    this.#refuse(entry, null);
    entry.list = list;
    entry.version = version.id;
    entry.settled = version.settled;
    entry.hash = `sha256:${hash.digest('hex')}`;
    entry.loadedAt = this.#now();
  }

  /** The list refused (`refusal`) or taken again (null): said once, when it changes. */
  #refuse(entry: Loaded, refusal: { reason: RefusalReason; detail: string } | null): void {
    const was = entry.refused;
    if (refusal === null) {
      if (was === null) return;
      entry.refused = null;
      entry.refusedVersion = null;
      this.#log.info(
        { lists: entry.names, location: entry.location },
        `suppression list ${entry.what}: taken again after a refusal; its files go on`,
      );
      this.#publish(entry, null, 'taken again');
      return;
    }
    if (was?.message === refusal.detail) return;
    entry.refused = { reason: refusal.reason, message: refusal.detail, since: was?.since ?? this.#now() };
    const error = refusedError(entry);
    this.#log.error(
      { lists: entry.names, location: entry.location, reason: refusal.reason, code: error.code },
      error.message,
    );
    this.#publish(entry, refusal.reason, refusal.detail);
  }

  #publish(entry: Loaded, reason: RefusalReason | null, message: string): void {
    if (!listChannel.hasSubscribers) return;
    listChannel.publish({
      kind: 'suppression',
      refused: reason !== null,
      names: [...entry.names],
      location: entry.location,
      reason,
      message,
      at: this.#now().toISOString(),
    } satisfies SuppressionListEvent);
  }

  #backendOf(loc: ListLocation, sources: ReadonlyMap<string, Source>, name: string): Backend {
    if (loc.kind === 'local') return new LocalFileBackend(loc.path);
    if (loc.kind === 's3') return new S3UrlBackend(() => this.#s3Client(), loc.bucket, loc.key);
    const source = sources.get(loc.source);
    if (!source)
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        `${name}: the source "${loc.source}" is not available here`,
      );
    return new SourceFileBackend(source, loc.path);
  }

  #s3Client(): Promise<S3Client> {
    if (this.#stopped) return Promise.reject(new Error('the suppression lists are stopped'));
    this.#s3 ??= s3UrlClient(this.#s3Config);
    return this.#s3;
  }
}

/**
 * The lists a file of `source` would be checked against, read once (validate): the global
 * list and the source's own, or `only` instead of both (`--suppression-list`). Any of the
 * three forms; `<sourceName>:` lists are read through a source built from `config` (not
 * started: nothing is created on it) and closed again. null when there is no list.
 */
/** What the lists log with: a process logger, or QUIET. */
type ListLogger = Pick<Logger, 'info' | 'warn' | 'error'>;

/** Says nothing, without loading pino (validate reads a list and prints its own answer). */
const QUIET: ListLogger = { info() {}, warn() {}, error() {} };

export async function readListsOnce(options: {
  config: Pick<Config, 'suppressionList' | 'sources'> | null;
  source?: string | undefined;
  only?: string | undefined;
  /** Default: silent (validate prints its own answer). */
  logger?: Logger;
}): Promise<SuppressionList | null> {
  const { config } = options;
  const configured = config?.sources ?? [];
  const names = new Set(configured.map((s) => s.name));
  const own = configured.find((s) => s.name === options.source);
  const wanted: { name: string; value: string; source: string | null; country?: string }[] = [];
  if (options.only) wanted.push({ name: '--suppression-list', value: options.only, source: null });
  else {
    if (config?.suppressionList)
      wanted.push({ name: 'suppressionList', value: config.suppressionList, source: null });
    if (own?.suppressionList)
      wanted.push({
        name: `sources.${own.name}.suppressionList`,
        value: own.suppressionList,
        source: own.name,
        country: own.defaultCountry,
      });
  }
  if (wanted.length === 0) return null;
  // Only the sources a list is on are built.
  const needed = new Set<string>();
  for (const w of wanted) {
    const loc = parseListLocation(w.value, names, w.name);
    if (loc.kind === 'source') needed.add(loc.source);
  }
  const sources = new Map<string, Source>();
  let lists: SuppressionLists | null = null;
  try {
    if (needed.size > 0) {
      // A source wants a whole logger: pino is loaded (~40 ms) only then.
      const full = options.logger ?? (await import('../log.ts')).silentLogger;
      const { createSource } = await import('../sources/index.ts');
      for (const cfg of configured)
        if (needed.has(cfg.name)) sources.set(cfg.name, await createSource(cfg, full));
    }
    const global = wanted.find((w) => w.source === null);
    const mine = wanted.find((w) => w.source !== null);
    lists = new SuppressionLists({
      global: global?.value ?? null,
      ...(global ? { globalName: global.name } : {}),
      perSource: mine ? [{ source: mine.source!, location: mine.value, defaultCountry: mine.country }] : [],
      sources,
      sourceNames: names,
      logger: options.logger ?? QUIET,
    });
    await lists.start();
    return await lists.forSource(mine?.source ?? '');
  } finally {
    await lists?.stop();
    for (const s of sources.values()) await s.close().catch(() => {});
  }
}
