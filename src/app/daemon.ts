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
import { HEARTBEAT_MS } from '../pipeline/workers.ts';
import { startReplies } from '../replies/replies.ts';
import { serviceHealth } from '../service/monitoring.ts';
import { ReadinessTracker } from '../sources/readiness.ts';
import { pruneOld } from '../store/retention.ts';
import { VERSION } from '../version.ts';
import { FileSlots } from './file-slots.ts';
import { ProgressLoop } from './progress-loop.ts';
import { replyAnswerer } from './reply-answers.ts';
import type { Runtime } from './runtime.ts';
import { SourceScan } from './source-scan.ts';
import { type StalledWork, StepQueue } from './step-queue.ts';

export interface Daemon {
  receiver: Receiver;
  ops: OpsServer;
  close(): Promise<void>;
}

const WORK_INTERVAL_MS = 1000;
const PROGRESS_INTERVAL_MS = 2000;
/** Retention runs at start and then this often. */
const RETENTION_INTERVAL_MS = 3600_000;
/** Between two prune steps (a few ms each): the receiver's commits go in between. */
const RETENTION_PAUSE_MS = 20;
/** Stop waits for the work in hand at most one request's timeout plus this. */
const STOP_MARGIN_MS = 5000;

export async function startDaemon(rt: Runtime, options: { withOps?: boolean } = {}): Promise<Daemon> {
  const { config } = rt.loaded;
  const log = rt.logger;
  const pipeline = rt.pipeline;
  let closing = false;
  const timers: NodeJS.Timeout[] = [];
  const unwatch: (() => void)[] = [];

  // One queue for the short work (claims, rejections, progress checks), one after the other;
  // the files themselves are driven beside it in their slots. A failure that repeats every
  // poll is one line a minute, not one a poll.
  const gate = new RepeatGate();
  const queue = new StepQueue({
    log,
    gate,
    stallMs: config.workStallMs,
    lastProgress: () => pipeline.lastProgress,
  });
  const slots = new FileSlots({
    size: config.workers.filesInFlight,
    stallMs: config.workStallMs,
    acquire: () => pipeline.acquireNext(),
    drive: (file) => pipeline.driveAcquired(file),
    progressAt: (fileId) => pipeline.progressAt.get(fileId),
    ended: (fileId) => pipeline.progressAt.delete(fileId),
    log,
    gate,
  });
  const fill = (): void => void slots.fill();
  /** The readiness check "work": null when every step and file moves. */
  const workCheck = (): string | null => stalledText([...queue.stalled(), ...slots.stalled()]);

  // A store that cannot be written would take reports it cannot keep: refuse to start.
  await rt.store.probeWrite();
  const progress = new ProgressLoop({ store: pipeline.store, work: pipeline });
  const io = await startServices(rt, {
    withOps: options.withOps !== false,
    workCheck,
    wake: fill,
    driven: () => slots.driven(),
    delivered: (fileIds) => progress.delivered(fileIds),
  });
  const { receiver, metrics, alerts } = io;

  // ---- sources: readiness, claim, drive ----
  for (const cfg of config.sources) {
    const source = rt.sources.get(cfg.name)!;
    const tracker = new ReadinessTracker({
      mode: cfg.readiness,
      // S3 objects are whole once listed: immediate unless configured (marker/trailer still apply).
      stableMs: cfg.stableMs ?? (cfg.type === 'local' ? 2000 : cfg.type === 's3' ? 0 : 15_000),
      incompleteTimeoutMs: cfg.incompleteTimeoutMs,
    });
    const scan = new SourceScan({
      source,
      tracker,
      pipeline,
      queue,
      fill,
      metrics,
      alerts,
      log,
      gate,
      stopped: () => closing,
    });
    const pollMs = cfg.pollMs ?? (cfg.type === 'local' ? 1000 : 10_000);
    const tick = () => void scan.scan();
    tick();
    timers.push(setInterval(tick, pollMs));
    if (source.watch) unwatch.push(source.watch(tick));
  }

  // ---- files left by others (crashed workers, resume, retry), and any not started yet ----
  timers.push(setInterval(fill, WORK_INTERVAL_MS));
  fill();

  // ---- progress: completion, delivery timeout, in-doubt settlement; the watchdog ----
  timers.push(
    setInterval(
      () => {
        queue.watch();
        slots.watch();
      },
      Math.min(1000, Math.max(100, config.workStallMs / 3)),
    ),
  );
  let rounds = 0;
  timers.push(
    setInterval(
      () => void queue.enqueue('progress', () => progress.round(rounds++ % 5 === 0)),
      PROGRESS_INTERVAL_MS / 4,
    ),
  );

  // ---- heartbeat: `dropline workers` and /api/workers list the workers alive ----
  const heartbeat = (): void => beat(rt, gate);
  heartbeat();
  timers.push(setInterval(heartbeat, HEARTBEAT_MS));

  // ---- retention: hourly, in small steps beside the receiver (not on the work queue) ----
  const retention = new Retention(rt, () => closing);
  timers.push(setInterval(() => retention.prune(), RETENTION_INTERVAL_MS));
  retention.prune();

  return {
    receiver,
    ops: io.ops ?? { url: '', close: async () => {} },
    async close() {
      closing = true;
      queue.stop();
      slots.stop();
      // Sends stop between chunks: the work in hand ends within one request's timeout.
      pipeline.stop();
      for (const t of timers) clearInterval(t);
      for (const u of unwatch) u();
      await retention.pruning;
      const graceMs = config.api.timeoutMs + STOP_MARGIN_MS;
      let grace: NodeJS.Timeout | undefined;
      // Stalled steps too: the store must not close under a chunk whose answer may still come
      // (it would stay inflight, then in doubt).
      const finished = await Promise.race([
        Promise.all([queue.ended(), slots.ended()]).then(
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
      await io.close();
      await rt.store.workerStopped(rt.owner).catch(() => {});
    },
  };
}

/** "no progress in …" for the oldest stalled work, or null when every step and file moves. */
export function stalledText(all: StalledWork[], now = Date.now()): string | null {
  const worst = all[0];
  if (!worst) return null;
  const s = Math.round((now - worst.startedAt) / 1000);
  return `no progress in ${worst.what} (started ${s} s ago${all.length > 1 ? `, and ${all.length - 1} more` : ''}); other files go on`;
}

interface Services {
  receiver: Receiver;
  metrics: ReturnType<typeof createMetrics>;
  alerts: ReturnType<typeof startAlerts>;
  ops: OpsServer | null;
  close(): Promise<void>;
}

/**
 * The daemon's servers and watchers: the delivery-report receiver, metrics, alerts, the
 * service watch, the ops server and the SMPP replies.
 */
async function startServices(
  rt: Runtime,
  o: {
    withOps: boolean;
    workCheck: () => string | null;
    wake: () => void;
    driven: () => Iterable<string>;
    delivered: (fileIds: Iterable<string>) => void;
  },
): Promise<Services> {
  const { config, secrets } = rt.loaded;
  const log = rt.logger;
  const receiver = await startReceiver({
    listen: config.notify.listen,
    path: new URL(rt.loaded.notifyUrl).pathname,
    token: secrets.notifyToken,
    formerTokens: rt.formerNotifyTokens,
    store: rt.store,
    logger: log,
    onDelivered: o.delivered,
  });
  log.info({ url: receiver.url }, 'delivery-report receiver listening');
  const metrics = createMetrics(rt.store);
  metrics.watchReceiver(() => receiver.stats());
  const lists = rt.suppressionLists;
  if (lists) metrics.watchSuppressionLists(() => lists.describe());
  const consent = rt.consentList;
  if (consent) metrics.watchConsentList(() => consent.describe());
  const alerts = startAlerts({
    alerts: config.alerts,
    secrets: secrets.alertSecrets,
    store: rt.store,
    logger: log,
  });

  // The messaging service found unreachable: the files' detail, /readyz, service-down.
  const service = watchService({ store: rt.store, logger: log, alerts, driven: o.driven });
  metrics.watchService(() => service.current());

  let ops: OpsServer | null = null;
  if (o.withOps) {
    ops = await startOpsServer({
      listen: config.ops.listen,
      token: secrets.opsToken,
      work: o.workCheck,
      service: () => service.current(),
      store: rt.store,
      sources: rt.sources,
      logger: log,
      metrics,
      control: {
        pipeline: rt.pipeline,
        config,
        wake: o.wake,
        serviceHealth: () => serviceHealth(rt.accounts),
        suppressionLists: rt.suppressionLists,
        consentList: rt.consentList,
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
  // Users' replies over SMPP (replies.smpp): kept, opt-outs held back from chunks not yet sent,
  // help and confirmations answered through POST /momessage (./reply-answers.ts); a reply
  // joined to a finished file has its report.csv written again, as a delivery report would.
  const replies = startReplies({
    store: rt.store,
    loaded: rt.loaded,
    logger: log,
    lists: rt.suppressionLists,
    answerer: replyAnswerer(rt),
    onJoined: (fileId) => o.delivered([fileId]),
  });
  return {
    receiver,
    metrics,
    alerts,
    ops,
    async close() {
      await receiver.close();
      await replies?.stop();
      await ops?.close();
      await service.close();
      await alerts.close();
      metrics.close();
    },
  };
}

/** Records this worker's heartbeat; a failure is logged once a minute while it repeats. */
function beat(rt: Runtime, gate: RepeatGate): void {
  const log = rt.logger;
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
}

/** Ledger days kept at least: the weekly rule looks back to Monday (docs/campaign-rules.md "Retention"). */
const LEDGER_MIN_DAYS = 7;

/** Retention: finished files pruned in small steps; the contact ledger's old days dropped. */
class Retention {
  readonly #rt: Runtime;
  readonly #stopped: () => boolean;
  /** The prune under way, if any (stop waits for it). */
  pruning: Promise<void> | null = null;

  constructor(rt: Runtime, stopped: () => boolean) {
    this.#rt = rt;
    this.#stopped = stopped;
  }

  prune(): void {
    const { config } = this.#rt.loaded;
    const log = this.#rt.logger;
    // The contact ledger is the proof of the contacts made: kept as long as the files
    // (retentionDays; 0 keeps everything), never less than the week its rules look back.
    const limit = config.contactLimit;
    if (limit && config.retentionDays > 0 && !this.#stopped())
      this.#rt.store
        .pruneContacts({
          timezone: limit.timezone,
          keepDays: Math.max(config.retentionDays, LEDGER_MIN_DAYS),
        })
        .catch((err: Error) => log.warn({ err: err.message }, 'could not prune the contact ledger'));
    if (config.retentionDays <= 0 || this.pruning || this.#stopped()) return;
    this.pruning = pruneOld(this.#rt.store, {
      retentionDays: config.retentionDays,
      pauseMs: RETENTION_PAUSE_MS,
      stopped: this.#stopped,
    })
      .then((t) => {
        if (t.files + t.recipients + t.events + t.replies > 0)
          log.info({ ...t }, 'retention: pruned finished files and old replies');
      })
      .catch((err: Error) => log.error({ err: err.message }, 'retention failed'))
      .finally(() => {
        this.pruning = null;
      });
  }
}
