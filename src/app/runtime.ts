// Everything a command needs, built from the configuration: store, sources, service client
// (or the embedded sandbox), pipeline. Commands open a runtime, use it, close it.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { hostname } from 'node:os';
import { dirname, resolve } from 'node:path';
import type { AccountOpening, SendingAccount } from '../channels/channel.ts';
import { channelOf } from '../channels/index.ts';
import { CHANNEL_SETTINGS } from '../channels/names.ts';
import { MtAccount } from '../channels/sms/account.ts';
import { type LoadedConfig, type ResolvedConfig, splitListen, withNotifyToken } from '../config/load.ts';
import type { AccountConfig } from '../config/schema.ts';
import { storeFolderError } from '../errno.ts';
import { DroplineError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { adoptFormerToken, FormerTokens } from '../notify/former-tokens.ts';
import { ConsentList } from '../pipeline/consent-list.ts';
import { patientStore } from '../pipeline/patient-store.ts';
import { Pipeline } from '../pipeline/pipeline.ts';
import { SuppressionLists } from '../pipeline/suppression-lists.ts';
import { type Sandbox, startSandbox } from '../sandbox/server.ts';
import type { ServiceClient } from '../service/client.ts';
import type { BudgetSource } from '../service/dispatch.ts';
import type { Monitored } from '../service/monitoring.ts';
import type { TokenShare } from '../service/token.ts';
import { createSource } from '../sources/index.ts';
import type { Source } from '../sources/source.ts';
import { openStore } from '../store/index.ts';
import type { Store } from '../store/store.ts';

/** How long a worker's right to renew an account's token lasts (a token request with its retries fits). */
const TOKEN_CLAIM_MS = 60_000;

export interface Runtime {
  /** The configuration, its notify token known (configured, or the store's). */
  loaded: ResolvedConfig;
  store: Store;
  sources: Map<string, Source>;
  client: ServiceClient;
  /** The accounts of the SMS host by name, "default" first: the service's health checks. */
  accounts: ReadonlyMap<string, Monitored>;
  pipeline: Pipeline;
  /** The configuration's accounts as opened, by name (the answers to replies pick theirs). */
  sendingAccounts: ReadonlyMap<string, SendingAccount>;
  /** The opt-out lists (global and per source), kept fresh; null when none is configured. */
  suppressionLists: SuppressionLists | null;
  /** The consent list, kept fresh; null when none is configured. */
  consentList: ConsentList | null;
  logger: Logger;
  owner: string;
  /** The in-process sandbox when api.baseUrl is "sandbox" and this process runs it. */
  sandbox: Sandbox | null;
  /** The service URL in use. */
  serviceUrl: string;
  stateDir: string;
  /** Hosts' older notify tokens, accepted by this process's receivers a while (docs/notify.md "The token"). */
  formerNotifyTokens: FormerTokens;
  /** The daemon, once fully started: advertises its embedded sandbox in sandbox.url. */
  advertise(): Promise<void>;
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
  try {
    // `<url>\n<pid>\n`: a daemon that died without removing it leaves a pid that is gone,
    // and its port may since belong to something else.
    const [url = '', pid] = readFileSync(file, 'utf8').split('\n');
    if (pid && !processAlive(Number(pid))) return null;
    const u = new URL(url);
    return (await isListening(u.hostname, Number(u.port))) ? url : null;
  } catch {
    return null;
  }
}

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
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

/**
 * The configuration's store, its folder made and its schema migrated: all that the commands
 * reading the store (status, workers, report, replies, prune) open, with no source, sandbox
 * or list.
 */
export async function openStateStore(
  loaded: LoadedConfig,
  options: { backgroundCheckpoints?: boolean } = {},
): Promise<Store> {
  const { config } = loaded;
  const stateDir = stateDirOf(loaded);
  try {
    mkdirSync(stateDir, { recursive: true });
  } catch (err) {
    throw storeFolderError('create the folder', stateDir, err);
  }
  const store = await openStore(config.store, {
    backgroundCheckpoints: options.backgroundCheckpoints === true,
    // PostgreSQL: each request in flight holds up to two connections (its chunk's statement
    // and its previous result), plus each file's read-ahead, the lease timers, the receiver,
    // progress and ops.
    connections:
      2 * Math.max(config.api.concurrency, ...Object.values(config.accounts).map((a) => a.concurrency ?? 0)) +
      config.workers.filesInFlight +
      8,
  });
  try {
    await store.migrate();
  } catch (err) {
    await store.close().catch(() => {});
    throw err;
  }
  return store;
}

export async function openRuntime(loaded: LoadedConfig, options: OpenOptions): Promise<Runtime> {
  // Whatever opened so far is closed again when a later step fails: a start-up error must
  // end the process at once, not leave a sandbox or a watcher holding it open.
  const opened: (() => Promise<unknown>)[] = [];
  const closeOpened = async () => {
    for (const close of opened.splice(0).reverse()) await close().catch(() => {});
  };
  try {
    return await assemble(loaded, options, opened, closeOpened);
  } catch (err) {
    await closeOpened();
    throw err;
  }
}

async function assemble(
  given: LoadedConfig,
  options: OpenOptions,
  opened: (() => Promise<unknown>)[],
  closeOpened: () => Promise<void>,
): Promise<Runtime> {
  const { config } = given;
  const logger = options.logger;
  const stateDir = stateDirOf(given);
  const owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const store = await openStateStore(given, {
    backgroundCheckpoints: options.backgroundCheckpoints === true,
  });
  opened.push(() => store.close());
  const loaded = withNotifyToken(
    given,
    given.secrets.notifyToken ?? (await sharedNotifyToken(store, stateDir)),
  );

  // Sources and the suppression lists before the sandbox: they fail on configuration
  // mistakes, and nothing that listens should have started when they do.
  const sources = await openSources(config, logger, opened);

  // After the sources: `<sourceName>:<path>` lists are read through them. Each list is read
  // now (one that cannot be is a start-up error), then checked every minute and before a
  // file starts.
  const suppression = SuppressionLists.fromConfig(config, sources, logger);
  if (suppression) {
    opened.push(() => suppression.stop());
    await suppression.start();
  }
  const consent = ConsentList.fromConfig(config, sources, logger);
  if (consent) {
    opened.push(async () => consent.stop());
    await consent.start();
  }

  const { sandbox, serviceUrl } = await serviceOf(config, options, stateDir, logger, opened);

  const { client, accounts, monitored, budgetStopping } = await openAccounts({
    loaded,
    store,
    owner,
    serviceUrl,
    logger,
    opened,
  });
  opened.push(async () => budgetStopping.abort());
  const pipeline = new Pipeline({
    config,
    store,
    client,
    accounts,
    sources,
    logger,
    owner,
    suppression,
    consent,
  });
  let advertised: Advertisement | null = null;
  return {
    loaded,
    store,
    sources,
    client,
    accounts: monitored,
    sendingAccounts: accounts,
    formerNotifyTokens: new FormerTokens(store),
    pipeline,
    suppressionLists: suppression,
    consentList: consent,
    logger,
    owner,
    sandbox,
    serviceUrl,
    stateDir,
    async advertise() {
      if (sandbox && options.sandbox === 'embed' && !advertised)
        advertised = await advertiseSandbox(stateDir, sandbox.url);
    },
    async close() {
      if (advertised) withdraw(advertised);
      advertised = null;
      await closeOpened();
    },
  };
}

/** Every configured source, started (a source that cannot be used is a configuration error). */
async function openSources(
  config: LoadedConfig['config'],
  logger: Logger,
  opened: (() => Promise<unknown>)[],
): Promise<Map<string, Source>> {
  const sources = new Map<string, Source>();
  for (const s of config.sources) {
    const source = await createSource(s, logger);
    opened.push(() => source.close());
    await source.start().catch((err: unknown) => {
      if (err instanceof DroplineError) throw err;
      const e = err as NodeJS.ErrnoException;
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        `sources.${s.name}: cannot use ${'path' in s ? s.path : s.name} (${e.code ?? e.message})`,
        { cause: err },
      );
    });
    sources.set(s.name, source);
  }

  return sources;
}

