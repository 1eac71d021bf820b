// Issue 3, the send path and the notifier.
// 1. 1M destinations in 1000 chunks of 1000: ServiceClient → sandbox (notifications off, so this
//    measures the send path, not the notifier) against a floor in the same run: a bare undici Pool
//    posting the same bodies to a bare node:http server that parses the JSON. Goal ≤ 1.5× floor.
// 2. Notifier: the sandbox notifies N accepted destinations to a bare receiver. Goal ≥ 10,000/s.
// Servers run on worker threads; the client runs on the main thread.
import { Worker } from 'node:worker_threads';
import pLimit from 'p-limit';
import { Pool } from 'undici';
import { ServiceClient } from '../src/service/client.ts';
import { massiveBody, type PlannedChunk, wholePart } from '../src/service/wire.ts';
import type { ServerData, ServerStats } from './service-server.ts';

// SERVICE_BENCH_CHUNKS / SERVICE_BENCH_NOTIFICATIONS shrink the run for a quick check.
const CHUNKS = Number(process.env.SERVICE_BENCH_CHUNKS ?? 1000);
const CHUNK_SIZE = 1000;
const CONCURRENCY = 8;
const WARMUP_CHUNKS = 50;
const NOTIFICATIONS = Number(process.env.SERVICE_BENCH_NOTIFICATIONS ?? 100_000);
const TEXT = 'Hola, tu pedido 12345 llega hoy entre 2 y 5 pm. Responde SALIR para no recibir mensajes.';
const NOTIFY_URL = 'http://127.0.0.1:9/notify?token=bench-token';

interface Server {
  url: string;
  stats(): Promise<ServerStats>;
  close(): Promise<void>;
}

async function startServer(data: ServerData): Promise<Server> {
  const worker = new Worker(new URL('./service-server.ts', import.meta.url), { workerData: data });
  const url = await new Promise<string>((resolve, reject) => {
    worker.once('message', (m: { url: string }) => resolve(m.url));
    worker.once('error', reject);
  });
  return {
    url,
    stats: () =>
      new Promise((resolve) => {
        worker.once('message', resolve);
        worker.postMessage('stats');
      }),
    close: async () => {
      await worker.terminate();
    },
  };
}

function chunk(i: number, bulkId: string): PlannedChunk {
  const destinations = new Array(CHUNK_SIZE);
  for (let j = 0; j < CHUNK_SIZE; j++) {
    const n = i * CHUNK_SIZE + j;
    destinations[j] = { to: `573${String(n).padStart(9, '0')}`, messageId: `${bulkId}-${n.toString(36)}` };
  }
  return { chunkId: `${bulkId}-c${i}`, bulkId, messages: [{ text: TEXT, destinations }] };
}

async function floor(): Promise<number> {
  const server = await startServer({ mode: 'floor' });
  const pool = new Pool(server.url, { connections: CONCURRENCY, pipelining: 1 });
  const post = async (body: string | Buffer) => {
    const res = await pool.request({
      path: '/mtmessage/massive',
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
      body,
    });
    await res.body.text();
  };
  const run = async (from: number, to: number, bulkId: string) => {
    const limit = pLimit(CONCURRENCY);
    const jobs: Promise<void>[] = [];
    for (let i = from; i < to; i++) {
      jobs.push(limit(() => post(massiveBody(wholePart(chunk(i, bulkId)), { notifyUrl: NOTIFY_URL }))));
    }
    await Promise.all(jobs);
  };
  await run(0, WARMUP_CHUNKS, 'warm');
  const started = performance.now();
  await run(0, CHUNKS, 'floor');
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  await server.close();
  return seconds;
}

