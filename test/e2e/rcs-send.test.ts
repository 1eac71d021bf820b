// Issue 15, RCS and flash SMS through POST /mtmessage: an RCS source's files go out as
// /mtmessage requests with Channel RCS (Type 2 for a personalized file, Type 1 for a bulk
// one), an sms file saying `#! flash: true` with FlashSMS 1; their reports come to the
// account webhook (registered with dropline's notify URL and its token) without a bulkId, and
// each reaches its recipient through the chunk named in CallbackData. An account without RCS
// gets Status 1: every recipient rejected with the service's reason.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { csvRecords, PipelineHarness } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** An RCS source on the `rcs` account (the sandbox's demo credentials), or an sms source. */
async function harness(channel: 'rcs' | 'sms', rcs = true): Promise<PipelineHarness> {
  const created = await PipelineHarness.create({
    sandbox: { accounts: [{ username: 'demo', password: 'demo', rcs }] },
    source: channel === 'rcs' ? { channel: 'rcs', account: 'rcs' } : {},
    config: (sandbox) =>
      channel === 'rcs'
        ? { accounts: { rcs: { channel: 'rcs', baseUrl: sandbox.url, username: 'demo', password: 'demo' } } }
        : {},
  });
  // The account webhook, as support would register it: dropline's notify URL with its token.
  const res = await fetch(`${created.sandbox.url}/_sandbox/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      account: 'demo',
      url: `http://127.0.0.1:${created.notifyPort}/notify?token=${created.notifyToken}`,
    }),
  });
  expect(res.status).toBeLessThan(300);
  return created;
}

const numbers = (n: number) => Array.from({ length: n }, (_, i) => `3${String(150_000_000 + i)}`);

function mtRequests(h: PipelineHarness) {
  return h.sandbox.requests.filter((q) => q.endpoint === '/mtmessage');
}

it('an RCS file: /mtmessage requests with Channel RCS, each recipient once, reports mapped back through the webhook', async () => {
  h = await harness('rcs');
  const path = join(h.dir, 'promo-rcs.txt');
  const list = numbers(30);
  await writeFile(path, `${list.map((n, i) => `${n};Hola cliente ${i + 1}`).join('\n')}\n`);
  const r = await h.cli(['send', path, '--wait', '--json']);
  const m = JSON.parse(r.stdout) as Manifest;
  expect(m.state).toBe('completed');
  expect(m.channel).toBe('rcs');
  expect(m.counts).toMatchObject({ valid: 30, submitted: 30, delivered: 30, pendingDelivery: 0 });
  expect(mtRequests(h).length).toBeGreaterThan(0);
  expect(h.sandbox.requests.filter((q) => q.endpoint === '/mtmessage/massive')).toEqual([]);
  const ledger = (await h.ledger('')).entries;
  expect(ledger.map((e) => e.to).sort()).toEqual(list.map((n) => `57${n}`).sort());
  expect(ledger.every((e) => e.count === 1)).toBe(true);
  const report = csvRecords((await h.cli(['report', m.fileId])).stdout);
  expect(report.filter((row) => row.status === 'DELIVERED_TO_HANDSET')).toHaveLength(30);
});

it('an sms file with `#! flash: true` goes through /mtmessage with FlashSMS; the others stay on the massive endpoint', async () => {
  h = await harness('sms');
  const path = join(h.dir, 'alerta.txt');
  const list = numbers(12);
  await writeFile(path, `#! flash: true\nCorte de servicio programado hoy 14:00\n${list.join('\n')}\n`);
  const m = JSON.parse((await h.cli(['send', path, '--wait', '--json'])).stdout) as Manifest;
  expect(m.state).toBe('completed');
  expect([m.channel, m.flash]).toEqual(['sms', true]);
  expect(m.counts).toMatchObject({ valid: 12, submitted: 12, delivered: 12 });
  expect(mtRequests(h).length).toBeGreaterThan(0);
  expect(h.sandbox.requests.filter((q) => q.endpoint === '/mtmessage/massive')).toEqual([]);
});

it('an account without RCS: Status 1, every recipient rejected with the service reason, nothing sent', async () => {
  h = await harness('rcs', false);
  const path = join(h.dir, 'sin-rcs.txt');
  await writeFile(
    path,
    `${numbers(5)
      .map((n) => `${n};Hola`)
      .join('\n')}\n`,
  );
  const m = JSON.parse((await h.cli(['send', path, '--json'])).stdout) as Manifest;
  expect(m.counts).toMatchObject({ submitted: 0, rejected: 5 });
  const report = csvRecords((await h.cli(['report', m.fileId])).stdout);
  const rejected = report.filter((row) => row.outcome === 'rejected');
  expect(rejected).toHaveLength(5);
  expect(
    rejected.every((row) => row.code === 'DROPLINE_ERR_SERVICE_REJECTED' && /RCS/i.test(row.detail ?? '')),
  ).toBe(true);
  expect((await h.ledger('')).entries).toEqual([]);
});
