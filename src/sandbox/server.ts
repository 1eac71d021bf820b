// The sandbox: a stand-in for the messaging service (docs/service.md), faithful in what
// dropline relies on, plus a test surface under /_sandbox/. Its own choices where the service says
// "not shown" are written down in docs/sandbox.md.

import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, BlockList, isIP } from 'node:net';
import { jsonProblem, withoutBom } from '../config/json-problem.ts';
import { redactUrl } from '../core/redact.ts';
import {
  type Account,
  Accounts,
  type AccountWebhook,
  DEMO_WHATSAPP,
  type WhatsAppSetup,
} from './accounts.ts';
import { createEmailHandler, EmailLedger } from './email.ts';
import { FaultConfigError, Faults } from './faults.ts';
import { applyStatusFault, parseBasic, type RequestRecord, sendJson } from './http.ts';
import { Ledger } from './ledger.ts';
import { Meter } from './meter.ts';
import { createMtMessageHandler } from './mtmessage.ts';
import { type NotificationJob, Notifier } from './notifier.ts';
import { type DropHow, ReplyInputError, type SmppServer, startSmppServer } from './smpp.ts';
import { Traffic } from './traffic.ts';
import { checkMassive, smsSegments } from './validate.ts';
import { createWhatsAppHandler, WHATSAPP_PATH, WhatsAppLedger } from './whatsapp.ts';

export interface SandboxOptions {
  /** Default 0: a free port. */
  readonly port?: number | undefined;
  /** Default 127.0.0.1. */
  readonly host?: string | undefined;
  /** Default `demo` / `demo`. */
  readonly accounts?: readonly Account[] | undefined;
  /** Multiplies every sandbox delay and the notification retry schedule (default 1). */
  readonly timeScale?: number | undefined;
  /** Time from acceptance to the status notification, before timeScale (default 1000). */
  readonly deliveryDelayMs?: number | undefined;
  /** Share of NO_SUCCESS reports, 0 to 1 (default 0). */
  readonly failureRatio?: number | undefined;
  /** Token lifetime in seconds, reported as expires_in (default 14400). Not scaled. */
  readonly tokenLifetimeS?: number | undefined;
  /** false: accept and record, but send no status notification (benchmarks of the send path). */
  readonly notify?: boolean | undefined;
  /** Notification requests in flight at once (default 256). */
  readonly notifyConcurrency?: number | undefined;
  /** Per notification attempt, not scaled (default 10000). */
  readonly notifyTimeoutMs?: number | undefined;
  /** Bodies above this answer 413 (default 64 MiB). */
  readonly maxBodyBytes?: number | undefined;
  /** Clock for token expiry and the monitoring endpoints' windows (tests move it). */
  readonly now?: (() => number) | undefined;
  /** Source of fault draws and delivery outcomes, in [0, 1). */
  readonly random?: (() => number) | undefined;
  /** The SMPP server for users' replies (docs/sandbox.md); none without. */
  readonly smpp?: SandboxSmppOptions | undefined;
  /**
   * The client addresses the service answers (docs/sandbox.md "IP allowlist"): IPs and CIDR ranges,
   * v4 or v6. Any other address gets 403 on every service path (the /_sandbox/ test surface stays
   * open). Default: every address.
   */
  readonly allowIps?: readonly string[] | undefined;
}

export interface SandboxSmppOptions {
  /** Default 0: a free port. */
  readonly port?: number | undefined;
  /** Default the sandbox's host. */
  readonly host?: string | undefined;
  /** PEM key and certificate: SMPP over TLS (`ssmpp://`). */
  readonly tls?: { readonly key: string | Buffer; readonly cert: string | Buffer } | undefined;
  /** An unacknowledged deliver_sm is sent again after this, before timeScale (default 5000). */
  readonly redeliveryMs?: number | undefined;
  /** Unanswered deliver_sm per connection (default 10). */
  readonly window?: number | undefined;
  /** Where replies go when a posted one names no `to` (default 85000). */
  readonly shortCode?: string | undefined;
}

export type { RequestRecord } from './http.ts';

