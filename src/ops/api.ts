// The ops server's JSON API beyond the manifests (docs/contract.md "Ops server"): what
// the dashboard reads (a file's activity, its reports, the service's health) and does (the
// actions on a file, a file checked before it is dropped).

import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { pipeline as streamPipeline } from 'node:stream/promises';
import type { Config } from '../config/schema.ts';
import { maskNumber, redactText } from '../core/redact.ts';
import { DroplineError, hintOf } from '../errors.ts';
import { sourceValidateOptions, toJson, validateFile } from '../format/validate.ts';
import type { Logger } from '../log.ts';
import { changeFileState, RETRY_FROM, STATE_ACTIONS, type StateAction } from '../pipeline/actions.ts';
import { type ConsentList, readConsentOnce } from '../pipeline/consent-list.ts';
import type { Pipeline } from '../pipeline/pipeline.ts';
import {
  errorsCsv,
  type Manifest,
  manifestOf,
  maskIssue,
  type ReportKind,
  reportCsv,
  reportFileName,
} from '../pipeline/reports.ts';
import type { SuppressionLists } from '../pipeline/suppression-lists.ts';
import type { ServiceHealth } from '../service/monitoring.ts';
import type { Store } from '../store/store.ts';
import { errorParams, wordedEvent, wordedManifest } from './wording.ts';

/** What the daemon lends the ops server for the dashboard's actions, checks and health. */
export interface OpsControl {
  readonly pipeline: Pipeline;
  readonly config: Config;
  /** A file became drivable (resumed, retried): start it now rather than at the next poll. */
  wake(): void;
  /** The messaging service's monitoring endpoints, per account (src/service/monitoring.ts). */
  serviceHealth(): Promise<ServiceHealth[]>;
  /**
   * The daemon's opt-out lists (Runtime.suppressionLists), kept fresh: the file check uses
   * them as a file of the source would. null when none is configured.
   */
  readonly suppressionLists?: Pick<SuppressionLists, 'forSource'> | null;
  /** The daemon's consent list (Runtime.consentList), kept fresh; null when none is configured. */
  readonly consentList?: Pick<ConsentList, 'forChannel'> | null;
}

/** An answer the route sends as JSON. */
export interface Answer {
  status: number;
  body: unknown;
}

export const ACTIONS = ['pause', 'resume', 'cancel', 'retry'] as const;
export type FileAction = (typeof ACTIONS)[number];

const BY = 'DASHBOARD';

/** A refusal as the API words it: the error's code, message and hint. */
function refusal(status: number, err: DroplineError): Answer {
  return {
    status,
    body: { error: err.message, code: err.code, hint: err.hint, params: errorParams(err.code, err.message) },
  };
}

/** POST /api/files/:fileId/:action → the file's manifest after it, or why not (404, 409). */
export async function fileAction(
  store: Store,
  control: OpsControl,
  logger: Logger,
  fileId: string,
  action: FileAction,
): Promise<Answer> {
  try {
    if (action === 'retry') {
      if (!(await store.getFile(fileId))) throw new DroplineError('DROPLINE_ERR_UNKNOWN_FILE', fileId);
      // Under the file's lease, briefly (its state checked there): the daemon's loop drives
      // it once it is sending again.
      const requeued = await control.pipeline.retry(fileId, { waitMs: 5000, drive: false });
      if (requeued === null)
        throw new DroplineError(
          'DROPLINE_ERR_FILE_STATE',
          `${fileId} is being driven by a worker right now; try again in a moment`,
        );
      if (requeued === 0)
        throw new DroplineError(
          'DROPLINE_ERR_FILE_STATE',
          `${fileId}: no failed or in-doubt chunk to resend`,
        );
      logger.info({ fileId, chunks: requeued, by: BY }, 'file retried');
      control.wake();
    } else {
      await changeFileState(store, logger, fileId, action as StateAction, BY);
      if (action === 'resume') control.wake();
      // The send that finds its file paused or cancelled writes its reports; when no worker
      // drives it, this one does (in the background: a report of a million rows takes seconds).
      // Only while it stays so: a file resumed meanwhile has no report on purpose.
      else
        void control.pipeline
          .rewriteReports(fileId, { waitMs: 5000, states: new Set([STATE_ACTIONS[action].to]) })
          .catch((err: unknown) =>
            logger.warn({ fileId, err: (err as Error).message }, 'reports not rewritten after the action'),
          );
    }
  } catch (err) {
    if (!(err instanceof DroplineError)) throw err;
    return refusal(err.code === 'DROPLINE_ERR_UNKNOWN_FILE' ? 404 : 409, err);
  }
  return { status: 200, body: await manifestOf(store, fileId) };
}

/** Which actions a file in this state allows (the dashboard greys out the others). */
export function allowedActions(m: Pick<Manifest, 'state' | 'counts'>): FileAction[] {
  const allowed: FileAction[] = [];
  for (const [action, rule] of Object.entries(STATE_ACTIONS))
    if ((rule.from as readonly string[]).includes(m.state)) allowed.push(action as FileAction);
  const stuck = m.counts.chunksFailed + m.counts.chunksInDoubt;
  if ((RETRY_FROM as readonly string[]).includes(m.state) && (m.state === 'partial' || stuck > 0))
    allowed.push('retry');
  return allowed;
}

