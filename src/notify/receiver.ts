// The delivery-report receiver (docs/contract.md "Notification receiver"; durable before 200:
// docs/notify.md "What the receiver answers").
//
// The service retries only on 503 and loses a report on any other answer or on a timeout, so:
// - 200 only once the event is committed. Requests queue their events; one batch per commit
//   (`batchMs` after its first event queued, at `maxBatch` events, or at once when every open
//   connection has a request waiting), one store.recordDeliveries call (one transaction), then
//   every request of the batch is answered. One commit at a time: while it runs the next batch
//   fills up, which is what keeps the number of transactions far below the number of requests
//   under load. batchMs defaults to 2 ms: the SQLite store commits synchronously, so the window
//   is idle time added to every commit cycle; with 0 (commit what arrived in the current round
//   of socket reads) a trickle of reports costs one transaction each. A store with a costly
//   commit (fsync per commit, a network round trip) may want more.
// - The service posts on a bounded number of connections, each waiting for its answer before
//   the next report. Once every open connection has a report queued, no other report can
//   arrive before an answer, and waiting out batchMs would only idle: the batch commits at
//   once (~20% more reports a second on 64 connections than with the timer alone).
// - A failed commit answers the whole batch 503; a store that cannot be reached is logged when
//   it goes and when it is back, not once per failed commit. A commit that hangs past `commitTimeoutMs`
//   answers 503 too (the store is idempotent, so a retry of an event that did commit in the end
//   is a harmless duplicate), and until it settles new requests get 503 at once.
// - A full queue answers 503 at once rather than letting the service time out.
// - Reports of POST /mtmessage (the account webhook: empty bulkId, the chunk in callbackData)
//   are given their recipient's bulkId and messageId before the commit, one store read per
//   chunk in the batch (channels/sms/reports.ts chunkReports); a failed read fails the batch like a failed commit.
// - Never log the query string (the token) or a body; numbers are masked.
// - The port is public, so sockets are a budget: at most `maxConnections` (default 512,
//   twice what the sandbox opens at once). A connection that has not sent a request with the
//   token is "untrusted": it must send one within `firstRequestMs`, is answered with
//   `connection: close` when it is refused (401/404/405/413), and is the first evicted (the
//   oldest, and never while its request is in progress) when a new connection would pass the
//   cap. When every connection is trusted or busy, `reserve` more are accepted whose requests
//   are answered 503 and closed: the service retries a 503, but loses a report whose
//   connection was refused or reset. Beyond both, Node closes new connections at once: the
//   file descriptors stay bounded whatever arrives.
//   Both are bounded by the process's open-files limit (fd-budget.ts, issue 32).

import { hash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type Logger, pino } from 'pino';
import { parseListenAddress } from '../config/listen.ts';
import { DroplineError } from '../errors.ts';
import { RepeatGate } from '../log.ts';
import type { Store } from '../store/store.ts';
import { Connections } from './connections.ts';
import { decodeNotification } from './decode.ts';
import { connectionCap, openFilesLimit } from './fd-budget.ts';
import { AWAY_REMINDER_MS, type CommitStats, GroupCommitter } from './group-committer.ts';

export { COMMIT_CHANNEL, type CommitEvent } from './group-committer.ts';

