// Issue 15, "a mixed day": SMS, RCS, WhatsApp and email files dropped together into one
// `dropline run`, each channel's source with its own account, and two SMS files on the same
// SMS account. What a user notices: every file completes, each channel's recipients reach the
// service once on that channel's endpoint and nowhere else, each manifest and report says so,
// the dashboard's file list shows every file with its source and counts, and nothing waits for
// the big SMS campaign: the RCS, email and WhatsApp files are sent while the SMS files are
// still sending, and the two SMS files share their account (neither runs before the other).
//
// RCS goes through POST /mtmessage (Channel RCS) on its own account (a second account of the
// sandbox: see RCS_USER), and its delivery reports come to that account's webhook (registered,
// as support would, with dropline's notify URL and token) without a bulkId: the receiver finds
// each recipient through the chunk named in CallbackData. In the sandbox's SMS ledger its
// recipients are the entries with an empty bulkId and the chunk's id as messageId; the two SMS
// files' entries have their fileId.
//
// Determinism, not luck: the SMS account is limited to SMS_RATE destinations a second, so the
// two SMS files (about 2,000 recipients together) take four seconds or more of sending
// whatever the machine, while the RCS (1 request), email (3 requests) and WhatsApp (30
// requests) files, on accounts without a rate, need a fraction of that. The sandbox sends
// delivery reports (the harness's default), so the SMS and RCS files complete on their
// DELIVERED_TO_HANDSET reports.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { type Manifest, reportFileName } from '../../src/pipeline/reports.ts';
import { chunkIdFor } from '../../src/plan/chunks.ts';
import { DEMO_WHATSAPP } from '../../src/sandbox/accounts.ts';
import type { EmailLedgerEntry } from '../../src/sandbox/email.ts';
import type { RequestRecord } from '../../src/sandbox/server.ts';
import type { WhatsAppLedgerEntry } from '../../src/sandbox/whatsapp.ts';
import type { GrantEvent } from '../../src/service/dispatch.ts';
import {
  bulkFile,
  csvRecords,
  expectedMessageId,
  type GeneratedFile,
  PipelineHarness,
  personalizedFile,
} from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

/** Destinations a second on the SMS account: ~2,070 SMS recipients take ≥ 4 s. */
const SMS_RATE = 500;
/** SMS chunks (and the cap of the other channels' chunks: email 50, WhatsApp 10 stay below). */
const CHUNK = 100;
const MASSIVE = '/mtmessage/massive';
const DELIVER = '/email/v1/deliver';
const WHATSAPP = '/MultiChannelInput/SendMessageMetaWhatsApp';
const MT = '/mtmessage';
/**
 * The RCS account: a second account of the sandbox, not `api`'s demo/demo. The service keeps
 * one token per account (a login expires the previous one), and two dropline accounts with the
 * same credentials in one process log in over each other: sends answered 401 (see the report).
 */
const RCS_USER = 'demo-rcs';
const RCS_PASSWORD = 'demo-rcs-password';
/** Preloaded into the daemon: its dispatchers' grants, with the files waiting at each. */
const RECORD_GRANTS = pathToFileURL(join(import.meta.dirname, '..', 'helpers', 'record-grants.ts')).href;

/** Drops a file into a source's inbox as a careful writer does: a temp name, then rename. */
async function drop(folder: string, name: string, content: string): Promise<void> {
  await mkdir(join(folder, 'inbox'), { recursive: true });
  await writeFile(join(folder, 'inbox', `.${name}.tmp`), content);
  await rename(join(folder, 'inbox', `.${name}.tmp`), join(folder, 'inbox', name));
}

/** 120 customers (requests of 50, 50, 20) of the sandbox's `invoice` template, one bad address. */
function emailFile(): { content: string; recipients: string[] } {
  const recipients = Array.from({ length: 120 }, (_, i) => `cliente${i + 1}@example.com`);
  const lines = ['#! channel: email', '#! templateId: invoice', 'correo;nombre;mes'];
  for (const [i, r] of recipients.entries()) lines.push(`${r};Cliente ${i + 1};enero`);
  lines.splice(10, 0, 'no-es-un-correo;Pia;marzo');
  return { content: `${lines.join('\n')}\n`, recipients };
}