/** First lines shown per error code on a campaign's page. */
const LINES_PER_CODE = 5;

/**
 * GET /api/files/:fileId/activity: the campaign page's one call: the manifest, the timeline
 * of its states, its delivery reports by minute, its errors by code with their hint and first
 * lines (masked), its allowed actions.
 */
export async function fileActivity(store: Store, fileId: string): Promise<Answer> {
  const manifest = await manifestOf(store, fileId);
  if (!manifest) return { status: 404, body: { error: `no file ${fileId}` } };
  const [events, deliveries] = await Promise.all([store.fileEvents(fileId), store.deliveryTimeline(fileId)]);
  // Files read before error counts were kept (store migration 0011/0004): their listed errors.
  const byCode = { ...manifest.errorCounts };
  if (Object.keys(byCode).length === 0)
    for (const e of manifest.errors) byCode[e.code] = (byCode[e.code] ?? 0) + 1;
  const errors = Object.entries(byCode)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([code, count]) => ({
      code,
      count,
      hint: hintOf(code),
      lines: manifest.errors.filter((e) => e.code === code).slice(0, LINES_PER_CODE),
    }));
  return {
    status: 200,
    body: {
      manifest: wordedManifest(manifest),
      events: events.map((e) => wordedEvent(e, manifest.rejection)),
      deliveries,
      errors,
      actions: allowedActions(manifest),
      replies: await repliesOf(store, manifest),
    },
  };
}

/** Replies the campaign page lists, newest first. */
const REPLIES_SHOWN = 50;

/**
 * A file sent from a short code (its manifest counts `replied`): its replies and reply rate
 * (recipients who replied of those submitted), and the latest replies with their numbers
 * masked (docs/dashboard.md "Replies"); null for other files.
 */
async function repliesOf(store: Store, manifest: Manifest): Promise<unknown> {
  const replied = manifest.counts.replied;
  if (replied === undefined) return null;
  const [counts, latest] = await Promise.all([
    store.replyCounts(manifest.fileId),
    store.fileReplies(manifest.fileId, { latest: REPLIES_SHOWN }),
  ]);
  const submitted = manifest.counts.submitted;
  return {
    replies: counts.replies,
    replied: counts.replied,
    rate: submitted > 0 ? counts.replied / submitted : null,
    latest: latest.reverse().map((r) => ({
      receivedAt: r.receivedAt,
      from: maskNumber(r.from),
      text: redactText(r.text),
      line: r.line,
      optOut: r.optOut,
    })),
  };
}

/** GET /api/files/:fileId/report.csv and errors.csv, streamed as a download. */
export async function sendReport(
  store: Store,
  res: ServerResponse,
  fileId: string,
  kind: Extract<ReportKind, 'report.csv' | 'errors.csv'>,
  options: { includeText?: boolean } = {},
): Promise<Answer | null> {
  const file = await store.getFile(fileId);
  if (!file) return { status: 404, body: { error: `no file ${fileId}` } };
  if (file.prunedAt)
    return {
      status: 410,
      body: { error: `its recipients were removed by retention on ${file.prunedAt}; its counts remain` },
    };
  const name = reportFileName(file.name, fileId, kind);
  res.writeHead(200, {
    'content-type': 'text/csv; charset=utf-8',
    'cache-control': 'no-store',
    // An ASCII fallback, and the name as it is for the browsers that read filename*.
    'content-disposition': `attachment; filename="${name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`,
  });
  const rows = kind === 'report.csv' ? reportCsv(store, fileId, options) : errorsCsv(store, file);
  await streamPipeline(rows, res);
  return null;
}

/** The largest file the dashboard checks (a browser upload, held in a temporary file). */
export const VALIDATE_MAX_BYTES = 64 * 1024 * 1024;
/** Checks at once: each reads its whole file. */
const VALIDATE_AT_ONCE = 2;
let validating = 0;

/**
 * POST /api/validate?source=NAME&name=FILE: the body is the file. validate --source's answer
 * (validate --json's fields) with numbers masked; nothing is stored or sent, and the
 * temporary copy is removed before the answer. The opt-out lists are the daemon's (`lists`,
 * OpsControl.suppressionLists: checked for a change, not read again); without them (no list
 * configured) the source's configured lists, if any, are read for this check. The consent list
 * alike (`consent`, OpsControl.consentList, else `consent.list` read for this check): a
 * recipient without consent for the source's channel is NO_CONSENT (docs/opt-outs.md).
 */