export interface ReceiverOptions {
  /** `host:port` (notify.listen); port 0 picks a free one. */
  readonly listen: string;
  /** The path of notify.publicUrl, e.g. `/notify`. */
  readonly path: string;
  /** notify.token: the `token` query parameter every notification must carry. */
  readonly token: string;
  /** Older tokens also accepted (hosts' `notify-token` files adopted at an upgrade: former-tokens.ts). */
  readonly formerTokens?: { accepts(token: string): Promise<boolean> } | undefined;
  readonly store: Store;
  /** How long the first event of a batch waits for others before the commit (default 2 ms; 0: the current round of reads). */
  readonly batchMs?: number | undefined;
  /** Events per commit (default 2000). */
  readonly maxBatch?: number | undefined;
  /** Events waiting for a commit beyond which requests are answered 503 at once (default 10 × maxBatch). */
  readonly maxQueue?: number | undefined;
  /** A commit still running after this long answers its batch 503 (default 5000 ms). */
  readonly commitTimeoutMs?: number | undefined;
  /** Bodies above this are answered 413 (default 64 KiB). */
  readonly maxBodyBytes?: number | undefined;
  /** Open connections kept (default 512); see the header comment. */
  readonly maxConnections?: number | undefined;
  /** Connections beyond maxConnections whose requests are answered 503 (default 64). */
  readonly reserve?: number | undefined;
  /** A connection that sent no request with the token by then is closed (default 10 s). */
  readonly firstRequestMs?: number | undefined;
  /** Default: silent. */
  readonly logger?: Logger | undefined;
  /** After a commit that changed recipients of these files (the pipeline checks completion). */
  readonly onDelivered?: ((fileIds: string[]) => void) | undefined;
  readonly now?: (() => Date) | undefined;
}

export interface ReceiverStats extends CommitStats {
  /** Requests on the receiver's path. */
  requests: number;
  /** Answers by HTTP status. */
  answered: Record<number, number>;
}

export interface Receiver {
  /** `http://host:port/path`, without the token. */
  readonly url: string;
  readonly port: number;
  stats(): ReceiverStats;
  /** Stops accepting, commits what is queued, answers everyone, then closes the connections. */
  close(): Promise<void>;
}

const JSON_HEADERS = { 'content-type': 'application/json' } as const;
const FULL_BODY = '{"status":"unavailable","reason":"too many connections"}';

const sha256 = (s: string): Buffer => hash('sha256', s, 'buffer');

