// Several in-process workers on one SQLite database file, each with its own store connection,
// source instance, service client and logger, the way separate dropline processes share a
// store: for the lease tests, where the test must say exactly when a worker stalls.
// Everything is real (SQLite file, local folders, sandbox over loopback, receiver); the
// only additions are counters of what each worker wrote to reports/ and its log lines.
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseConfig } from '../../src/config/load.ts';
import type { Config } from '../../src/config/schema.ts';
import { type Receiver, startReceiver } from '../../src/notify/receiver.ts';
import { Pipeline } from '../../src/pipeline/pipeline.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/server.ts';
import { ServiceClient } from '../../src/service/client.ts';
import { LocalSource } from '../../src/sources/local-source.ts';
import type { SourceEntry } from '../../src/sources/source.ts';
import { openStore, SqliteStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/store.ts';
import { testStore as openTestStore, type TestStore } from './test-store.ts';

export interface Worker {
  readonly name: string;
  readonly store: Store;
  readonly pipeline: Pipeline;
  readonly source: LocalSource;
  readonly client: ServiceClient;
  /** Paths this worker wrote under reports/ (report.csv, manifest.json), in order. */
  readonly reportWrites: string[];
  /** This worker's log lines (pino objects). */
  readonly logs: Record<string, unknown>[];
  /** Milliseconds this worker's store clock runs ahead of the real one (a worker whose lease view is later). */
  clockAheadMs: number;
}

export interface WorkerOptions {
  /** Wraps the worker's real store (fault injection for the store-unavailable tests). */
  wrapStore?: (store: Store) => Store;
  /** How long the worker's SQLite connection waits for another's write lock (default 10 s). */
  busyTimeoutMs?: number;
  /** Wraps the worker's real client (a stall at a chosen request). */
  wrapClient?: (client: ServiceClient) => ServiceClient;
  /** The worker's clock, its store's and its pipeline's (send windows, contact-limit days). */
  now?: () => Date;
  /**
   * The worker's own clock while its store keeps its own (PostgreSQL's now(); SQLite in this
   * process: the real one): a worker whose clock is skewed.
   */
  processNow?: () => Date;
}

export class Workers {
  readonly dir: string;
  readonly drop: string;
  /** The SQLite database file (the SQLite-only tests lock it). */
  readonly dbPath: string;
  /** The `store` setting every worker opens (test-store.ts: SQLite or a PostgreSQL schema). */
  readonly storeUrl: string;
  private readonly testStore: TestStore;
  readonly sandbox: Sandbox;
  /** Where the service sends delivery reports; nothing listens there before openReceiver(). */
  readonly notifyUrl: string;
  receiver: Receiver | null = null;
  /**
   * Where notifyUrl points for the whole test: answers every report 503 until openReceiver()
   * (the sandbox keeps them and tries again), then hands each to the receiver and returns its
   * answer. Never closed before the end, so no report meets a reset or a refused connection
   * at the switch (the service never retries those: the report would be lost).
   */
  private readonly front: Server;
  private readonly forward: { to: string | null };
  /** The receiver's own store connection; tests read the truth through it. */
  readonly store: Store;
  readonly config: Config;
  private readonly all: Worker[] = [];

  private constructor(init: {
    dir: string;
    sandbox: Sandbox;
    notifyPort: number;
    front: Server;
    forward: { to: string | null };
    store: Store;
    testStore: TestStore;
    config: Config;
  }) {
    this.front = init.front;
    this.forward = init.forward;
    this.dir = init.dir;
    this.drop = join(init.dir, 'drop');
    this.dbPath = join(init.dir, 'state.db');
    this.testStore = init.testStore;
    this.storeUrl = init.testStore.url;
    this.sandbox = init.sandbox;
    this.notifyUrl = `http://127.0.0.1:${init.notifyPort}/notify?token=tok`;
    this.store = init.store;
    this.config = init.config;
  }

  /**
   * Starts the delivery-report receiver. Until then every report is answered 503 and the
   * sandbox tries it again 3, 6, 9, 12 and 15 s later: a file stays submitted meanwhile.
   */
  async openReceiver(): Promise<void> {
    this.receiver ??= await startReceiver({
      listen: '127.0.0.1:0',
      path: '/notify',
      token: 'tok',
      store: this.store,
    });
    this.forward.to = `http://127.0.0.1:${this.receiver.port}`;
  }

  static async create(config: Record<string, unknown> = {}): Promise<Workers> {
    const dir = await mkdtemp(join(tmpdir(), 'dropline-workers-'));
    const testStore = await openTestStore(dir);
    const store = await openStore(testStore.url);
    await store.migrate();
    // Reports 300 ms after acceptance, retried 3, 6, 9, 12 and 15 s later after a 503: 45 s
    // before the sandbox gives a report up, however long a loaded machine takes to reach
    // openReceiver (0.1, 15 s in all, lost reports on PostgreSQL under load).
    const sandbox = await startSandbox({ timeScale: 0.3, deliveryDelayMs: 1000 });
    const forward: { to: string | null } = { to: null };
    const front = createServer((req, res) => {
      const body: Buffer[] = [];
      req.on('data', (c: Buffer) => body.push(c));
      req.on('end', () => {
        const answer = (status: number, text = '') => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(text);
        };
        if (!forward.to) return answer(503);
        fetch(`${forward.to}${req.url ?? '/'}`, {
          method: req.method ?? 'POST',
          headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
          body: Buffer.concat(body),
        }).then(
          async (r) => answer(r.status, await r.text()),
          () => answer(503),
        );
      });
    });
    await new Promise<void>((done) => front.listen(0, '127.0.0.1', done));
    const notifyPort = (front.address() as AddressInfo).port;
    const parsed = parseConfig({
      store: testStore.url,
      leaseMs: 1500,
      ...config,
      api: {
        baseUrl: sandbox.url,
        username: 'demo',
        password: 'demo',
        chunkSize: 50,
        concurrency: 1,
        timeoutMs: 2000,
        retry: { baseMs: 20, maxMs: 200, maxAttempts: 8 },
        ...(config.api as Record<string, unknown> | undefined),
      },
      sources: [{ name: 'local', type: 'local', path: join(dir, 'drop') }],
    });
    return new Workers({ dir, sandbox, notifyPort, front, forward, store, testStore, config: parsed });
  }

  async worker(name: string, options: WorkerOptions = {}): Promise<Worker> {
    const logs: Record<string, unknown>[] = [];
    const reportWrites: string[] = [];
    const logger = pino(
      { level: 'info' },
      {
        write: (line: string) => {
          logs.push(JSON.parse(line) as Record<string, unknown>);
        },
      },
    );
    let worker: Worker | null = null;
    const now = options.now ?? (() => new Date(Date.now() + (worker?.clockAheadMs ?? 0)));
    const real =
      options.busyTimeoutMs === undefined
        ? await openStore(this.storeUrl, { now })
        : new SqliteStore({ path: this.dbPath, now, busyTimeoutMs: options.busyTimeoutMs });
    const store = options.wrapStore ? options.wrapStore(real) : real;
    const source = new LocalSource({ name: 'local', path: this.drop });
    await source.start();
    const write = source.write.bind(source);
    source.write = async (path, content) => {
      if (path.startsWith('reports/')) reportWrites.push(path);
      return write(path, content);
    };
    const realClient = new ServiceClient({
      baseUrl: this.sandbox.url,
      username: 'demo',
      password: 'demo',
      notifyUrl: this.notifyUrl,
      notifyContentType: 'application/json',
      concurrency: this.config.api.concurrency,
      timeoutMs: this.config.api.timeoutMs,
      retry: this.config.api.retry,
    });
    const client = options.wrapClient ? options.wrapClient(realClient) : realClient;
    const pipeline = new Pipeline({
      config: this.config,
      store,
      client,
      sources: new Map([['local', source]]),
      logger,
      owner: `worker-${name}`,
      ...(options.now || options.processNow ? { now: options.processNow ?? options.now } : {}),
    });
    worker = { name, store, pipeline, source, client: realClient, reportWrites, logs, clockAheadMs: 0 };
    this.all.push(worker);
    return worker;
  }

  /** Writes a drop file into the inbox and returns its listing entry. */
  async dropFile(name: string, content: string): Promise<SourceEntry> {
    const path = join(this.drop, 'inbox', name);
    await writeFile(path, content);
    const info = await stat(path);
    return { name, path: `inbox/${name}`, size: info.size, mtimeMs: info.mtimeMs };
  }

  async close(): Promise<void> {
    for (const w of this.all) {
      w.pipeline.stop();
      await w.client.close().catch(() => {});
      await w.source.close().catch(() => {});
      await w.store.close().catch(() => {});
    }
    this.front.closeAllConnections();
    this.front.close();
    await this.receiver?.close().catch(() => {});
    await this.store.close().catch(() => {});
    await this.testStore.close().catch(() => {});
    await this.sandbox.close().catch(() => {});
    if (!process.env.DROPLINE_KEEP_E2E) await rm(this.dir, { recursive: true, force: true });
  }
}

/** A personalized drop file of `n` valid recipients (distinct numbers). */
export function campaign(n: number, seed = 0): string {
  return Array.from(
    { length: n },
    (_, i) => `3${String(400_000_000 + seed * 100_000 + i)};Hola ${seed}-${i}, su cita es el lunes.\n`,
  ).join('');
}

/** A promise the test resolves when it wants a stalled worker to go on. */
export function gate(): { wait: Promise<void>; open: () => void; reached: boolean } {
  let open = () => {};
  const wait = new Promise<void>((done) => {
    open = done;
  });
  return { wait, open: () => open(), reached: false };
}
