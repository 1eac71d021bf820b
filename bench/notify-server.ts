// Worker side of bench/notify.bench.ts: the server under load runs on its own thread, so the load
// generator and the receiver each get a core. `bare` parses the JSON and answers 200; `receiver` is
// src/notify/receiver.ts with its durable group commit on the store at `storeUrl` (a SQLite file
// or a PostgreSQL schema), its recipients
// registered first (as a sent file: generated messageIds, chunks accepted) so every report
// updates one. The store is made once and kept across rounds: the measured file holds
// `prestored` reports before the first round (and every earlier round's), and each round
// reports recipients of its own. Beside the receiver, on the same thread as in `dropline run`,
// the file's progress is checked (store.counts) every PROGRESS_MS.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { type ReceiverStats, startReceiver } from '../src/notify/receiver.ts';
import { openStore } from '../src/store/index.ts';
import type { DeliveryEvent, DeliveryResult, RecipientInsert, Store } from '../src/store/store.ts';
import { parseStoreUrl } from '../src/store/url.ts';

export interface ServerData {
  mode: 'bare' | 'receiver';
  /** receiver: the store, as the `store` setting names it (sqlite:<path>, postgres://…). */
  storeUrl: string;
  token: string;
  fileId: string;
  /** Recipients of the measured file (prestored + every round's). */
  recipients: number;
  /** Reports recorded for the measured file's first recipients before any round. */
  prestored: number;
  /** A second file, for the warm-up reports: the same code path, the measured file untouched. */
  warmupFileId: string;
  /** Recipients of the warm-up file (every round's). */
  warmup: number;
  /** Where the warm-up file's numbers start (distinct from the measured file's). */
  warmupFirst: number;
  chunkSize: number;
  /**
   * receiver: instead of the store, a stand-in whose every commit takes this many ms and no
   * CPU (a timer), recording nothing: the rate the receiver's group commit allows on this
   * machine when a commit lasts that long, whatever the store (the ceiling line of the
   * PostgreSQL ingest bench).
   */
  commitMs?: number;
}

export interface ServerReport {
  /** Reports the server took in (bare: parsed; receiver: committed). */
  events: number;
  commits: number;
  largestBatch: number;
  /** receiver: recipients of the file with a delivery status now. */
  delivered: number;
  orphans: number;
  duplicates: number;
  /** receiver: progress checks (store.counts of the measured file) during the round, and the slowest (ms). */
  progressChecks: number;
  slowestProgressMs: number;
  /** receiver: the median commit (store.recordDeliveries) in ms, and the median events per commit. */
  commitMs: number;
  commitEvents: number;
}

/** How often the file's progress is checked, as `dropline run` and `send --wait` do. */
const PROGRESS_MS = 250;

const data = workerData as ServerData;
const port = parentPort!;

