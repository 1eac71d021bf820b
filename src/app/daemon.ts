// `dropline run`: every source polled (and watched), ready files claimed and driven, files
// left by a dead worker taken over when their lease expires, delivery reports received,
// progress checked, the ops server up.
import { hostname } from 'node:os';
import { DroplineError } from '../errors.ts';
import { RepeatGate } from '../log.ts';
import { type Receiver, startReceiver } from '../notify/receiver.ts';
import { startAlerts } from '../ops/alerts.ts';
import { createMetrics } from '../ops/metrics.ts';
import { type OpsServer, startOpsServer } from '../ops/server.ts';
import { watchService } from '../ops/service-outage.ts';
import { startReplies } from '../pipeline/replies.ts';
import { HEARTBEAT_MS } from '../pipeline/workers.ts';
import { serviceHealth } from '../service/monitoring.ts';
import { ReadinessTracker, sourceProbes } from '../sources/readiness.ts';
import type { Source, SourceEntry } from '../sources/source.ts';
import { pruneOld } from '../store/retention.ts';
import type { FileRecord } from '../store/store.ts';
import { VERSION } from '../version.ts';
import type { Runtime } from './runtime.ts';

export interface Daemon {
  receiver: Receiver;
  ops: OpsServer;
  close(): Promise<void>;
}

/** A file being driven: up to workers.filesInFlight at once. */
interface Drive {
  readonly fileId: string;
  readonly what: string;
  readonly startedAt: number;
  /** No progress for workStallMs: it no longer counts against filesInFlight. */
  stalled: boolean;
  ended: Promise<void>;
}

interface Step {
  readonly what: string;
  readonly startedAt: number;
  /** Lets the queue go on without this step. */
  release: () => void;
  /** Settles when the step's work has ended (stalled or not). */
  ended: Promise<void>;
}

const WORK_INTERVAL_MS = 1000;
const PROGRESS_INTERVAL_MS = 2000;
/** Retention runs at start and then this often. */
const RETENTION_INTERVAL_MS = 3600_000;
/** Between two prune steps (a few ms each): the receiver's commits go in between. */
const RETENTION_PAUSE_MS = 20;
/** Ready files claimed per store transaction. */
const CLAIM_BATCH = 500;
/** Stop waits for the work in hand at most one request's timeout plus this. */
const STOP_MARGIN_MS = 5000;
/** How long delivery reports of a finished or stopped file gather before its report.csv is rewritten. */
const REPORT_SETTLE_MS = 2000;
/** A file whose reports never stop coming has its report.csv rewritten at most this often. */
const REPORT_MAX_WAIT_MS = 60_000;
/** Files whose owed reports one progress round writes again, at most. */
const OWED_PER_ROUND = 20;
/** States in which a file's report.csv is on disk while delivery reports may still change its rows. */
const REPORTED_STATES: ReadonlySet<string> = new Set(['paused', 'cancelled', 'partial', 'completed']);