export interface Sandbox {
  readonly url: string;
  readonly port: number;
  readonly ledger: Ledger;
  /** Every accepted email recipient (POST /email/v1/deliver), keyed by (account, recipient). */
  readonly emailLedger: EmailLedger;
  readonly whatsappLedger: WhatsAppLedger;
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

/**
 * Reads `--accounts <file>`: `[{"username","password"}]` or `{"<username>": "<password>"}`. Array
 * elements may also carry the email settings `apiKey`, `email`, `emailTemplates` and
 * `emailSenderDomains` (docs/sandbox.md, "Email").
 */
export function readAccountsFile(path: string): Account[] {
  const text = withoutBom(readFileSync(path, 'utf8'));
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // Its own message would quote the passwords.
    throw new Error(`not valid JSON: ${jsonProblem(err, text)}`);
  }
  const list = Array.isArray(raw)
    ? raw
    : typeof raw === 'object' && raw !== null
      ? Object.entries(raw).map(([username, password]) => ({ username, password }))
      : null;
  if (!list || list.length === 0) throw new Error('expected a non-empty array or object of accounts');
  return list.map((a, i) => {
    const o = a as Record<string, unknown>;
    if (typeof o?.username !== 'string' || typeof o.password !== 'string' || o.username === '') {
      throw new Error(`account ${i}: username and password must be text`);
    }
    const strings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
    if (o.apiKey !== undefined && typeof o.apiKey !== 'string')
      throw new Error(`account ${i}: apiKey must be text`);
    if (o.email !== undefined && typeof o.email !== 'boolean')
      throw new Error(`account ${i}: email must be true or false`);
    for (const f of ['emailTemplates', 'emailSenderDomains'] as const) {
      if (o[f] !== undefined && !strings(o[f]))
        throw new Error(`account ${i}: ${f} must be an array of text`);
    }
    if (o.rcs !== undefined && typeof o.rcs !== 'boolean')
      throw new Error(`account ${i}: rcs must be true or false`);
    const hook = o.webhook as Record<string, unknown> | undefined;
    if (
      hook !== undefined &&
      (typeof hook !== 'object' ||
        hook === null ||
        typeof hook.url !== 'string' ||
        (hook.username !== undefined && typeof hook.username !== 'string') ||
        (hook.password !== undefined && typeof hook.password !== 'string'))
    )
      throw new Error(`account ${i}: webhook must be {"url", "username"?, "password"?} of text`);
    const wa = o.whatsapp as Record<string, unknown> | undefined;
    if (
      wa !== undefined &&
      (typeof wa !== 'object' ||
        wa === null ||
        !strings(wa.numbers) ||
        typeof wa.templates !== 'object' ||
        wa.templates === null ||
        !Object.values(wa.templates).every((n) => Number.isInteger(n) && (n as number) >= 0))
    )
      throw new Error(
        `account ${i}: whatsapp must be {"numbers": [text], "templates": {"<id>": <parameters>}}`,
      );
    return {
      username: o.username,
      password: o.password,
      ...(o.apiKey !== undefined && { apiKey: o.apiKey as string }),
      ...(o.email !== undefined && { email: o.email as boolean }),
      ...(o.emailTemplates !== undefined && { emailTemplates: o.emailTemplates as string[] }),
      ...(o.emailSenderDomains !== undefined && { emailSenderDomains: o.emailSenderDomains as string[] }),
      ...(o.rcs !== undefined && { rcs: o.rcs as boolean }),
      ...(hook !== undefined && { webhook: hook as unknown as AccountWebhook }),
      ...(wa !== undefined && { whatsapp: wa as unknown as WhatsAppSetup }),
    };
  });
}

const MAX_REQUEST_LOG = 100_000;

