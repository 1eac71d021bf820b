// The delivery-report receiver (CONTRACT.md "Notification receiver", DESIGN-NOTES 2).
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
//   chunk in the batch (chunkReports); a failed read fails the batch like a failed commit.
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
import diagnosticsChannel from 'node:diagnostics_channel';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type Logger, pino } from 'pino';
import { parseListenAddress } from '../config/schema.ts';
import { DroplineError } from '../errors.ts';
import { RepeatGate } from '../log.ts';
import { maskNumber, redactText } from '../service/redact.ts';
import { sentForm } from '../store/message-ids.ts';
import type { DeliveryEvent, DeliveryResult, Store } from '../store/store.ts';
import { chunkOf, decodeNotification } from './decode.ts';
import { connectionCap, openFilesLimit } from './fd-budget.ts';

export interface ReceiverOptions {
  /** `host:port` (notify.listen); port 0 picks a free one. */
  readonly listen: string;
  /** The path of notify.publicUrl, e.g. `/notify`. */
  readonly path: string;
  /** notify.token: the `token` query parameter every notification must carry. */
  readonly token: string;
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

export interface ReceiverStats {
  /** Requests on the receiver's path. */
  requests: number;
  /** Answers by HTTP status. */
  answered: Record<number, number>;
  /** Transactions run (successful or not). */
  commits: number;
  failedCommits: number;
  /** Events committed: recorded + duplicates. */
  events: number;
  /** New to the store (orphans included). */
  recorded: number;
  /** Already recorded: changed nothing. */
  duplicates: number;
  /** Recorded, matching no recipient. */
  orphans: number;
  /** Largest batch committed, in events. */
  largestBatch: number;
  /** Events waiting for a commit now. */
  queued: number;
}

export interface Receiver {
  /** `http://host:port/path`, without the token. */
  readonly url: string;
  readonly port: number;
  stats(): ReceiverStats;
  /** Stops accepting, commits what is queued, answers everyone, then closes the connections. */
  close(): Promise<void>;
}

interface Conn {
  readonly socket: Socket;
  /** Has sent a request with the right token: never evicted for a newcomer. */
  trusted: boolean;
  /** Requests received and not answered yet: never closed under them. */
  busy: number;
  /** Accepted beyond the cap: its requests get 503 and it closes. */
  overflow: boolean;
  timer: NodeJS.Timeout | null;
}

/** diagnostics_channel: every commit of delivery reports (/metrics counts them). */
export const COMMIT_CHANNEL = 'dropline:notify:commit';
const commitChannel = diagnosticsChannel.channel(COMMIT_CHANNEL);

export interface CommitEvent {
  /** Reports of the batch by delivery status (repeats included; bounded names, see metricStatus). */
  readonly statuses: Readonly<Record<string, number>>;
  /** Each request's time from arrival to its answer, ms. */
  readonly lagsMs: readonly number[];
  readonly recorded: number;
  readonly duplicates: number;
  readonly orphans: number;
}

interface Waiter {
  readonly events: DeliveryEvent[];
  readonly res: ServerResponse;
  /** performance.now() when queued. */
  readonly at: number;
  answered: boolean;
}

const JSON_HEADERS = { 'content-type': 'application/json' } as const;
const OK_BODY = '{"status":"ok"}';
const UNAVAILABLE_BODY = '{"status":"unavailable","reason":"the report could not be recorded yet"}';
const BUSY_BODY = '{"status":"unavailable","reason":"too many reports waiting"}';
const FULL_BODY = '{"status":"unavailable","reason":"too many connections"}';

/** Distinct status names /metrics shows (NO_SUCCESS, DELIVERED_TO_HANDSET and a few more). */
const METRIC_STATUSES = 32;
/** A status name as a label: capitals and underscores, so never a number. */
const STATUS_NAME = /^[A-Z][A-Z_]{0,63}$/;
const OTHER_STATUS = 'OTHER';

/** How often a store that stays away is mentioned again. */
const AWAY_REMINDER_MS = 60_000;

const sha256 = (s: string): Buffer => hash('sha256', s, 'buffer');

export async function startReceiver(options: ReceiverOptions): Promise<Receiver> {
  const { store, path } = options;
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

  const stats: ReceiverStats = {
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

  let pending: Waiter[] = [];
  let pendingEvents = 0;
  let committing = false;
  /** The running commit overran commitTimeoutMs: the store is treated as unavailable until it settles. */
  let stalled = false;
  let timer: NodeJS.Timeout | null = null;
  let immediate: NodeJS.Immediate | null = null;
  let closing = false;
  /** Open connections: when each has a request queued, no further one can arrive unanswered. */
  let connections = 0;
  let idle: (() => void) | null = null;
  /** Every open connection, oldest first (a Set keeps insertion order). */
  const conns = new Set<Conn>();
  const connOf = new WeakMap<Socket, Conn>();
  let overflowing = 0;
  /** Since when commits fail because the store cannot be reached, and how many did. */
  let away: { since: number; saidAt: number; failed: number } | null = null;
  let evicted = 0;
  /**
   * Status names published for /metrics, where each is a label value kept for the life of the
   * process: a sender's made-up names (one per report, a number in one) must not grow it
   * without bound. The first METRIC_STATUSES names shaped like one are shown as they are;
   * anything else is OTHER_STATUS.
   */
  const metricStatuses = new Set<string>();
  const metricStatus = (name: string): string => {
    if (metricStatuses.has(name)) return name;
    if (metricStatuses.size >= METRIC_STATUSES || !STATUS_NAME.test(name)) return OTHER_STATUS;
    metricStatuses.add(name);
    return name;
  };
  /** Requests refused for their token: each case logged once a minute at most, with the count since. */
  const refusals = new RepeatGate(AWAY_REMINDER_MS);

  const reply = (res: ServerResponse, status: number, body: string, close = false): void => {
    stats.answered[status] = (stats.answered[status] ?? 0) + 1;
    if (res.writableEnded || res.destroyed) return;
    res.writeHead(status, close ? { ...JSON_HEADERS, connection: 'close' } : JSON_HEADERS);
    res.end(body);
  };
  const answer = (w: Waiter, status: number, body: string): void => {
    if (w.answered) return;
    w.answered = true;
    reply(w.res, status, body);
  };

  const schedule = () => {
    if (committing || pending.length === 0) {
      if (!committing && idle) idle();
      return;
    }
    if (pendingEvents >= maxBatch || closing || pending.length >= connections) return flush();
    if (timer || immediate) return;
    const wait = pending[0]!.at + batchMs - performance.now();
    // setImmediate runs after the current round of socket reads: every request that arrived in
    // it joins the batch, without the ≥1 ms of a timer.
    if (wait <= 0) immediate = setImmediate(flush);
    else timer = setTimeout(flush, wait);
  };

  function flush(): void {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    if (immediate) {
      clearImmediate(immediate);
      immediate = null;
    }
    if (committing || pending.length === 0) return;
    // Whole requests, up to maxBatch events (one oversized request still goes alone).
    let take = 0;
    let n = 0;
    while (take < pending.length) {
      const size = pending[take]!.events.length;
      if (n > 0 && n + size > maxBatch) break;
      n += size;
      take++;
    }
    const batch = pending.slice(0, take);
    pending = pending.slice(take);
    pendingEvents -= n;
    stats.queued = pendingEvents;
    const events = batch.length === 1 ? batch[0]!.events : batch.flatMap((w) => w.events);
    committing = true;
    stats.commits++;
    if (n > stats.largestBatch) stats.largestBatch = n;
    const started = performance.now();
    const watchdog = setTimeout(() => {
      stalled = true;
      log.error(
        { events: n, ms: commitTimeoutMs },
        'notify: the store did not commit in time; answering 503',
      );
      for (const w of batch) answer(w, 503, UNAVAILABLE_BODY);
      for (const w of pending) answer(w, 503, UNAVAILABLE_BODY);
      pending = [];
      pendingEvents = 0;
      stats.queued = 0;
      if (closing && idle) idle();
    }, commitTimeoutMs);
    let commit: Promise<DeliveryResult>;
    /** The events as recorded: reports of a chunk sent with POST /mtmessage given their recipient. */
    let recorded = events;
    if (namesChunks(events)) {
      // Read in the commit's time (the watchdog covers it); a failed read fails the batch as a
      // failed commit does: 503, nothing recorded, the service retries.
      commit = chunkReports(store, events).then((resolved) => {
        recorded = resolved;
        return store.recordDeliveries(resolved);
      });
    } else {
      try {
        commit = store.recordDeliveries(events);
      } catch (err) {
        commit = Promise.reject(err);
      }
    }
    commit.then(
      (result) => {
        clearTimeout(watchdog);
        stats.events += n;
        stats.recorded += result.recorded;
        stats.duplicates += result.duplicates;
        stats.orphans += result.orphans;
        for (const w of batch) answer(w, 200, OK_BODY);
        if (commitChannel.hasSubscribers) {
          const now = performance.now();
          const statuses: Record<string, number> = {};
          for (const e of events) {
            const name = metricStatus(e.status);
            statuses[name] = (statuses[name] ?? 0) + 1;
          }
          commitChannel.publish({
            statuses,
            lagsMs: batch.map((w) => now - w.at),
            recorded: result.recorded,
            duplicates: result.duplicates,
            orphans: result.orphans,
          } satisfies CommitEvent);
        }
        if (away) {
          log.info(
            { failedCommits: away.failed, s: Math.round((Date.now() - away.since) / 1000) },
            'notify: the store answers again; reports are recorded',
          );
          away = null;
        }
        if (log.isLevelEnabled('debug')) {
          log.debug(
            { events: n, requests: batch.length, ms: performance.now() - started, ...result },
            'notify: committed',
          );
        }
        if (result.orphans > 0 && log.isLevelEnabled('debug')) {
          // A messageId may be the operator's own, a number as well: masked like one.
          for (const e of recorded)
            log.debug({ messageId: redactText(e.messageId), to: maskNumber(e.to) }, 'notify: report');
        }
        settled();
        if (result.fileIds.length > 0 && options.onDelivered) {
          try {
            options.onDelivered(result.fileIds);
          } catch (err) {
            log.error({ err: errorText(err) }, 'notify: onDelivered failed');
          }
        }
      },
      (err: unknown) => {
        clearTimeout(watchdog);
        stats.failedCommits++;
        if ((err as { code?: unknown } | null)?.code === 'DROPLINE_ERR_STORE_UNAVAILABLE') storeAway(err);
        else
          log.error(
            { events: n, err: errorText(err) },
            'notify: commit failed; answering 503 (the service retries)',
          );
        for (const w of batch) answer(w, 503, UNAVAILABLE_BODY);
        settled();
      },
    );
  }

  // A store that is away (PostgreSQL restarting, a connection refused) fails every commit
  // until it is back: thousands a minute under a stream of reports. Said when it goes, again
  // each AWAY_REMINDER_MS it stays away, and when it is back, with the failed commits counted.
  function storeAway(err: unknown): void {
    const at = Date.now();
    if (away) {
      away.failed++;
      if (at - away.saidAt < AWAY_REMINDER_MS) return;
      away.saidAt = at;
      log.warn(
        { failedCommits: away.failed, s: Math.round((at - away.since) / 1000), err: errorText(err) },
        'notify: the store is still unavailable; answering 503 (the service retries)',
      );
      return;
    }
    away = { since: at, saidAt: at, failed: 1 };
    log.warn(
      { err: errorText(err) },
      'notify: the store is unavailable; answering 503 until it answers (the service retries)',
    );
  }

  function settled(): void {
    committing = false;
    stalled = false;
    schedule();
  }

  const enqueue = (events: DeliveryEvent[], res: ServerResponse) => {
    if (closing || stalled) return reply(res, 503, UNAVAILABLE_BODY);
    if (pendingEvents + events.length > maxQueue) return reply(res, 503, BUSY_BODY);
    pending.push({ events, res, at: performance.now(), answered: false });
    pendingEvents += events.length;
    stats.queued = pendingEvents;
    schedule();
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const conn = connOf.get(req.socket);
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
    if (!timingSafeEqual(sha256(given ?? ''), expected) || given === null) {
      // Anyone can send these (the port is public): each case is said at once the first time (a
      // service with a wrong token shows), then at most once each AWAY_REMINDER_MS with the
      // count since, not a line per request an attacker sends.
      const reason = given === null ? 'missing token' : 'wrong token';
      const { log: shown, repeated } = refusals.pass(reason, reason);
      if (shown)
        log.warn(
          // Not under a key named token: the logger redacts those, and this says which case it was.
          { remote: req.socket.remoteAddress, reason, ...(repeated > 0 ? { refusedSince: repeated } : {}) },
          'notify: refused',
        );
      return reply(res, 401, '{"status":"unauthorized"}', refuse);
    }
    if (conn?.overflow) return reply(res, 503, FULL_BODY, true);
    if (conn && !conn.trusted) {
      conn.trusted = true;
      if (conn.timer) clearTimeout(conn.timer);
      conn.timer = null;
    }
    const declared = Number(req.headers['content-length']);
    if (declared > maxBodyBytes) return reply(res, 413, '{"status":"too large"}', true);
    const chunks: Buffer[] = [];
    let bytes = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      if (tooLarge) return;
      bytes += chunk.length;
      if (bytes > maxBodyBytes) {
        tooLarge = true;
        chunks.length = 0;
        reply(res, 413, '{"status":"too large"}', true);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (tooLarge) return;
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const decoded = decodeNotification(body, now().toISOString());
      if (!decoded.ok) {
        log.warn({ reason: decoded.reason, bytes }, 'notify: malformed report');
        return reply(res, 400, JSON.stringify({ status: 'malformed', reason: decoded.reason }));
      }
      enqueue(decoded.events, res);
    });
    // A client that goes away mid-body gets no answer; its report was not queued.
    req.on('error', () => {});
  };

  /** The oldest untrusted connection with no request in progress, closed for a newcomer. */
  const evictOne = (): boolean => {
    for (const c of conns) {
      if (c.trusted || c.busy > 0 || c.overflow) continue;
      c.socket.destroy();
      conns.delete(c);
      evicted++;
      return true;
    }
    return false;
  };

  const server: Server = createServer(handle);
  server.on('connection', (socket: Socket) => {
    connections++;
    const conn: Conn = { socket, trusted: false, busy: 0, overflow: false, timer: null };
    if (conns.size >= maxConnections && !evictOne()) {
      conn.overflow = true;
      overflowing++;
      if (overflowing === 1) log.warn({ maxConnections }, 'notify: connection cap reached; answering 503');
    }
    conns.add(conn);
    connOf.set(socket, conn);
    // Untrusted connections get a short life: a request with the token, or closed.
    conn.timer = setTimeout(() => {
      conn.timer = null;
      if (!conn.trusted && conn.busy === 0) socket.destroy();
    }, firstRequestMs);
    conn.timer.unref();
    socket.once('close', () => {
      connections--;
      if (conn.timer) clearTimeout(conn.timer);
      if (conn.overflow) overflowing--;
      conns.delete(conn);
    });
  });
  // The service's sockets stay open between reports (it reuses them); a client that is slow
  // to send its headers or body does not hold a socket for the default minutes.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  // Beyond the cap and its reserve a new connection is closed at once: fds stay bounded.
  server.maxConnections = maxConnections + reserve;
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) =>
      reject(
        new DroplineError('DROPLINE_ERR_NOTIFY_LISTEN', `${options.listen}: ${err.code ?? err.message}`, {
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
  const url = `http://${dial.includes(':') ? `[${dial}]` : dial}:${port}${path}`;
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
        closing = true;
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        // Everything already queued is committed and answered; a hung store is not waited for
        // (the watchdog has answered its requests 503).
        if (committing || pending.length > 0) {
          await new Promise<void>((resolve) => {
            idle = resolve;
            if (stalled) resolve();
            else schedule();
          });
        }
        if (timer) clearTimeout(timer);
        if (immediate) clearImmediate(immediate);
        server.closeAllConnections();
        await stopped;
        log.info({ ...stats, evicted }, 'notify: receiver closed');
      })();
      return closed;
    },
  };
}

