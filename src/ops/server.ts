// The ops server (docs/contract.md "Ops server"): health, readiness, metrics, the JSON API and the
// dashboard (src/ops/dashboard/, docs/dashboard.md).

import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isLoopbackHost } from '../config/listen.ts';
import { splitListen } from '../config/load.ts';
import { maskNumber } from '../core/redact.ts';
import type { Logger } from '../log.ts';
import { buildManifest, manifestOf } from '../pipeline/reports.ts';
import { workersView } from '../pipeline/workers.ts';
import { localDate, localInstant } from '../plan/send-window.ts';
import type { ServiceHealth } from '../service/monitoring.ts';
import type { Source } from '../sources/source.ts';
import { FILE_STATES, type FileState, type Store } from '../store/store.ts';
import { VERSION } from '../version.ts';
import {
  ACTIONS,
  type Answer,
  cachedHealth,
  type FileAction,
  fileAction,
  fileActivity,
  type OpsControl,
  sendReport,
  sharedFor,
  validateUpload,
} from './api.ts';
import { asset } from './assets.ts';
import type { Metrics } from './metrics.ts';
import type { ServiceOutage } from './service-outage.ts';
import { clearedCookie, hasSession, sessionCookie } from './session.ts';
import { englishTexts, wordedManifest } from './wording.ts';

export interface OpsServer {
  readonly url: string;
  close(): Promise<void>;
}

export interface OpsOptions {
  listen: string;
  /** The daemon's work watchdog: a message when work is stalled, null when it moves. */
  work?: (() => string | null) | undefined;
  /** The messaging service's outage now, null while it answers (service-outage.ts). */
  service?: (() => ServiceOutage | null) | undefined;
  /** Bearer token for everything but /healthz and /readyz (required off loopback, by the config). */
  token?: string | undefined;
  store: Store;
  sources: ReadonlyMap<string, Source>;
  logger: Logger;
  /** GET /metrics (Prometheus text format), behind the token like the API. */
  metrics?: Metrics | undefined;
  /** The daemon's: the dashboard's actions, file checks and service health (else 404). */
  control?: OpsControl | undefined;
}

/** Each readiness probe answers within this or counts as failed. */
const PROBE_TIMEOUT_MS = 5000;

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = `${JSON.stringify(body, null, 2)}\n`;
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

function answer(res: ServerResponse, a: Answer): void {
  send(res, a.status, a.body);
}

/**
 * A check's answer serves every probe made while it runs and for READINESS_FRESH_MS after it
 * began: /readyz is open to anyone, and each check writes to the store and asks every source
 * (an S3 HEAD, an SFTP stat): a flood of probes must not become a flood of those.
 */
const READINESS_FRESH_MS = 1000;

type Readiness = { ready: boolean; checks: Record<string, string> };

/**
 * Checks shown but not deciding readiness (docs/runbook.md "Is it up?"): the messaging
 * service is not asked on behalf of a probe (its check is what this worker's requests last
 * found), and its outage is every worker's alike: restarting or unrouting this one fixes
 * nothing, and would cost the delivery reports and the dashboard it serves.
 */
const SHOWN_ONLY: ReadonlySet<string> = new Set(['service']);

function sharedReadiness(options: OpsOptions): () => Promise<Readiness> {
  const backends = sharedFor(READINESS_FRESH_MS, () => backendChecks(options));
  return async () => {
    const checks = { ...(await backends()) };
    // The watchdog's and the service's words cost nothing: always the latest.
    if (options.work) checks.work = options.work() ?? 'ok';
    if (options.service) {
      const outage = options.service();
      checks.service = outage ? `unreachable since ${outage.since}: ${outage.error}; retrying` : 'ok';
    }
    const ready = Object.entries(checks).every(([name, v]) => v === 'ok' || SHOWN_ONLY.has(name));
    return { ready, checks };
  };
}

/** The store's and every source's answer (never rejects: a failure is its check's text). */
async function backendChecks(options: OpsOptions): Promise<Record<string, string>> {
  const checks: Record<string, string> = {};
  const probe = async (name: string, fn: () => Promise<void>) => {
    let timer: NodeJS.Timeout | undefined;
    // A hung backend must not hang the probe: a supervisor's readiness check has a deadline.
    const limit = new Promise<never>((_, fail) => {
      timer = setTimeout(
        () => fail(new Error(`no answer within ${PROBE_TIMEOUT_MS / 1000} s`)),
        PROBE_TIMEOUT_MS,
      );
    });
    try {
      await Promise.race([fn(), limit]);
      checks[name] = 'ok';
    } catch (err) {
      checks[name] = (err as Error).message;
    } finally {
      clearTimeout(timer);
    }
  };
  await Promise.all([
    probe('store', () => options.store.ping()),
    ...[...options.sources].map(([name, source]) => probe(`source:${name}`, () => source.ping())),
  ]);
  return checks;
}