/** The messaging service's URL: the configured one, or the embedded (or shared) sandbox. */
async function serviceOf(
  config: LoadedConfig['config'],
  options: OpenOptions,
  stateDir: string,
  logger: Logger,
  opened: (() => Promise<unknown>)[],
): Promise<{ sandbox: Sandbox | null; serviceUrl: string }> {
  let sandbox: Sandbox | null = null;
  let serviceUrl: string;
  if (config.api.baseUrl === 'sandbox') {
    const shared = options.sandbox === 'share' ? await sandboxUrlFromDaemon(stateDir) : null;
    if (shared) serviceUrl = shared;
    else {
      const started = await startSandbox({ deliveryDelayMs: options.sandboxDeliveryDelayMs ?? 1000 });
      opened.push(() => started.close());
      sandbox = started;
      serviceUrl = sandbox.url;
      logger.info({ url: serviceUrl }, 'embedded sandbox started (api.baseUrl "sandbox")');
    }
  } else serviceUrl = config.api.baseUrl;

  return { sandbox, serviceUrl };
}

/**
 * The configuration's accounts, each opened by its channel (src/channels), and the `api`
 * credentials' SMS client: the account "default" unless `accounts` names one so.
 */
async function openAccounts(o: {
  loaded: ReturnType<typeof withNotifyToken>;
  store: Store;
  owner: string;
  serviceUrl: string;
  logger: Logger;
  opened: (() => Promise<unknown>)[];
}) {
  const { loaded, store, owner, serviceUrl, logger, opened } = o;
  const { config } = loaded;
  // The accounts' budgets wait for a store that is away (as the pipeline does): a send is
  // held, never failed, for it. Given up when the runtime closes.
  const budgetStopping = new AbortController();
  const budgetStore = patientStore(store, { logger, signal: budgetStopping.signal });
  const budgetOf = budgets(budgetStore, owner, logger);
  const open = async (name: string, account: AccountConfig, secret: string): Promise<SendingAccount> => {
    const opening: AccountOpening = {
      name,
      config: account,
      secret,
      api: config.api,
      notifyUrl: loaded.notifyUrl,
      // A permit outlives a worker that died holding it by this much (a request's time-out, twice).
      permitLeaseMs: 2 * config.api.timeoutMs + 10_000,
      budget: (identity) => budgetOf(name, identity),
      // Who renews the token: this account, not the process, as two accounts of this process
      // with the same credentials (SMS and RCS) share the token and must not both renew it.
      tokenShare: (identity) => tokenShareOf(store, identity, `${owner}/${name}`),
    };
    const opened1 = await channelOf(account.channel).openAccount(opening);
    opened.push(() => opened1.close());
    return opened1;
  };
  const { accountPasswords, accountApiKeys } = loaded.secrets;
  const accounts = new Map<string, SendingAccount>();
  for (const [name, a] of Object.entries(config.accounts)) {
    const secret =
      CHANNEL_SETTINGS[a.channel].secret === 'apiKey' ? accountApiKeys[name] : accountPasswords[name];
    accounts.set(name, await open(name, a, secret!));
  }
  const configured = accounts.get('default');
  const client =
    configured instanceof MtAccount
      ? configured.client
      : (
          (await open(
            'default',
            { channel: 'sms', baseUrl: serviceUrl, username: config.api.username },
            loaded.secrets.apiPassword,
          )) as MtAccount
        ).client;
  // The service's health checks: each account of the SMS host, "default" first.
  const monitored = new Map<string, Monitored>([['default', client]]);
  for (const [name, a] of accounts) if (a.monitored) monitored.set(name, a.monitored);
  return { client, accounts, monitored, budgetStopping };
}

