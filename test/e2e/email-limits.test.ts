// Issue 15, the email service's limits through the whole pipeline (`dropline send`, `dropline
// resume` and `dropline retry` against the sandbox), as a user meets them:
//
// - 413: a 50-recipient request above the service's body limit is split in halves and sent
//   again; every recipient lands once and the file completes ACCEPTED. A recipient too large
//   even alone fails with DROPLINE_ERR_SERVICE_TOO_LARGE in the report, the others are sent
//   once, and `dropline retry` sends none of them again.
// - 403 (a key without email permission): the file pauses with the service's reason and
//   nothing is sent; once the account is fixed, `dropline resume` sends every recipient once.
//
// Every test reads report.csv: every record's outcome, code and status.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import type { EmailLedgerEntry } from '../../src/sandbox/email.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/server.ts';
import { csvRecords, PipelineHarness } from '../helpers/pipeline-harness.ts';

const FROM = 'avisos@empresa.co';
const TEMPLATE = 'invoice';

let h: PipelineHarness | undefined;
let restarted: Sandbox | undefined;
afterEach(async () => {
  await restarted?.close();
  restarted = undefined;
  await h?.close();
  h = undefined;
});

function harness(sandboxAccounts?: Parameters<typeof startSandbox>[0]): Promise<PipelineHarness> {
  return PipelineHarness.create({
    ...(sandboxAccounts ? { sandbox: sandboxAccounts } : {}),
    source: { channel: 'email', account: 'mail' },
    config: (sandbox) => ({
      accounts: {
        mail: {
          channel: 'email',
          baseUrl: sandbox.url,
          apiKey: 'demo-email-key',
          from: FROM,
          concurrency: 2,
        },
      },
    }),
  });
}

async function emailLedger(sandboxUrl: string): Promise<EmailLedgerEntry[]> {
  const res = await fetch(`${sandboxUrl}/_sandbox/email/ledger`);
  return ((await res.json()) as { entries: EmailLedgerEntry[] }).entries;
}

