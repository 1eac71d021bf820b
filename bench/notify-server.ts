// Worker side of bench/notify.bench.ts: the server under load runs on its own thread, so the load
// generator and the receiver each get a core. `bare` parses the JSON and answers 200; `receiver` is
// src/notify/receiver.ts with its durable group commit on a SQLite file store, its recipients
// registered first (as a sent file: generated messageIds, chunks accepted) so every report
// updates one.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { startReceiver } from '../src/notify/receiver.ts';
import { createStore } from '../src/store/index.ts';
import type { RecipientInsert, Store } from '../src/store/store.ts';

export interface ServerData {
  mode: 'bare' | 'receiver';
  dbPath: string;
  token: string;
  fileId: string;
  recipients: number;
  /** A second file, for the warm-up reports: the same code path, the measured file untouched. */
  warmupFileId: string;
  warmup: number;
  chunkSize: number;
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
}

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
      };
      port.postMessage(report);
    });
  });
} else {
  // As `dropline run` opens it.
  const store = createStore(`sqlite:${data.dbPath}`, { backgroundCheckpoints: true });
  await store.migrate();
  await registerSent(store, data.fileId, 0, data.recipients, data.chunkSize);
  await registerSent(store, data.warmupFileId, data.recipients, data.warmup, data.chunkSize);
  const receiver = await startReceiver({ listen: '127.0.0.1:0', path: '/notify', token: data.token, store });
  port.postMessage({ url: receiver.url });
  port.once('message', async () => {
    await receiver.close();
    const stats = receiver.stats();
    const counts = await store.counts(data.fileId);
    await store.close();
    const report: ServerReport = {
      events: stats.events,
      commits: stats.commits,
      largestBatch: stats.largestBatch,
      delivered: counts.delivered + counts.undelivered,
      orphans: stats.orphans,
      duplicates: stats.duplicates,
    };
    port.postMessage(report);
  });
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

/** The recipient number of report i (as bench/notify.bench.ts posts them). */
function benchNumber(i: number): string {
  return `573${String(i).padStart(9, '0')}`;
}