/**
 * Whether a batch may hold reports of POST /mtmessage (spec 6.3: bulkId always empty): the
 * massive sends' reports, nearly all of them, cost one comparison each and no parse.
 */
function namesChunks(events: readonly DeliveryEvent[]): boolean {
  for (const e of events) if (e.bulkId === '' && e.callbackData !== null) return true;
  return false;
}

/**
 * POST /mtmessage carries a chunk's recipients under one CustomMessageId, with CallbackData
 * `{"f": "<fileId>", "c": <seq>}` (docs/notify.md "Reports of POST /mtmessage"): its reports
 * come back with an empty bulkId and that messageId for every recipient. Each one whose
 * callbackData names a chunk and whose `to` is a number of that chunk gets bulkId := fileId and
 * messageId := that recipient's, so the store applies it as any other report; the rest are
 * left as they came (a number not in the chunk stays an orphan). One store read per chunk
 * named in the batch. A failed read rejects: the batch fails as a failed commit.
 */
async function chunkReports(store: Store, events: DeliveryEvent[]): Promise<DeliveryEvent[]> {
  /** fileId → seq → indexes of the events naming that chunk. */
  const named = new Map<string, Map<number, number[]>>();
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.bulkId !== '') continue;
    const chunk = chunkOf(e.callbackData);
    if (!chunk) continue;
    let seqs = named.get(chunk.fileId);
    if (!seqs) named.set(chunk.fileId, (seqs = new Map()));
    const at = seqs.get(chunk.seq);
    if (at) at.push(i);
    else seqs.set(chunk.seq, [i]);
  }
  if (named.size === 0) return events;
  const out = events.slice();
  const reads: Promise<void>[] = [];
  for (const [fileId, seqs] of named) {
    for (const [seq, at] of seqs) {
      // Numbers as the store keeps them (digits, country code first), as recordDeliveries compares them.
      const numbers = [...new Set(at.map((i) => sentForm(events[i]!.to)))].filter((n) => n !== '');
      if (numbers.length === 0) continue;
      reads.push(
        store.chunkMessageIds(fileId, seq, numbers).then((ids) => {
          for (const i of at) {
            const e = events[i]!;
            const messageId = ids.get(sentForm(e.to));
            if (messageId !== undefined) out[i] = { ...e, bulkId: fileId, messageId };
          }
        }),
      );
    }
  }
  await Promise.all(reads);
  return out;
}

/** The `token` query parameter; the notifyUrl's plain `token=…` is read without URLSearchParams. */
function tokenOf(query: string): string | null {
  if (query.startsWith('token=') && !/[&%+]/.test(query)) return query.slice('token='.length);
  return new URLSearchParams(query).get('token');
}

function errorText(err: unknown): string {
  return redactText(err instanceof Error ? err.message : String(err));
}