export async function startReceiver(options: ReceiverOptions): Promise<Receiver> {
  const { store, path } = options;
  const {
    batchMs,
    maxBatch,
    maxQueue,
    commitTimeoutMs,
    maxBodyBytes,
    wanted,
    openFiles,
    maxConnections,
    reserve,
    firstRequestMs,
    now,
    log,
    expected,
    host,
    wantedPort,
  } = settingsOf(options);

  const stats = noStats();

  const conns = new Connections({ maxConnections, firstRequestMs, log });
  /** Requests refused for their token: each case logged once a minute at most, with the count since. */
  const refusals = new RepeatGate(AWAY_REMINDER_MS);

  const reply = (res: ServerResponse, status: number, body: string, close = false): void => {
    stats.answered[status] = (stats.answered[status] ?? 0) + 1;
    if (res.writableEnded || res.destroyed) return;
    res.writeHead(status, close ? { ...JSON_HEADERS, connection: 'close' } : JSON_HEADERS);
    res.end(body);
  };
  const committer = new GroupCommitter({
    store,
    batchMs,
    maxBatch,
    maxQueue,
    commitTimeoutMs,
    log,
    stats,
    connections: () => conns.open,
    onDelivered: options.onDelivered,
  });

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const conn = conns.of(req.socket);
    // Only untrusted connections can be evicted, so only theirs need a busy count (and the
    // service's own requests, the hot path, skip the listener).
    if (conn && !conn.trusted) {
      conn.busy++;
      res.once('close', () => {
        conn.busy--;
      });
    }
    // An untrusted connection is not kept open after a refusal: no idle socket for free.
    const refuse = !conn?.trusted;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q === -1 ? url : url.slice(0, q);
    if (pathname !== path) return reply(res, 404, '{"status":"not found"}', refuse);
    stats.requests++;
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return reply(res, 405, '{"status":"method not allowed"}', refuse);
    }
    const given = q === -1 ? null : tokenOf(url.slice(q + 1));
    if (given !== null && timingSafeEqual(sha256(given), expected)) return take(req, res, conn);
    const former = options.formerTokens;
    if (given === null || !former) return refuseToken(req, res, given, refuse);
    former.accepts(given).then(
      (ok) => (ok ? take(req, res, conn) : refuseToken(req, res, given, refuse)),
      () => refuseToken(req, res, given, refuse),
    );
  };

  /** A request without the token, or with one no receiver of this store accepts: 401. */
  const refuseToken = (req: IncomingMessage, res: ServerResponse, given: string | null, refuse: boolean) => {
    sayRefused(refusals, log, req, given);
    reply(res, 401, '{"status":"unauthorized"}', refuse);
  };

  /** A request with an accepted token: its connection trusted, its body read and committed. */
  const take = (req: IncomingMessage, res: ServerResponse, conn: ReturnType<typeof conns.of>) => {
    if (conn?.overflow) return reply(res, 503, FULL_BODY, true);
    if (conn && !conn.trusted) {
      conn.trusted = true;
      if (conn.timer) clearTimeout(conn.timer);
      conn.timer = null;
    }
    const declared = Number(req.headers['content-length']);
    if (declared > maxBodyBytes) return reply(res, 413, '{"status":"too large"}', true);
    readBody(req, maxBodyBytes, {
      tooLarge: () => reply(res, 413, '{"status":"too large"}', true),
      read: (body, bytes) => {
        const decoded = decodeNotification(body, now().toISOString());
        if (!decoded.ok) {
          log.warn({ reason: decoded.reason, bytes }, 'notify: malformed report');
          return reply(res, 400, JSON.stringify({ status: 'malformed', reason: decoded.reason }));
        }
        committer.add(decoded.events, (status, body) => reply(res, status, body));
      },
    });
  };

  const server: Server = createServer(handle);
  server.on('connection', (socket: Socket) => conns.accept(socket));
  // The service's sockets stay open between reports (it reuses them); a client that is slow
  // to send its headers or body does not hold a socket for the default minutes.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  // Beyond the cap and its reserve a new connection is closed at once: fds stay bounded.
  server.maxConnections = maxConnections + reserve;
  const { port, url } = await listen(server, host, wantedPort, options.listen, path);
  log.info(
    { url, batchMs, maxBatch, maxQueue, maxConnections, reserve, openFilesLimit: openFiles },
    'notify: receiver listening',
  );
  if (maxConnections + reserve < wanted.maxConnections + wanted.reserve)
    log.warn(
      { maxConnections, reserve, openFilesLimit: openFiles },
      `notify: connections capped at ${maxConnections} (+${reserve} answered 503) by the open-files limit ${openFiles}; raise it (LimitNOFILE, ulimit -n) for more`,
    );

  let closed: Promise<void> | null = null;
  return {
    url,
    port,
    stats: () => ({ ...stats, answered: { ...stats.answered } }),
    close() {
      closed ??= (async () => {
        committer.stop();
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        // Everything already queued is committed and answered; a hung store is not waited for
        // (the watchdog has answered its requests 503).
        await committer.drain();
        server.closeAllConnections();
        await stopped;
        log.info({ ...stats, evicted: conns.evicted }, 'notify: receiver closed');
      })();
      return closed;
    },
  };
}

