// The sandbox: a stand-in for the messaging service (docs/service.md), faithful in what
// dropline relies on, plus a test surface under /_sandbox/. Its own choices where the service says
// "not shown" are written down in docs/sandbox.md. Each endpoint group has its own file (token.ts,
// massive.ts, mtmessage.ts, momessage.ts, whatsapp.ts, email.ts, monitoring.ts, test-surface.ts) over one
// SandboxState (state.ts); this file routes requests to them and starts and stops the listeners.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Accounts } from './accounts.ts';
import { createEmailHandler, type EmailLedger } from './email.ts';
import type { Faults } from './faults.ts';
import { type RequestRecord, sendJson } from './http.ts';
import { ipAllowList } from './ip-allowlist.ts';
import type { Ledger } from './ledger.ts';
import { createMassiveHandler } from './massive.ts';
import type { MoLedger } from './mo-ledger.ts';
import { createMoMessageHandler, MOMESSAGE_PATH } from './momessage.ts';
import { createMonitoringHandler, MONITORING_BY_PATH } from './monitoring.ts';
import { createMtMessageHandler } from './mtmessage.ts';
import type { Notifier } from './notifier.ts';
import type { SandboxOptions } from './options.ts';
import { type SmppServer, startSmppServer } from './smpp.ts';
import { SandboxState } from './state.ts';
import { createTestSurface } from './test-surface.ts';
import { createTokenHandler } from './token.ts';
import type { Traffic } from './traffic.ts';
import { createWhatsAppHandler, WHATSAPP_PATH, type WhatsAppLedger } from './whatsapp.ts';

export { readAccountsFile } from './accounts-file.ts';
export type { RequestRecord } from './http.ts';
export { ipAllowList } from './ip-allowlist.ts';
export type { SandboxOptions, SandboxSmppOptions } from './options.ts';

export interface Sandbox {
  readonly url: string;
  readonly port: number;
  readonly ledger: Ledger;
  /** Every accepted email recipient (POST /email/v1/deliver), keyed by (account, recipient). */
  readonly emailLedger: EmailLedger;
  readonly whatsappLedger: WhatsAppLedger;
  /** Every accepted two-way message (POST /momessage). */
  readonly moLedger: MoLedger;
  readonly notifier: Notifier;
  readonly faults: Faults;
  readonly accounts: Accounts;
  /** What the monitoring endpoints show: accepted messages and reported statuses, last 15 minutes. */
  readonly traffic: Traffic;
  /** Requests to the service endpoints (not /_sandbox/), oldest first. */
  readonly requests: readonly RequestRecord[];
  /** The SMPP server for replies, when `smpp` was given. */
  readonly smpp: SmppServer | null;
  /**
   * Clears ledger, email ledger, notifications, faults, request log, every token, the monitoring
   * traffic and the SMPP replies and counts (its connections stay).
   */
  reset(): void;
  close(): Promise<void>;
}

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const state = new SandboxState(options);
  const server = createServer(createListener(state, options));
  server.keepAliveTimeout = 5_000;
  // A held (timeout-fault) request must stay open until the client gives up.
  server.requestTimeout = 0;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host ?? '127.0.0.1';
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  if (options.smpp) {
    try {
      state.smpp = await startReplies(state, options.smpp, host);
    } catch (err) {
      await state.notifier.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      throw err;
    }
  }
  const smpp = state.smpp;
  return {
    url,
    port,
    ledger: state.ledger,
    emailLedger: state.emailLedger,
    whatsappLedger: state.whatsappLedger,
    moLedger: state.moLedger,
    notifier: state.notifier,
    faults: state.faults,
    accounts: state.accounts,
    traffic: state.traffic,
    get requests() {
      return state.requests;
    },
    smpp,
    reset: state.reset,
    async close() {
      await smpp?.close();
      await state.notifier.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** Every request: the IP allowlist, then the email host's paths, else the body read and routed. */
function createListener(state: SandboxState, options: SandboxOptions): Listener {
  const { faults, now, log: logRequest } = state;
  const route = createRouter(state);
  const handleEmail = createEmailHandler({
    accounts: state.accounts,
    faults,
    ledger: state.emailLedger,
    random: state.random,
    now,
    log: logRequest,
  });
  const allowed = options.allowIps === undefined ? null : ipAllowList(options.allowIps);
  return (req, res) => {
    // docs/sandbox.md "IP allowlist": a request from an address that is not authorized gets 403,
    // whatever it asks.
    if (allowed && !req.url?.startsWith('/_sandbox/') && !allowed(req.socket.remoteAddress)) {
      const path = new URL(req.url ?? '/', 'http://sandbox').pathname;
      logRequest({ endpoint: path, status: 403, at: now() });
      req.resume();
      return sendJson(res, 403, {
        message: `the IP address ${req.socket.remoteAddress ?? 'unknown'} is not authorized`,
      });
    }
    // The email host's paths read their own body (20 MB limit, docs/sandbox.md "Email").
    if (req.url?.startsWith('/email/v1/')) {
      try {
        if (handleEmail(req, res, new URL(req.url, 'http://sandbox'))) return;
      } catch (err) {
        return sendJson(res, 500, { message: err instanceof Error ? err.message : 'internal error' });
      }
    }
    const chunks: Buffer[] = [];
    let bytes = 0;
    const limit = Math.max(faults.state.maxBodyBytes ?? 0, state.defaultMaxBody);
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      // Past the limit the body is drained, not kept: the answer is 413 anyway.
      if (bytes <= limit) chunks.push(chunk);
    });
    req.on('end', () => {
      const raw = bytes <= limit ? (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)) : null;
      const url = new URL(req.url ?? '/', 'http://sandbox');
      try {
        route(req, res, url, raw, bytes);
      } catch (err) {
        sendJson(res, 500, { message: err instanceof Error ? err.message : 'internal error' });
      }
    });
  };
}