/** Files per page of /api/files: each costs a manifest, so a page stays small. */
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 500;

/** `?limit=`: an integer, clamped to 1..MAX_LIMIT (`-1` is not "everything"); else null. */
export function pageLimit(raw: string | null): number | null {
  if (raw === null || raw === '') return DEFAULT_LIMIT;
  if (!/^-?\d{1,9}$/.test(raw)) return null;
  return Math.min(Math.max(Number(raw), 1), MAX_LIMIT);
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Whether the request carries `Authorization: Bearer <token>`; constant time in the token. */
function bearer(req: IncomingMessage, token: Buffer): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
  return m !== null && timingSafeEqual(digest(m[1]!.trim()), token);
}

/**
 * How the request is let in: `open` (no token configured), `bearer` (a tool with the token),
 * `session` (the dashboard's cookie), or null (not at all).
 */
type Access = 'open' | 'bearer' | 'session' | null;

function accessOf(req: IncomingMessage, guard: Guard): Access {
  if (guard.token === null) return 'open';
  if (bearer(req, guard.token)) return 'bearer';
  if (guard.plainToken !== null && hasSession(guard.plainToken, req.headers.cookie)) return 'session';
  return null;
}

/**
 * A POST a browser made for another site's page (cross-site request forgery: a page elsewhere
 * posting to this server with the user's cookie, or to a loopback server without a token)
 * is refused: its Origin must be this server's. A browser always sends Origin with a POST,
 * so a request let in by the session cookie without one is refused too; tools without a
 * browser (curl with the Bearer token) send none.
 */
function crossSite(req: IncomingMessage, access: Access): string | null {
  const origin = req.headers.origin;
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none')
    return `a ${site} request: actions are taken from this server's own pages`;
  if (origin === undefined) return access === 'session' ? 'a browser request without an Origin' : null;
  let host: string | null = null;
  try {
    host = origin === 'null' ? null : new URL(origin).host;
  } catch {}
  // Behind a proxy that must send `Host: localhost` (a loopback listen address), the host the
  // browser used comes as X-Forwarded-Host (the first, when proxies chain). A page cannot set
  // it (a custom header makes the browser ask first, a CORS preflight this server never
  // allows), but a rebound name reaching the proxy gets it set to that name: it is trusted
  // only where the token is asked for too (a rebinding page has no session cookie).
  const forwarded =
    access === 'open'
      ? undefined
      : String(req.headers['x-forwarded-host'] ?? '')
          .split(',')[0]!
          .trim();
  const own = forwarded || req.headers.host;
  if (host === null || host !== own)
    return `Origin ${origin} is not this server (${own ?? 'no Host'}): actions are taken from its own pages`;
  return null;
}

/** Behind a TLS-terminating proxy the cookie is marked Secure. */
function overTls(req: IncomingMessage): boolean {
  return (
    (req.socket as { encrypted?: boolean }).encrypted === true || req.headers['x-forwarded-proto'] === 'https'
  );
}

/** The longest body read for a login or an action (the file check has its own limit). */
const SMALL_BODY = 4096;

/** The body, or null when longer than SMALL_BODY (the rest unread: the answer closes the connection). */
function smallBody(req: IncomingMessage): Promise<string | null> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > SMALL_BODY) {
        req.pause();
        req.removeAllListeners('data');
        resolve(null);
      }
    });
    req.once('end', () => resolve(text));
    req.once('error', reject);
  });
}

/**
 * On a loopback listen address a browser page from any site can still reach the port through
 * DNS rebinding (evil.example resolving to 127.0.0.1): its requests carry the attacker's
 * Host, so only this machine's names are answered.
 */
function hostAllowed(req: IncomingMessage, listenHost: string): boolean {
  const host = req.headers.host;
  if (host === undefined) return true; // HTTP/1.0 tools, never a browser
  let name: string;
  try {
    name = new URL(`http://${host}`).hostname.toLowerCase();
  } catch {
    return false;
  }
  const bare = name.replace(/^\[(.*)\]$/, '$1');
  return (
    bare === 'localhost' ||
    bare === '127.0.0.1' ||
    bare === '::1' ||
    bare === listenHost.replace(/^\[(.*)\]$/, '$1').toLowerCase()
  );
}

interface Guard {
  token: Buffer | null;
  /** The token itself: the key of the session cookies. */
  plainToken: string | null;
  /** The listen host when it is loopback (Host headers are checked), else null. */
  loopbackHost: string | null;
}

