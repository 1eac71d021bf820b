import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { EmailDeliverAnswer, EmailLedgerEntry } from '../../src/sandbox/email.ts';
import {
  readAccountsFile,
  type Sandbox,
  type SandboxOptions,
  startSandbox,
} from '../../src/sandbox/server.ts';
import { getJson, postJson } from '../service/helpers.ts';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

const ACCOUNTS: SandboxOptions['accounts'] = [
  { username: 'demo', password: 'demo', apiKey: 'key-demo' },
  { username: 'nomail', password: 'x', apiKey: 'key-nomail', email: false },
  {
    username: 'custom',
    password: 'y',
    apiKey: 'key-custom',
    emailTemplates: ['promo'],
    emailSenderDomains: ['shop.co'],
  },
];

async function sandboxWith(opts: SandboxOptions = {}): Promise<Sandbox> {
  const s = await startSandbox({ timeScale: 0.001, notify: false, accounts: ACCOUNTS, ...opts });
  open.push(s);
  return s;
}

const deliver = (s: Sandbox, body: unknown, key: string | null = 'key-demo') =>
  postJson(`${s.url}/email/v1/deliver`, body, key === null ? {} : { 'x-api-key': key });

const templatesOf = (s: Sandbox, key?: string) =>
  fetch(`${s.url}/email/v1/templates`, { headers: key ? { 'x-api-key': key } : {} });

interface EmailLedgerView {
  recipients: number;
  accepted: number;
  duplicates: number;
  entries: EmailLedgerEntry[];
}
const emailLedger = (s: Sandbox) => getJson<EmailLedgerView>(`${s.url}/_sandbox/email/ledger`);

const to = (i: number) => `user${i}@example.com`;
const html = (recipients: string[], extra: Record<string, unknown> = {}) => ({
  from: 'news@example.com',
  subject: 'Hello {{name}}',
  html: '<p>Hi {{name}}</p>',
  payload: recipients.map((recipient) => ({ recipient, fields: { name: recipient } })),
  ...extra,
});
const file = (bytes: number, name = 'f.bin') => ({
  name,
  contentType: 'application/octet-stream',
  content: Buffer.alloc(bytes, 7).toString('base64'),
});

/** POST with a body streamed in 1 MiB chunks (no Content-Length unless `declare`). */
function streamPost(
  s: Sandbox,
  totalBytes: number,
  declare?: number,
): Promise<{ status: number; body: string; sent: number }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {
      'content-type': 'application/json',
      'x-api-key': 'key-demo',
    };
    if (declare !== undefined) headers['content-length'] = declare;
    const req = request(`${s.url}/email/v1/deliver`, { method: 'POST', headers });
    let sent = 0;
    let answered = false;
    const chunk = Buffer.alloc(2 ** 20, 0x20);
    req.on('response', (res) => {
      answered = true;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body, sent });
        req.destroy();
      });
    });
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    const pump = () => {
      while (!answered && sent < totalBytes) {
        const n = Math.min(chunk.length, totalBytes - sent);
        sent += n;
        if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n)))
          return void req.once('drain', pump);
      }
      if (!answered && declare === undefined) req.end();
    };
    pump();
  });
}

