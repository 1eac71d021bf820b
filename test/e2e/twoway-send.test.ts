// Issue 35, two-way SMS through the pipeline: a source with channel "twoway" and a two-way
// account sends each recipient of its files to the sandbox's POST /momessage, one request a
// recipient, from the account's short code (or the source's); `Message: OK` is final (ACCEPTED,
// the answer's Id its transaction number), ERROR rejects the recipient with the service's
// Status, a refused account (403) pauses the file and resume sends the rest, each once. An SMS
// source with a shortCode sends it as the massive messages' shortCode, and a recipient's reply
// goes back to that short code over the sandbox's SMPP server.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import type { MoLedgerEntry } from '../../src/sandbox/mo-ledger.ts';
import type { SmppServerView } from '../../src/sandbox/smpp.ts';
import { csvRecords, PipelineHarness } from '../helpers/pipeline-harness.ts';
import { sandboxLedger } from '../helpers/sandbox-views.ts';

let h: PipelineHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const SHORT_CODE = '890123';

/** The `dosvias` two-way account: the sandbox's demo credentials, its short code SHORT_CODE. */
const dosvias = (sandbox: { url: string }, settings: Record<string, unknown> = {}) => ({
  channel: 'twoway',
  baseUrl: sandbox.url,
  username: 'demo',
  password: 'demo',
  shortCode: SHORT_CODE,
  ...settings,
});

/** A twoway source on the `dosvias` account (the sandbox's demo credentials and short codes). */
function harness(source: Record<string, unknown> = {}, account: Record<string, unknown> = {}) {
  return PipelineHarness.create({
    sandbox: {
      accounts: [{ username: 'demo', password: 'demo', shortCodes: [SHORT_CODE, '85000'] }],
      smpp: {},
    },
    source: { channel: 'twoway', account: 'dosvias', ...source },
    config: (sandbox) => ({
      accounts: { dosvias: dosvias(sandbox, { concurrency: 2, ...account }) },
    }),
  });
}

const numbers = (n: number) => Array.from({ length: n }, (_, i) => `3${String(350_000_000 + i)}`);

/** 25 appointments, a bad number and a repeated line. */
async function appointments(dir: string): Promise<string> {
  const path = join(dir, 'citas.txt');
  const lines = numbers(25).map((n, i) => `${n};Responde SI para confirmar tu cita ${i + 1}`);
  lines.splice(8, 0, '12;Responde SI');
  lines.push(`${numbers(25)[6]};Responde SI para confirmar tu cita 7`);
  await writeFile(path, `#! channel: twoway\n${lines.join('\n')}\n`);
  return path;
}

async function moLedger(h: PipelineHarness): Promise<MoLedgerEntry[]> {
  return (await sandboxLedger<MoLedgerEntry>(h.sandbox.url, 'momessage')).entries;
}

const moRequests = (h: PipelineHarness) => h.sandbox.requests.filter((q) => q.endpoint === '/momessage');

