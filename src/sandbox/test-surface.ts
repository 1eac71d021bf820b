// The sandbox's test surface under /_sandbox/ (docs/sandbox.md "Test surface"): what it accepted
// and sent (ledgers, notifications, rates, logins, requests), the faults to inject, users' replies
// for the SMPP server, account webhooks, and a reset. Never behind the IP allowlist.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { redactUrl } from '../core/redact.ts';
import { FaultConfigError } from './faults.ts';
import { sendJson } from './http.ts';
import { type DropHow, ReplyInputError } from './smpp.ts';
import type { SandboxState } from './state.ts';

type Route = (
  state: SandboxState,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  raw: Buffer | null,
) => boolean;

export function createTestSurface(
  state: SandboxState,
): (req: IncomingMessage, res: ServerResponse, url: URL, raw: Buffer | null) => void {
  const routes: Route[] = [views, faults, replies, webhooks, reset];
  return (req, res, url, raw) => {
    for (const route of routes) if (route(state, req, res, url, raw)) return;
    sendJson(res, 404, { message: `no ${req.method} ${url.pathname} in the sandbox` });
  };
}

/** What each GET view shows, by path. */
const VIEWS: Record<string, (state: SandboxState, url: URL) => unknown> = {
  '/_sandbox/ledger': ({ ledger }, url) => ({
    destinations: ledger.size,
    accepted: ledger.accepted,
    duplicates: ledger.duplicates,
    entries: [
      ...ledger.entries({
        bulkId: url.searchParams.get('bulkId') ?? undefined,
        messageId: url.searchParams.get('messageId') ?? undefined,
      }),
    ],
  }),
  '/_sandbox/email/ledger': ({ emailLedger }, url) => ({
    recipients: emailLedger.size,
    accepted: emailLedger.accepted,
    duplicates: emailLedger.duplicates,
    entries: [
      ...emailLedger.entries({
        account: url.searchParams.get('account') ?? undefined,
        recipient: url.searchParams.get('recipient') ?? undefined,
      }),
    ],
  }),
  '/_sandbox/whatsapp/ledger': ({ whatsappLedger }) => ({
    accepted: whatsappLedger.accepted,
    duplicates: whatsappLedger.duplicates,
    entries: whatsappLedger.entries(),
  }),
  '/_sandbox/momessage/ledger': ({ moLedger }) => ({
    accepted: moLedger.accepted,
    duplicates: moLedger.duplicates,
    entries: moLedger.entries(),
  }),
  '/_sandbox/notifications': ({ notifier }, url) => {
    const messageId = url.searchParams.get('messageId');
    const attempts = messageId
      ? notifier.attempts.filter((a) => a.messageId === messageId)
      : notifier.attempts;
    return { pending: notifier.pending, attempts };
  },
  '/_sandbox/rates': ({ meter }) => ({ accounts: meter.rates() }),
  '/_sandbox/logins': ({ meter }) => ({ accounts: meter.logins() }),
  '/_sandbox/requests': ({ requests }) => ({ requests }),
};

const views: Route = (state, req, res, url) => {
  const view = Object.hasOwn(VIEWS, url.pathname) ? VIEWS[url.pathname] : undefined;
  if (!view || req.method !== 'GET') return false;
  sendJson(res, 200, view(state, url));
  return true;
};

/** GET shows the faults armed; POST arms them (docs/sandbox.md "Fault injection body"). */
const faults: Route = (state, req, res, url, raw) => {
  if (url.pathname !== '/_sandbox/faults') return false;
  if (req.method === 'GET') sendJson(res, 200, state.faults.state);
  else if (req.method === 'POST') {
    try {
      const body: unknown = raw?.length ? JSON.parse(raw.toString('utf8')) : {};
      sendJson(res, 200, state.faults.set(body));
    } catch (err) {
      const message = err instanceof FaultConfigError ? err.message : 'the body is not valid JSON';
      sendJson(res, 400, { message });
    }
  } else return false;
  return true;
};

/** Users' replies for the SMPP server (GET shows, POST queues) and its dropped connections. */
const replies: Route = (state, req, res, url, raw) => {
  const path = url.pathname;
  if (path !== '/_sandbox/replies' && path !== '/_sandbox/smpp/drop') return false;
  const smpp = state.smpp;
  if (!smpp) {
    sendJson(res, 404, { message: 'the sandbox runs without an SMPP server (--smpp-port)' });
    return true;
  }
  if (path === '/_sandbox/replies' && req.method === 'GET') {
    sendJson(res, 200, smpp.view());
    return true;
  }
  if (req.method !== 'POST') return false;
  let body: unknown;
  try {
    body = raw?.length ? JSON.parse(raw.toString('utf8')) : path === '/_sandbox/replies' ? undefined : {};
  } catch {
    sendJson(res, 400, { message: 'the body is not valid JSON' });
    return true;
  }
  if (path === '/_sandbox/smpp/drop') {
    const how = (body as { how?: unknown } | null)?.how ?? 'destroy';
    if (how !== 'destroy' && how !== 'unbind' && how !== 'silence')
      sendJson(res, 400, { message: 'how must be destroy, unbind or silence' });
    else sendJson(res, 200, { dropped: smpp.drop(how as DropHow) });
    return true;
  }
  try {
    const queued = smpp.post(body);
    sendJson(res, 202, { queued: queued.length, ids: queued.map((r) => r.id) });
  } catch (err) {
    if (err instanceof ReplyInputError) sendJson(res, 400, { message: err.message });
    else throw err;
  }
  return true;
};

/**
 * Registers an account webhook, as support would: {account, url, username?, password?}; url null
 * removes it. The answer shows the URL without its query.
 */
const webhooks: Route = (state, req, res, url, raw) => {
  if (url.pathname !== '/_sandbox/webhooks' || req.method !== 'POST') return false;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw?.toString('utf8') ?? '') as Record<string, unknown>;
  } catch {
    sendJson(res, 400, { message: 'the body is not valid JSON' });
    return true;
  }
  const { account: who, url: to, username, password } = body;
  if (typeof who !== 'string' || (to !== null && typeof to !== 'string'))
    sendJson(res, 400, { message: 'account (text) and url (text or null) are required' });
  else if (
    (username !== undefined && typeof username !== 'string') ||
    (password !== undefined && typeof password !== 'string')
  )
    sendJson(res, 400, { message: 'username and password are text' });
  else {
    const hook =
      to === null
        ? null
        : {
            url: to,
            ...(username !== undefined && { username: username as string }),
            ...(password !== undefined && { password: password as string }),
          };
    if (!state.accounts.setWebhook(who, hook)) sendJson(res, 404, { message: `no account ${who}` });
    else sendJson(res, 200, { account: who, url: to === null ? null : redactUrl(to) });
  }
  return true;
};

const reset: Route = (state, req, res, url) => {
  if (url.pathname !== '/_sandbox/reset' || req.method !== 'POST') return false;
  state.reset();
  sendJson(res, 200, { reset: true });
  return true;
};
