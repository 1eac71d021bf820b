// Issue 14, contactLimit (Ley 2300 de 2023: a consumer contacted at most once a day): a
// recipient the account already sent a message that Bogotá day is not sent again, whatever the
// campaign, and is reported `contact_limit` / CONTACT_LIMIT, counted like suppressed. The CLI
// as a process against the sandbox. Issue 35: one ledger per entity, across its accounts and
// channels, one channel a week, a chunk that waited past midnight counted on the day it goes out, and
// `dropline compliance`.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { COMPLIANCE_HEADER } from '../../src/cli/commands/compliance.ts';
import { silentLogger } from '../../src/log.ts';
import { changeFileState } from '../../src/pipeline/actions.ts';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { localDate } from '../../src/plan/send-window.ts';
import { DEMO_WHATSAPP } from '../../src/sandbox/accounts.ts';
import type { LedgerEntry } from '../../src/sandbox/ledger.ts';
import type { WhatsAppLedgerEntry } from '../../src/sandbox/whatsapp.ts';
import type { SendOptions, ServiceClient } from '../../src/service/client.ts';
import type { PlannedChunk } from '../../src/service/wire.ts';
import { csvRecords, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';
import { campaign, Workers } from '../helpers/pipeline-workers.ts';
import { balancer, isUp, type RunWorker, runWorker } from '../helpers/run-workers.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({ api: { chunkSize: 40 }, config: { contactLimit: { perDay: 1 } } });
});

afterAll(async () => {
  await h?.close();
});

/** Personalized lines for numbers 3000000000 + from … + to (exclusive). */
const lines = (from: number, to: number, text: string) =>
  Array.from({ length: to - from }, (_, i) => `${3_000_000_000 + from + i};${text} ${from + i}\n`).join('');