/** The receiver's settings, defaults applied; a setting no receiver can run with throws. */
function settingsOf(options: ReceiverOptions) {
  const { path } = options;
  if (options.token === '') {
    throw new DroplineError(
      'DROPLINE_ERR_CONFIG',
      'notify.token must not be empty: anyone could post reports',
    );
  }
  if (!path.startsWith('/'))
    throw new DroplineError('DROPLINE_ERR_CONFIG', 'the receiver path must start with /');
  const batchMs = options.batchMs ?? 2;
  const maxBatch = Math.max(1, options.maxBatch ?? 2000);
  const maxQueue = Math.max(maxBatch, options.maxQueue ?? 10 * maxBatch);
  const commitTimeoutMs = options.commitTimeoutMs ?? 5000;
  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024;
  // Bounded by the process's open-file limit (issue 32): a cap above it is never reached.
  const wanted = {
    maxConnections: Math.max(1, options.maxConnections ?? 512),
    reserve: Math.max(0, options.reserve ?? 64),
  };
  const openFiles = openFilesLimit();
  const { maxConnections, reserve } = connectionCap(openFiles, wanted);
  const firstRequestMs = options.firstRequestMs ?? 10_000;
  const now = options.now ?? (() => new Date());
  const log = (options.logger ?? pino({ level: 'silent' })).child({ component: 'notify' });
  // Hashing both sides gives equal-length buffers, so neither the comparison's time nor an early
  // length mismatch says anything about the token.
  const expected = sha256(options.token);
  // Checked when the configuration loaded; a caller that skipped that gets the same message.
  const parsed = parseListenAddress(options.listen);
  if (typeof parsed === 'string') throw new DroplineError('DROPLINE_ERR_CONFIG', `notify.listen: ${parsed}`);
  const [host, wantedPort] = parsed;

  return {
    batchMs,
    maxBatch,
    maxQueue,
    commitTimeoutMs,
    maxBodyBytes,
    wanted,
    openFiles,
    maxConnections,
    reserve,
    firstRequestMs,
    now,
    log,
    expected,
    host,
    wantedPort,
  };
}

/**
 * A request's body, up to `maxBytes`: `read` once it has all come, or `tooLarge` once it
 * passes the limit (the rest is dropped). A client that goes away mid-body gets no answer.
 */
function readBody(
  req: IncomingMessage,
  maxBytes: number,
  on: { tooLarge: () => void; read: (body: Buffer, bytes: number) => void },
): void {
  const chunks: Buffer[] = [];
  let bytes = 0;
  let tooLarge = false;
  req.on('data', (chunk: Buffer) => {
    if (tooLarge) return;
    bytes += chunk.length;
    if (bytes > maxBytes) {
      tooLarge = true;
      chunks.length = 0;
      on.tooLarge();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (tooLarge) return;
    on.read(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), bytes);
  });
  // Its report was not queued.
  req.on('error', () => {});
}

/** Listens on `host:port`; the URL a client dials (a wildcard address named by its loopback). */
async function listen(
  server: Server,
  host: string,
  wantedPort: number,
  listenSetting: string,
  path: string,
): Promise<{ port: number; url: string }> {
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) =>
      reject(
        new DroplineError('DROPLINE_ERR_NOTIFY_LISTEN', `${listenSetting}: ${err.code ?? err.message}`, {
          cause: err,
        }),
      );
    server.once('error', onError);
    server.listen(wantedPort, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  // A wildcard address is not something a client can dial: name the loopback instead.
  const dial = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return { port, url: `http://${dial.includes(':') ? `[${dial}]` : dial}:${port}${path}` };
}

/** The stats of a receiver that has received nothing yet. */
function noStats(): ReceiverStats {
  return {
    requests: 0,
    answered: {},
    commits: 0,
    failedCommits: 0,
    events: 0,
    recorded: 0,
    duplicates: 0,
    orphans: 0,
    largestBatch: 0,
    queued: 0,
  };
}

/**
 * A refused token said in the log. Anyone can send these (the port is public): each case is said
 * at once the first time (a service with a wrong token shows), then at most once each
 * AWAY_REMINDER_MS with the count since, not a line per request an attacker sends.
 */
function sayRefused(gate: RepeatGate, log: Logger, req: IncomingMessage, given: string | null): void {
  const reason = given === null ? 'missing token' : 'wrong token';
  const { log: shown, repeated } = gate.pass(reason, reason);
  if (shown)
    log.warn(
      // Not under a key named token: the logger redacts those, and this says which case it was.
      { remote: req.socket.remoteAddress, reason, ...(repeated > 0 ? { refusedSince: repeated } : {}) },
      'notify: refused',
    );
}

/** The `token` query parameter; the notifyUrl's plain `token=…` is read without URLSearchParams. */
function tokenOf(query: string): string | null {
  if (query.startsWith('token=') && !/[&%+]/.test(query)) return query.slice('token='.length);
  return new URLSearchParams(query).get('token');
}
