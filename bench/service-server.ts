// Worker side of bench/service.bench.ts: each server runs on its own thread so the client and the
// server each get a core. `floor` reads the body, parses the JSON and answers 200 `{}`; `sandbox`
// is src/sandbox/server.ts (notifications off unless `notify`); `receiver` answers every
// notification 200 and counts them.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { startSandbox } from '../src/sandbox/server.ts';

export interface ServerData {
  readonly mode: 'floor' | 'sandbox' | 'receiver';
  readonly notify?: boolean;
}

export interface ServerStats {
  /** floor/receiver: requests answered; sandbox: notification attempts made. */
  readonly count: number;
  readonly pending: number;
  /** sandbox: distinct destinations in the ledger. */
  readonly ledger: number;
  readonly duplicates: number;
  /** sandbox: start of the first and end of the last notification attempt (ms since epoch). */
  readonly first: number;
  readonly last: number;
  readonly failed: number;
}

const data = workerData as ServerData;
const port = parentPort!;

if (data.mode === 'sandbox') {
  const sandbox = await startSandbox({
    notify: data.notify ?? false,
    deliveryDelayMs: 0,
    notifyConcurrency: 64,
  });
  port.on('message', (m: string) => {
    if (m !== 'stats') return;
    const attempts = sandbox.notifier.attempts;
    let last = 0;
    let failed = 0;
    for (const a of attempts) {
      last = Math.max(last, a.at + a.latencyMs);
      if (a.code !== 200) failed++;
    }
    port.postMessage({
      count: attempts.length,
      pending: sandbox.notifier.pending,
      ledger: sandbox.ledger.size,
      duplicates: sandbox.ledger.duplicates,
      first: attempts[0]?.at ?? 0,
      last,
      failed,
    } satisfies ServerStats);
  });
  port.postMessage({ url: sandbox.url });
} else {
  let count = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
      count++;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 2 });
      res.end('{}');
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port.on('message', (m: string) => {
    if (m === 'stats') {
      port.postMessage({
        count,
        pending: 0,
        ledger: 0,
        duplicates: 0,
        first: 0,
        last: 0,
        failed: 0,
      } satisfies ServerStats);
    }
  });
  port.postMessage({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}