async function send(name: string, content: string): Promise<Manifest> {
  const path = join(h.dir, name);
  await writeFile(path, content);
  const r = await h.cli(['send', path, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Manifest;
}

it('a second campaign the same day skips the numbers the first one reached; none is sent twice', async () => {
  const first = await send('manana.txt', lines(0, 100, 'Oferta de la mañana'));
  expect(first.counts).toMatchObject({ valid: 100, submitted: 100, contactLimited: 0 });

  // 60 new numbers, 50 already reached, and a number twice with two messages (not a duplicate).
  const second = await send(
    'tarde.txt',
    `${lines(50, 160, 'Oferta de la tarde')}${3_000_000_150};Otra oferta de la tarde\n`,
  );
  expect(second.counts).toMatchObject({
    records: 111,
    valid: 60,
    contactLimited: 51,
    submitted: 60,
  });
  const c = second.counts;
  expect(c.records).toBe(c.valid + c.invalid + c.duplicates + c.suppressed + c.contactLimited);

  const ledger = await h.ledger();
  const to = ledger.entries.map((e) => e.to);
  expect(to).toHaveLength(160);
  expect(new Set(to).size).toBe(160);

  const printed = await h.cli(['report', second.fileId]);
  expect(printed.code, printed.stderr).toBe(0);
  const report = csvRecords(printed.stdout);
  const limited = report.filter((r) => r.outcome === 'contact_limit');
  expect(limited).toHaveLength(51);
  expect(new Set(limited.map((r) => r.code))).toEqual(new Set(['CONTACT_LIMIT']));
  // The first 50 lines (numbers the morning reached) and the last line (the second message).
  expect(limited.map((r) => Number(r.line))).toEqual([...Array.from({ length: 50 }, (_, i) => i + 1), 111]);
  expect(report.filter((r) => r.outcome === 'sent')).toHaveLength(60);
});

it("a worker whose clock is a day ahead still counts the store's day: nobody gets two messages that day", async () => {
  // Two workers on one store (on PostgreSQL the database's now(); SQLite in one process: the
  // real clock); b's own clock runs a day ahead. The day of the limit is the store's.
  const w = await Workers.create({ contactLimit: { perDay: 1 } });
  try {
    const a = await w.worker('a');
    const b = await w.worker('b', { processNow: () => new Date(Date.now() + 86_400_000) });
    const drive = async (worker: typeof a, name: string, content: string) => {
      const file = await worker.pipeline.claim(worker.source, await w.dropFile(name, content));
      await worker.pipeline.drive(file!.fileId);
      return w.store.counts(file!.fileId);
    };
    const first = await drive(a, 'hoy.txt', campaign(200, 7));
    expect(first).toMatchObject({ submitted: 200, contactLimited: 0 });
    // The same 200 numbers, another text: sent by b the same real day.
    const second = await drive(b, 'otra.txt', campaign(200, 7).replaceAll('su cita', 'su pedido'));
    expect(second).toMatchObject({ submitted: 0, contactLimited: 200 });
    const res = await fetch(`${w.sandbox.url}/_sandbox/ledger`);
    const entries = ((await res.json()) as { entries: { to: string }[] }).entries;
    expect(entries).toHaveLength(200);
  } finally {
    await w.close();
  }
});

/** A Bogotá wall-clock time (UTC−5 all year) as an instant. */
const bogota = (local: string) => new Date(`${local}:00-05:00`);

it('a chunk whose turn comes after midnight takes its contacts on the new day, none on the day it waited', async () => {
  let t = bogota('2026-11-27T23:59').getTime();
  const now = () => new Date(t);
  const w = await Workers.create({ contactLimit: { perDay: 1 } });
  try {
    // The first request of the evening campaign waits for its turn until after midnight
    // (behind other files, a rate): then it asks to go out.
    let first = true;
    const late = (client: ServiceClient) => {
      const send = client.sendChunk.bind(client);
      client.sendChunk = (async (chunk: PlannedChunk, options: SendOptions = {}) => {
        if (first) {
          first = false;
          t = bogota('2026-11-28T00:01').getTime();
        }
        return send(chunk, options);
      }) as ServiceClient['sendChunk'];
      return client;
    };
    const a = await w.worker('a', { now, wrapClient: late });
    const b = await w.worker('b', { now });
    const drive = async (worker: typeof a, name: string, content: string) => {
      const file = await worker.pipeline.claim(worker.source, await w.dropFile(name, content));
      await worker.pipeline.drive(file!.fileId);
      return file!.fileId;
    };
    const evening = await drive(a, 'noche.txt', campaign(50, 3));
    expect(await w.store.counts(evening)).toMatchObject({ submitted: 50, contactLimited: 0 });
    // Sent on the 28th, it counts on the 28th: the morning campaign reaches nobody twice that day.
    const morning = await drive(b, 'manana.txt', campaign(50, 3).replaceAll('su cita', 'su pedido'));
    expect(await w.store.counts(morning)).toMatchObject({ submitted: 0, contactLimited: 50 });
    const details = new Set<string | null>();
    for await (const r of w.store.recipients(morning, ['contact_limit'])) details.add(r.detail);
    expect([...details]).toEqual([
      'already contacted this day: by sms at 2026-11-28 00:01:00 -05:00 (contactLimit 1 a day)',
    ]);
    const day28 = await w.store.contacts({
      from: '2026-11-28',
      to: '2026-11-28',
      entity: null,
      after: null,
      limit: 100,
    });
    expect(day28).toHaveLength(50);
    expect(new Set(day28.map((c) => c.fileId))).toEqual(new Set([evening]));
    // Nothing went out on the 27th: the chunk that waited took no contact that day.
    const day27 = await w.store.contacts({
      from: '2026-11-27',
      to: '2026-11-27',
      entity: null,
      after: null,
      limit: 100,
    });
    expect(day27).toEqual([]);
    const res = await fetch(`${w.sandbox.url}/_sandbox/ledger`);
    expect(((await res.json()) as { entries: LedgerEntry[] }).entries).toHaveLength(50);
  } finally {
    await w.close();
  }
});

it('a file paused after its first request and then cancelled keeps no contact for the recipients it never sent: a later campaign reaches them', async () => {
  const w = await Workers.create({ contactLimit: { perDay: 1, channelsPerWeek: 1 } });
  try {
    // The file is paused once its first chunk's request is answered (a user's pause between
    // chunks); its next chunk had been read meanwhile.
    let fileId = '';
    let first = true;
    const pauseAfterFirst = (client: ServiceClient) => {
      const send = client.sendChunk.bind(client);
      client.sendChunk = (async (chunk: PlannedChunk, options: SendOptions = {}) => {
        const sent = await send(chunk, options);
        if (first) {
          first = false;
          await changeFileState(w.store, silentLogger, fileId, 'pause', 'USER');
        }
        return sent;
      }) as ServiceClient['sendChunk'];
      return client;
    };
    const a = await w.worker('a', { wrapClient: pauseAfterFirst });
    const claimed = await a.pipeline.claim(a.source, await w.dropFile('pausada.txt', campaign(200, 5)));
    fileId = claimed!.fileId;
    await a.pipeline.drive(fileId);
    expect((await w.store.getFile(fileId))?.state).toBe('paused');
    await changeFileState(w.store, silentLogger, fileId, 'cancel', 'USER');
    const sentTo = async () => {
      const res = await fetch(`${w.sandbox.url}/_sandbox/ledger`);
      return ((await res.json()) as { entries: LedgerEntry[] }).entries.map((e) => e.to);
    };
    expect(await sentTo()).toHaveLength(50);

    // The ledger holds the 50 contacts made, not the chunk that never went out.
    const today = localDate(new Date(), 'America/Bogota');
    const contacts = await w.store.contacts({
      from: today,
      to: today,
      entity: null,
      after: null,
      limit: 1000,
    });
    expect(contacts).toHaveLength(50);

    // The same audience again today: the 150 never reached are sent, the 50 reached are held.
    const again = await a.pipeline.claim(
      a.source,
      await w.dropFile('otra.txt', campaign(200, 5).replaceAll('su cita', 'su pedido')),
    );
    await a.pipeline.drive(again!.fileId);
    expect(await w.store.counts(again!.fileId)).toMatchObject({ submitted: 150, contactLimited: 50 });
    // The log says how many each chunk held back.
    const held = a.logs.filter(
      (l) => l.fileId === again!.fileId && String(l.msg).endsWith('recipients held back'),
    );
    expect(held.reduce((n, l) => n + Number(l.contactLimited), 0)).toBe(50);
    const to = await sentTo();
    expect(to).toHaveLength(200);
    expect(new Set(to).size).toBe(200);
  } finally {
    await w.close();
  }
});

/**
 * A harness with the Ley 2300 limit, an SMS source and a WhatsApp source whose account logs in
 * with `password`, and a WhatsApp campaign of 30 numbers written: its path and numbers.
 */
async function whatsappThenSms(password: string) {
  const g = await PipelineHarness.create({
    config: (sandbox) => ({
      contactLimit: { perDay: 1, channelsPerWeek: 1 },
      accounts: {
        wa: {
          channel: 'whatsapp',
          baseUrl: sandbox.url,
          username: 'demo',
          password,
          source: '+573001112233',
        },
      },
    }),
  });
  const local = { type: 'local', stableMs: 200, pollMs: 100 };
  const config = {
    ...g.config,
    sources: [
      { ...local, name: 'sms', path: join(g.dir, 'sms') },
      { ...local, name: 'whatsapp', path: join(g.dir, 'whatsapp'), channel: 'whatsapp', account: 'wa' },
    ],
  };
  await writeFile(g.configPath, `${JSON.stringify(config, null, 2)}\n`);
  const numbers = nationals(500, 530);
  const wa = ['#! channel: whatsapp', '#! templateId: factura', 'numero;nombre;1;2'];
  for (const n of numbers) wa.push(`${n};x;Cliente ${n};$1.000`);
  await writeFile(join(g.dir, 'facturas.txt'), `${wa.join('\n')}\n`);
  const sendWhatsApp = async () =>
    JSON.parse(
      (await g.cli(['send', join(g.dir, 'facturas.txt'), '--source', 'whatsapp', '--json'])).stdout,
    ) as Manifest;
  /** An SMS campaign to the same numbers the same day: every one is sent, and compliance lists only it. */
  const smsReachesEveryone = async () => {
    await writeFile(
      join(g.dir, 'aviso.txt'),
      `${numbers.map((n) => `${n};Su factura esta lista`).join('\n')}\n`,
    );
    const sent = await g.cli(['send', join(g.dir, 'aviso.txt'), '--source', 'sms', '--json']);
    expect(sent.code, sent.stderr).toBe(0);
    expect((JSON.parse(sent.stdout) as Manifest).counts).toMatchObject({ submitted: 30, contactLimited: 0 });
    const printed = await g.cli(['compliance', '--from', '2000-01-01', '--to', '2100-01-01']);
    expect(printed.code, printed.stderr).toBe(0);
    const rows = csvRecords(printed.stdout);
    expect(rows).toHaveLength(30);
    expect(new Set(rows.map((r) => r.channel))).toEqual(new Set(['sms']));
  };
  return { g, sendWhatsApp, smsReachesEveryone };
}

it('a WhatsApp campaign the service never took (503 on every try) gives back its contacts: an SMS campaign the same week reaches everyone', async () => {
  const { g, sendWhatsApp, smsReachesEveryone } = await whatsappThenSms('demo');
  try {
    await g.faults({ whatsapp: { '503': 1 } });
    expect((await sendWhatsApp()).counts).toMatchObject({ valid: 30, submitted: 0, failed: 30 });
    await g.faults({});
    await smsReachesEveryone();
  } finally {
    await g.close();
  }
});

it('a WhatsApp campaign paused by a refused login (401), then cancelled, gives back its contacts: an SMS campaign reaches everyone', async () => {
  const { g, sendWhatsApp, smsReachesEveryone } = await whatsappThenSms('wrong');
  try {
    const paused = await sendWhatsApp();
    expect(paused.state).toBe('paused');
    expect(paused.counts).toMatchObject({ valid: 30, submitted: 0 });
    const cancelled = await g.cli(['cancel', paused.fileId]);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    await smsReachesEveryone();
  } finally {
    await g.close();
  }
});

/** Drops a file into a source's inbox as a careful writer does: a temp name, then rename. */
async function dropInto(folder: string, name: string, content: string): Promise<void> {
  await mkdir(join(folder, 'inbox'), { recursive: true });
  await writeFile(join(folder, 'inbox', `.${name}.tmp`), content);
  await rename(join(folder, 'inbox', `.${name}.tmp`), join(folder, 'inbox', name));
}

/** National numbers 3004000000 + from … + to (exclusive). */
const nationals = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => String(3_004_000_000 + from + i));

it('one ledger for the company: two SMS accounts and a WhatsApp account on two workers contact each number once a day and by one channel a week; another entity keeps its own; compliance lists every contact', async () => {
  const fleet: RunWorker[] = [];
  let front: Server | null = null;
  const g = await PipelineHarness.create({
    sandbox: {
      accounts: [
        { username: 'demo', password: 'demo', whatsapp: DEMO_WHATSAPP },
        { username: 'cobranza', password: 'cobranza-pw' },
        { username: 'aliado', password: 'aliado-pw' },
      ],
    },
    api: { chunkSize: 20, concurrency: 1 },
  });
  try {
    const sms = (username: string, extra: Record<string, unknown> = {}) => ({
      channel: 'sms',
      baseUrl: g.sandbox.url,
      username,
      password: `${username}-pw`,
      ...extra,
    });
    const local = { type: 'local', stableMs: 200, pollMs: 100 };
    const folder = (name: string) => join(g.dir, name);
    const config = {
      ...g.config,
      contactLimit: { perDay: 1, channelsPerWeek: 1 },
      accounts: {
        cobranza: sms('cobranza'),
        // A partner company sending through the same dropline: its own ledger.
        aliado: sms('aliado', { entity: 'aliado' }),
        wa: {
          channel: 'whatsapp',
          baseUrl: g.sandbox.url,
          username: 'demo',
          password: 'demo',
          source: '+573001112233',
        },
      },
      sources: [
        { ...local, name: 'ventas', path: folder('ventas') },
        { ...local, name: 'cobranza', path: folder('cobranza'), account: 'cobranza' },
        { ...local, name: 'whatsapp', path: folder('whatsapp'), channel: 'whatsapp', account: 'wa' },
        { ...local, name: 'aliado', path: folder('aliado'), account: 'aliado' },
      ],
    };
    await writeFile(g.configPath, `${JSON.stringify(config, null, 2)}\n`);
    const lb = await balancer(() => fleet.filter(isUp).map((w) => w.notifyPort));
    front = lb.server;
    fleet.push(...(await Promise.all(['w1', 'w2'].map((n) => runWorker(g, n, lb.port, config)))));

    // Numbers 0–99 by SMS (ventas), 50–149 by SMS from the second account, 100–199 by
    // WhatsApp, 0–49 by the partner: the company's 300 recipients are 200 people.
    const smsLines = (from: number, to: number, text: string) =>
      nationals(from, to).map((n) => `${n};${text} ${n}`);
    const wa = ['#! channel: whatsapp', '#! templateId: factura', 'numero;nombre;1;2'];
    for (const n of nationals(100, 200)) wa.push(`${n};x;Cliente ${n};$1.000`);
    await Promise.all([
      dropInto(folder('ventas'), 'ventas.txt', `${smsLines(0, 100, 'Oferta').join('\n')}\n`),
      dropInto(folder('cobranza'), 'cobranza.txt', `${smsLines(50, 150, 'Recuerde su pago').join('\n')}\n`),
      dropInto(folder('whatsapp'), 'facturas.txt', `${wa.join('\n')}\n`),
      dropInto(folder('aliado'), 'aliado.txt', `${smsLines(0, 50, 'Aliado').join('\n')}\n`),
    ]);
    const names = ['ventas.txt', 'cobranza.txt', 'facturas.txt', 'aliado.txt'];
    // The store through the CLI: no worker's ops server is the harness's.
    const done = await waitFor(
      'the four files submitted or completed',
      async () => {
        const all = await g.statusJson();
        const files = names.map((n) => all.find((m) => m.name === n));
        return files.every((m) => m && ['submitted', 'completed'].includes(m.state)) ? files : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const [ventas, cobranza, facturas, aliado] = done as [Manifest, Manifest, Manifest, Manifest];
    const company = [ventas, cobranza, facturas];
    const sum = (k: 'submitted' | 'contactLimited') => company.reduce((n, m) => n + m.counts[k], 0);
    expect(sum('submitted')).toBe(200);
    expect(sum('contactLimited')).toBe(100);
    expect(aliado.counts).toMatchObject({ submitted: 50, contactLimited: 0 });

    // What the service received: each of the company's 200 numbers once, on one channel.
    const smsLedger = (
      (await (await fetch(`${g.sandbox.url}/_sandbox/ledger`)).json()) as { entries: LedgerEntry[] }
    ).entries;
    const waLedger = (
      (await (await fetch(`${g.sandbox.url}/_sandbox/whatsapp/ledger`)).json()) as {
        entries: WhatsAppLedgerEntry[];
      }
    ).entries;
    const companyTo = [
      ...smsLedger.filter((e) => e.bulkId !== aliado.fileId).map((e) => e.to),
      ...waLedger.map((e) => e.destination),
    ];
    expect(companyTo).toHaveLength(200);
    expect(new Set(companyTo)).toEqual(new Set(nationals(0, 200).map((n) => `57${n}`)));
    expect(smsLedger.filter((e) => e.bulkId === aliado.fileId)).toHaveLength(50);

    // Each held-back row says which rule and when.
    for (const m of company) {
      const printedReport = await g.cli(['report', m.fileId]);
      const report = csvRecords(printedReport.stdout);
      expect(report.filter((x) => x.outcome === 'contact_limit')).toHaveLength(m.counts.contactLimited);
      for (const r of report.filter((x) => x.outcome === 'contact_limit'))
        expect(r.detail).toMatch(
          /^already contacted (this day|by another channel this week): by (sms|whatsapp) at \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} -05:00 \(contactLimit 1 (a day|channel a week)\)$/,
        );
    }

    // ---- dropline compliance: one row per contact made, the store alone ----
    const today = localDate(new Date(), 'America/Bogota');
    const printed = await g.cli(['compliance', '--from', today, '--to', today]);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout.split('\n')[0]).toBe(COMPLIANCE_HEADER);
    const rows = csvRecords(printed.stdout);
    expect(rows).toHaveLength(250);
    const byEntity = (e: string) => rows.filter((r) => r.entity === e);
    expect(byEntity('default')).toHaveLength(200);
    expect(new Set(byEntity('default').map((r) => r.number))).toEqual(
      new Set(nationals(0, 200).map((n) => `57${n}`)),
    );
    const accountOf = new Map([
      [ventas.fileId, ['default', 'ventas', 'sms']],
      [cobranza.fileId, ['cobranza', 'cobranza', 'sms']],
      [facturas.fileId, ['wa', 'whatsapp', 'whatsapp']],
      [aliado.fileId, ['aliado', 'aliado', 'sms']],
    ]);
    for (const r of rows) {
      expect([r.account, r.source, r.channel]).toEqual(accountOf.get(r.fileId!));
      expect(r.sentAt).toMatch(new RegExp(`^${today} \\d{2}:\\d{2}:\\d{2} -05:00$`));
      expect(r.window).toBe('none');
      expect(r.daySlot).toBe(`${today}/1`);
      expect(r.weekSlot).toMatch(/^\d{4}-\d{2}-\d{2}\/1$/);
    }
    const partner = await g.cli(['compliance', '--from', today, '--to', today, '--entity', 'aliado']);
    expect(csvRecords(partner.stdout)).toHaveLength(50);
    const usage = await g.cli(['compliance', '--from', '2026-02-30', '--to', today]);
    expect(usage.code).toBe(2);
  } finally {
    await Promise.all(fleet.map((w) => w.kill('SIGKILL')));
    await new Promise((r) => (front ? front.close(r) : r(null)));
    await g.close();
  }
});