if (data.mode === 'bare') {
  let events = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { results: unknown[] };
      events += body.results.length;
      // bench/send-wait.bench.ts waits for a number of reports (`recipients`).
      if (events === data.recipients) port.postMessage({ done: performance.now() });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"ok"}');
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => {
    port.postMessage({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/notify` });
  });
  port.once('message', () => {
    server.closeAllConnections();
    server.close(() => {
      const report: ServerReport = {
        events,
        commits: 0,
        largestBatch: 0,
        delivered: events,
        orphans: 0,
        duplicates: 0,
        progressChecks: 0,
        slowestProgressMs: 0,
        commitMs: 0,
        commitEvents: 0,
      };
      port.postMessage(report);
    });
  });
} else if (data.commitMs !== undefined) {
  const commitMs = data.commitMs;
  const standIn = {
    async recordDeliveries(events: readonly DeliveryEvent[]): Promise<DeliveryResult> {
      await sleep(commitMs);
      return { recorded: events.length, duplicates: 0, orphans: 0, fileIds: [] };
    },
  } as unknown as Store;
  await serve(standIn, async (stats) => ({
    delivered: stats.events,
    progressChecks: 0,
    slowestProgressMs: 0,
    commitMs,
    commitEvents: 0,
  }));
} else {
  // As `dropline run` opens it.
  const store = await openStore(data.storeUrl, { backgroundCheckpoints: true });
  await store.migrate();
  if (!(await store.getFile(data.fileId))) {
    await registerSent(store, data.fileId, 0, data.recipients, data.chunkSize);
    await registerSent(store, data.warmupFileId, data.warmupFirst, data.warmup, data.chunkSize);
    await prestore(store, data.fileId, data.prestored);
    const sqlite = parseStoreUrl(data.storeUrl);
    if (sqlite.kind === 'sqlite') {
      // Setting up wrote a WAL of ~a GB: copied back now, not during the first round.
      const db = new DatabaseSync(sqlite.path);
      db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      db.close();
    }
  }
  const reported = async () => {
    const c = await store.counts(data.fileId);
    return c.delivered + c.undelivered;
  };
  const before = await reported();
  let progressChecks = 0;
  let slowestProgressMs = 0;
  const progress = setInterval(() => {
    const t = performance.now();
    void store.counts(data.fileId).then(() => {
      progressChecks++;
      slowestProgressMs = Math.max(slowestProgressMs, performance.now() - t);
    });
  }, PROGRESS_MS);
  // Each commit timed (the receiver calls recordDeliveries once per group).
  const commits: { ms: number; events: number }[] = [];
  const timed = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (key !== 'recordDeliveries') return (value as (...a: unknown[]) => unknown).bind(target);
      return async (events: readonly DeliveryEvent[]) => {
        const t = performance.now();
        const result = (await (value as Store['recordDeliveries']).call(target, events)) as DeliveryResult;
        commits.push({ ms: performance.now() - t, events: events.length });
        return result;
      };
    },
  });
  await serve(timed, async () => {
    clearInterval(progress);
    const delivered = (await reported()) - before;
    await store.close();
    return {
      delivered,
      progressChecks,
      slowestProgressMs,
      commitMs: medianOf(commits.map((c) => c.ms)),
      commitEvents: medianOf(commits.map((c) => c.events)),
    };
  });
}

/**
 * The receiver on `store` until the parent says stop: its URL posted first, then the report
 * (the receiver's counts, and what `finish` adds once it is closed).
 */
async function serve(
  store: Store,
  finish: (
    stats: ReceiverStats,
  ) => Promise<Omit<ServerReport, 'events' | 'commits' | 'largestBatch' | 'orphans' | 'duplicates'>>,
): Promise<void> {
  const receiver = await startReceiver({ listen: '127.0.0.1:0', path: '/notify', token: data.token, store });
  port.postMessage({ url: receiver.url });
  port.once('message', async () => {
    await receiver.close();
    const stats = receiver.stats();
    const report: ServerReport = {
      events: stats.events,
      commits: stats.commits,
      largestBatch: stats.largestBatch,
      orphans: stats.orphans,
      duplicates: stats.duplicates,
      ...(await finish(stats)),
    };
    port.postMessage(report);
  });
}

/** Reports for the file's first `n` recipients, recorded as the receiver would (groups of 5,000). */
async function prestore(store: Store, fileId: string, n: number): Promise<void> {
  for (let start = 0; start < n; start += 5000) {
    const events = [];
    for (let i = start; i < Math.min(start + 5000, n); i++) {
      events.push({
        transactionNumber: `15${String(i).padStart(26, '0')}`,
        to: benchNumber(i),
        messageId: `${fileId}-${i + 1}`,
        bulkId: fileId,
        callbackData: '',
        smsCount: 1,
        status: i % 10 === 0 ? 'NO_SUCCESS' : 'DELIVERED_TO_HANDSET',
        receivedAt: new Date().toISOString(),
      });
    }
    await store.recordDeliveries(events);
  }
}

/**
 * A file as the pipeline leaves it once sent: `n` recipients on lines 1…n with generated
 * messageIds (`<fileId>-<line>`), numbers benchNumber(first…first+n-1), every chunk accepted.
 */
async function registerSent(store: Store, fileId: string, first: number, n: number, chunkSize: number) {
  await store.registerFile({
    fileId,
    source: 'bench',
    name: `${fileId}.txt`,
    path: `processing/${fileId}.txt`,
    sha256: fileId,
    bytes: 1,
    state: 'sending',
  });
  const chunks = Math.ceil(n / chunkSize);
  await store.insertChunks(
    fileId,
    Array.from({ length: chunks }, (_, i) => ({ seq: i + 1, size: Math.min(chunkSize, n - i * chunkSize) })),
  );
  for (let start = 0; start < n; start += 10_000) {
    const rows: RecipientInsert[] = [];
    for (let i = start; i < Math.min(start + 10_000, n); i++) {
      const number = benchNumber(first + i);
      rows.push({
        idx: i + 1,
        line: i + 1,
        k: 0,
        number,
        value: number,
        messageId: null,
        generatedMessageId: true,
        text: null,
        chunkSeq: Math.floor(i / chunkSize) + 1,
        outcome: 'pending',
        code: null,
        detail: null,
        smsCount: 1,
      });
    }
    await store.insertRecipients(fileId, rows);
  }
  for (let seq = 1; seq <= chunks; seq++) {
    await store.setChunkState(fileId, seq, 'inflight', ['pending']);
    const tn = `16${String(first + seq).padStart(26, '0')}`;
    await store.recordChunkResult(fileId, seq, {
      state: 'accepted',
      attempts: 1,
      transactionNumber: tn,
      parts: [
        {
          messageIds: Array.from(
            { length: Math.min(chunkSize, n - (seq - 1) * chunkSize) },
            (_, j) => `${fileId}-${(seq - 1) * chunkSize + j + 1}`,
          ),
          wholeChunk: true,
          outcome: 'sent',
          transactionNumber: tn,
        },
      ],
    });
  }
}

function medianOf(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** The recipient number of report i (as bench/notify.bench.ts posts them). */
function benchNumber(i: number): string {
  return `573${String(i).padStart(9, '0')}`;
}
