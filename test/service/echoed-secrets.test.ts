// A service that echoes what it was sent into its error answers (the Authorization header, the
// body with the notifyUrl and its token, in any escaping): the reasons dropline keeps and shows
// (manifest, report detail, logs) must not carry any of it.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EmailClient } from '../../src/channels/email/client.ts';
import { WhatsAppClient } from '../../src/channels/whatsapp/client.ts';
import { ServiceClient } from '../../src/service/client.ts';
import { makeChunk } from './helpers.ts';

// Characters that URL encoding and JSON escaping change: a secret must go in every form.
// Their random tails are letters only: masking digit runs must not be what hides them.
const tail = () =>
  randomBytes(12)
    .toString('hex')
    .replace(/[0-9]/g, (d) => 'ghijklmnop'[Number(d)]!);
const secret = (what: string) => `${what}+/="-${tail()}`;
const USER = 'acme';
const PASSWORD = secret('pw');
const NOTIFY_TOKEN = secret('notify');
const ACCESS_TOKEN = `access-${tail()}`;
const API_KEY = secret('key');

// As the configuration makes it: the token percent-encoded in the query string.
const NOTIFY_URL = (() => {
  const u = new URL('http://127.0.0.1:9/notify');
  u.searchParams.set('token', NOTIFY_TOKEN);
  return u.toString();
})();
/** The notify token as sent (percent-encoded) and as meant. */
const NOTIFY_FORMS = [NOTIFY_TOKEN, new URL(NOTIFY_URL).search.slice('?token='.length)];

let server: Server | null = null;
const closing: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((c) => c.close()));
  await new Promise((r) => (server ? server.close(r) : r(null)));
  server = null;
});

async function body(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text;
}

/**
 * What the request carried, in the forms a careless service may echo it, first thing (a
 * reason keeps 500 characters): the Authorization header, its credentials decoded and
 * JSON-escaped, and the notifyUrl as sent, JSON-escaped with `\/` (PHP's way) and decoded.
 */
function echo(req: IncomingMessage, text: string): string {
  const auth = req.headers.authorization ?? req.headers['x-api-key'] ?? '';
  const basic = Buffer.from(String(auth).replace(/^Basic /, ''), 'base64').toString();
  const notify = /"notifyUrl":"([^"]*)"/.exec(text)?.[1] ?? '';
  return `refused ${auth}; credentials ${JSON.stringify(basic)}; notify ${notify}; escaped ${JSON.stringify(notify).replaceAll('/', '\\/')}; decoded ${decodeURIComponent(notify)}`;
}

/**
 * /token grants ACCESS_TOKEN to the right Basic credentials; every other answer echoes the
 * request, with the status `answer` gives (`status1`: 200 with POST /mtmessage's Status 1).
 */