async function route(
  options: OpsOptions,
  guard: Guard,
  readiness: () => Promise<Readiness>,
  health: (() => Promise<ServiceHealth[]>) | null,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (guard.loopbackHost !== null && !hostAllowed(req, guard.loopbackHost))
    return send(res, 421, { error: 'this server answers only localhost, 127.0.0.1 or [::1] as Host' });
  const url = new URL(req.url ?? '/', 'http://localhost');
  const path = url.pathname;
  if (req.method === 'GET') {
    if (path === '/healthz') return send(res, 200, { status: 'ok' });
    if (path === '/readyz') {
      const r = await readiness();
      // Open to probes; the checks name files and backends' errors: only with the token.
      const shown = guard.token === null || accessOf(req, guard) !== null ? r : { ready: r.ready };
      return send(res, r.ready ? 200 : 503, shown);
    }
    // The dashboard's page and scripts hold no data: the API behind them asks for the token.
    const file = asset(path);
    if (file) {
      res.writeHead(200, file.headers);
      res.end(file.body);
      return;
    }
  }
  const access = accessOf(req, guard);
  if (req.method === 'POST') {
    // A refused POST leaves its body unread: the connection is not kept for another request
    // (a POST is a rare click; nothing is lost by a new connection).
    res.setHeader('connection', 'close');
    const refused = crossSite(req, access);
    if (refused !== null) return send(res, 403, { error: refused });
    if (path === '/login') return login(guard, req, res);
    if (path === '/logout')
      return send(res, 200, { ok: true }, { 'set-cookie': clearedCookie(overTls(req)) });
  } else if (req.method !== 'GET') return send(res, 405, { error: 'only GET and POST' });
  if (access === null) {
    res.setHeader('www-authenticate', 'Bearer realm="dropline ops"');
    return send(res, 401, { error: 'missing or wrong token (Authorization: Bearer <ops.token>, or log in)' });
  }
  if (req.method === 'POST') return post(options, req, res, url);

  if (path === '/api/meta')
    return send(res, 200, {
      version: VERSION,
      login: guard.token !== null,
      sources: [...options.sources.keys()],
      states: FILE_STATES,
      actions: options.control !== undefined,
      // The English of every code the page words (its Spanish is the page's own, i18n).
      texts: englishTexts(),
    });
  if (path === '/api/files') {
    const limit = pageLimit(url.searchParams.get('limit'));
    if (limit === null) return send(res, 400, { error: `limit must be an integer from 1 to ${MAX_LIMIT}` });
    const before = url.searchParams.get('before') ?? undefined;
    if (before !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(before))
      return send(res, 400, { error: 'before must be a fileId' });
    const search = url.searchParams.get('q')?.trim().slice(0, 200) || undefined;
    const state = url.searchParams.get('state') || undefined;
    if (state !== undefined && !(FILE_STATES as readonly string[]).includes(state))
      return send(res, 400, { error: `state must be one of ${FILE_STATES.join(', ')}` });
    const source = url.searchParams.get('source') || undefined;
    // One more than asked: whether a next page exists without a count of every file.
    const files = await options.store.listFiles({
      limit: limit + 1,
      ...(before ? { before } : {}),
      ...(search ? { search } : {}),
      ...(state ? { states: [state as FileState] } : {}),
      ...(source ? { source } : {}),
    });
    const page = files.slice(0, limit);
    if (files.length > limit) {
      const next = new URLSearchParams(url.searchParams);
      next.set('limit', String(limit));
      next.set('before', page.at(-1)!.fileId);
      res.setHeader('link', `</api/files?${next}>; rel="next"`);
    }
    // Two store calls a page, whatever its size: the files, then their counts.
    const counts = await options.store.countsOf(page.map((f) => f.fileId));
    const manifests = page.flatMap((f) => {
      const c = counts.get(f.fileId);
      return c ? [wordedManifest(buildManifest(f, c))] : [];
    });
    return send(res, 200, manifests);
  }
  if (path === '/api/summary') return send(res, 200, await summaryOf(options));
  if (path === '/api/replies/review') return send(res, 200, await repliesToReview(options.store));
  if (path === '/api/workers') return send(res, 200, await workersView(options.store));
  if (path === '/api/service-health') {
    if (!health) return send(res, 404, { error: 'no service client in this process' });
    return send(res, 200, await health());
  }
  if (path === '/metrics' && options.metrics) {
    const text = await options.metrics.registry.metrics();
    res.writeHead(200, { 'content-type': options.metrics.registry.contentType, 'cache-control': 'no-store' });
    res.end(text);
    return;
  }
  const m = /^\/api\/files\/([A-Za-z0-9_-]+)(?:\/(activity|report\.csv|errors\.csv))?$/.exec(path);
  if (m) {
    const [, fileId, part] = m as unknown as [string, string, string | undefined];
    if (part === 'activity') return answer(res, await fileActivity(options.store, fileId));
    if (part === 'report.csv' || part === 'errors.csv') {
      const a = await sendReport(options.store, res, fileId, part, {
        includeText: options.control?.config.report.includeText ?? false,
      });
      return a ? answer(res, a) : undefined;
    }
    const manifest = await manifestOf(options.store, fileId);
    return manifest
      ? send(res, 200, wordedManifest(manifest))
      : send(res, 404, { error: `no file ${fileId}` });
  }
  return send(res, 404, { error: 'not found' });
}