export async function startDaemon(rt: Runtime, options: { withOps?: boolean } = {}): Promise<Daemon> {
  const { config, secrets } = rt.loaded;
  const log = rt.logger;
  const pipeline = rt.pipeline;
  let closing = false;
  const timers: NodeJS.Timeout[] = [];
  const unwatch: (() => void)[] = [];

  // One queue for the short work (claims, rejections, progress checks), one after the other;
  // the files themselves are driven beside it, up to workers.filesInFlight at once. A failure
  // in one step or file is logged and never stops the daemon.
  let queue: Promise<void> = Promise.resolve();
  // A failure that repeats every poll is one line a minute, not one a poll.
  const gate = new RepeatGate();
  // The watchdog: a step during which nothing moves (no batch read, no chunk answered, no
  // transition) for workStallMs is stalled. The queue stops waiting for it, so the other
  // files are claimed and sent; it goes on in the background (its file keeps its lease, so
  // nothing else drives it) and /readyz names it until it ends.
  let current: Step | null = null;
  const stalled = new Set<Step>();
  const enqueue = (what: string, fn: () => Promise<unknown>): Promise<void> => {
    queue = queue.then(async () => {
      if (closing) return;
      const step: Step = { what, startedAt: Date.now(), release: () => {}, ended: Promise.resolve() };
      const run = fn().then(
        () => {},
        (err: unknown) => {
          const message = (err as Error).message;
          const { log: shown, repeated } = gate.pass(`step:${what.split(' ')[0]}`, message);
          if (shown)
            log.error(
              { err: message, stack: (err as Error).stack, ...(repeated ? { repeated } : {}) },
              `${what} failed`,
            );
        },
      );
      step.ended = run;
      current = step;
      await new Promise<void>((release) => {
        step.release = release;
        void run.then(release);
      });
      if (current === step) current = null;
      void run.then(() => {
        if (stalled.delete(step))
          log.warn({ work: what, s: Math.round((Date.now() - step.startedAt) / 1000) }, 'stalled work ended');
      });
    });
    return queue;
  };
  const watchdog = (): void => {
    const step = current;
    if (!step) return;
    const quiet = Date.now() - Math.max(step.startedAt, pipeline.lastProgress);
    if (quiet < config.workStallMs) return;
    stalled.add(step);
    current = null;
    log.error(
      { work: step.what, quietMs: quiet },
      `no progress in ${step.what} for ${Math.round(quiet / 1000)} s: going on with the other files`,
    );
    step.release();
  };
  // ---- files driven: the oldest waiting first, up to filesInFlight at once ----
  const drives = new Map<string, Drive>();
  const busy = (): number => {
    let n = 0;
    for (const d of drives.values()) if (!d.stalled) n++;
    return n;
  };
  let filling = false;
  let fillAgain = false;
  /** Starts files while there is room: new ones, and those left by a dead or stalled worker. */
  const fill = async (): Promise<void> => {
    if (filling) {
      fillAgain = true;
      return;
    }
    filling = true;
    try {
      do {
        fillAgain = false;
        while (!closing && busy() < config.workers.filesInFlight) {
          const file = await pipeline.acquireNext();
          if (!file) break;
          launch(file);
        }
      } while (fillAgain && !closing);
      if (gate.clear('fill')) log.info('files are acquired again');
    } catch (err) {
      const message = (err as Error).message;
      const { log: shown, repeated } = gate.pass('fill', message);
      if (shown)
        log.error({ err: message, ...(repeated ? { repeated } : {}) }, 'cannot acquire the next file');
    } finally {
      filling = false;
    }
  };
  const launch = (file: FileRecord): void => {
    const drive: Drive = {
      fileId: file.fileId,
      what: `${file.name} (${file.fileId})`,
      startedAt: Date.now(),
      stalled: false,
      ended: Promise.resolve(),
    };
    drives.set(file.fileId, drive);
    drive.ended = pipeline
      .driveAcquired(file)
      .then(
        () => {},
        (err: unknown) => {
          const message = (err as Error).message;
          const { log: shown, repeated } = gate.pass(`drive:${file.fileId}`, message);
          if (shown)
            log.error(
              {
                fileId: file.fileId,
                err: message,
                stack: (err as Error).stack,
                ...(repeated ? { repeated } : {}),
              },
              `${drive.what} failed`,
            );
        },
      )
      .finally(() => {
        drives.delete(file.fileId);
        pipeline.progressAt.delete(file.fileId);
        if (drive.stalled)
          log.warn(
            { work: drive.what, s: Math.round((Date.now() - drive.startedAt) / 1000) },
            'stalled work ended',
          );
        void fill();
      });
  };
  const watchDrives = (): void => {
    const now = Date.now();
    for (const d of drives.values()) {
      if (d.stalled) continue;
      const quiet = now - Math.max(d.startedAt, pipeline.progressAt.get(d.fileId) ?? 0);
      if (quiet < config.workStallMs) continue;
      d.stalled = true;
      log.error(
        { work: d.what, quietMs: quiet },
        `no progress in ${d.what} for ${Math.round(quiet / 1000)} s: going on with the other files`,
      );
      void fill();
    }
  };

  /** The readiness check "work": null when every step and file moves. */
  const workCheck = (): string | null => {
    const all = [
      ...[...stalled].map((s) => ({ what: s.what, startedAt: s.startedAt })),
      ...[...drives.values()].filter((d) => d.stalled),
    ];
    const worst = all[0];
    if (!worst) return null;
    const s = Math.round((Date.now() - worst.startedAt) / 1000);
    return `no progress in ${worst.what} (started ${s} s ago${all.length > 1 ? `, and ${all.length - 1} more` : ''}); other files go on`;
  };

  // A store that cannot be written would take reports it cannot keep: refuse to start.
  await rt.store.probeWrite();
  const progressDue = new Set<string>();
  const reportDue = new Map<string, { first: number; due: number }>();
  const receiver = await startReceiver({
    listen: config.notify.listen,
    path: new URL(rt.loaded.notifyUrl).pathname,
    token: secrets.notifyToken,
    store: rt.store,
    logger: log,
    onDelivered: (fileIds) => {
      for (const id of fileIds) progressDue.add(id);
    },
  });
  log.info({ url: receiver.url }, 'delivery-report receiver listening');
  const metrics = createMetrics(rt.store);
  metrics.watchReceiver(() => receiver.stats());
  const lists = rt.suppressionLists;
  if (lists) metrics.watchSuppressionLists(() => lists.describe());
  const alerts = startAlerts({
    alerts: config.alerts,
    secrets: secrets.alertSecrets,
    store: rt.store,
    logger: log,
  });

  // The messaging service found unreachable: the files' detail, /readyz, service-down.
  const service = watchService({ store: rt.store, logger: log, alerts, driven: () => drives.keys() });
  metrics.watchService(() => service.current());

  let ops: OpsServer | null = null;
  if (options.withOps !== false) {
    ops = await startOpsServer({
      listen: config.ops.listen,
      token: secrets.opsToken,
      work: workCheck,
      service: () => service.current(),
      store: rt.store,
      sources: rt.sources,
      logger: log,
      metrics,
      control: {
        pipeline,
        config,
        wake: () => void fill(),
        serviceHealth: () => serviceHealth(rt.accounts),
        suppressionLists: rt.suppressionLists,
      },
    }).catch(async (err: NodeJS.ErrnoException) => {
      // The receiver is up already: left open it would keep a failed start alive.
      metrics.close();
      await service.close();
      await alerts.close();
      await receiver.close();
      throw err instanceof DroplineError
        ? err
        : new DroplineError('DROPLINE_ERR_OPS_LISTEN', `${config.ops.listen}: ${err.code ?? err.message}`, {
            cause: err,
          });
    });
    log.info({ url: ops.url }, 'ops server listening');
  }
  // Users' replies over SMPP (optOut.smpp): kept, opt-outs held back from chunks not yet sent.
  const replies = startReplies(rt.store, rt.loaded, log);

  // ---- sources: readiness, claim, drive ----
  const scanning = new Map<string, boolean>();
  // Inbox entries that are not drop files, per source: said once while they stay there.
  const ignoredSaid = new Map<string, Map<string, string>>();
  const scan = async (source: Source, tracker: ReadinessTracker): Promise<void> => {
    if (scanning.get(source.name) || closing) return;
    scanning.set(source.name, true);
    try {
      let listing: SourceEntry[];
      const ignored = new Map<string, string>();
      const listed = performance.now();
      try {
        listing = await source.list({ ignored: (name, why) => ignored.set(name, why) });
        metrics.scanned(source.name, (performance.now() - listed) / 1000, false);
        alerts.sourceListed(source.name, null);
      } catch (err) {
        metrics.scanned(source.name, (performance.now() - listed) / 1000, true);
        const message = (err as Error).message;
        alerts.sourceListed(source.name, message);
        const { log: shown, repeated } = gate.pass(`list:${source.name}`, message);
        if (shown)
          log.warn(
            { source: source.name, err: message, ...(repeated ? { repeated } : {}) },
            'cannot list the inbox',
          );
        return;
      }
      if (gate.clear(`list:${source.name}`)) log.info({ source: source.name }, 'inbox listed again');
      const said = ignoredSaid.get(source.name);
      for (const [name, why] of ignored)
        if (said?.get(name) !== why)
          log.warn({ source: source.name, file: name }, `ignoring inbox/${name}: ${why}`);
      ignoredSaid.set(source.name, ignored);
      const { ready, timedOut } = await tracker.observe(listing, Date.now(), sourceProbes(source));
      for (const entry of timedOut) {
        await enqueue(`reject ${entry.name}`, async () => {
          await pipeline.rejectIncomplete(source, entry);
          tracker.forget(entry.path);
        });
      }
      // Claimed in batches (one store transaction each), then started as room allows.
      for (let i = 0; i < ready.length; i += CLAIM_BATCH) {
        const batch = ready.slice(i, i + CLAIM_BATCH);
        await enqueue(`claim ${batch.length} file(s)`, async () => {
          try {
            await pipeline.claimReady(source, batch);
          } finally {
            for (const entry of batch) tracker.forget(entry.path);
          }
          void fill();
        });
      }
    } finally {
      scanning.set(source.name, false);
    }
  };

  for (const cfg of config.sources) {
    const source = rt.sources.get(cfg.name)!;
    const tracker = new ReadinessTracker({
      mode: cfg.readiness,
      // S3 objects are whole once listed: immediate unless configured (marker/trailer still apply).
      stableMs: cfg.stableMs ?? (cfg.type === 'local' ? 2000 : cfg.type === 's3' ? 0 : 15_000),
      incompleteTimeoutMs: cfg.incompleteTimeoutMs,
    });
    const pollMs = cfg.pollMs ?? (cfg.type === 'local' ? 1000 : 10_000);
    const tick = () => void scan(source, tracker);
    tick();
    timers.push(setInterval(tick, pollMs));
    if (source.watch) unwatch.push(source.watch(tick));
  }

  // ---- files left by others (crashed workers, resume, retry), and any not started yet ----
  timers.push(setInterval(() => void fill(), WORK_INTERVAL_MS));
  void fill();

  // ---- progress: completion, delivery timeout, in-doubt settlement ----
  // Each check, completion and report rewrite runs under the file's lease: a file another
  // process holds (a `send --wait`, another daemon) is left to it.
  const store = pipeline.store;
  const progress = async (all: boolean): Promise<void> => {
    const delivered = new Set(progressDue);
    progressDue.clear();
    const ids = new Set(delivered);
    if (all) for (const f of await store.listFiles({ states: ['submitted', 'partial'] })) ids.add(f.fileId);
    for (const id of ids) {
      let file = await store.getFile(id);
      if (!file) continue;
      // Its report.csv was written before these delivery reports changed its rows (a file
      // that completes now has just had its report written by checkProgress).
      const written = REPORTED_STATES.has(file.state);
      if (file.state === 'submitted' || file.state === 'partial')
        file = (await pipeline.checkProgress(file)) ?? file;
      // Written again once the burst settles: each burst pushes the rewrite back, up to
      // REPORT_MAX_WAIT_MS after the first, so a steady stream costs one rewrite a minute.
      if (written && delivered.has(id) && REPORTED_STATES.has(file.state)) {
        const now = Date.now();
        const first = reportDue.get(id)?.first ?? now;
        reportDue.set(id, { first, due: Math.min(now + REPORT_SETTLE_MS, first + REPORT_MAX_WAIT_MS) });
      }
    }
    for (const [id, { due }] of reportDue) {
      if (due > Date.now()) continue;
      reportDue.delete(id);
      // Resumed or retried meanwhile: its old report is gone on purpose until it finishes.
      await pipeline.rewriteReports(id, { states: REPORTED_STATES });
    }
    // Reports a source refused, due again (the store's back-off): whichever worker finds them.
    for (const id of await store.reportsDue(OWED_PER_ROUND)) await pipeline.writeOwedReports(id);
  };
  timers.push(
    setInterval(
      () => {
        watchdog();
        watchDrives();
      },
      Math.min(1000, Math.max(100, config.workStallMs / 3)),
    ),
  );
  let rounds = 0;
  timers.push(
    setInterval(() => void enqueue('progress', () => progress(rounds++ % 5 === 0)), PROGRESS_INTERVAL_MS / 4),
  );

  // ---- heartbeat: `dropline workers` and /api/workers list the workers alive ----
  const heartbeat = (): void => {
    rt.store.heartbeat({ workerId: rt.owner, host: hostname(), pid: process.pid, version: VERSION }).then(
      () => {
        if (gate.clear('heartbeat')) log.info('heartbeat recorded again');
      },
      (err: Error) => {
        const { log: shown, repeated } = gate.pass('heartbeat', err.message);
        if (shown)
          log.warn({ err: err.message, ...(repeated ? { repeated } : {}) }, 'cannot record the heartbeat');
      },
    );
  };
  heartbeat();
  timers.push(setInterval(heartbeat, HEARTBEAT_MS));

  // ---- retention: hourly, in small steps beside the receiver (not on the work queue) ----
  let pruning: Promise<void> | null = null;
  const prune = (): void => {
    // Contact-limit slots of days gone by limit nothing: they go whatever the retention.
    const limit = config.contactLimit;
    if (limit && !closing)
      rt.store
        .pruneContacts(limit.timezone)
        .catch((err: Error) => log.warn({ err: err.message }, 'could not prune contact-limit slots'));
    if (config.retentionDays <= 0 || pruning || closing) return;
    pruning = pruneOld(rt.store, {
      retentionDays: config.retentionDays,
      pauseMs: RETENTION_PAUSE_MS,
      stopped: () => closing,
    })
      .then((t) => {
        if (t.files + t.recipients + t.events > 0) log.info({ ...t }, 'retention: pruned finished files');
      })
      .catch((err: Error) => log.error({ err: err.message }, 'retention failed'))
      .finally(() => {
        pruning = null;
      });
  };
  timers.push(setInterval(prune, RETENTION_INTERVAL_MS));
  prune();

  return {
    receiver,
    ops: ops ?? { url: '', close: async () => {} },
    async close() {
      closing = true;
      // Sends stop between chunks: the work in hand ends within one request's timeout.
      pipeline.stop();
      for (const t of timers) clearInterval(t);
      for (const u of unwatch) u();
      await pruning;
      const graceMs = config.api.timeoutMs + STOP_MARGIN_MS;
      let grace: NodeJS.Timeout | undefined;
      // Stalled steps too: the store must not close under a chunk whose answer may still come
      // (it would stay inflight, then in doubt).
      const finished = await Promise.race([
        Promise.all([
          queue,
          ...[...stalled].map((s) => s.ended),
          ...[...drives.values()].map((d) => d.ended),
        ]).then(
          () => true,
          () => true,
        ),
        new Promise<boolean>((done) => {
          grace = setTimeout(() => done(false), graceMs);
        }),
      ]);
      clearTimeout(grace);
      if (!finished)
        log.warn(
          { ms: graceMs },
          'stopping without waiting for the current work: its file resumes at the next start',
        );
      await receiver.close();
      await replies?.stop();
      await ops?.close();
      await service.close();
      await alerts.close();
      metrics.close();
      await rt.store.workerStopped(rt.owner).catch(() => {});
    },
  };
}