/** POST /_sandbox/faults on a sandbox (replaces every rule). */
async function faults(sandboxUrl: string, body: unknown): Promise<void> {
  const res = await fetch(`${sandboxUrl}/_sandbox/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
}

const address = (i: number): string => `cliente${i}@example.com`;
/** A field that makes each recipient's part of the body about 150 bytes. */
const note = (i: number): string => `Factura ${i}: ${'detalle '.repeat(12)}`.trim();

/** A headed email file of `n` customers (line 1 is the directives' first, the header line 3). */
async function emailFile(
  dir: string,
  name: string,
  n: number,
  nota: (i: number) => string = note,
): Promise<string> {
  const path = join(dir, name);
  const lines = ['#! channel: email', `#! templateId: ${TEMPLATE}`, 'correo;nombre;nota'];
  for (let i = 1; i <= n; i++) lines.push(`${address(i)};Cliente ${i};${nota(i)}`);
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

/** The JSON body dropline sends for customers `from..to` (its key order: from, templateId, payload). */
function bodyBytes(from: number, to: number, nota: (i: number) => string = note): number {
  const payload = [];
  for (let i = from; i <= to; i++)
    payload.push({ recipient: address(i), fields: { nombre: `Cliente ${i}`, nota: nota(i) } });
  return Buffer.byteLength(JSON.stringify({ from: FROM, templateId: TEMPLATE, payload }));
}

async function send(path: string): Promise<Manifest> {
  const r = await h!.cli(['send', path, '--json'], { timeoutMs: 60_000 });
  if (!r.stdout.trim()) throw new Error(`dropline send printed no manifest (exit ${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout) as Manifest;
}

/** report.csv's rows by address (each address once: no row is missing or repeated). */
async function reportRows(m: Manifest): Promise<Map<string, Record<string, string>>> {
  const rows = csvRecords(await h!.readReport(m));
  const byAddress = new Map(rows.map((r) => [r.number!, r]));
  expect(byAddress.size).toBe(rows.length);
  return byAddress;
}

function deliverRequests(): { status: number; recipients: number }[] {
  return h!.sandbox.requests
    .filter((q) => q.endpoint === '/email/v1/deliver')
    .map((q) => ({ status: q.status, recipients: q.recipients ?? 0 }));
}

it('a 50-recipient request the service refuses 413 is split in halves and re-sent: each recipient once, completed', async () => {
  h = await harness();
  const n = 120; // chunks of 50, 50 and 20
  const path = await emailFile(h.dir, 'grandes.txt', n);
  // Between a half-chunk's body and a whole chunk's: 50 are refused, 25 (and the 20) fit.
  const half = Math.max(bodyBytes(1, 25), bodyBytes(26, 50), bodyBytes(51, 75), bodyBytes(76, 100));
  const whole = Math.min(bodyBytes(1, 50), bodyBytes(51, 100));
  expect(bodyBytes(101, 120)).toBeLessThan(half);
  const limit = Math.floor((half + whole) / 2);
  expect(half).toBeLessThan(limit);
  expect(whole).toBeGreaterThan(limit);
  await faults(h.sandbox.url, { emailMaxBodyBytes: limit });

  const m = await send(path);
  expect(m.state).toBe('completed');
  expect(m.reason).toBeNull();
  expect(m.counts).toMatchObject({
    valid: n,
    chunks: 3,
    chunksAccepted: 3,
    submitted: n,
    accepted: n,
    failed: 0,
    rejected: 0,
    inDoubt: 0,
    pendingDelivery: 0,
    possibleDuplicates: 0,
  });
  // The service refused both whole chunks and took their halves; the 20 went at once.
  const requests = deliverRequests();
  expect(requests.filter((q) => q.status === 413)).toHaveLength(2);
  expect(
    requests
      .filter((q) => q.status === 202)
      .map((q) => q.recipients)
      .sort((a, b) => b - a),
  ).toEqual([25, 25, 25, 25, 20]);
  // Each customer got one email, with its own fields.
  const ledger = await emailLedger(h.sandbox.url);
  expect(ledger).toHaveLength(n);
  expect(ledger.filter((e) => e.count !== 1)).toEqual([]);
  expect(new Set(ledger.map((e) => e.recipient))).toEqual(
    new Set(Array.from({ length: n }, (_, k) => address(k + 1))),
  );
  expect(ledger.find((e) => e.recipient === address(42))?.fields).toEqual({
    nombre: 'Cliente 42',
    nota: note(42),
  });
  // report.csv: every customer sent, ACCEPTED, with the service's message id.
  const rows = await reportRows(m);
  expect(rows.size).toBe(n);
  for (let i = 1; i <= n; i++)
    expect(rows.get(address(i)), address(i)).toMatchObject({
      line: String(i + 3),
      outcome: 'sent',
      code: '',
      status: 'ACCEPTED',
    });
  const messageIds = new Map(ledger.map((e) => [e.recipient, e.messageIds[0]]));
  expect([...rows.values()].every((r) => r.transactionNumber === messageIds.get(r.number!))).toBe(true);
});

it('a recipient too large even alone fails DROPLINE_ERR_SERVICE_TOO_LARGE; the others are sent once, and retry resends none of them', async () => {
  h = await harness();
  const n = 60; // chunks of 50 and 10
  const big = 30;
  const base = Math.max(bodyBytes(1, 25), bodyBytes(51, 60));
  const limit = base + 2000;
  // Customer 30's note alone makes a one-recipient request larger than the limit.
  const nota = (i: number): string => (i === big ? `Anexo: ${'x'.repeat(limit)}` : note(i));
  expect(bodyBytes(big, big, nota)).toBeGreaterThan(limit);
  const path = await emailFile(h.dir, 'anexo.txt', n, nota);
  await faults(h.sandbox.url, { emailMaxBodyBytes: limit });

  const m = await send(path);
  // Nothing else to send: the file stops with the failed chunk (retry would resend only it).
  expect(m.state).toBe('partial');
  expect(m.reason).toContain('1 chunk(s) failed');
  expect(m.counts).toMatchObject({
    valid: n,
    chunks: 2,
    chunksAccepted: 1,
    chunksFailed: 1,
    submitted: n - 1,
    accepted: n - 1,
    failed: 1,
    rejected: 0,
    inDoubt: 0,
    pendingDelivery: 0,
  });
  const ledger = await emailLedger(h.sandbox.url);
  expect(ledger.map((e) => e.recipient).sort()).toEqual(
    Array.from({ length: n }, (_, k) => address(k + 1))
      .filter((a) => a !== address(big))
      .sort(),
  );
  expect(ledger.filter((e) => e.count !== 1)).toEqual([]);
  // The one recipient the service refused alone: 413, never accepted.
  const alone = deliverRequests().filter((q) => q.status === 413);
  expect(alone.length).toBeGreaterThanOrEqual(6); // 50 → 25 → 13 → 7 → 3 → 2 → 1

  const rows = await reportRows(m);
  expect(rows.size).toBe(n);
  expect(rows.get(address(big))).toMatchObject({
    line: String(big + 3),
    outcome: 'failed',
    code: 'DROPLINE_ERR_SERVICE_TOO_LARGE',
    status: '',
  });
  expect(rows.get(address(big))!.detail).toContain('413');
  for (let i = 1; i <= n; i++)
    if (i !== big)
      expect(rows.get(address(i)), address(i)).toMatchObject({ outcome: 'sent', status: 'ACCEPTED' });
  // retry: the failed recipient goes out again (and fails again); the 59 sent ones stay sent once.
  const r = await h.cli(['retry', m.fileId, '--json'], { timeoutMs: 60_000 });
  const again = JSON.parse(r.stdout) as Manifest;
  expect(again.state).toBe('partial');
  expect(again.counts).toMatchObject({ submitted: n - 1, accepted: n - 1, failed: 1, possibleDuplicates: 0 });
  const after = await emailLedger(h.sandbox.url);
  expect(after).toHaveLength(n - 1);
  expect(after.filter((e) => e.count !== 1)).toEqual([]);
  const rowsAfter = await reportRows(again);
  expect(rowsAfter.get(address(big))).toMatchObject({
    outcome: 'failed',
    code: 'DROPLINE_ERR_SERVICE_TOO_LARGE',
  });
  expect([...rowsAfter.values()].filter((row) => row.outcome === 'sent')).toHaveLength(n - 1);
});

it('a key without email permission (403) pauses the file with the reason, nothing sent; fixed and resumed, every recipient is sent once', async () => {
  const account = { username: 'demo', password: 'demo', apiKey: 'demo-email-key' };
  h = await harness({ accounts: [{ ...account, email: false }] });
  const n = 120;
  const path = await emailFile(h.dir, 'sin-permiso.txt', n);

  const m = await send(path);
  expect(m.state).toBe('paused');
  expect(m.reason).toContain('403');
  expect(m.reason).toContain('no permission to send email');
  expect(m.counts).toMatchObject({
    valid: n,
    submitted: 0,
    accepted: 0,
    failed: 0,
    rejected: 0,
    inDoubt: 0,
    chunksPending: 3,
    possibleDuplicates: 0,
  });
  expect(await emailLedger(h.sandbox.url)).toEqual([]);
  expect(deliverRequests().every((q) => q.status === 403)).toBe(true);
  // The paused file's report: nobody sent, each recipient still to send.
  const paused = await reportRows(m);
  expect(paused.size).toBe(n);
  expect([...paused.values()].every((r) => r.outcome === 'pending' && r.status === '')).toBe(true);
  // Those of the refused request(s) say why; the chunk(s) never started say nothing yet.
  const refused = [...paused.values()].filter((r) => r.code !== '');
  expect(refused.length).toBeGreaterThanOrEqual(50);
  for (const r of refused)
    expect(r).toMatchObject({
      code: 'DROPLINE_ERR_SERVICE_FORBIDDEN',
      detail: 'HTTP 403: the API key has no permission to send email',
    });

  // Support gives the key its email permission (the service restarts with it, same address).
  const port = h.sandbox.port;
  await h.sandbox.close();
  restarted = await startSandbox({ port, timeScale: 0.01, accounts: [{ ...account, email: true }] });

  const r = await h.cli(['resume', m.fileId, '--json'], { timeoutMs: 60_000 });
  expect(r.code).toBe(0);
  const resumed = JSON.parse(r.stdout) as Manifest;
  expect(resumed.state).toBe('completed');
  expect(resumed.reason).toBeNull();
  expect(resumed.counts).toMatchObject({
    valid: n,
    chunksAccepted: 3,
    submitted: n,
    accepted: n,
    failed: 0,
    inDoubt: 0,
    pendingDelivery: 0,
    possibleDuplicates: 0,
  });
  const ledger = await emailLedger(restarted.url);
  expect(ledger).toHaveLength(n);
  expect(ledger.filter((e) => e.count !== 1)).toEqual([]);
  const rows = await reportRows(resumed);
  expect(rows.size).toBe(n);
  for (let i = 1; i <= n; i++)
    expect(rows.get(address(i)), address(i)).toMatchObject({ outcome: 'sent', code: '', status: 'ACCEPTED' });
});