/** The endpoint a request with its body read goes to, by method and path. */
function createRouter(
  state: SandboxState,
): (req: IncomingMessage, res: ServerResponse, url: URL, raw: Buffer | null, bytes: number) => void {
  const testSurface = createTestSurface(state);
  const handleToken = createTokenHandler(state);
  const handleMassive = createMassiveHandler(state);
  const handleMonitoring = createMonitoringHandler(state);
  const handleMoMessage = createMoMessageHandler(state);
  const handleMtMessage = createMtMessageHandler({
    accounts: state.accounts,
    faults: state.faults,
    ledger: state.ledger,
    notifier: state.notifier,
    random: state.random,
    now: state.now,
    nextTransactionNumber: state.nextTransactionNumber,
    notifyEnabled: state.notifyEnabled,
    deliveryDelayMs: state.deliveryDelayMs,
    failureRatio: state.failureRatio,
    log: state.log,
  });
  const handleWhatsApp = createWhatsAppHandler({
    accounts: state.accounts,
    faults: state.faults,
    ledger: state.whatsappLedger,
    meter: state.meter,
    random: state.random,
    nextTransactionNumber: state.nextTransactionNumber,
    log: state.log,
  });
  return (req, res, url, raw, bytes) => {
    if (url.pathname.startsWith('/_sandbox/')) return testSurface(req, res, url, raw);
    if (req.method === 'POST' && url.pathname === '/token')
      return handleToken(req, res, raw ?? Buffer.alloc(0));
    if (req.method === 'POST' && url.pathname === '/mtmessage/massive')
      return handleMassive(req, res, raw, bytes);
    if (req.method === 'POST' && url.pathname === '/mtmessage') return handleMtMessage(req, res, raw);
    if (req.method === 'POST' && url.pathname === WHATSAPP_PATH) return handleWhatsApp(req, res, raw);
    if (req.method === 'POST' && url.pathname === MOMESSAGE_PATH) return handleMoMessage(req, res, raw);
    const monitoring = MONITORING_BY_PATH.get(url.pathname);
    if (req.method === 'GET' && monitoring) return handleMonitoring(req, res, monitoring);
    sendJson(res, 404, { message: `no ${req.method} ${url.pathname} in the sandbox` });
  };
}

/** The SMPP server for users' replies, its System IDs and passwords the sandbox's accounts. */
function startReplies(
  state: SandboxState,
  smpp: NonNullable<SandboxOptions['smpp']>,
  host: string,
): Promise<SmppServer> {
  const { accounts } = state;
  return startSmppServer({
    host: smpp.host ?? host,
    port: smpp.port,
    tls: smpp.tls,
    redeliveryMs: (smpp.redeliveryMs ?? 5000) * state.timeScale,
    window: smpp.window,
    shortCode: smpp.shortCode,
    // A reply that names no short code answers the one that last messaged its sender.
    sentFrom: state.lastSentFrom,
    credentials: (systemId, password) =>
      accounts.checkPassword(systemId, password)
        ? 'ok'
        : accounts.usernames().includes(systemId)
          ? 'wrong'
          : 'unknown',
    isAccount: (username) => accounts.usernames().includes(username),
  });
}