async function startEchoing(answer: (path: string) => number | 'status1'): Promise<string> {
  const basic = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
  server = createServer(async (req, res) => {
    const text = await body(req);
    const status = req.url === '/token' && req.headers.authorization === basic ? 200 : answer(req.url ?? '');
    res.writeHead(status === 'status1' ? 200 : status, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        status === 200
          ? { access_token: ACCESS_TOKEN, expires_in: 3600 }
          : status === 'status1'
            ? { Status: 1, MessageText: echo(req, text) }
            : { message: echo(req, text) },
      ),
    );
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

function smsClient(baseUrl: string, password = PASSWORD): ServiceClient {
  const c = new ServiceClient({
    baseUrl,
    username: USER,
    password,
    notifyUrl: NOTIFY_URL,
    retry: { baseMs: 5, maxMs: 20, maxAttempts: 2 },
  });
  closing.push(c);
  return c;
}

/** None of `secrets` in `reason`, in any form: their random tails must not appear at all. */
function expectClean(reason: string, secrets: readonly string[]): void {
  expect(reason).toContain('<redacted>');
  for (const s of secrets) {
    expect(reason).not.toContain(s);
    const end = /[a-p]{24}$/.exec(s)?.[0];
    if (end) expect(reason).not.toContain(end);
  }
}

describe('a service that echoes the request into its error answers', () => {
  const basicOf = (password: string) => Buffer.from(`${USER}:${password}`).toString('base64');

  it('a refused login: neither the password nor the Basic credentials are in the reason', async () => {
    const url = await startEchoing(() => 401);
    const wrong = secret('wrong');
    const result = await smsClient(url, wrong).sendChunk(makeChunk(2));
    const outcome = result.parts[0]!.outcome;
    expect(outcome.kind).toBe('unauthorized');
    const reason = (outcome as { reason: string }).reason;
    expect(reason).toMatch(/POST \/token answered 401/);
    expectClean(reason, [wrong, basicOf(wrong), ...NOTIFY_FORMS]);
  });

  it('a refused send (401 after every renewal): no bearer token and no notify token in any escaping', async () => {
    const url = await startEchoing((path) => (path === '/mtmessage/massive' ? 401 : 500));
    const result = await smsClient(url).sendChunk(makeChunk(2));
    const outcome = result.parts[0]!.outcome;
    expect(outcome.kind).toBe('unauthorized');
    expectClean((outcome as { reason: string }).reason, [ACCESS_TOKEN, ...NOTIFY_FORMS, PASSWORD]);
  });

  it('a rejected recipient (400): its reason carries no notify token either', async () => {
    const url = await startEchoing((path) => (path === '/mtmessage/massive' ? 400 : 500));
    const result = await smsClient(url).sendChunk(makeChunk(1));
    const outcome = result.parts[0]!.outcome;
    expect(outcome.kind).toBe('rejected');
    expectClean((outcome as { reason: string }).reason, [ACCESS_TOKEN, ...NOTIFY_FORMS]);
  });

  it('RCS (POST /mtmessage) answered 200 with Status 1: the reason carries none of it either', async () => {
    const url = await startEchoing((path) => (path === '/mtmessage' ? 'status1' : 500));
    const chunk = {
      ...makeChunk(2),
      via: { channel: 'RCS', flash: false, customMessageId: 'c1', callbackData: { f: 'b1', c: 1 } },
    } as const;
    const result = await smsClient(url).sendChunk(chunk);
    const outcome = result.parts[0]!.outcome;
    expect(outcome.kind).toBe('rejected');
    expectClean((outcome as { reason: string }).reason, [ACCESS_TOKEN, PASSWORD]);
  });

  it('WhatsApp: refused (401), the reason shows neither the password nor the Basic credentials', async () => {
    const url = await startEchoing(() => 401);
    const whatsapp = new WhatsAppClient({ baseUrl: url, username: USER, password: PASSWORD });
    closing.push(whatsapp);
    const { outcomes } = await whatsapp.send([
      { source: '573001112233', destination: '573004445566', templateId: 'factura', parameters: ['a'] },
    ]);
    expect(outcomes[0]!.kind).toBe('unauthorized');
    expectClean((outcomes[0] as { reason: string }).reason, [PASSWORD, basicOf(PASSWORD)]);
  });

  it('email: a 202 whose errors and recipient reasons echo the key keeps none of it', async () => {
    server = createServer(async (req, res) => {
      const said = `bad key ${String(req.headers['x-api-key'])} ${JSON.stringify(String(req.headers['x-api-key']))}`;
      await body(req);
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          overallStatus: 'rejected',
          errors: [{ code: 'AUTH', message: said }],
          recipients: [{ recipient: 'a@example.com', status: 'rejected', code: 'OWN', reason: said }],
        }),
      );
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const email = new EmailClient({
      baseUrl: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`,
      apiKey: API_KEY,
    });
    closing.push(email);
    const { outcomes } = await email.send({ from: 'x@example.com', subject: 's', html: '<p>h</p>' }, [
      { recipient: 'a@example.com' },
    ]);
    expect(outcomes[0]!.kind).toBe('rejected');
    expectClean((outcomes[0] as { reason: string }).reason, [API_KEY]);
  });

  it('email: a refused key is not in the reason', async () => {
    const url = await startEchoing(() => 401);
    const email = new EmailClient({ baseUrl: url, apiKey: API_KEY });
    closing.push(email);
    const err = await email.templates().then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/401/);
    expectClean(err!.message, [API_KEY]);
  });
});