/** 30 customers of the sandbox's `factura` template (2 parameters), one bad number. */
function whatsappFile(): { content: string; destinations: string[] } {
  const destinations: string[] = [];
  const lines = ['#! channel: whatsapp', '#! templateId: factura', 'numero;nombre;1;2'];
  for (let i = 1; i <= 30; i++) {
    const national = `3004${String(i).padStart(6, '0')}`;
    destinations.push(`57${national}`);
    lines.push(`${national};x;Cliente ${i};$${i}.000`);
  }
  lines.splice(8, 0, '12;x;Pia;$1');
  return { content: `${lines.join('\n')}\n`, destinations };
}

/**
 * 40 customers (one request: fewer than CHUNK) of a personalized RCS file, each its own text
 * (so the request is Type 2), one bad number.
 */
function rcsFile(): { content: string; destinations: string[] } {
  const destinations: string[] = [];
  const lines = ['#! channel: rcs', 'Número;Mensaje'];
  for (let i = 1; i <= 40; i++) {
    const national = `316${String(i).padStart(7, '0')}`;
    destinations.push(`57${national}`);
    lines.push(`${national};Hola Cliente ${i}, tu pedido ${10_000 + i} salió hoy.`);
  }
  lines.splice(12, 0, '300123;Hola Pía, tu pedido salió hoy.');
  return { content: `${lines.join('\n')}\n`, destinations };
}

async function getJson<T>(url: string): Promise<T> {
  return (await (await fetch(url)).json()) as T;
}