/**
 * GET /api/summary: the dashboard's header (docs/dashboard.md "The header"): the store's
 * figures since the start of today in the operator's time zone (the send window's, else
 * Bogotá's), the delivery rate of today's reports, and the messaging service's state.
 */
async function summaryOf(options: OpsOptions): Promise<unknown> {
  const window = options.control?.config.sendWindow;
  const timezone = typeof window === 'object' && window !== null ? window.timezone : 'America/Bogota';
  const now = new Date();
  const since = localInstant(timezone, localDate(now, timezone), 0).toISOString();
  const [s, review] = await Promise.all([options.store.summary(since), options.store.countRepliesToReview()]);
  const reported = s.delivered + s.undelivered;
  const outage = options.service?.() ?? null;
  return {
    timezone,
    since,
    sending: s.sending,
    sentToday: s.sent,
    deliveredToday: s.delivered,
    undeliveredToday: s.undelivered,
    deliveryRate: reported > 0 ? s.delivered / reported : null,
    reportsWaiting: s.waiting,
    repliesToReview: review,
    service: options.service
      ? outage
        ? {
            state: 'unreachable',
            since: outage.since,
            detail: { code: 'SERVICE_UNREACHABLE', since: outage.since },
          }
        : { state: 'ok' }
      : { state: 'unknown' },
  };
}

/** How many flagged replies the review page shows, newest last. */
const REVIEW_PAGE = 500;

/**
 * GET /api/replies/review: the replies flagged for review (docs/opt-outs.md "Flagged for
 * review"), the first REVIEW_PAGE in the order received, numbers masked as on every page.
 */
async function repliesToReview(store: Store): Promise<unknown> {
  const replies = await store.repliesToReview({ limit: REVIEW_PAGE });
  return replies.map((r) => ({
    id: r.id,
    receivedAt: r.receivedAt,
    from: maskNumber(r.from),
    to: r.to,
    text: r.text,
  }));
}

async function post(options: OpsOptions, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const control = options.control;
  if (!control) return send(res, 404, { error: 'actions are taken by a running daemon (dropline run)' });
  if (url.pathname === '/api/validate')
    return answer(
      res,
      await validateUpload(
        req,
        control.config,
        url.searchParams,
        control.suppressionLists ?? null,
        control.consentList ?? null,
      ),
    );
  const m = /^\/api\/files\/([A-Za-z0-9_-]+)\/([a-z]+)$/.exec(url.pathname);
  if (m && (ACTIONS as readonly string[]).includes(m[2]!)) {
    if ((await smallBody(req)) === null) return send(res, 413, { error: 'an action takes no body' });
    return answer(res, await fileAction(options.store, control, options.logger, m[1]!, m[2] as FileAction));
  }
  return send(res, 404, { error: 'not found' });
}

/** POST /login `{"token": "…"}`: the session cookie when the token is right. */
async function login(guard: Guard, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (guard.token === null || guard.plainToken === null) return send(res, 200, { ok: true, login: false });
  const text = await smallBody(req);
  let given: unknown;
  try {
    given = text === null ? null : (JSON.parse(text) as { token?: unknown }).token;
  } catch {
    given = null;
  }
  if (typeof given !== 'string' || !timingSafeEqual(digest(given), guard.token))
    return send(res, 401, { error: 'wrong token' });
  return send(res, 200, { ok: true }, { 'set-cookie': sessionCookie(guard.plainToken, overTls(req)) });
}

export async function startOpsServer(options: OpsOptions): Promise<OpsServer> {
  const [host, port] = splitListen(options.listen, 'ops.listen');
  const guard: Guard = {
    token: options.token === undefined ? null : digest(options.token),
    plainToken: options.token ?? null,
    loopbackHost: isLoopbackHost(host) ? host : null,
  };
  const health = options.control ? cachedHealth(() => options.control!.serviceHealth()) : null;
  const readiness = sharedReadiness(options);
  const server = createServer((req, res) => {
    route(options, guard, readiness, health, req, res).catch((err: unknown) => {
      options.logger.error(
        { err: (err as Error).message, path: req.url?.split('?')[0] },
        'ops request failed',
      );
      if (!res.headersSent) send(res, 500, { error: 'internal error' });
      else res.end();
    });
  });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolveListen());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