/** A token shared through the store by every process with the same credentials (hashed: never written there). */
function tokenShareOf(store: Store, identity: string, claimant: string): TokenShare {
  const key = createHash('sha256').update(identity).digest('hex');
  return {
    read: () => store.sharedToken(key),
    claim: (seen) => store.claimTokenRenewal(key, claimant, seen, TOKEN_CLAIM_MS),
    store: (token) => store.storeToken(key, claimant, token),
    release: () => store.releaseTokenRenewal(key, claimant),
  };
}

/**
 * An account's send budget (concurrency, rate, pace) in the store, shared by every worker
 * sending with it: `identity` names the account as the service knows it (hashed, so no
 * secret is ever written to the store).
 */
function budgets(budgetStore: Store, owner: string, logger: Logger) {
  return (name: string, identity: string) => {
    const account = { name, key: createHash('sha256').update(identity).digest('hex') };
    const budget: BudgetSource = {
      take: (req) => budgetStore.takeSendPermit(account, req),
      release: (permitId) => budgetStore.releaseSendPermit(account.key, permitId),
      slowDown: (trouble) => budgetStore.slowSends(account, trouble),
    };
    return {
      owner,
      budget,
      onBudgetError: (err: unknown, what: string) =>
        logger.warn({ account: name, err: (err as Error).message }, `send budget: ${what} failed`),
    };
  };
}

interface Advertisement {
  path: string;
  content: string;
}

/**
 * Tells `send` and the file commands where the daemon's sandbox listens. Called only once the
 * daemon is fully up, written whole (temp file + rename), and never over the advertisement
 * of another daemon whose sandbox still answers: a start that fails, or a second daemon on
 * the same store, must not send later commands to a sandbox that is about to go away.
 */
async function advertiseSandbox(stateDir: string, url: string): Promise<Advertisement | null> {
  if (await sandboxUrlFromDaemon(stateDir)) return null;
  const path = resolve(stateDir, 'sandbox.url');
  const content = `${url}\n${process.pid}\n`;
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600 });
  renameSync(tmp, path);
  return { path, content };
}

/** Removes the advertisement only while it is still this process's own. */
function withdraw(ad: Advertisement): void {
  try {
    if (readFileSync(ad.path, 'utf8') === ad.content) rmSync(ad.path, { force: true });
  } catch {
    // gone already
  }
}

/**
 * The notify token when none is configured: generated by the first process that opens the
 * store and kept there (`settings`), so every receiver on the store, whichever worker or
 * command it is, takes every report. A `notify-token` file an older dropline left beside the
 * store is what is kept, when it is there: the reports of what it sent keep their token.
 */
async function sharedNotifyToken(store: Store, stateDir: string): Promise<string> {
  const path = resolve(stateDir, 'notify-token');
  let earlier: string | null = null;
  if (existsSync(path)) {
    try {
      earlier = readFileSync(path, 'utf8').trim() || null;
    } catch (err) {
      throw storeFolderError('read', path, err);
    }
  }
  const kept = await store.keepSetting('notify.token', earlier ?? randomBytes(24).toString('base64url'));
  // Another host's token won: this host's older one stays accepted by every receiver a while.
  if (earlier !== null && earlier !== kept) await adoptFormerToken(store, earlier, new Date());
  return kept;
}

/** notify.listen as [host, port], and whether a receiver answers there now. */
export async function receiverListening(loaded: LoadedConfig): Promise<boolean> {
  const [host, port] = splitListen(loaded.config.notify.listen, 'notify.listen');
  return isListening(host, port);
}
