// Issue 35, keywords and a number's standing, end to end: `dropline run` bound to the sandbox's
// SMPP server. SALIR then ALTA across two campaigns (the second reaches the number again), help
// answered through POST /momessage (per short code), one confirmation a number a day, a soft
// opt-out flagged for review and not applied, a listed number's ALTA not lifting it, an
// operator's opt-out by hand.
//
// Answers go to the sandbox's POST /momessage with the SMS account's token; its two-way ledger
// (GET /_sandbox/momessage/ledger) is what the test reads.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { maskNumber } from '../../src/core/redact.ts';
import { csvRecords, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;
let listDir = '';

const A = '3001110001'; // SALIR, then ALTA
const B = '3001110002'; // AYUDA
const C = '3001110003'; // a soft opt-out
const D = '3001110004'; // on the configured list, then ALTA
const E = '3001110005'; // HELP to another short code
const F = '3001110006'; // opted out by an operator
const HELP = 'Acme: ayuda en acme.co o al 601 555 0100';
const HELP_COBROS = 'Cobros Acme: 601 555 0000';
const CONFIRM_OUT = 'No recibirás más mensajes de Acme. Responde ALTA para volver.';
const CONFIRM_IN = 'Volverás a recibir mensajes de Acme.';

beforeAll(async () => {
  listDir = await mkdtemp(join(tmpdir(), 'dropline-list-'));
  await writeFile(join(listDir, 'optouts.txt'), `# kept by compliance\n${D}\n`);
  h = await PipelineHarness.create({
    sandbox: {
      smpp: {},
      accounts: [
        { username: 'demo', password: 'demo', shortCodes: ['85000'] },
        { username: 'acme', password: 'acme-cobros', shortCodes: ['890123'] },
      ],
    },
    config: (sandbox) => ({
      // A two-way account of its own credentials: replies to its short code are answered with it.
      accounts: {
        cobros: {
          channel: 'twoway',
          baseUrl: sandbox.url,
          username: 'acme',
          password: 'acme-cobros',
          shortCode: '890123',
        },
      },
      suppressionList: join(listDir, 'optouts.txt'),
      replies: {
        smpp: { host: '127.0.0.1', port: sandbox.smpp!.port, systemId: 'demo', password: 'demo' },
        helpText: HELP,
        confirmOptOut: CONFIRM_OUT,
        confirmOptIn: CONFIRM_IN,
        byShortCode: { '890123': { helpText: HELP_COBROS } },
      },
    }),
  });
  await h.start();
});

afterAll(async () => {
  await h?.close();
  if (listDir) await rm(listDir, { recursive: true, force: true });
});

async function reply(from: string, text: string, to?: string): Promise<void> {
  const res = await fetch(`${h.sandbox.url}/_sandbox/replies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([{ from: `57${from}`, text, ...(to ? { to } : {}) }]),
  });
  expect(res.status, await res.text()).toBe(202);
}

async function cli(args: string[]): Promise<string> {
  const r = await h.cli(args);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

async function campaign(name: string, numbers: string[]): Promise<Record<string, string>> {
  await h.dropFile(name, `${numbers.map((n) => `${n};Hola ${n}`).join('\n')}\n`);
  const m = await h.waitForState(name, 'completed');
  const report = csvRecords(await cli(['report', m.fileId]));
  return Object.fromEntries(report.map((r) => [r.number!.slice(-10), r.outcome!]));
}

const answersTo = async (n: string) => (await h.moLedger()).filter((a) => a.phoneNumber === `57${n}`);

it('keywords, help, a soft opt-out and a listed number, across two campaigns', async () => {
  await reply(A, 'Salir.');
  await reply(B, '¿Ayuda?');
  await reply(C, 'no me escriban más');
  await reply(D, 'ALTA');
  await reply(E, 'help', '890123');
  await waitFor('five replies kept', async () => csvRecords(await cli(['replies'])).length === 5);

  // Help answered with the short code's text, from the short code written to, with the SMS
  // account's token (the sandbox takes Bearer only); the opt-out confirmed.
  await waitFor('help and confirmation answered', async () => (await h.moLedger()).length >= 3);
  expect(await answersTo(B)).toEqual([
    {
      account: 'demo',
      shortCode: '85000',
      phoneNumber: `57${B}`,
      text: HELP,
      count: 1,
      id: expect.any(String),
    },
  ]);
  // A reply to the two-way account's short code: answered with that account.
  expect((await answersTo(E)).map((a) => [a.account, a.shortCode, a.text])).toEqual([
    ['acme', '890123', HELP_COBROS],
  ]);
  expect((await answersTo(A)).map((a) => a.text)).toEqual([CONFIRM_OUT]);

  // The soft opt-out is flagged, nothing else is.
  const review = csvRecords(await cli(['replies', '--review']));
  expect(review.map((r) => [r.from, r.text, r.optOut])).toEqual([[`57${C}`, 'no me escriban más', 'false']]);
  // The dashboard: the count in the header, the list with the number masked.
  const summary = (await h.opsGet('/api/summary')).body as { repliesToReview: number };
  expect(summary.repliesToReview).toBe(1);
  expect((await h.opsGet('/api/replies/review')).body).toEqual([
    {
      id: expect.any(Number),
      receivedAt: expect.any(String),
      from: maskNumber(`57${C}`),
      to: '85000',
      text: 'no me escriban más',
    },
  ]);

  // Standing: A opted out by its reply, D kept by the list, C untouched.
  expect(await cli(['optouts', `+57 ${A.slice(0, 3)} ${A.slice(3)}`])).toMatch(
    new RegExp(
      `^57${A}: opted out since \\S+ \\(reply \\d+\\)\\nhistory:\\n  \\S+  opted out by reply \\d+ "SALIR"\\n$`,
    ),
  );
  const d = JSON.parse(await cli(['optouts', D, '--json']));
  expect(d.optedOut).toBeNull();
  expect(d.history.map((c: Record<string, unknown>) => [c.change, c.source, c.keyword, c.detail])).toEqual([
    ['kept_by_list', 'list', 'ALTA', 'suppressionList'],
  ]);
  expect(await cli(['optouts', C])).toBe(`57${C}: not opted out by a reply\nhistory: none\n`);

  // Campaign 1: A held back (its reply), D suppressed (the list), C reached (flagged only).
  expect(await campaign('one.txt', [A, B, C, D])).toEqual({
    [A]: 'suppressed',
    [B]: 'sent',
    [C]: 'sent',
    [D]: 'suppressed',
  });

  // ALTA lifts A's opt-out: campaign 2 reaches A again; D stays suppressed.
  await reply(A, 'alta');
  await waitFor('A opted in', async () => JSON.parse(await cli(['optouts', A, '--json'])).optedOut === null);
  const a = JSON.parse(await cli(['optouts', A, '--json']));
  expect(a.history.map((c: Record<string, unknown>) => [c.change, c.source, c.keyword])).toEqual([
    ['opted_out', 'reply', 'SALIR'],
    ['opted_in', 'reply', 'ALTA'],
  ]);
  // An operator opts F out by hand (a phone call): held back like a reply's opt-out.
  const byHand = await cli(['optouts', F, '--opt-out', '--note', 'ticket 88: asked by phone']);
  expect(byHand).toMatch(
    new RegExp(
      `^57${F}: opted out since \\S+\nhistory:\n  \\S+  opted out by operator: ticket 88: asked by phone\n$`,
    ),
  );
  expect(await campaign('two.txt', [A, D, F])).toEqual({ [A]: 'sent', [D]: 'suppressed', [F]: 'suppressed' });
  const f = JSON.parse(await cli(['optouts', F, '--opt-in', '--json']));
  expect(f.optedOut).toBeNull();
  expect(f.history.map((c: Record<string, unknown>) => [c.change, c.source, c.detail])).toEqual([
    ['opted_out', 'operator', 'ticket 88: asked by phone'],
    ['opted_in', 'operator', null],
  ]);
  for (const bad of [
    ['optouts', 'abc'],
    ['optouts', F, '--opt-out', '--opt-in'],
    ['optouts', F, '--note', 'x'],
  ])
    expect((await h.cli(bad)).code).toBe(2);

  // One confirmation a number a day: A's opt-in, the same day as its opt-out, got none; nor
  // did D's (a list still holds it).
  expect((await answersTo(A)).map((a) => [a.text, a.count])).toEqual([[CONFIRM_OUT, 1]]);
  expect(await answersTo(D)).toEqual([]);
  // Logs mask the numbers; no text of a reply is logged.
  expect(h.daemonOutput).not.toContain(A);
  expect(h.daemonOutput).not.toContain('no me escriban');
});