describe('sandbox POST /email/v1/deliver', () => {
  it('202 accepted: every recipient gets a messageId and is recorded once in the email ledger', async () => {
    const s = await sandboxWith();
    const res = await deliver(s, html([to(1), to(2), to(3)]));
    expect(res.status).toBe(202);
    const body = res.body as EmailDeliverAnswer;
    expect(body.overallStatus).toBe('accepted');
    expect(body.errors).toEqual([]);
    expect(body.recipients.map((r) => [r.recipient, r.status])).toEqual([
      [to(1), 'accepted'],
      [to(2), 'accepted'],
      [to(3), 'accepted'],
    ]);
    for (const r of body.recipients) expect(r.messageId).toMatch(/^[0-9a-f]{24}$/);
    expect(new Set(body.recipients.map((r) => r.messageId)).size).toBe(3);

    const view = await emailLedger(s);
    expect(view).toMatchObject({ recipients: 3, accepted: 3, duplicates: 0 });
    expect(view.entries.map((e) => [e.recipient, e.count, e.account])).toEqual([
      [to(1), 1, 'demo'],
      [to(2), 1, 'demo'],
      [to(3), 1, 'demo'],
    ]);
    expect(view.entries[0]).toMatchObject({
      from: 'news@example.com',
      subject: 'Hello {{name}}',
      templateId: null,
      fields: { name: to(1) },
      messageIds: [body.recipients[0]!.messageId],
    });
    expect(s.requests.at(-1)).toMatchObject({
      endpoint: '/email/v1/deliver',
      status: 202,
      account: 'demo',
      recipients: 3,
    });
    // The SMS ledger is untouched.
    expect((await getJson<{ destinations: number }>(`${s.url}/_sandbox/ledger`)).destinations).toBe(0);
  });

  it('a second acceptance of a recipient is counted as a duplicate; reset clears the email ledger', async () => {
    const s = await sandboxWith();
    await deliver(s, html([to(1), to(2)]));
    await deliver(s, html([to(2)]));
    const view = await emailLedger(s);
    expect(view).toMatchObject({ recipients: 2, accepted: 3, duplicates: 1 });
    expect(view.entries.find((e) => e.recipient === to(2))?.count).toBe(2);
    const one = await getJson<EmailLedgerView>(
      `${s.url}/_sandbox/email/ledger?recipient=${encodeURIComponent(to(1))}`,
    );
    expect(one.entries.map((e) => e.recipient)).toEqual([to(1)]);
    await postJson(`${s.url}/_sandbox/reset`, {});
    expect(await emailLedger(s)).toMatchObject({ recipients: 0, accepted: 0, entries: [] });
  });

  it('202 partial: an invalid address is rejected with a code and reason, the others accepted', async () => {
    const s = await sandboxWith();
    const res = await deliver(s, html([to(1), 'not-an-address', 'a b@example.com', to(2)]));
    expect(res.status).toBe(202);
    const body = res.body as EmailDeliverAnswer;
    expect(body.overallStatus).toBe('partial');
    expect(body.errors).toEqual([]);
    expect(body.recipients[1]).toMatchObject({
      recipient: 'not-an-address',
      status: 'rejected',
      code: 'INVALID_RECIPIENT',
    });
    expect(body.recipients[1]!.reason).toContain('payload[1].recipient');
    expect(body.recipients[1]!.messageId).toBeUndefined();
    expect(body.recipients[2]).toMatchObject({ status: 'rejected', code: 'INVALID_RECIPIENT' });
    expect(body.recipients.filter((r) => r.status === 'accepted').map((r) => r.recipient)).toEqual([
      to(1),
      to(2),
    ]);
    const view = await emailLedger(s);
    expect(view.entries.map((e) => e.recipient).sort()).toEqual([to(1), to(2)]);

    const none = await deliver(s, html(['bad', 'worse@']));
    expect((none.body as EmailDeliverAnswer).overallStatus).toBe('rejected');
    expect((await emailLedger(s)).accepted).toBe(2);
  });

  it('401 without or with an unknown key, 403 for a key without email permission; nothing recorded', async () => {
    const s = await sandboxWith();
    const none = await deliver(s, html([to(1)]), null);
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ message: 'the x-api-key header is required' });
    expect((await deliver(s, html([to(1)]), 'made-up')).status).toBe(401);
    const forbidden = await deliver(s, html([to(1)]), 'key-nomail');
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({ message: 'the API key has no permission to send email' });
    expect((await emailLedger(s)).accepted).toBe(0);
    expect(s.requests.map((r) => r.status)).toEqual([401, 401, 403]);
  });

  it('400 for a body that is not JSON or breaks the structure', async () => {
    const s = await sandboxWith();
    const cases: [unknown, string][] = [
      ['{"from":', 'the body is not valid JSON'],
      [[], 'the body must be a JSON object'],
      [{ from: 'a@b.co', html: '<p/>', subject: 's' }, 'payload must be an array of recipients'],
      [{ ...html([to(1)]), from: 42 }, 'from must be text'],
      [{ ...html([]), payload: ['x@y.co'] }, 'payload[0] must be an object'],
      [{ ...html([]), payload: [{ fields: {} }] }, 'payload[0].recipient must be text'],
      [{ ...html([]), payload: [{ recipient: to(1), fields: 'x' }] }, 'payload[0].fields must be an object'],
      [{ ...html([to(1)]), attachments: {} }, 'attachments must be an array'],
      [{ ...html([to(1)]), attachments: [{ name: 'a' }] }, 'attachments[0].content must be base64 text'],
    ];
    for (const [body, message] of cases) {
      const res = await deliver(s, body);
      expect(res.status, message).toBe(400);
      expect(res.body).toEqual({ message });
    }
    expect((await emailLedger(s)).accepted).toBe(0);
  });

  it("templateId vs html: exactly one, html needs subject, the template must be the account's", async () => {
    const s = await sandboxWith();
    const base = { from: 'news@example.com', payload: [{ recipient: to(1) }] };
    const errorsOf = async (body: unknown, key = 'key-demo') => {
      const res = await deliver(s, body, key);
      expect(res.status).toBe(202);
      const answer = res.body as EmailDeliverAnswer;
      if (answer.errors.length > 0) {
        expect(answer.overallStatus).toBe('rejected');
        expect(answer.recipients).toEqual([
          {
            recipient: to(1),
            status: 'rejected',
            code: 'REQUEST_REJECTED',
            reason: 'the request failed validation: see errors',
          },
        ]);
      }
      return answer.errors.map((e) => e.code);
    };
    expect(await errorsOf({ ...base, templateId: 'welcome' })).toEqual([]);
    // subject is ignored with a template (the template's applies).
    expect(await errorsOf({ ...base, templateId: 'invoice', subject: 'ignored' })).toEqual([]);
    expect(await errorsOf({ ...base, html: '<p/>', subject: 's' })).toEqual([]);
    expect(await errorsOf({ ...base, templateId: 'welcome', html: '<p/>', subject: 's' })).toEqual([
      'TEMPLATE_AND_HTML',
    ]);
    expect(await errorsOf(base)).toEqual(['CONTENT_REQUIRED']);
    expect(await errorsOf({ ...base, html: '<p/>' })).toEqual(['SUBJECT_REQUIRED']);
    expect(await errorsOf({ ...base, templateId: 'nope' })).toEqual(['UNKNOWN_TEMPLATE']);
    expect(await errorsOf({ ...base, templateId: 'promo' })).toEqual(['UNKNOWN_TEMPLATE']);
    expect(await errorsOf({ ...base, templateId: 'promo', from: 'a@shop.co' }, 'key-custom')).toEqual([]);
    expect(await errorsOf({ ...base, templateId: 'promo' }, 'key-custom')).toEqual(['FROM_NOT_VERIFIED']);
    expect(await errorsOf({ payload: base.payload, templateId: 'welcome' })).toEqual(['FROM_REQUIRED']);
    expect(await errorsOf({ ...base, from: 'nobody', templateId: 'welcome' })).toEqual(['INVALID_FROM']);
    const sent = await emailLedger(s);
    expect(sent).toMatchObject({ recipients: 2, accepted: 4 });
    expect(sent.entries.find((e) => e.account === 'demo')).toMatchObject({
      templateId: null,
      subject: 's',
      count: 3,
    });
  });

  it('1 to 50 recipients: 50 accepted, 51 and 0 rejected whole with an error', async () => {
    const s = await sandboxWith();
    const fifty = Array.from({ length: 50 }, (_, i) => to(i));
    const ok = (await deliver(s, html(fifty))).body as EmailDeliverAnswer;
    expect(ok.overallStatus).toBe('accepted');
    expect(ok.recipients).toHaveLength(50);

    const res = await deliver(s, html([...fifty, to(50)]));
    expect(res.status).toBe(202);
    const over = res.body as EmailDeliverAnswer;
    expect(over.overallStatus).toBe('rejected');
    expect(over.errors).toEqual([
      { code: 'TOO_MANY_RECIPIENTS', message: 'payload has 51 recipients; at most 50' },
    ]);
    expect(over.recipients).toHaveLength(51);
    expect(over.recipients.every((r) => r.status === 'rejected')).toBe(true);

    const empty = (await deliver(s, html([]))).body as EmailDeliverAnswer;
    expect(empty).toMatchObject({
      overallStatus: 'rejected',
      errors: [{ code: 'NO_RECIPIENTS' }],
      recipients: [],
    });
    expect((await emailLedger(s)).accepted).toBe(50);
  });

  it('attachments: at most 10, 8,000,000 decoded bytes, base64, root exclusive with per-recipient', async () => {
    const s = await sandboxWith();
    const codes = async (body: unknown) => {
      const res = await deliver(s, body);
      expect(res.status).toBe(202);
      return res.body as EmailDeliverAnswer;
    };
    const ten = Array.from({ length: 10 }, (_, i) => file(100, `f${i}`));
    expect((await codes(html([to(1)], { attachments: ten }))).overallStatus).toBe('accepted');
    expect(
      (await codes(html([to(1)], { attachments: [...ten, file(1)] }))).errors.map((e) => e.code),
    ).toEqual(['TOO_MANY_ATTACHMENTS']);
    expect(
      (await codes(html([to(1)], { attachments: [file(4_000_000), file(4_000_000)] }))).overallStatus,
    ).toBe('accepted');
    expect(
      (await codes(html([to(1)], { attachments: [file(4_000_000), file(4_000_001)] }))).errors.map(
        (e) => e.code,
      ),
    ).toEqual(['ATTACHMENTS_TOO_LARGE']);
    expect(
      (await codes(html([to(1)], { attachments: [{ name: 'x', content: 'not base64!' }] }))).errors.map(
        (e) => e.code,
      ),
    ).toEqual(['INVALID_ATTACHMENT']);

    // Root and per-recipient together: the request is rejected.
    const both = html([to(1)], { attachments: [file(10)] }) as { payload: Record<string, unknown>[] };
    both.payload[0]!.attachments = [file(10)];
    expect((await codes(both)).errors.map((e) => e.code)).toEqual(['ATTACHMENTS_EXCLUSIVE']);

    // Per recipient: each recipient's own limits; one over the limit is rejected alone.
    const per = html([to(1), to(2)]) as { payload: Record<string, unknown>[] };
    per.payload[0]!.attachments = [file(10)];
    per.payload[1]!.attachments = Array.from({ length: 11 }, () => file(1));
    const answer = await codes(per);
    expect(answer.overallStatus).toBe('partial');
    expect(answer.recipients.map((r) => r.code ?? r.status)).toEqual(['accepted', 'TOO_MANY_ATTACHMENTS']);
    const view = await emailLedger(s);
    expect(view.entries.find((e) => e.recipient === to(1))?.attachments).toBe(1);
  });

  it('413 for a body over 20,000,000 bytes, declared or streamed, and the sandbox stays healthy', async () => {
    const s = await sandboxWith();
    const declared = await streamPost(s, 2 ** 20, 25_000_000);
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.body).message).toContain('larger than 20000000 bytes');

    const streamed = await streamPost(s, 24 * 2 ** 20);
    expect(streamed.status).toBe(413);
    // Answered as soon as the limit was passed, not after the whole body.
    expect(streamed.sent).toBeGreaterThan(20_000_000);

    expect(s.requests.map((r) => r.status)).toEqual([413, 413]);
    const after = await deliver(s, html([to(1)]));
    expect(after.status).toBe(202);
    expect((await templatesOf(s, 'key-demo')).status).toBe(200);
    expect((await emailLedger(s)).accepted).toBe(1);
  });

  it('a body just under the limit is read whole; emailMaxBodyBytes lowers the limit at run time', async () => {
    const s = await sandboxWith();
    // ~7.9 MB of attachment, base64 ~10.6 MB: under 20 MB, accepted.
    expect((await deliver(s, html([to(1)], { attachments: [file(7_900_000)] }))).status).toBe(202);
    await postJson(`${s.url}/_sandbox/faults`, { emailMaxBodyBytes: 1000 });
    expect((await deliver(s, html([to(2)], { attachments: [file(2000)] }))).status).toBe(413);
    expect((await deliver(s, html([to(3)]))).status).toBe(202);
  });

  it('faults per endpoint apply to email (an account rule only to that key)', async () => {
    const s = await sandboxWith();
    const set = await postJson(`${s.url}/_sandbox/faults`, {
      email: { '503': { probability: 1, times: 1 }, '500': { probability: 1, account: 'custom' } },
      emailtemplates: { '429': { probability: 1, times: 1, retryAfter: '3' } },
    });
    expect(set.status).toBe(200);
    expect((await deliver(s, html([to(1)]))).status).toBe(503);
    expect((await deliver(s, html([to(1)]))).status).toBe(202);
    expect((await deliver(s, html([to(1)], { from: 'a@shop.co' }), 'key-custom')).status).toBe(500);
    const limited = await templatesOf(s, 'key-demo');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('3');
    expect((await templatesOf(s, 'key-demo')).status).toBe(200);
    expect((await emailLedger(s)).accepted).toBe(1);
    expect((await postJson(`${s.url}/_sandbox/faults`, { emailMaxBodyBytes: 0 })).status).toBe(400);
  });
});

