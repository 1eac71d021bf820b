// The ops server (CONTRACT.md "Ops server"): health, readiness and the files' manifests as JSON.

import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { splitListen } from '../config/load.ts';
import { isLoopbackHost } from '../config/loopback.ts';
import type { Logger } from '../log.ts';
import { buildManifest, manifestOf } from '../pipeline/reports.ts';
import { workersView } from '../pipeline/workers.ts';
import type { Source } from '../sources/source.ts';
import type { Store } from '../store/store.ts';
import type { Metrics } from './metrics.ts';

export interface OpsServer {
  readonly url: string;
  close(): Promise<void>;
}

export interface OpsOptions {
  listen: string;
  /** The daemon's work watchdog: a message when work is stalled, null when it moves. */
  work?: (() => string | null) | undefined;
  /** Bearer token for everything but /healthz and /readyz (required off loopback, by the config). */
  token?: string | undefined;
  store: Store;
  sources: ReadonlyMap<string, Source>;
  logger: Logger;
  /** GET /metrics (Prometheus text format), behind the token like the API. */
  metrics?: Metrics | undefined;
}

/** Each readiness probe answers within this or counts as failed. */
const PROBE_TIMEOUT_MS = 5000;

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body, null, 2)}\n`;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

async function readiness(options: OpsOptions): Promise<{ ready: boolean; checks: Record<string, string> }> {
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
  if (options.work) checks.work = options.work() ?? 'ok';
  return { ready: Object.values(checks).every((v) => v === 'ok'), checks };
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
function authorized(req: IncomingMessage, token: Buffer): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
  return m !== null && timingSafeEqual(digest(m[1]!.trim()), token);
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
  /** The listen host when it is loopback (Host headers are checked), else null. */
  loopbackHost: string | null;
}

async function route(
  options: OpsOptions,
  guard: Guard,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (guard.loopbackHost !== null && !hostAllowed(req, guard.loopbackHost))
    return send(res, 421, { error: 'this server answers only localhost, 127.0.0.1 or [::1] as Host' });
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (req.method !== 'GET') return send(res, 405, { error: 'only GET' });
  if (url.pathname === '/healthz') return send(res, 200, { status: 'ok' });
  if (url.pathname === '/readyz') {
    const r = await readiness(options);
    // Open to probes; the checks name files and backends' errors: only with the token.
    const shown = guard.token === null || authorized(req, guard.token) ? r : { ready: r.ready };
    return send(res, r.ready ? 200 : 503, shown);
  }
  if (guard.token !== null && !authorized(req, guard.token)) {
    res.setHeader('www-authenticate', 'Bearer realm="dropline ops"');
    return send(res, 401, { error: 'missing or wrong token (Authorization: Bearer <ops.token>)' });
  }
  if (url.pathname === '/api/files') {
    const limit = pageLimit(url.searchParams.get('limit'));
    if (limit === null) return send(res, 400, { error: `limit must be an integer from 1 to ${MAX_LIMIT}` });
    const before = url.searchParams.get('before') ?? undefined;
    if (before !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(before))
      return send(res, 400, { error: 'before must be a fileId' });
    // One more than asked: whether a next page exists without a count of every file.
    const files = await options.store.listFiles({ limit: limit + 1, ...(before ? { before } : {}) });
    const page = files.slice(0, limit);
    if (files.length > limit) {
      const next = `/api/files?limit=${limit}&before=${encodeURIComponent(page.at(-1)!.fileId)}`;
      res.setHeader('link', `<${next}>; rel="next"`);
    }
    // Two store calls a page, whatever its size: the files, then their counts.
    const counts = await options.store.countsOf(page.map((f) => f.fileId));
    const manifests = page.flatMap((f) => {
      const c = counts.get(f.fileId);
      return c ? [buildManifest(f, c)] : [];
    });
    return send(res, 200, manifests);
  }
  if (url.pathname === '/api/workers') return send(res, 200, await workersView(options.store));
  if (url.pathname === '/metrics' && options.metrics) {
    const text = await options.metrics.registry.metrics();
    res.writeHead(200, { 'content-type': options.metrics.registry.contentType, 'cache-control': 'no-store' });
    res.end(text);
    return;
  }
  const m = /^\/api\/files\/([A-Za-z0-9_-]+)$/.exec(url.pathname);
  if (m) {
    const manifest = await manifestOf(options.store, m[1]!);
    return manifest ? send(res, 200, manifest) : send(res, 404, { error: `no file ${m[1]}` });
  }
  return send(res, 404, { error: 'not found' });
}

export async function startOpsServer(options: OpsOptions): Promise<OpsServer> {
  const [host, port] = splitListen(options.listen, 'ops.listen');
  const guard: Guard = {
    token: options.token === undefined ? null : digest(options.token),
    loopbackHost: isLoopbackHost(host) ? host : null,
  };
  const server = createServer((req, res) => {
    route(options, guard, req, res).catch((err: unknown) => {
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