export async function validateUpload(
  req: IncomingMessage,
  config: Config,
  query: URLSearchParams,
  lists: Pick<SuppressionLists, 'forSource'> | null = null,
  consent: Pick<ConsentList, 'forChannel'> | null = null,
): Promise<Answer> {
  const sourceName = query.get('source');
  const source =
    sourceName === null || sourceName === ''
      ? config.sources[0]
      : config.sources.find((s) => s.name === sourceName);
  if (!source) return { status: 400, body: { error: `no source named ${sourceName}` } };
  const name = (query.get('name') ?? 'upload.txt').slice(0, 255);
  // A file over the source's maxFileBytes but within this is read and rejected FILE_TOO_LARGE,
  // as the daemon would.
  const limit = VALIDATE_MAX_BYTES;
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  // Its body is not read (the server closes every POST's connection after the answer).
  if (declared > limit) return tooLarge(limit);
  if (validating >= VALIDATE_AT_ONCE)
    return { status: 429, body: { error: 'two files are being checked already; try again in a moment' } };
  validating++;
  let dir: string | null = null;
  try {
    dir = await mkdtemp(join(tmpdir(), 'dropline-check-'));
    // The file's own name (its layout may come from it: `*.bulk.txt`, docs/format.md "How dropline
    // tells the layouts apart"), made safe; the folder is this check's own.
    const path = join(
      dir,
      basename(name)
        .replace(/[^\p{L}\p{N}._-]/gu, '_')
        .replace(/^\.+/, '') || 'upload.txt',
    );
    const body = await received(req, path, limit, config.ops.uploadTimeoutMs);
    if (body === 'too large') return tooLarge(limit);
    if (body === 'too slow')
      return {
        status: 408,
        body: {
          error: `the file did not arrive within ${config.ops.uploadTimeoutMs / 1000} s (ops.uploadTimeoutMs); check it again, or use dropline validate --source`,
        },
      };
    // The lists a file of this source starts with now (null: none applies to it).
    const options = lists
      ? { ...sourceValidateOptions(config, source), suppression: await lists.forSource(source.name) }
      : sourceValidateOptions(config, source);
    options.consent = consent
      ? await consent.forChannel(source.channel)
      : config.consent
        ? await readConsentOnce({ config, channel: source.channel })
        : null;
    const summary = await validateFile(path, options);
    const json = toJson(name, summary);
    return {
      status: 200,
      body: {
        ...json,
        // Its figures and line, for the page to word it (docs/dashboard.md "Codes and languages").
        rejection: summary.rejection,
        source: source.name,
        errors: summary.errors.map(maskIssue),
        warnings: summary.warnings.map(maskIssue),
        // A merged example is a recipient's own text: a number written into it is masked.
        templates: summary.templates.map((t) => ({ ...t, example: redactText(t.example) })),
      },
    };
  } catch (err) {
    if (err instanceof DroplineError) return refusal(422, err);
    throw err;
  } finally {
    validating--;
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

/** Bytes of a too-long body read past the limit and dropped, so that its sender reads the 413. */
const DRAIN_BYTES = 16 * 1024 * 1024;

/**
 * The request's body into `path`, up to `limit` bytes, within `deadlineMs`: `too large` when
 * it is longer (the rest is read and dropped, so that the client reads the answer, up to
 * DRAIN_BYTES, then left unread), `too slow` when it has not all come by then (an upload that
 * trickles must not hold one of the checks' places: the answer frees it, and closes the
 * connection).
 */
async function received(
  req: IncomingMessage,
  path: string,
  limit: number,
  deadlineMs: number,
): Promise<'whole' | 'too large' | 'too slow'> {
  const out = createWriteStream(path, { mode: 0o600 });
  let bytes = 0;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await new Promise<'whole' | 'too large' | 'too slow'>((resolve, reject) => {
      const stopReading = (): void => {
        req.pause();
        req.removeAllListeners('data');
      };
      timer = setTimeout(() => {
        stopReading();
        resolve('too slow');
      }, deadlineMs);
      req.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > limit + DRAIN_BYTES) {
          stopReading();
          resolve('too large');
        } else if (bytes <= limit && !out.write(chunk)) {
          req.pause();
          out.once('drain', () => req.resume());
        }
      });
      req.once('end', () => resolve(bytes > limit ? 'too large' : 'whole'));
      req.once('error', reject);
      out.once('error', reject);
    });
  } finally {
    clearTimeout(timer);
    await new Promise<void>((done) => out.end(done));
  }
}

function tooLarge(limit: number): Answer {
  return {
    status: 413,
    body: {
      error: `the dashboard checks files of up to ${Math.floor(limit / 1024 / 1024)} MB; use dropline validate --source for larger ones`,
    },
  };
}

/** The service's health, asked at most every HEALTH_TTL_MS whatever the number of pages open. */
const HEALTH_TTL_MS = 15_000;

export function cachedHealth(read: () => Promise<ServiceHealth[]>): () => Promise<ServiceHealth[]> {
  return sharedFor(HEALTH_TTL_MS, read);
}

/**
 * `read` asked at most once every `ttlMs`: every call in between shares its answer (a promise,
 * so calls made while it runs wait for the same one). A failed read is not kept.
 */
export function sharedFor<T>(ttlMs: number, read: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | null = null;
  return () => {
    const now = Date.now();
    if (!last || now - last.at >= ttlMs) {
      const value = read();
      last = { at: now, value };
      value.catch(() => {
        if (last?.value === value) last = null;
      });
    }
    return last.value;
  };
}