type MonitoringEndpoint = 'platformmonitory' | 'effectivitybyclient' | 'msgmtclient';
const MONITORING_PATHS: Record<MonitoringEndpoint, string> = {
  platformmonitory: '/platformmonitory',
  effectivitybyclient: '/bireports/effectivitybyclient',
  msgmtclient: '/bireports/msgmtclient',
};
const MONITORING_BY_PATH = new Map(
  Object.entries(MONITORING_PATHS).map(([name, path]) => [path, name as MonitoringEndpoint]),
);

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const timeScale = options.timeScale ?? 1;
  const deliveryDelayMs = (options.deliveryDelayMs ?? 1000) * timeScale;
  const failureRatio = options.failureRatio ?? 0;
  const tokenLifetimeS = options.tokenLifetimeS ?? 14_400;
  const notifyEnabled = options.notify ?? true;
  const defaultMaxBody = options.maxBodyBytes ?? 64 * 2 ** 20;
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;

  const accounts = new Accounts(
    options.accounts ?? [
      { username: 'demo', password: 'demo', apiKey: 'demo-email-key', whatsapp: DEMO_WHATSAPP },
    ],
    () => tokenLifetimeS * 1000,
    now,
  );
  const ledger = new Ledger();
  const emailLedger = new EmailLedger();
  const whatsappLedger = new WhatsAppLedger();
  const faults = new Faults();
  const traffic = new Traffic(now, deliveryDelayMs);
  const notifier = new Notifier({
    timeScale,
    concurrency: options.notifyConcurrency,
    timeoutMs: options.notifyTimeoutMs,
    onReport: (job) => {
      if (job.account !== undefined && job.acceptedAt !== undefined)
        traffic.reported(job.account, job.to, job.statusName, job.acceptedAt, now());
    },
  });
  let requests: RequestRecord[] = [];
  let smpp: SmppServer | null = null;
  const meter = new Meter();
  const logRequest = (r: RequestRecord): void => {
    if (requests.length >= MAX_REQUEST_LOG) requests.splice(0, requests.length - MAX_REQUEST_LOG + 1);
    requests.push(r);
  };

  // 28 digits: 13 of the start time, then a counter, so numbers are unique within a sandbox run
  // and do not repeat across restarts.
  const txnPrefix = String(Date.now()).padStart(13, '0') + String(randomInt(100)).padStart(2, '0');
  let txnCounter = 0;
  const nextTransactionNumber = (): string => txnPrefix + String(++txnCounter).padStart(13, '0');

  const handleEmail = createEmailHandler({
    accounts,
    faults,
    ledger: emailLedger,
    random,
    now,
    log: logRequest,
  });

  const handleMtMessage = createMtMessageHandler({
    accounts,
    faults,
    ledger,
    notifier,
    random,
    now,
    nextTransactionNumber,
    notifyEnabled,
    deliveryDelayMs,
    failureRatio,
    log: logRequest,
  });

  const handleWhatsApp = createWhatsAppHandler({
    accounts,
    faults,
    ledger: whatsappLedger,
    meter,
    random,
    nextTransactionNumber,
    log: logRequest,
  });

  const reset = (): void => {
    ledger.clear();
    emailLedger.clear();
    whatsappLedger.clear();
    notifier.reset();
    faults.clear();
    accounts.revokeAll();
    requests = [];
    meter.clear();
    traffic.clear();
    smpp?.clear();
  };

  function handleToken(req: IncomingMessage, res: ServerResponse, raw: Buffer) {
    const form = parseTokenForm(raw, req.headers['content-type']);
    const grant = typeof form.grant_type === 'string' ? form.grant_type : undefined;
    // Whose login it is, for faults of one account: the Basic user, or the refresh token's.
    const claimed =
      grant === 'password'
        ? parseBasic(req.headers.authorization)?.username
        : grant === 'refresh_token' && typeof form.refresh_token === 'string'
          ? (accounts.refreshOwner(form.refresh_token) ?? undefined)
          : undefined;
    const fired = faults.pick('token', random(), claimed);
    const done = (status: number, body: unknown, fault?: string) => {
      logRequest({ endpoint: '/token', status, grant, fault, at: Date.now() });
      sendJson(res, status, body);
    };
    if (fired && applyStatusFault(fired, res, (status, body) => done(status, body, fired.kind))) return;

    let username: string | null = null;
    if (grant === 'password') {
      const basic = parseBasic(req.headers.authorization);
      if (!basic || !accounts.checkPassword(basic.username, basic.password)) {
        return done(401, {
          error: 'invalid_client',
          error_description: 'wrong or missing Basic credentials',
        });
      }
      username = basic.username;
    } else if (grant === 'refresh_token') {
      const refresh = typeof form.refresh_token === 'string' ? form.refresh_token : '';
      username = accounts.refreshOwner(refresh);
      if (!username) {
        return done(400, {
          error: 'invalid_grant',
          error_description: 'the refresh token is unknown or was replaced',
        });
      }
    } else {
      return done(400, {
        error: 'unsupported_grant_type',
        error_description: 'grant_type must be password or refresh_token',
      });
    }
    const token = accounts.issue(username);
    meter.login(username, grant === 'password' ? 'password' : 'refresh');
    const body = {
      access_token: token.accessToken,
      token_type: 'bearer',
      expires_in: tokenLifetimeS,
      refresh_token: token.refreshToken,
    };
    if (fired?.kind === 'timeout')
      return logRequest({ endpoint: '/token', status: 0, grant, fault: 'timeout', at: Date.now() });
    if (fired?.kind === 'reset') {
      logRequest({ endpoint: '/token', status: 0, grant, fault: 'reset', at: Date.now() });
      req.socket.destroy();
      return;
    }
    done(200, body);
  }

  function handleMassive(req: IncomingMessage, res: ServerResponse, raw: Buffer | null, bytes: number) {
    let parsed: unknown;
    let destinations = 0;
    if (raw) {
      try {
        parsed = JSON.parse(raw.toString('utf8'));
        destinations = countBodyDestinations(parsed);
      } catch {
        parsed = undefined;
      }
    }
    let account: string | undefined;
    const bulkId =
      typeof (parsed as { bulkId?: unknown } | undefined)?.bulkId === 'string'
        ? (parsed as { bulkId: string }).bulkId
        : undefined;
    const done = (status: number, body: unknown, fault?: string) => {
      logRequest({
        endpoint: '/mtmessage/massive',
        status,
        destinations,
        account,
        bulkId,
        fault,
        at: Date.now(),
      });
      sendJson(res, status, body);
    };
    const auth = req.headers.authorization ?? '';
    const bearer = /^Bearer\s+(\S+)$/i.exec(auth)?.[1];
    const check = bearer ? accounts.check(bearer) : null;
    // A fault of one account fires only for a request that carries its valid token.
    const fired = faults.pick('massive', random(), check?.ok ? check.username : undefined);
    if (fired?.rule.account !== undefined) account = fired.rule.account;
    if (fired && applyStatusFault(fired, res, (status, body) => done(status, body, fired.kind))) return;

    if (!bearer || !check) return done(401, { message: 'a Bearer token is required' });
    if (!check.ok) {
      if (check.username !== undefined && check.why !== 'unknown') meter.refused(check.username, check.why);
      return done(401, { message: check.reason });
    }
    account = check.username;
    if (fired?.kind === 'revoke') {
      accounts.revoke(check.username);
      return done(401, { message: 'the token is unknown or was replaced by a newer one' }, 'revoke');
    }
    const maxBody = faults.state.maxBodyBytes ?? defaultMaxBody;
    if (raw === null || bytes > maxBody) {
      return done(413, { message: `the body is larger than ${maxBody} bytes` });
    }
    if (parsed === undefined) return done(400, { message: 'the body is not valid JSON' });
    const checked = checkMassive(parsed);
    if (!checked.ok) return done(400, { message: checked.reason });

    const transactionNumber = nextTransactionNumber();
    ledger.recordBatch(transactionNumber, raw);
    meter.accepted(check.username, destinations, Date.now());
    const acceptedAt = now();
    const tally = traffic.accepting(check.username, acceptedAt);
    const answer: { to: string; messageId: string; status: number }[] = [];
    for (const m of checked.messages) {
      const smsCount = notifyEnabled && m.notifyUrl ? smsSegments(m.text) : 0;
      for (const d of m.destinations) {
        const messageId = d.messageId ?? '';
        answer.push({ to: d.to, messageId, status: 0 });
        tally.add(d.to);
        if (notifyEnabled && m.notifyUrl) {
          const job: NotificationJob = {
            url: m.notifyUrl,
            contentType: m.notifyContentType,
            transactionNumber,
            to: d.to,
            messageId,
            callbackData: m.callbackData,
            bulkId: checked.bulkId,
            smsCount,
            statusName: random() < failureRatio ? 'NO_SUCCESS' : 'DELIVERED_TO_HANDSET',
            account: check.username,
            acceptedAt,
          };
          notifier.schedule(job, deliveryDelayMs);
        }
      }
    }
    // timeout and reset model a service that processed the request and whose answer was lost.
    if (fired?.kind === 'timeout') {
      logRequest({
        endpoint: '/mtmessage/massive',
        status: 0,
        destinations,
        fault: 'timeout',
        at: Date.now(),
      });
      return;
    }
    if (fired?.kind === 'reset') {
      logRequest({ endpoint: '/mtmessage/massive', status: 0, destinations, fault: 'reset', at: Date.now() });
      req.socket.destroy();
      return;
    }
    done(200, { transactionNumber, bulkId: checked.bulkId, status: 0, destinations: answer });
  }

  /**
   * The monitoring endpoints, Bearer-authenticated as /mtmessage/massive is; their
   * query parameters are "not shown" and ignored. Shapes: docs/sandbox.md, "Monitoring".
   */
  function handleMonitoring(req: IncomingMessage, res: ServerResponse, endpoint: MonitoringEndpoint) {
    const path = MONITORING_PATHS[endpoint];
    let account: string | undefined;
    const done = (status: number, body: unknown, fault?: string) => {
      logRequest({ endpoint: path, status, account, fault, at: Date.now() });
      sendJson(res, status, body);
    };
    const auth = req.headers.authorization ?? '';
    const bearer = /^Bearer\s+(\S+)$/i.exec(auth)?.[1];
    const check = bearer ? accounts.check(bearer) : null;
    // Drawn only when the endpoint has rules: a dashboard that polls leaves the delivery
    // outcomes `random` gives the sends as they were.
    const fired = faults.pickIfAny(endpoint, random, check?.ok ? check.username : undefined);
    if (fired?.rule.account !== undefined) account = fired.rule.account;
    if (fired && applyStatusFault(fired, res, (status, body) => done(status, body, fired.kind))) return;

    if (!bearer || !check) return done(401, { message: 'a Bearer token is required' });
    if (!check.ok) return done(401, { message: check.reason });
    account = check.username;
    if (fired?.kind === 'revoke') {
      accounts.revoke(check.username);
      return done(401, { message: 'the token is unknown or was replaced by a newer one' }, 'revoke');
    }
    if (fired?.kind === 'timeout') {
      logRequest({ endpoint: path, status: 0, account, fault: 'timeout', at: Date.now() });
      return;
    }
    if (fired?.kind === 'reset') {
      logRequest({ endpoint: path, status: 0, account, fault: 'reset', at: Date.now() });
      req.socket.destroy();
      return;
    }
    if (endpoint === 'platformmonitory') {
      return done(200, { at: new Date(now()).toISOString(), operators: traffic.platform() });
    }
    const window = traffic.window();
    if (endpoint === 'effectivitybyclient') {
      return done(200, { account, ...window, statuses: traffic.effectivity(account) });
    }
    done(200, { account, ...window, messages: traffic.messages(account) });
  }

  function handleSandbox(req: IncomingMessage, res: ServerResponse, url: URL, raw: Buffer | null) {
    const path = url.pathname;
    if (path === '/_sandbox/ledger' && req.method === 'GET') {
      const entries = [
        ...ledger.entries({
          bulkId: url.searchParams.get('bulkId') ?? undefined,
          messageId: url.searchParams.get('messageId') ?? undefined,
        }),
      ];
      return sendJson(res, 200, {
        destinations: ledger.size,
        accepted: ledger.accepted,
        duplicates: ledger.duplicates,
        entries,
      });
    }
    if (path === '/_sandbox/email/ledger' && req.method === 'GET') {
      const entries = [
        ...emailLedger.entries({
          account: url.searchParams.get('account') ?? undefined,
          recipient: url.searchParams.get('recipient') ?? undefined,
        }),
      ];
      return sendJson(res, 200, {
        recipients: emailLedger.size,
        accepted: emailLedger.accepted,
        duplicates: emailLedger.duplicates,
        entries,
      });
    }
    if (path === '/_sandbox/notifications' && req.method === 'GET') {
      const messageId = url.searchParams.get('messageId');
      const attempts = messageId
        ? notifier.attempts.filter((a) => a.messageId === messageId)
        : notifier.attempts;
      return sendJson(res, 200, { pending: notifier.pending, attempts });
    }
    if (path === '/_sandbox/rates' && req.method === 'GET')
      return sendJson(res, 200, { accounts: meter.rates() });
    if (path === '/_sandbox/logins' && req.method === 'GET')
      return sendJson(res, 200, { accounts: meter.logins() });
    if (path === '/_sandbox/requests' && req.method === 'GET') {
      return sendJson(res, 200, { requests });
    }
    if (path === '/_sandbox/faults') {
      if (req.method === 'GET') return sendJson(res, 200, faults.state);
      if (req.method === 'POST') {
        try {
          const body: unknown = raw?.length ? JSON.parse(raw.toString('utf8')) : {};
          return sendJson(res, 200, faults.set(body));
        } catch (err) {
          const message = err instanceof FaultConfigError ? err.message : 'the body is not valid JSON';
          return sendJson(res, 400, { message });
        }
      }
    }
    if (path === '/_sandbox/replies' || path === '/_sandbox/smpp/drop') {
      if (!smpp)
        return sendJson(res, 404, { message: 'the sandbox runs without an SMPP server (--smpp-port)' });
      if (path === '/_sandbox/replies' && req.method === 'GET') return sendJson(res, 200, smpp.view());
      if (req.method === 'POST') {
        let body: unknown;
        try {
          body = raw?.length
            ? JSON.parse(raw.toString('utf8'))
            : path === '/_sandbox/replies'
              ? undefined
              : {};
        } catch {
          return sendJson(res, 400, { message: 'the body is not valid JSON' });
        }
        if (path === '/_sandbox/smpp/drop') {
          const how = (body as { how?: unknown } | null)?.how ?? 'destroy';
          if (how !== 'destroy' && how !== 'unbind' && how !== 'silence')
            return sendJson(res, 400, { message: 'how must be destroy, unbind or silence' });
          return sendJson(res, 200, { dropped: smpp.drop(how as DropHow) });
        }
        try {
          const queued = smpp.post(body);
          return sendJson(res, 202, { queued: queued.length, ids: queued.map((r) => r.id) });
        } catch (err) {
          if (err instanceof ReplyInputError) return sendJson(res, 400, { message: err.message });
          throw err;
        }
      }
    }
    if (path === '/_sandbox/whatsapp/ledger' && req.method === 'GET') {
      return sendJson(res, 200, {
        accepted: whatsappLedger.accepted,
        duplicates: whatsappLedger.duplicates,
        entries: whatsappLedger.entries(),
      });
    }
    if (path === '/_sandbox/webhooks' && req.method === 'POST') {
      // Registers an account webhook, as support would (docs/sandbox.md "Test surface"): {account,
      // url, username?, password?}; url null removes it.
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw?.toString('utf8') ?? '') as Record<string, unknown>;
      } catch {
        return sendJson(res, 400, { message: 'the body is not valid JSON' });
      }
      const { account: who, url: to, username, password } = body;
      if (typeof who !== 'string' || (to !== null && typeof to !== 'string'))
        return sendJson(res, 400, { message: 'account (text) and url (text or null) are required' });
      if (
        (username !== undefined && typeof username !== 'string') ||
        (password !== undefined && typeof password !== 'string')
      )
        return sendJson(res, 400, { message: 'username and password are text' });
      const hook =
        to === null
          ? null
          : {
              url: to,
              ...(username !== undefined && { username: username as string }),
              ...(password !== undefined && { password: password as string }),
            };
      if (!accounts.setWebhook(who, hook)) return sendJson(res, 404, { message: `no account ${who}` });
      return sendJson(res, 200, { account: who, url: to === null ? null : redactUrl(to) });
    }
    if (path === '/_sandbox/reset' && req.method === 'POST') {
      reset();
      return sendJson(res, 200, { reset: true });
    }
    sendJson(res, 404, { message: `no ${req.method} ${path} in the sandbox` });
  }

  const allowed = options.allowIps === undefined ? null : ipAllowList(options.allowIps);
  const server: Server = createServer((req, res) => {
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
    const limit = Math.max(faults.state.maxBodyBytes ?? 0, defaultMaxBody);
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      // Past the limit the body is drained, not kept: the answer is 413 anyway.
      if (bytes <= limit) chunks.push(chunk);
    });
    req.on('end', () => {
      const raw = bytes <= limit ? (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)) : null;
      const url = new URL(req.url ?? '/', 'http://sandbox');
      try {
        if (url.pathname.startsWith('/_sandbox/')) return handleSandbox(req, res, url, raw);
        if (req.method === 'POST' && url.pathname === '/token')
          return handleToken(req, res, raw ?? Buffer.alloc(0));
        if (req.method === 'POST' && url.pathname === '/mtmessage/massive')
          return handleMassive(req, res, raw, bytes);
        if (req.method === 'POST' && url.pathname === '/mtmessage') return handleMtMessage(req, res, raw);
        if (req.method === 'POST' && url.pathname === WHATSAPP_PATH) return handleWhatsApp(req, res, raw);
        const monitoring = MONITORING_BY_PATH.get(url.pathname);
        if (req.method === 'GET' && monitoring) return handleMonitoring(req, res, monitoring);
        sendJson(res, 404, { message: `no ${req.method} ${url.pathname} in the sandbox` });
      } catch (err) {
        sendJson(res, 500, { message: err instanceof Error ? err.message : 'internal error' });
      }
    });
  });
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
      smpp = await startSmppServer({
        host: options.smpp.host ?? host,
        port: options.smpp.port,
        tls: options.smpp.tls,
        redeliveryMs: (options.smpp.redeliveryMs ?? 5000) * timeScale,
        window: options.smpp.window,
        shortCode: options.smpp.shortCode,
        credentials: (systemId, password) =>
          accounts.checkPassword(systemId, password)
            ? 'ok'
            : accounts.usernames().includes(systemId)
              ? 'wrong'
              : 'unknown',
        isAccount: (username) => accounts.usernames().includes(username),
      });
    } catch (err) {
      await notifier.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      throw err;
    }
  }

  return {
    url,
    port,
    ledger,
    emailLedger,
    whatsappLedger,
    notifier,
    faults,
    accounts,
    traffic,
    get requests() {
      return requests;
    },
    smpp,
    reset,
    async close() {
      await smpp?.close();
      await notifier.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** 2.2 says JSON; OAuth clients send a form. Both are accepted. */
function parseTokenForm(raw: Buffer, contentType: string | undefined): Record<string, unknown> {
  const text = raw.toString('utf8');
  if (!/x-www-form-urlencoded/i.test(contentType ?? '')) {
    try {
      const v: unknown = JSON.parse(text);
      if (typeof v === 'object' && v !== null) return v as Record<string, unknown>;
    } catch {
      // fall through to the form reading
    }
  }
  return Object.fromEntries(new URLSearchParams(text));
}

function countBodyDestinations(body: unknown): number {
  const messages = (body as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages)) return 0;
  let n = 0;
  for (const m of messages) {
    const d = (m as { destinations?: unknown } | null)?.destinations;
    if (Array.isArray(d)) n += d.length;
  }
  return n;
}

/**
 * A check of client addresses against `entries` (`10.0.0.5`, `10.0.0.0/8`, `::1`,
 * `2001:db8::/32`), with node's BlockList. An IPv4 client seen on a dual-stack socket
 * (`::ffff:127.0.0.1`) is checked as its IPv4 address. Throws on an entry that is neither.
 */
export function ipAllowList(entries: readonly string[]): (address: string | undefined) => boolean {
  const list = new BlockList();
  for (const entry of entries) {
    const [ip = '', bits, extra] = entry.trim().split('/');
    const type = isIP(ip);
    const prefix = bits === undefined ? null : Number(bits);
    if (
      type === 0 ||
      extra !== undefined ||
      (prefix !== null &&
        (bits === '' || !Number.isInteger(prefix) || prefix < 0 || prefix > (type === 4 ? 32 : 128)))
    )
      throw new Error(`"${entry}" is not an IP address or a CIDR range`);
    const family = type === 4 ? 'ipv4' : 'ipv6';
    if (prefix === null) list.addAddress(ip, family);
    else list.addSubnet(ip, prefix, family);
  }
  return (address) => {
    if (address === undefined) return false;
    const v4 = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : null;
    if (v4 !== null) return list.check(v4, 'ipv4');
    const type = isIP(address);
    return type !== 0 && list.check(address, type === 4 ? 'ipv4' : 'ipv6');
  };
}