it('a mixed day: SMS, RCS, email and WhatsApp files dropped together all complete, each on its channel, none waiting for the others', async () => {
  h = await PipelineHarness.create({
    // The sandbox's default account (SMS, email key, WhatsApp), and the RCS account.
    sandbox: {
      accounts: [
        { username: 'demo', password: 'demo', apiKey: 'demo-email-key', whatsapp: DEMO_WHATSAPP },
        { username: RCS_USER, password: RCS_PASSWORD, rcs: true },
      ],
    },
    api: { chunkSize: CHUNK, concurrency: 2, ratePerSecond: SMS_RATE },
    config: (sandbox) => ({
      accounts: {
        // Without a rate of their own they would inherit api.ratePerSecond.
        mail: {
          channel: 'email',
          baseUrl: sandbox.url,
          apiKey: 'demo-email-key',
          from: 'avisos@empresa.co',
          concurrency: 2,
          ratePerSecond: 0,
        },
        wa: {
          channel: 'whatsapp',
          baseUrl: sandbox.url,
          username: 'demo',
          password: 'demo',
          source: '+573001112233',
          concurrency: 2,
          ratePerSecond: 0,
        },
        rcs: {
          channel: 'rcs',
          baseUrl: sandbox.url,
          username: RCS_USER,
          password: RCS_PASSWORD,
          concurrency: 2,
          ratePerSecond: 0,
        },
      },
    }),
  });
  // The RCS account's webhook, as support would register it: dropline's notify URL with its
  // token. /mtmessage takes no notifyUrl: without it the RCS file's reports would go nowhere.
  const hook = await fetch(`${h.sandbox.url}/_sandbox/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      account: RCS_USER,
      url: `http://127.0.0.1:${h.notifyPort}/notify?token=${h.notifyToken}`,
    }),
  });
  expect(hook.status).toBeLessThan(300);
  const local = { type: 'local', stableMs: 200, pollMs: 100 };
  const folders = {
    sms: h.drop,
    rcs: join(h.dir, 'rcs'),
    email: join(h.dir, 'email'),
    whatsapp: join(h.dir, 'whatsapp'),
  };
  const config = {
    ...h.config,
    sources: [
      // The SMS source sends with `api`'s credentials (the account "default").
      { ...local, name: 'sms', path: folders.sms },
      { ...local, name: 'rcs', path: folders.rcs, channel: 'rcs', account: 'rcs' },
      { ...local, name: 'email', path: folders.email, channel: 'email', account: 'mail' },
      { ...local, name: 'whatsapp', path: folders.whatsapp, channel: 'whatsapp', account: 'wa' },
    ],
  };
  await writeFile(h.configPath, `${JSON.stringify(config, null, 2)}\n`);
  const grantsPath = join(h.dir, 'grants.jsonl');
  await h.start({
    wrap: ['env', `NODE_OPTIONS=--import=${RECORD_GRANTS}`, `DROPLINE_TEST_GRANTS=${grantsPath}`],
  });

  const smsA = personalizedFile(1100, 151);
  const smsB = bulkFile(1000, 10, 152);
  const mail = emailFile();
  const wa = whatsappFile();
  const rcs = rcsFile();
  await Promise.all([
    drop(folders.sms, 'recordatorios.txt', smsA.content),
    drop(folders.sms, 'cobranza.txt', smsB.content),
    drop(folders.email, 'facturas-correo.txt', mail.content),
    drop(folders.whatsapp, 'facturas-whatsapp.txt', wa.content),
    drop(folders.rcs, 'pedidos-rcs.txt', rcs.content),
  ]);

  // ---- every file completes ----
  const done = {
    a: await h.waitForState('recordatorios.txt', 'completed', { timeoutMs: 45_000 }),
    b: await h.waitForState('cobranza.txt', 'completed', { timeoutMs: 45_000 }),
    mail: await h.waitForState('facturas-correo.txt', 'completed', { timeoutMs: 45_000 }),
    wa: await h.waitForState('facturas-whatsapp.txt', 'completed', { timeoutMs: 45_000 }),
    rcs: await h.waitForState('pedidos-rcs.txt', 'completed', { timeoutMs: 45_000 }),
  };
  expect([done.a.source, done.b.source, done.mail.source, done.wa.source, done.rcs.source]).toEqual([
    'sms',
    'sms',
    'email',
    'whatsapp',
    'rcs',
  ]);

  // A clean day: no file's drive failed on the way (the log a user watches has no error).
  const errors = h.daemonOutput.split('\n').filter((l) => /"level":(50|60)/.test(l));
  expect(errors.map((l) => l.slice(0, 400))).toEqual([]);

  // ---- the manifests: SMS and RCS delivered by their reports, email and WhatsApp accepted ----
  for (const [m, gen] of [
    [done.a, smsA],
    [done.b, smsB],
  ] as const) {
    expect(m.counts).toMatchObject({
      records: gen.records,
      valid: gen.valid.length,
      invalid: gen.invalidLines.length,
      duplicates: gen.duplicateLines.length,
      chunks: Math.ceil(gen.valid.length / CHUNK),
      chunksAccepted: Math.ceil(gen.valid.length / CHUNK),
      submitted: gen.valid.length,
      delivered: gen.valid.length,
      accepted: 0,
      undelivered: 0,
      pendingDelivery: 0,
      failed: 0,
      inDoubt: 0,
    });
  }
  expect(done.b.layout).toBe('bulk');
  expect(done.mail.counts).toMatchObject({
    records: 121,
    valid: 120,
    invalid: 1,
    chunks: 3,
    chunksAccepted: 3,
    submitted: 120,
    accepted: 120,
    delivered: 0,
    pendingDelivery: 0,
    failed: 0,
    inDoubt: 0,
  });
  expect(done.rcs.counts).toMatchObject({
    records: 41,
    valid: 40,
    invalid: 1,
    duplicates: 0,
    chunks: 1,
    chunksAccepted: 1,
    submitted: 40,
    delivered: 40,
    accepted: 0,
    undelivered: 0,
    pendingDelivery: 0,
    failed: 0,
    inDoubt: 0,
  });
  expect(done.wa.counts).toMatchObject({
    records: 31,
    valid: 30,
    invalid: 1,
    chunks: 3,
    chunksAccepted: 3,
    submitted: 30,
    accepted: 30,
    delivered: 0,
    pendingDelivery: 0,
    failed: 0,
    inDoubt: 0,
  });

  // ---- each channel's ledger holds exactly its recipients, once; nothing crossed ----
  // The SMS ledger holds both SMS endpoints: the massive requests' entries under their bulkId
  // (the file's id) and each recipient's messageId, the /mtmessage ones (the RCS file) under an
  // empty bulkId and the chunk's id (its CustomMessageId) for every recipient of the chunk.
  const smsLedger = await h.ledger();
  const smsGot = smsLedger.entries.map((e) => `${e.bulkId} ${e.messageId} ${e.to} ${e.count}`).sort();
  const smsWant = (
    [
      [done.a, smsA],
      [done.b, smsB],
    ] as [Manifest, GeneratedFile][]
  ).flatMap(([m, gen]) =>
    gen.valid.map((r) => `${m.fileId} ${expectedMessageId(gen, m.fileId, r)} ${r.to} 1`),
  );
  const rcsChunks = (await h.stored(done.rcs.fileId)).chunks;
  expect(rcsChunks.map((c) => c.size)).toEqual([rcs.destinations.length]);
  const rcsChunkId = chunkIdFor(done.rcs.fileId, rcsChunks[0]!.seq);
  const rcsWant = rcs.destinations.map((to) => ` ${rcsChunkId} ${to} 1`);
  expect(smsGot).toEqual([...smsWant, ...rcsWant].sort());
  expect(smsLedger.duplicates).toBe(0);
  // Said the other way round: no RCS number went through the massive endpoint, and no SMS
  // file's number through /mtmessage.
  const massiveTo = new Set(smsLedger.entries.filter((e) => e.bulkId !== '').map((e) => e.to));
  const mtTo = new Set(smsLedger.entries.filter((e) => e.bulkId === '').map((e) => e.to));
  expect(rcs.destinations.filter((to) => massiveTo.has(to))).toEqual([]);
  expect([...smsA.valid, ...smsB.valid].filter((r) => mtTo.has(r.to))).toEqual([]);
  expect([...mtTo].sort()).toEqual([...rcs.destinations].sort());

  const { entries: mailLedger } = await getJson<{ entries: EmailLedgerEntry[] }>(
    `${h.sandbox.url}/_sandbox/email/ledger`,
  );
  expect(mailLedger.map((e) => e.recipient).sort()).toEqual([...mail.recipients].sort());
  expect(
    mailLedger.every((e) => e.count === 1 && e.templateId === 'invoice' && e.from === 'avisos@empresa.co'),
  ).toBe(true);

  const { entries: waLedger } = await getJson<{ entries: WhatsAppLedgerEntry[] }>(
    `${h.sandbox.url}/_sandbox/whatsapp/ledger`,
  );
  expect(waLedger.map((e) => e.destination).sort()).toEqual([...wa.destinations].sort());
  expect(
    waLedger.every((e) => e.count === 1 && e.templateId === 'factura' && e.source === '573001112233'),
  ).toBe(true);

  // Every number of the SMS ledger (SMS and RCS files alike).
  const smsNumbers = new Set(smsLedger.entries.map((e) => e.to));
  expect(smsLedger.entries.filter((e) => e.to.includes('@') || wa.destinations.includes(e.to))).toEqual([]);
  expect(waLedger.filter((e) => smsNumbers.has(e.destination))).toEqual([]);
  expect(mailLedger.filter((e) => !e.recipient.includes('@'))).toEqual([]);

  // ---- the requests: each channel on its own endpoint, and none waited for the SMS files ----
  const { requests } = await getJson<{ requests: RequestRecord[] }>(`${h.sandbox.url}/_sandbox/requests`);
  const sends = requests.filter((r) => [MASSIVE, DELIVER, WHATSAPP, MT].includes(r.endpoint));
  // Every send answered 200/202: none was refused (e.g. a 401 for a token another login replaced).
  expect(sends.filter((r) => r.status !== 200 && r.status !== 202)).toEqual([]);
  const sms = sends.filter((r) => r.endpoint === MASSIVE);
  const mailSends = sends.filter((r) => r.endpoint === DELIVER);
  const waSends = sends.filter((r) => r.endpoint === WHATSAPP);
  const rcsSends = sends.filter((r) => r.endpoint === MT);
  // The massive requests are the two SMS files', the /mtmessage one the RCS file's (one chunk,
  // on the RCS account): with the ledger above, each number went only through its channel's endpoint.
  expect(new Set(sms.map((r) => r.bulkId))).toEqual(new Set([done.a.fileId, done.b.fileId]));
  expect(sms.reduce((n, r) => n + (r.destinations ?? 0), 0)).toBe(smsA.valid.length + smsB.valid.length);
  expect(sms.every((r) => r.account === 'demo')).toBe(true);
  expect(rcsSends.map((r) => [r.account, r.destinations])).toEqual([[RCS_USER, rcs.destinations.length]]);
  expect(mailSends.map((r) => r.recipients ?? 0).sort((x, y) => y - x)).toEqual([50, 50, 20]);
  expect(waSends).toHaveLength(30);

  // The RCS, email and WhatsApp files did not queue behind the SMS campaign (about 4 s of
  // sending at SMS_RATE): every one of their requests reached the service before the SMS files
  // had sent a quarter of their recipients (well before the last SMS request), and the three
  // files had completed (RCS on its webhook reports) before either SMS file was fully submitted.
  const lastSms = Math.max(...sms.map((r) => r.at));
  const firstSms = Math.min(...sms.map((r) => r.at));
  const smsTotal = smsA.valid.length + smsB.valid.length;
  expect(lastSms - firstSms).toBeGreaterThanOrEqual(((smsTotal - 2 * CHUNK) / SMS_RATE) * 1000 - 250);
  const lastOther = Math.max(...[...mailSends, ...waSends, ...rcsSends].map((r) => r.at));
  expect(lastOther).toBeLessThan(lastSms);
  const smsSentBefore = sms.filter((r) => r.at < lastOther).reduce((n, r) => n + (r.destinations ?? 0), 0);
  expect(
    smsSentBefore,
    `SMS recipients sent before the last RCS/email/WhatsApp request (of ${smsTotal}); ` +
      `RCS at +${rcsSends.map((r) => r.at - firstSms).join(', ')} ms, ` +
      `email at +${mailSends.map((r) => r.at - firstSms).join(', ')} ms, ` +
      `WhatsApp at +${waSends.map((r) => r.at - firstSms).join(', ')} ms, SMS span ${lastSms - firstSms} ms`,
  ).toBeLessThanOrEqual(smsTotal / 4);
  const submittedAt = (m: Manifest) => Date.parse(m.timestamps.submitted!);
  const completedAt = (m: Manifest) => Date.parse(m.timestamps.completed!);
  const firstSmsSubmitted = Math.min(submittedAt(done.a), submittedAt(done.b));
  expect(completedAt(done.mail)).toBeLessThan(firstSmsSubmitted);
  expect(completedAt(done.wa)).toBeLessThan(firstSmsSubmitted);
  expect(completedAt(done.rcs)).toBeLessThan(firstSmsSubmitted);

  // The two SMS files on one account interleave: neither runs entirely before the other.
  const span = (fileId: string) => {
    const at = sms.filter((r) => r.bulkId === fileId).map((r) => r.at);
    return { first: Math.min(...at), last: Math.max(...at) };
  };
  const sa = span(done.a.fileId);
  const sb = span(done.b.fileId);
  expect(sb.first).toBeLessThan(sa.last);
  expect(sa.first).toBeLessThan(sb.last);
  // And while both wait they take turns (start-time fair queueing, equal weights): no file is
  // granted twice in a row while the other has a request waiting, unless the first of the two
  // was smaller than a chunk (its file's virtual time moved on less than the other's had).
  // Read from the dispatcher's grants, each with the files waiting when it was decided, not
  // from the order the requests reached the service: there, a file whose workers were still
  // reading or recording when its turn would have come lets the other go several times in a
  // row, as the machine's load decides.
  const smsFiles = new Set([done.a.fileId, done.b.fileId]);
  const grants = (await readFile(grantsPath, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as GrantEvent)
    .filter((g) => smsFiles.has(g.flow));
  // Every SMS request had its grant (a permit given back unused is granted again).
  for (const fileId of smsFiles)
    expect(grants.filter((g) => g.flow === fileId).length).toBeGreaterThanOrEqual(
      sms.filter((r) => r.bulkId === fileId).length,
    );
  const twice = grants.filter(
    (g, i) =>
      i > 0 &&
      grants[i - 1]!.flow === g.flow &&
      grants[i - 1]!.destinations === CHUNK &&
      g.waiting.some((f) => f !== g.flow),
  );
  const shown = grants.map((g) => `${g.flow.slice(0, 4)}:${g.destinations}[${g.waiting.length}]`);
  expect(twice, shown.join(' ')).toEqual([]);

  // ---- each report: a row per record, the sent ones with their final status ----
  const rows = async (folder: string, m: Manifest) =>
    csvRecords(
      await readFile(join(folder, 'reports', reportFileName(m.name, m.fileId, 'report.csv')), 'utf8'),
    );
  for (const [m, gen] of [
    [done.a, smsA],
    [done.b, smsB],
  ] as const) {
    const r = await rows(folders.sms, m);
    const sent = r.filter((x) => x.outcome === 'sent');
    expect(sent).toHaveLength(gen.valid.length);
    expect(sent.every((x) => x.status === 'DELIVERED_TO_HANDSET' && x.transactionNumber !== '')).toBe(true);
    expect(new Set(sent.map((x) => x.messageId))).toEqual(
      new Set(gen.valid.map((v) => expectedMessageId(gen, m.fileId, v))),
    );
    expect(r.filter((x) => x.outcome !== 'sent')).toHaveLength(
      gen.invalidLines.length + gen.duplicateLines.length,
    );
  }
  const mailRows = await rows(folders.email, done.mail);
  expect(mailRows.filter((x) => x.outcome === 'sent' && x.status === 'ACCEPTED')).toHaveLength(120);
  expect(mailRows.filter((x) => x.outcome !== 'sent').map((x) => x.code)).toEqual(['INVALID_EMAIL']);
  const waRows = await rows(folders.whatsapp, done.wa);
  const waSent = waRows.filter((x) => x.outcome === 'sent');
  expect(waSent).toHaveLength(30);
  const txn = new Map(waLedger.map((e) => [e.destination, e.transactionNumber]));
  expect(
    waSent.every((x) => x.status === 'ACCEPTED' && x.transactionNumber === txn.get(x.number ?? '')),
  ).toBe(true);
  expect(waRows.filter((x) => x.outcome !== 'sent').map((x) => x.code)).toEqual(['INVALID_NUMBER']);
  // RCS: each recipient's report, come through the webhook and mapped back by CallbackData.
  const rcsRows = await rows(folders.rcs, done.rcs);
  const rcsSent = rcsRows.filter((x) => x.outcome === 'sent');
  expect(rcsSent.map((x) => x.number).sort()).toEqual([...rcs.destinations].sort());
  expect(
    rcsSent.every(
      (x) => x.status === 'DELIVERED_TO_HANDSET' && x.transactionNumber === rcsChunks[0]!.transactionNumber,
    ),
  ).toBe(true);
  expect(rcsRows.filter((x) => x.outcome !== 'sent').map((x) => x.code)).toEqual(['INVALID_NUMBER']);

  // ---- the dashboard's file list: every file, its source (one per channel here), its counts ----
  const listed = await h.files();
  const byName = new Map(listed.map((m) => [m.name, m]));
  for (const m of Object.values(done)) {
    const row = byName.get(m.name);
    expect(row, m.name).toMatchObject({ fileId: m.fileId, source: m.source, state: 'completed' });
    expect(row?.counts).toMatchObject({
      valid: m.counts.valid,
      submitted: m.counts.submitted,
      accepted: m.counts.accepted,
      delivered: m.counts.delivered,
    });
  }
  const meta = (await h.opsGet('/api/meta')).body as { sources: string[] };
  expect([...meta.sources].sort()).toEqual(['email', 'rcs', 'sms', 'whatsapp']);
  for (const [source, names] of [
    ['sms', ['cobranza.txt', 'recordatorios.txt']],
    ['rcs', ['pedidos-rcs.txt']],
    ['email', ['facturas-correo.txt']],
    ['whatsapp', ['facturas-whatsapp.txt']],
  ] as const) {
    const page = (await h.opsGet(`/api/files?source=${source}`)).body as Manifest[];
    expect(page.map((m) => m.name).sort()).toEqual(names);
  }
}, 60_000);
