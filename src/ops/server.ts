// The ops server (CONTRACT.md "Ops server"): health, readiness and the files' manifests as JSON.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { splitListen } from '../config/load.ts';
import type { Logger } from '../log.ts';
import { manifestOf } from '../pipeline/reports.ts';
import type { Source } from '../sources/source.ts';
import type { Store } from '../store/store.ts';

export interface OpsServer {
  readonly url: string;
  close(): Promise<void>;
}

export interface OpsOptions {
  listen: string;
  store: Store;
  sources: ReadonlyMap<string, Source>;
  logger: Logger;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body, null, 2)}\n`;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

async function readiness(options: OpsOptions): Promise<{ ready: boolean; checks: Record<string, string> }> {
  const checks: Record<string, string> = {};
  const probe = async (name: string, fn: () => Promise<void>) => {
    try {
      await fn();
      checks[name] = 'ok';
    } catch (err) {
      checks[name] = (err as Error).message;
    }
  };
  await probe('store', () => options.store.ping());
  for (const [name, source] of options.sources) await probe(`source:${name}`, () => source.ping());
  return { ready: Object.values(checks).every((v) => v === 'ok'), checks };
}

async function route(options: OpsOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (req.method !== 'GET') return send(res, 405, { error: 'only GET' });
  if (url.pathname === '/healthz') return send(res, 200, { status: 'ok' });
  if (url.pathname === '/readyz') {
    const r = await readiness(options);
    return send(res, r.ready ? 200 : 503, r);
  }
  if (url.pathname === '/api/files') {
    const limit = Math.min(Number(url.searchParams.get('limit') ?? 100) || 100, 1000);
    const files = await options.store.listFiles({ limit });
    const manifests = [];
    for (const f of files) manifests.push(await manifestOf(options.store, f.fileId));
    return send(res, 200, manifests);
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
  const server = createServer((req, res) => {
    route(options, req, res).catch((err: unknown) => {
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
