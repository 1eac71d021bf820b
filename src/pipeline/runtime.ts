// Everything a command needs, built from the configuration: store, sources, service client
// (or the embedded sandbox), pipeline. Commands open a runtime, use it, close it.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { hostname } from 'node:os';
import { dirname, resolve } from 'node:path';
import { type LoadedConfig, splitListen } from '../config/load.ts';
import { makeNumberRules } from '../format/numbers.ts';
import { loadSuppressionList, type SuppressionList } from '../format/suppression.ts';
import type { Logger } from '../log.ts';
import { type Sandbox, startSandbox } from '../sandbox/server.ts';
import { ServiceClient } from '../service/client.ts';
import { createSource } from '../sources/index.ts';
import type { Source } from '../sources/source.ts';
import { createStore } from '../store/index.ts';
import type { Store } from '../store/store.ts';
import { Pipeline } from './pipeline.ts';

export interface Runtime {
  loaded: LoadedConfig;
  store: Store;
  sources: Map<string, Source>;
  client: ServiceClient;
  pipeline: Pipeline;
  logger: Logger;
  owner: string;
  /** The in-process sandbox when api.baseUrl is "sandbox" and this process runs it. */
  sandbox: Sandbox | null;
  /** The service URL in use. */
  serviceUrl: string;
  stateDir: string;
  close(): Promise<void>;
}

export function stateDirOf(loaded: LoadedConfig): string {
  const store = loaded.config.store;
  return store.startsWith('sqlite:') && store !== 'sqlite::memory:'
    ? dirname(resolve(store.slice('sqlite:'.length)))
    : resolve('.dropline');
}

/** Whether something accepts TCP connections on host:port. */
export function isListening(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host: host === '0.0.0.0' ? '127.0.0.1' : host, port });
    const finish = (ok: boolean) => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

async function sandboxUrlFromDaemon(stateDir: string): Promise<string | null> {
  const file = resolve(stateDir, 'sandbox.url');
  if (!existsSync(file)) return null;
  const url = readFileSync(file, 'utf8').trim();
  try {
    const u = new URL(url);
    return (await isListening(u.hostname, Number(u.port))) ? url : null;
  } catch {
    return null;
  }
}

export interface OpenOptions {
  logger: Logger;
  /**
   * With api.baseUrl "sandbox": `embed` starts the sandbox in this process and advertises it
   * (the daemon); `share` uses the daemon's sandbox when one runs, else embeds one.
   */
  sandbox: 'embed' | 'share';
  /** Sandbox delivery delay (ms) for the embedded sandbox. */
  sandboxDeliveryDelayMs?: number;
  /** A long-running process (the daemon): store checkpoints on a worker thread. */
  backgroundCheckpoints?: boolean;
}

export async function openRuntime(loaded: LoadedConfig, options: OpenOptions): Promise<Runtime> {
  const { config } = loaded;
  const logger = options.logger;
  const stateDir = stateDirOf(loaded);
  mkdirSync(stateDir, { recursive: true });
  const owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

  const store = createStore(config.store, { backgroundCheckpoints: options.backgroundCheckpoints === true });
  await store.migrate();

  let sandbox: Sandbox | null = null;
  let serviceUrl: string;
  let advertised: string | null = null;
  if (config.api.baseUrl === 'sandbox') {
    const shared = options.sandbox === 'share' ? await sandboxUrlFromDaemon(stateDir) : null;
    if (shared) serviceUrl = shared;
    else {
      sandbox = await startSandbox({ deliveryDelayMs: options.sandboxDeliveryDelayMs ?? 1000 });
      serviceUrl = sandbox.url;
      if (options.sandbox === 'embed') {
        advertised = resolve(stateDir, 'sandbox.url');
        writeFileSync(advertised, `${serviceUrl}\n`);
      }
      logger.info({ url: serviceUrl }, 'embedded sandbox started (api.baseUrl "sandbox")');
    }
  } else serviceUrl = config.api.baseUrl;

  const client = new ServiceClient({
    baseUrl: serviceUrl,
    username: config.api.username,
    password: loaded.secrets.apiPassword,
    notifyUrl: loaded.notifyUrl,
    notifyContentType: 'application/json',
    concurrency: config.api.concurrency,
    ratePerSecond: config.api.ratePerSecond,
    timeoutMs: config.api.timeoutMs,
    retry: config.api.retry,
    token: { expiresInUnitMs: config.api.tokenExpiresInUnitMs, maxLifetimeS: config.api.tokenMaxLifetimeS },
  });

  const sources = new Map<string, Source>();
  for (const s of config.sources) {
    const source = await createSource(s, logger);
    await source.start();
    sources.set(s.name, source);
  }

  let suppression: SuppressionList | null = null;
  if (config.suppressionList) {
    suppression = await loadSuppressionList(config.suppressionList, makeNumberRules('CO'));
    logger.info({ numbers: suppression.size, invalid: suppression.invalid }, 'suppression list loaded');
  }

  const pipeline = new Pipeline({ config, store, client, sources, logger, owner, suppression });
  return {
    loaded,
    store,
    sources,
    client,
    pipeline,
    logger,
    owner,
    sandbox,
    serviceUrl,
    stateDir,
    async close() {
      await client.close().catch(() => {});
      for (const s of sources.values()) await s.close().catch(() => {});
      if (advertised) rmSync(advertised, { force: true });
      await sandbox?.close().catch(() => {});
      await store.close().catch(() => {});
    },
  };
}

/** notify.listen as [host, port], and whether a receiver answers there now. */
export async function receiverListening(loaded: LoadedConfig): Promise<boolean> {
  const [host, port] = splitListen(loaded.config.notify.listen, 'notify.listen');
  return isListening(host, port);
}
