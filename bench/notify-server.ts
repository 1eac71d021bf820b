// Worker side of bench/notify.bench.ts: the server under load runs on its own thread, so the load
// generator and the receiver each get a core. `bare` parses the JSON and answers 200; `receiver` is
// src/notify/receiver.ts with its durable group commit on a SQLite file store, its recipients
// registered first so every report updates one.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { startReceiver } from '../src/notify/receiver.ts';
import { createStore } from '../src/store/index.ts';
import type { RecipientInsert } from '../src/store/store.ts';

export interface ServerData {
  mode: 'bare' | 'receiver';
  dbPath: string;
  token: string;
  fileId: string;
  recipients: number;
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
  const store = createStore(`sqlite:${data.dbPath}`);
  await store.migrate();
  await store.registerFile({
    fileId: data.fileId,
    source: 'bench',
    name: 'bench.txt',
    path: 'processing/bench.txt',
    sha256: data.fileId,
    bytes: 1,
    state: 'sending',
  });
  const chunks = Math.ceil(data.recipients / data.chunkSize);
  await store.insertChunks(
    data.fileId,
    Array.from({ length: chunks }, (_, i) => ({
      seq: i + 1,
      size: Math.min(data.chunkSize, data.recipients - i * data.chunkSize),
    })),
  );
  for (let start = 0; start < data.recipients; start += 10_000) {
    const rows: RecipientInsert[] = [];
    for (let i = start; i < Math.min(start + 10_000, data.recipients); i++) {
      const number = benchNumber(i);
      rows.push({
        idx: i + 1,
        line: i + 1,
        k: 0,
        number,
        value: number,
        messageId: `m-${i}`,
        text: null,
        chunkSeq: Math.floor(i / data.chunkSize) + 1,
        outcome: 'sent',
        code: null,
        detail: null,
        smsCount: 1,
      });
    }
    await store.insertRecipients(data.fileId, rows);
  }
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

/** The recipient number of report i (as bench/notify.bench.ts posts them). */
function benchNumber(i: number): string {
  return `573${String(i).padStart(9, '0')}`;
}
