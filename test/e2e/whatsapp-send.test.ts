// Issue 15, WhatsApp through the pipeline: a source with channel "whatsapp" and a WhatsApp
// account sends each recipient of its files to the sandbox's POST
// /MultiChannelInput/SendMessageMetaWhatsApp, one request a recipient, with the template's
// parameters from the file's numbered columns; the service's receipt is final (ACCEPTED, no
// delivery report), so the file completes at once. A template the account has not approved is
// rejected per recipient with the service's reason; refused credentials (401) pause the file.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import type { WhatsAppLedgerEntry } from '../../src/sandbox/whatsapp.ts';
import { PipelineHarness } from '../helpers/pipeline-harness.ts';
import { sandboxLedger } from '../helpers/sandbox-views.ts';

let h: PipelineHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** The sandbox's demo account sends WhatsApp from 573001112233 (docs/sandbox.md "WhatsApp"). */
function harness(password: string): Promise<PipelineHarness> {
  return PipelineHarness.create({
    source: { channel: 'whatsapp', account: 'wa' },
    config: (sandbox) => ({
      accounts: {
        wa: {
          channel: 'whatsapp',
          baseUrl: sandbox.url,
          username: 'demo',
          password,
          source: '+573001112233',
          concurrency: 2,
        },
      },
    }),
  });
}

async function whatsappLedger(sandbox: string): Promise<WhatsAppLedgerEntry[]> {
  return (await sandboxLedger<WhatsAppLedgerEntry>(sandbox, 'whatsapp')).entries;
}

/** 25 customers, a bad number and a repeated line; the `factura` template takes 2 parameters. */
async function invoices(dir: string, templateId = 'factura'): Promise<string> {
  const path = join(dir, 'facturas.txt');
  const lines = ['#! channel: whatsapp', `#! templateId: ${templateId}`, 'numero;nombre;1;2'];
  for (let i = 1; i <= 25; i++) lines.push(`3001000${String(i).padStart(3, '0')};x;Cliente ${i};$${i}.000`);
  lines.splice(8, 0, '12;x;Pia;$1');
  lines.push('3001000007;x;Cliente 7;$7.000');
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

function reportRows(report: string): Record<string, string>[] {
  const [head, ...rows] = report.trim().split('\n');
  const names = head!.split(',');
  return rows.map((l) => Object.fromEntries(l.split(',').map((v, i) => [names[i]!, v])));
}

it('a WhatsApp file is sent one request a recipient, each once with its parameters, and completes ACCEPTED', async () => {
  h = await harness('demo');
  const path = await invoices(h.dir);
  const m = JSON.parse((await h.cli(['send', path, '--json'])).stdout) as Manifest;
  expect(m.state).toBe('completed');
  expect(m.channel).toBe('whatsapp');
  expect(m.counts).toMatchObject({
    records: 27,
    valid: 25,
    invalid: 1,
    duplicates: 1,
    chunks: 3,
    chunksAccepted: 3,
    submitted: 25,
    accepted: 25,
    delivered: 0,
    undelivered: 0,
    pendingDelivery: 0,
  });
  const ledger = await whatsappLedger(h.sandbox.url);
  expect(ledger).toHaveLength(25);
  expect(
    ledger.every((e) => e.count === 1 && e.templateId === 'factura' && e.source === '573001112233'),
  ).toBe(true);
  expect(ledger.find((e) => e.destination === '573001000012')?.parameters).toEqual(['Cliente 12', '$12.000']);
  expect(
    h.sandbox.requests.filter((q) => q.endpoint === '/MultiChannelInput/SendMessageMetaWhatsApp'),
  ).toHaveLength(25);
  // Each sent row ACCEPTED, its transaction number the one the sandbox gave.
  const rows = reportRows(await h.readReport(m));
  const sent = rows.filter((r) => r.outcome === 'sent');
  expect(sent).toHaveLength(25);
  expect(sent.every((r) => r.status === 'ACCEPTED')).toBe(true);
  const byNumber = new Map(ledger.map((e) => [e.destination, e.transactionNumber]));
  expect(
    sent.every((r) => r.transactionNumber !== '' && r.transactionNumber === byNumber.get(r.number ?? '')),
  ).toBe(true);
});

it('a template the account has not approved: each recipient rejected with the service reason, nothing accepted', async () => {
  h = await harness('demo');
  const path = await invoices(h.dir, 'promo-navidad');
  const m = JSON.parse((await h.cli(['send', path, '--json'])).stdout) as Manifest;
  expect(m.counts).toMatchObject({ submitted: 0, accepted: 0, rejected: 25 });
  expect(await whatsappLedger(h.sandbox.url)).toEqual([]);
  const rejected = reportRows(await h.readReport(m)).filter((r) => r.outcome === 'rejected');
  expect(rejected).toHaveLength(25);
  expect(rejected.every((r) => (r.detail ?? '').includes('not an approved template'))).toBe(true);
});

it('refused credentials (401) pause the file with the service reason, nothing sent', async () => {
  h = await harness('wrong');
  const path = await invoices(h.dir);
  const m = JSON.parse((await h.cli(['send', path, '--json'])).stdout) as Manifest;
  expect(m.state).toBe('paused');
  expect(m.reason).toContain('401');
  expect(m.counts).toMatchObject({ submitted: 0, accepted: 0, failed: 0, inDoubt: 0 });
  expect(await whatsappLedger(h.sandbox.url)).toEqual([]);
});