async function client(): Promise<{ seconds: number; accepted: number; ledger: number; duplicates: number }> {
  const server = await startServer({ mode: 'sandbox', notify: false });
  const c = new ServiceClient({
    baseUrl: server.url,
    username: 'demo',
    password: 'demo',
    notifyUrl: NOTIFY_URL,
    concurrency: CONCURRENCY,
  });
  let accepted = 0;
  const run = async (from: number, to: number, bulkId: string) => {
    // The pipeline keeps a bounded window of chunks in hand, not the whole file.
    const window = pLimit(CONCURRENCY * 2);
    const jobs: Promise<void>[] = [];
    for (let i = from; i < to; i++) {
      jobs.push(
        window(async () => {
          const r = await c.sendChunk(chunk(i, bulkId));
          for (const p of r.parts) if (p.outcome.kind === 'accepted') accepted += p.end - p.start;
        }),
      );
    }
    await Promise.all(jobs);
  };
  await run(0, WARMUP_CHUNKS, 'warm');
  accepted = 0;
  const started = performance.now();
  await run(0, CHUNKS, 'client');
  const seconds = (performance.now() - started) / 1000;
  const stats = await server.stats();
  await c.close();
  await server.close();
  return {
    seconds,
    accepted,
    ledger: stats.ledger - WARMUP_CHUNKS * CHUNK_SIZE,
    duplicates: stats.duplicates,
  };
}

async function notifier(): Promise<{ seconds: number; count: number; failed: number; received: number }> {
  const receiver = await startServer({ mode: 'receiver' });
  const sandbox = await startServer({ mode: 'sandbox', notify: true });
  const c = new ServiceClient({
    baseUrl: sandbox.url,
    username: 'demo',
    password: 'demo',
    notifyUrl: `${receiver.url}/notify?token=bench-token`,
    concurrency: 4,
  });
  const chunks = NOTIFICATIONS / CHUNK_SIZE;
  await Promise.all(Array.from({ length: chunks }, (_, i) => c.sendChunk(chunk(i, 'notify'))));
  let stats = await sandbox.stats();
  while (stats.count < NOTIFICATIONS || stats.pending > 0) {
    await new Promise((r) => setTimeout(r, 100));
    stats = await sandbox.stats();
  }
  const received = (await receiver.stats()).count;
  await c.close();
  await sandbox.close();
  await receiver.close();
  return { seconds: (stats.last - stats.first) / 1000, count: stats.count, failed: stats.failed, received };
}

export default async function bench(): Promise<string> {
  const floorSeconds = await floor();
  const sent = await client();
  const notified = await notifier();
  const destinations = CHUNKS * CHUNK_SIZE;
  const ratio = sent.seconds / floorSeconds;
  const rate = notified.count / notified.seconds;
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  return [
    `Send path: ${fmt(destinations)} destinations in ${CHUNKS} chunks of ${CHUNK_SIZE}, ${CONCURRENCY} requests in flight, server on a worker thread. The sandbox runs with notifications off (\`notify: false\`), so this is the send path alone; the notifier is measured separately below.`,
    '',
    '| measure | seconds | destinations/s | vs floor |',
    '|---|---:|---:|---:|',
    `| floor: bare undici Pool → bare node:http (JSON.parse) | ${floorSeconds.toFixed(2)} | ${fmt(destinations / floorSeconds)} | 1.00× |`,
    `| ServiceClient → sandbox (token, validation, ledger, 28-digit transaction number, JSON answer) | ${sent.seconds.toFixed(2)} | ${fmt(destinations / sent.seconds)} | ${ratio.toFixed(2)}× (goal ≤ 1.5×) |`,
    '',
    `Accepted ${fmt(sent.accepted)} destinations; ledger ${fmt(sent.ledger)} new, ${sent.duplicates} duplicates.`,
    '',
    `Notifier: ${fmt(NOTIFICATIONS)} accepted destinations, delivery delay 0, 64 notification requests in flight, to a bare node:http receiver on its own worker thread.`,
    '',
    '| measure | notifications | seconds | per second |',
    '|---|---:|---:|---:|',
    `| sandbox notifier → bare receiver | ${fmt(notified.count)} (${notified.failed} not 200; receiver counted ${fmt(notified.received)}) | ${notified.seconds.toFixed(2)} | ${fmt(rate)} (goal ≥ 10,000) |`,
  ].join('\n');
}