describe('sandbox GET /email/v1/templates', () => {
  it("lists the account's template ids (default welcome, invoice); 401 / 403 as for deliver", async () => {
    const s = await sandboxWith();
    const demo = await templatesOf(s, 'key-demo');
    expect(demo.status).toBe(200);
    expect(await demo.json()).toEqual({ templates: [{ templateId: 'welcome' }, { templateId: 'invoice' }] });
    expect(await (await templatesOf(s, 'key-custom')).json()).toEqual({
      templates: [{ templateId: 'promo' }],
    });
    expect((await templatesOf(s)).status).toBe(401);
    expect((await templatesOf(s, 'nope')).status).toBe(401);
    expect((await templatesOf(s, 'key-nomail')).status).toBe(403);
  });

  it('the default demo account has the key demo-email-key', async () => {
    const s = await startSandbox({ notify: false });
    open.push(s);
    expect((await templatesOf(s, 'demo-email-key')).status).toBe(200);
  });

  it('an accounts file carries the email settings; bad ones are refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dropline-email-'));
    const good = join(dir, 'good.json');
    writeFileSync(
      good,
      JSON.stringify([
        {
          username: 'a',
          password: 'p',
          apiKey: 'k',
          email: false,
          emailTemplates: ['t'],
          emailSenderDomains: ['d.co'],
        },
        { username: 'b', password: 'q' },
      ]),
    );
    expect(readAccountsFile(good)).toEqual([
      {
        username: 'a',
        password: 'p',
        apiKey: 'k',
        email: false,
        emailTemplates: ['t'],
        emailSenderDomains: ['d.co'],
      },
      { username: 'b', password: 'q' },
    ]);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify([{ username: 'a', password: 'p', email: 'yes' }]));
    expect(() => readAccountsFile(bad)).toThrow('account 0: email must be true or false');
  });
});
