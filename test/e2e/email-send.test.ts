// Issue 15, email through the pipeline: a source with channel "email" and an email account
// sends its files' recipients to the sandbox's POST /email/v1/deliver, at most 50 a request,
// each recipient once, with its fields; the service's acceptance is final (ACCEPTED, no
// delivery report), so the file completes at once. A refused key (401) pauses the file with
// the service's reason and sends nothing; a templateId the account does not have rejects the
// file before anything is sent.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import type { EmailLedgerEntry } from '../../src/sandbox/email.ts';
import { PipelineHarness } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function harness(apiKey: string): Promise<PipelineHarness> {
  return PipelineHarness.create({
    source: { channel: 'email', account: 'mail' },
    config: (sandbox) => ({
      accounts: {
        mail: { channel: 'email', baseUrl: sandbox.url, apiKey, from: 'avisos@empresa.co', concurrency: 2 },
      },
    }),
  });
}

async function emailLedger(sandbox: string): Promise<EmailLedgerEntry[]> {
  const res = await fetch(`${sandbox}/_sandbox/email/ledger`);
  return ((await res.json()) as { entries: EmailLedgerEntry[] }).entries;
}

/** 120 customers (three requests: 50, 50, 20), one bad address, one repeated line. */
async function invoices(dir: string, templateId = 'invoice'): Promise<string> {
  const path = join(dir, 'facturas.txt');
  const lines = ['#! channel: email', `#! templateId: ${templateId}`, 'correo;nombre;mes'];
  for (let i = 1; i <= 120; i++) lines.push(`cliente${i}@example.com;Cliente ${i};enero`);
  lines.splice(10, 0, 'no-es-un-correo;Pia;marzo');
  lines.push('cliente7@example.com;Cliente 7;enero');
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

it('an email file is sent 50 recipients a request, each once with its fields, and completes ACCEPTED', async () => {
  h = await harness('demo-email-key');
  const path = await invoices(h.dir);
  const r = await h.cli(['send', path, '--json']);
  const m = JSON.parse(r.stdout) as Manifest;
  expect(m.state).toBe('completed');
  expect([m.channel, m.flash]).toEqual(['email', false]);
  expect(m.counts).toMatchObject({
    records: 122,
    valid: 120,
    invalid: 1,
    duplicates: 1,
    chunks: 3,
    chunksAccepted: 3,
    submitted: 120,
    accepted: 120,
    delivered: 0,
    undelivered: 0,
    pendingDelivery: 0,
  });
  const ledger = await emailLedger(h.sandbox.url);
  expect(ledger).toHaveLength(120);
  expect(
    ledger.every((e) => e.count === 1 && e.templateId === 'invoice' && e.from === 'avisos@empresa.co'),
  ).toBe(true);
  expect(ledger.find((e) => e.recipient === 'cliente42@example.com')?.fields).toEqual({
    nombre: 'Cliente 42',
    mes: 'enero',
  });
  // Three requests: 50, 50 and 20 recipients.
  const requests = h.sandbox.requests.filter((q) => q.endpoint === '/email/v1/deliver');
  expect(requests.map((q) => q.recipients ?? 0).sort((a, b) => b - a)).toEqual([50, 50, 20]);
  const report = (await h.readReport(m)).trim().split('\n');
  const rows = report.slice(1).map((l) => l.split(','));
  const status = report[0]!.split(',').indexOf('status');
  const outcome = report[0]!.split(',').indexOf('outcome');
  expect(rows.filter((c) => c[outcome] === 'sent').every((c) => c[status] === 'ACCEPTED')).toBe(true);
  expect(rows.filter((c) => c[status] === 'ACCEPTED')).toHaveLength(120);
});

it('a refused key (401) pauses the file with the service reason, nothing sent', async () => {
  h = await harness('not-a-key');
  const path = await invoices(h.dir);
  const r = await h.cli(['send', path, '--json']);
  const m = JSON.parse(r.stdout) as Manifest;
  expect(m.state).toBe('paused');
  expect(m.reason).toContain('401');
  expect(m.counts).toMatchObject({ submitted: 0, accepted: 0, failed: 0, inDoubt: 0 });
  expect(await emailLedger(h.sandbox.url)).toEqual([]);
});

it('a templateId the account does not have (GET /email/v1/templates): the file is rejected UNKNOWN_TEMPLATE, nothing sent', async () => {
  h = await harness('demo-email-key');
  const path = await invoices(h.dir, 'factura-vieja');
  const r = await h.cli(['send', path, '--json']);
  const m = JSON.parse(r.stdout) as Manifest;
  expect(m.state).toBe('rejected');
  expect(m.rejection?.code).toBe('UNKNOWN_TEMPLATE');
  expect(m.rejection?.message).toContain('line 2: the email account has no template factura-vieja');
  expect(m.rejection?.message).toContain('welcome, invoice');
  expect(m.counts).toMatchObject({ submitted: 0, accepted: 0 });
  expect(await emailLedger(h.sandbox.url)).toEqual([]);
  expect(h.sandbox.requests.filter((q) => q.endpoint === '/email/v1/deliver')).toEqual([]);
});
