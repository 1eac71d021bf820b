// Issue 15, an email file's shared attachments: the files of `attachments/<file base name>/`
// beside the inbox are read with the file, kept with it, and sent to every recipient; more
// than 10 files or more than 8 MB, or a link in an attachment's place, reject the file before
// anything is sent.
import { mkdir, symlink, writeFile } from 'node:fs/promises';
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

function harness(): Promise<PipelineHarness> {
  return PipelineHarness.create({
    source: { channel: 'email', account: 'mail' },
    config: (sandbox) => ({
      accounts: {
        mail: { channel: 'email', baseUrl: sandbox.url, apiKey: 'demo-email-key', from: 'avisos@empresa.co' },
      },
    }),
  });
}

async function emailLedger(sandbox: string): Promise<EmailLedgerEntry[]> {
  const res = await fetch(`${sandbox}/_sandbox/email/ledger`);
  return ((await res.json()) as { entries: EmailLedgerEntry[] }).entries;
}

/** 60 customers (two requests), in `<dir>/facturas-enero.txt`. */
async function invoices(dir: string): Promise<string> {
  const path = join(dir, 'facturas-enero.txt');
  const lines = ['#! channel: email', '#! templateId: invoice', 'correo;nombre'];
  for (let i = 1; i <= 60; i++) lines.push(`cliente${i}@example.com;Cliente ${i}`);
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

/** The file's attachments folder in the source, with `files` (name → bytes). */
async function attachments(h: PipelineHarness, files: Record<string, Buffer>): Promise<void> {
  const folder = join(h.drop, 'attachments', 'facturas-enero');
  await mkdir(folder, { recursive: true });
  for (const [name, bytes] of Object.entries(files)) await writeFile(join(folder, name), bytes);
}

it('the files of attachments/<name>/ are sent to every recipient, and the manifest lists them', async () => {
  h = await harness();
  const pdf = Buffer.from('%PDF-1.7\n% factura de prueba\n');
  await attachments(h, { 'factura.pdf': pdf, 'terminos.txt': Buffer.from('Términos y condiciones') });
  const m = JSON.parse((await h.cli(['send', await invoices(h.dir), '--json'])).stdout) as Manifest;
  expect(m.state).toBe('completed');
  expect(m.counts).toMatchObject({ submitted: 60, accepted: 60 });
  expect(m.attachments).toEqual([
    { name: 'factura.pdf', bytes: pdf.length },
    { name: 'terminos.txt', bytes: Buffer.byteLength('Términos y condiciones') },
  ]);
  const ledger = await emailLedger(h.sandbox.url);
  expect(ledger).toHaveLength(60);
  expect(ledger.every((e) => e.count === 1 && e.attachments === 2)).toBe(true);
});

it('more than 10 files: rejected TOO_MANY_ATTACHMENTS, nothing sent', async () => {
  h = await harness();
  await attachments(
    h,
    Object.fromEntries(
      Array.from({ length: 11 }, (_, i) => [`anexo-${i + 1}.pdf`, Buffer.from(`anexo ${i}`)]),
    ),
  );
  const m = JSON.parse((await h.cli(['send', await invoices(h.dir), '--json'])).stdout) as Manifest;
  expect(m.state).toBe('rejected');
  expect(m.rejection?.code).toBe('TOO_MANY_ATTACHMENTS');
  expect(m.rejection?.message).toContain('attachments/facturas-enero/ holds 11 files');
  expect(await emailLedger(h.sandbox.url)).toEqual([]);
});

it('more than 8 MB in all: rejected ATTACHMENTS_TOO_LARGE, nothing sent', async () => {
  h = await harness();
  await attachments(h, { 'a.pdf': Buffer.alloc(5_000_000, 1), 'b.pdf': Buffer.alloc(3_000_001, 2) });
  const m = JSON.parse((await h.cli(['send', await invoices(h.dir), '--json'])).stdout) as Manifest;
  expect(m.state).toBe('rejected');
  expect(m.rejection?.code).toBe('ATTACHMENTS_TOO_LARGE');
  expect(m.rejection?.message).toContain('8000001 bytes');
  expect(await emailLedger(h.sandbox.url)).toEqual([]);
});

it("a symbolic link in an attachment's place: rejected NOT_A_REGULAR_FILE naming it, nothing sent (never sent without it)", async () => {
  h = await harness();
  await attachments(h, { 'terminos.txt': Buffer.from('Términos') });
  const outside = join(h.dir, 'secreto.pdf');
  await writeFile(outside, 'no es para enviar');
  await symlink(outside, join(h.drop, 'attachments', 'facturas-enero', 'factura.pdf'));
  const m = JSON.parse((await h.cli(['send', await invoices(h.dir), '--json'])).stdout) as Manifest;
  expect(m.state).toBe('rejected');
  expect(m.rejection?.code).toBe('NOT_A_REGULAR_FILE');
  expect(m.rejection?.message).toContain('attachments/facturas-enero/factura.pdf is a symbolic link');
  expect(await emailLedger(h.sandbox.url)).toEqual([]);
});
