// The email client (src/channels/email/client.ts) against the sandbox's email host on loopback: batches
// of at most 50, 413 split before and after sending, each recipient's status from the 202,
// 401/403 stopping the batch, 5xx retried, the API key never in a result.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  EmailClient,
  type EmailClientOptions,
  type EmailRecipient,
} from '../../src/channels/email/client.ts';
import type { EmailLedgerEntry } from '../../src/sandbox/email.ts';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/server.ts';
import { closedAfterEach } from '../helpers/closed-after-each.ts';
import { sandboxLedger, sandboxRequests } from '../helpers/sandbox-views.ts';
import { postJson } from './helpers.ts';

const opened = closedAfterEach();

const KEY = 'clave-correo-secreta';
async function sandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  const s = await startSandbox({
    timeScale: 0.001,
    notify: false,
    accounts: [
      { username: 'demo', password: 'demo', apiKey: KEY },
      { username: 'nomail', password: 'x', apiKey: 'sin-permiso', email: false },
    ],
    ...opts,
  });
  return opened(s);
}

function client(s: Sandbox, opts: Partial<EmailClientOptions> = {}): EmailClient {
  return opened(new EmailClient({ baseUrl: s.url, apiKey: KEY, retry: { baseMs: 5, maxMs: 20 }, ...opts }));
}

const CONTENT = { from: 'avisos@empresa.co', subject: 'Hola {{nombre}}', html: '<p>Hola {{nombre}}</p>' };
const people = (n: number, prefix = 'p'): EmailRecipient[] =>
  Array.from({ length: n }, (_, i) => ({
    recipient: `${prefix}${i}@example.com`,
    fields: { nombre: `N${i}` },
  }));

const ledger = (s: Sandbox) => sandboxLedger<EmailLedgerEntry>(s.url, 'email');
const deliveries = (s: Sandbox) => sandboxRequests(s.url, '/email/v1/deliver');