it('a two-way file: one POST /momessage a recipient from the short code, each once, ACCEPTED with its Id', async () => {
  h = await harness();
  const path = await appointments(h.dir);
  const m = JSON.parse((await h.cli(['send', path, '--json'])).stdout) as Manifest;
  expect(m.state).toBe('completed');
  expect(m.channel).toBe('twoway');
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
    pendingDelivery: 0,
  });
  const ledger = await moLedger(h);
  expect(ledger).toHaveLength(25);
  expect(ledger.every((e) => e.count === 1 && e.shortCode === SHORT_CODE && e.account === 'demo')).toBe(true);
  expect(ledger.find((e) => e.phoneNumber === `57${numbers(25)[11]}`)?.text).toBe(
    'Responde SI para confirmar tu cita 12',
  );
  expect(moRequests(h).map((q) => q.shortCode)).toEqual(Array.from({ length: 25 }, () => SHORT_CODE));
  const sent = csvRecords(await h.readReport(m)).filter((r) => r.outcome === 'sent');
  expect(sent).toHaveLength(25);
  expect(sent.every((r) => r.status === 'ACCEPTED')).toBe(true);
  const idOf = new Map(ledger.map((e) => [e.phoneNumber, e.id]));
  expect(
    sent.every((r) => r.transactionNumber !== '' && r.transactionNumber === idOf.get(r.number ?? '')),
  ).toBe(true);

  // The recipient answers: the reply goes to the short code that wrote to it, for its account.
  const reply = await fetch(`${h.sandbox.url}/_sandbox/replies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ from: `57${numbers(25)[3]}`, text: 'SI' }),
  });
  expect(reply.status).toBe(202);
  const view = (await (await fetch(`${h.sandbox.url}/_sandbox/replies`)).json()) as SmppServerView;
  expect(view.replies.map((r) => [r.from, r.to, r.account, r.text])).toEqual([
    [`57${numbers(25)[3]}`, SHORT_CODE, 'demo', 'SI'],
  ]);
});

it("ERROR answers reject each recipient with the service's Status; a 400 rejects its one recipient", async () => {
  // The source's short code replaces the account's: one the account was not assigned.
  h = await harness({ shortCode: '55555' });
  const path = join(h.dir, 'ajenos.txt');
  await writeFile(
    path,
    `${numbers(4)
      .map((n) => `${n};Hola`)
      .join('\n')}\n`,
  );
  const m = JSON.parse((await h.cli(['send', path, '--json'])).stdout) as Manifest;
  expect(m.counts).toMatchObject({ submitted: 0, accepted: 0, rejected: 4 });
  const rejected = csvRecords(await h.readReport(m)).filter((r) => r.outcome === 'rejected');
  expect(rejected.map((r) => [r.code, r.detail])).toEqual(
    Array.from({ length: 4 }, () => ['DROPLINE_ERR_SERVICE_REJECTED', 'Message ERROR, Status 2']),
  );
  expect(moRequests(h).every((q) => q.shortCode === '55555')).toBe(true);
  expect(await moLedger(h)).toEqual([]);

  await h.close();
  h = await harness();
  await h.faults({ momessage: { '400': { probability: 1, times: 1 } } });
  const path2 = join(h.dir, 'uno-malo.txt');
  await writeFile(
    path2,
    `${numbers(3)
      .map((n) => `${n};Hola`)
      .join('\n')}\n`,
  );
  const m2 = JSON.parse((await h.cli(['send', path2, '--json'])).stdout) as Manifest;
  expect(m2.state).toBe('completed');
  expect(m2.counts).toMatchObject({ submitted: 2, accepted: 2, rejected: 1 });
  const rows = csvRecords(await h.readReport(m2));
  expect(rows.filter((r) => r.outcome === 'rejected').map((r) => r.detail)).toEqual([
    'HTTP 400: injected fault 400',
  ]);
  expect(await moLedger(h)).toHaveLength(2);
});

it('a refused account (403) pauses the file; resume sends the rest, every recipient once', async () => {
  h = await harness({}, { concurrency: 1 });
  await h.faults({ momessage: { '403': { probability: 1, times: 1 } } });
  await h.start();
  const list = numbers(40);
  await h.dropFile('pausa.txt', `${list.map((n, i) => `${n};Cita ${i + 1}`).join('\n')}\n`);
  const paused = await h.waitForState('pausa.txt', 'paused');
  expect(paused.reason).toContain('injected fault 403');
  const idle = await h.waitIdle(paused.fileId);
  expect(idle.counts.submitted).toBeLessThan(40);

  const resumed = await h.cli(['resume', paused.fileId]);
  expect(resumed.code, resumed.stderr).toBe(0);
  const done = await h.waitForFile(paused.fileId, 'completed');
  expect(done.counts).toMatchObject({ valid: 40, submitted: 40, accepted: 40, rejected: 0, failed: 0 });
  const ledger = await moLedger(h);
  expect(ledger.map((e) => e.phoneNumber).sort()).toEqual(list.map((n) => `57${n}`).sort());
  expect(ledger.every((e) => e.count === 1)).toBe(true);
});

it('validate names the channel of a two-way file', async () => {
  h = await harness();
  const path = await appointments(h.dir);
  const r = await h.cli(['validate', path, '--source', 'local']);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toContain('channel twoway: one POST /momessage a recipient');
  expect(r.stdout).toContain('records 27: 25 valid, 1 invalid, 1 duplicate');
});

it("an SMS source's shortCode goes with every massive message, and replies return to it", async () => {
  h = await PipelineHarness.create({
    sandbox: { accounts: [{ username: 'demo', password: 'demo', shortCodes: [SHORT_CODE] }], smpp: {} },
    source: { shortCode: SHORT_CODE },
    api: { chunkSize: 10 },
  });
  const path = join(h.dir, 'masivo.txt');
  await writeFile(
    path,
    `${numbers(25)
      .map((n, i) => `${n};Promo ${i}`)
      .join('\n')}\n`,
  );
  const m = JSON.parse((await h.cli(['send', path, '--json'])).stdout) as Manifest;
  expect(m.counts).toMatchObject({ valid: 25, submitted: 25 });
  const massive = h.sandbox.requests.filter((q) => q.endpoint === '/mtmessage/massive');
  expect(massive.map((q) => [q.status, q.shortCode])).toEqual(
    Array.from({ length: 3 }, () => [200, SHORT_CODE]),
  );
  const reply = await fetch(`${h.sandbox.url}/_sandbox/replies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ from: `57${numbers(25)[20]}`, text: 'Salir' }),
  });
  expect(reply.status).toBe(202);
  const view = (await (await fetch(`${h.sandbox.url}/_sandbox/replies`)).json()) as SmppServerView;
  expect(view.replies.map((r) => r.to)).toEqual([SHORT_CODE]);
});

it('an sms and a twoway account on the same credentials share one token: one login, nobody logged out', async () => {
  h = await PipelineHarness.create({
    sandbox: { accounts: [{ username: 'demo', password: 'demo', shortCodes: [SHORT_CODE] }] },
    api: { chunkSize: 10 },
    config: (sandbox) => ({
      accounts: { dosvias: dosvias(sandbox) },
      // Relative to the daemon's folder (the harness's).
      sources: [
        { name: 'masivo', type: 'local', path: './masivo', stableMs: 100, pollMs: 100 },
        {
          name: 'citas',
          type: 'local',
          path: './citas',
          channel: 'twoway',
          account: 'dosvias',
          stableMs: 100,
          pollMs: 100,
        },
      ],
    }),
  });
  await h.start();
  await writeFile(
    join(h.dir, 'masivo', 'inbox', 'promo.txt'),
    `${numbers(60)
      .map((n) => `${n};Promo`)
      .join('\n')}\n`,
  );
  await writeFile(
    join(h.dir, 'citas', 'inbox', 'citas.txt'),
    `${numbers(60)
      .map((n) => `${n};Responde SI`)
      .join('\n')}\n`,
  );
  const sms = await h.waitForState('promo.txt', ['submitted', 'completed']);
  const twoway = await h.waitForState('citas.txt', 'completed');
  expect(sms.counts.submitted).toBe(60);
  expect(twoway.counts.accepted).toBe(60);
  const logins = (await (await fetch(`${h.sandbox.url}/_sandbox/logins`)).json()) as {
    accounts: Record<string, { password: number; refresh: number; replaced: number; expired: number }>;
  };
  expect(logins.accounts.demo).toEqual({ password: 1, refresh: 0, replaced: 0, expired: 0 });
});
