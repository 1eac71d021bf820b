// A service that echoes what it was sent into its error answers (the Authorization header, the
// body with the notifyUrl and its token, in any escaping): the reasons dropline keeps and shows
// (manifest, report detail, logs) must not carry any of it.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/service/client.ts';
import { EmailClient } from '../../src/service/email.ts';
import { WhatsAppClient } from '../../src/service/whatsapp.ts';
import { makeChunk } from './helpers.ts';

const secret = (what: string) => `${what}-${randomBytes(12).toString('hex')}`;
const USER = 'acme';
const PASSWORD = secret('pw');
const NOTIFY_TOKEN = secret('notify');
const ACCESS_TOKEN = secret('access');
const API_KEY = secret('key');

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

/** Everything the request carried, in the forms a careless service may echo it. */
function echo(req: IncomingMessage, text: string): string {
  const headers = JSON.stringify(req.headers);
  return `refused; headers ${headers}; body ${text.slice(0, 400)}; encoded ${encodeURIComponent(text.slice(0, 400))}; escaped ${JSON.stringify(text.slice(0, 400)).replaceAll('/', '\\/')}`;
}

/** /token grants ACCESS_TOKEN to the right Basic credentials; every other answer echoes. */
async function startEchoing(answer: (path: string) => number): Promise<string> {
  const basic = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
  server = createServer(async (req, res) => {
    const text = await body(req);
    const status = req.url === '/token' && req.headers.authorization === basic ? 200 : answer(req.url ?? '');
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        status === 200 ? { access_token: ACCESS_TOKEN, expires_in: 3600 } : { message: echo(req, text) },
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
    notifyUrl: `http://127.0.0.1:9/notify?token=${NOTIFY_TOKEN}`,
    retry: { baseMs: 5, maxMs: 20, maxAttempts: 2 },
  });
  closing.push(c);
  return c;
}

function expectClean(reason: string, secrets: readonly string[]): void {
  expect(reason).toContain('<redacted>');
  for (const s of secrets) expect(reason).not.toContain(s);
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
    expectClean(reason, [wrong, basicOf(wrong), NOTIFY_TOKEN]);
  });

  it('a refused send (401 after every renewal): no bearer token and no notify token in any escaping', async () => {
    const url = await startEchoing((path) => (path === '/mtmessage/massive' ? 401 : 500));
    const result = await smsClient(url).sendChunk(makeChunk(2));
    const outcome = result.parts[0]!.outcome;
    expect(outcome.kind).toBe('unauthorized');
    expectClean((outcome as { reason: string }).reason, [ACCESS_TOKEN, NOTIFY_TOKEN, PASSWORD]);
  });

  it('a rejected recipient (400): its reason carries no notify token either', async () => {
    const url = await startEchoing((path) => (path === '/mtmessage/massive' ? 400 : 500));
    const result = await smsClient(url).sendChunk(makeChunk(1));
    const outcome = result.parts[0]!.outcome;
    expect(outcome.kind).toBe('rejected');
    expectClean((outcome as { reason: string }).reason, [ACCESS_TOKEN, NOTIFY_TOKEN]);
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