describe('EmailClient', () => {
  it('120 recipients: three requests of at most 50, each accepted once with its fields', async () => {
    const s = await sandbox();
    const r = await client(s).send(CONTENT, people(120));
    expect(r.outcomes.map((o) => o.kind)).toEqual(Array(120).fill('accepted'));
    expect(r.outcomes.every((o) => o.kind === 'accepted' && typeof o.messageId === 'string')).toBe(true);
    expect(r.requests).toBe(3);
    expect((await deliveries(s)).map((d) => d.recipients).sort()).toEqual([20, 50, 50]);
    const l = await ledger(s);
    expect(l).toMatchObject({ accepted: 120, duplicates: 0 });
    expect(l.entries.find((e) => e.recipient === 'p7@example.com')?.fields).toEqual({ nombre: 'N7' });
  });

  it("each recipient's own status from the 202: bad addresses rejected with the service's code", async () => {
    const s = await sandbox();
    const list = [...people(2), { recipient: 'no-es-correo' }, ...people(1, 'q')];
    const r = await client(s).send(CONTENT, list);
    expect(r.outcomes.map((o) => o.kind)).toEqual(['accepted', 'accepted', 'rejected', 'accepted']);
    expect(r.outcomes[2]).toMatchObject({ kind: 'rejected', code: 'INVALID_RECIPIENT' });
    expect(r.answers).toEqual([{ overallStatus: 'partial', errors: [] }]);
    // The request's own answer goes with each of its recipients (their report's detail).
    expect(
      r.outcomes.map((o) => (o.kind === 'accepted' || o.kind === 'rejected' ? o.request : o.kind)),
    ).toEqual(Array(4).fill('request partial'));
    // A request the service refuses as a whole (an unverified sender): each recipient rejected.
    const t = await sandbox({
      accounts: [{ username: 'd', password: 'd', apiKey: KEY, emailSenderDomains: ['otra.co'] }],
    });
    const refused = await client(t).send(CONTENT, people(2));
    // Each recipient gets the request's own reason, not the generic per-recipient code.
    expect(refused.outcomes.map((o) => (o.kind === 'rejected' ? o.code : o.kind))).toEqual([
      'FROM_NOT_VERIFIED',
      'FROM_NOT_VERIFIED',
    ]);
    expect(refused.answers[0]?.overallStatus).toBe('rejected');
    expect(refused.answers[0]?.errors.map((e) => e.code)).toEqual(['FROM_NOT_VERIFIED']);
  });

  it('a wrong key: unauthorized, and the requests not yet sent are not sent; no permission: forbidden', async () => {
    const s = await sandbox();
    const wrong = await client(s, { apiKey: 'inventada', concurrency: 1 }).send(CONTENT, people(120));
    expect(wrong.outcomes.slice(0, 50).every((o) => o.kind === 'unauthorized')).toBe(true);
    expect(
      wrong.outcomes
        .slice(50)
        .every(
          (o) =>
            o.kind === 'failed' &&
            o.retryable &&
            o.code === 'DROPLINE_ERR_SERVICE_AUTH' &&
            o.reason.startsWith('not sent: the account was refused (HTTP 401'),
        ),
    ).toBe(true);
    expect(await deliveries(s)).toHaveLength(1);
    const denied = await client(s, { apiKey: 'sin-permiso' }).send(CONTENT, people(3));
    expect(denied.outcomes.every((o) => o.kind === 'forbidden')).toBe(true);
    expect((await ledger(s)).accepted).toBe(0);
    // The key never shows in what the client answers.
    expect(JSON.stringify([wrong, denied])).not.toContain('inventada');
  });

  it('413: the service answering it splits the request in halves, and every recipient goes once', async () => {
    const s = await sandbox();
    const recipients = people(40);
    // Each body of 40 is ~2.5 kB: the service takes at most 1,000 bytes, about 12 recipients.
    await postJson(`${s.url}/_sandbox/faults`, { emailMaxBodyBytes: 1000 });
    const r = await client(s).send(CONTENT, recipients);
    expect(r.outcomes.every((o) => o.kind === 'accepted')).toBe(true);
    const sent = await deliveries(s);
    expect(sent.filter((d) => d.status === 413).length).toBeGreaterThan(0);
    expect(sent.filter((d) => d.status === 202).reduce((n, d) => n + (d.recipients ?? 0), 0)).toBe(40);
    expect(await ledger(s)).toMatchObject({ accepted: 40, duplicates: 0 });
  });

  it('the client splits before sending what would pass its limit, and a recipient too large alone fails unsent', async () => {
    const s = await sandbox();
    const big = { recipient: 'grande@example.com', fields: { nombre: 'x'.repeat(3000) } };
    const r = await client(s, { maxBodyBytes: 1000 }).send(CONTENT, [...people(30), big, ...people(5, 'z')]);
    expect(r.outcomes.filter((o) => o.kind === 'accepted')).toHaveLength(35);
    expect(r.outcomes[30]).toMatchObject({
      kind: 'failed',
      code: 'DROPLINE_ERR_SERVICE_TOO_LARGE',
      retryable: false,
    });
    const sent = await deliveries(s);
    expect(sent.every((d) => d.status === 202)).toBe(true);
    expect((await ledger(s)).entries.some((e) => e.recipient === 'grande@example.com')).toBe(false);
  });

  it.each([502, 504])(
    '%i (a gateway) after the request was written: each recipient in doubt, sent once',
    async (status) => {
      const s = await sandbox();
      await postJson(`${s.url}/_sandbox/faults`, { email: { [status]: { probability: 1, times: 1 } } });
      const r = await client(s).send(CONTENT, people(2));
      expect(r.outcomes.map((o) => o.kind)).toEqual(['in_doubt', 'in_doubt']);
      expect(r.outcomes[0]!.kind === 'in_doubt' && r.outcomes[0]!.reason).toContain(`HTTP ${status}`);
      expect((await deliveries(s)).map((d) => d.status)).toEqual([status]);
    },
  );

  it('5xx are retried with back-off; a request written without an answer is in doubt, not sent again', async () => {
    const s = await sandbox();
    await postJson(`${s.url}/_sandbox/faults`, { email: { '503': { probability: 1, times: 2 } } });
    const r = await client(s).send(CONTENT, people(3));
    expect(r.outcomes.every((o) => o.kind === 'accepted')).toBe(true);
    expect((await deliveries(s)).map((d) => d.status)).toEqual([503, 503, 202]);
    await postJson(`${s.url}/_sandbox/faults`, { email: { '503': 1 } });
    const gaveUp = await client(s, { retry: { baseMs: 1, maxMs: 2, maxAttempts: 3 } }).send(
      CONTENT,
      people(1),
    );
    expect(gaveUp.outcomes[0]).toMatchObject({ kind: 'failed', retryable: true });
    // 400: the structure refused, every recipient of the request rejected, nothing retried.
    await postJson(`${s.url}/_sandbox/faults`, { email: { '400': { probability: 1, times: 1 } } });
    const bad = await client(s).send(CONTENT, people(2, 'b'));
    expect(bad.outcomes.map((o) => (o.kind === 'rejected' ? o.code : o.kind))).toEqual([
      'DROPLINE_ERR_SERVICE_REJECTED',
      'DROPLINE_ERR_SERVICE_REJECTED',
    ]);
    expect(bad.requests).toBe(1);
    await postJson(`${s.url}/_sandbox/faults`, { email: { reset: { probability: 1, times: 1 } } });
    const reset = await client(s).send(CONTENT, people(2, 'r'));
    expect(reset.outcomes.map((o) => o.kind)).toEqual(['in_doubt', 'in_doubt']);
    expect(reset.requests).toBe(1);
  });

  it('templates(): the account’s template ids; a wrong key is an authentication error without the key', async () => {
    const s = await sandbox();
    expect(await client(s).templates()).toEqual(['welcome', 'invoice']);
    const err = (await client(s, { apiKey: 'inventada' })
      .templates()
      .then(
        () => null,
        (e: unknown) => e,
      )) as Error & { code: string };
    expect(err).toMatchObject({ code: 'DROPLINE_ERR_SERVICE_AUTH' });
    expect(err.message).not.toContain('inventada');
  });

  it('templates(): numeric ids read as text; an answer of an unknown shape is an error, never an empty list', async () => {
    // The spec does not show the answer's shape: a server answering other shapes than the sandbox.
    let body = '';
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    opened({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const c = opened(new EmailClient({ baseUrl: url, apiKey: KEY }));
    body = JSON.stringify([101, { id: 102 }, { templateId: 'bienvenida' }, 'factura']);
    expect(await c.templates()).toEqual(['101', '102', 'bienvenida', 'factura']);
    body = JSON.stringify({ data: { items: ['factura'] } });
    await expect(c.templates()).rejects.toMatchObject({ code: 'DROPLINE_ERR_SERVICE_FAILED' });
  });
});
