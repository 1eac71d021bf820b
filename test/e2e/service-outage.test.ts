// Issue 32, item 7: a messaging service that cannot be reached was invisible: the campaign page
// said `sending`, /readyz said nothing, and only failed chunks (and the service health page)
// showed it. Now the file carries the state detail SERVICE_UNREACHABLE with `since` (manifest,
// status, dashboard), /readyz shows the `service` check without failing, and `service-down` is
// alerted once when the outage starts and once when it ends.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/server.ts';
import { PipelineHarness, personalizedFile, waitFor } from '../helpers/pipeline-harness.ts';

interface Said {
  event: string;
  service?: { downSince: string; error: string; upAt: string | null };
}

let h: PipelineHarness;
let sink: Server;
const said: Said[] = [];
let restarted: Sandbox | null = null;

beforeAll(async () => {
  sink = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (s: string) => {
      body += s;
    });
    req.on('end', () => {
      said.push(JSON.parse(body) as Said);
      res.end('ok');
    });
  });
  await new Promise<void>((done) => sink.listen(0, '127.0.0.1', done));
  const url = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`;
  h = await PipelineHarness.create({
    api: { chunkSize: 5, concurrency: 1, retry: { baseMs: 20, maxMs: 100, maxAttempts: 100_000 } },
    config: { alerts: [{ url, events: ['service-down'] }] },
  });
  await h.start();
});

afterAll(async () => {
  await h?.close();
  await restarted?.close();
  await new Promise((done) => sink.close(done));
});

it('a file waiting on an unreachable service says so, /readyz shows it, service-down is said once each way', async () => {
  // The service answers: a first file goes through (and the daemon has its token).
  await h.dropFile('antes.txt', personalizedFile(3, 31).content);
  expect((await h.waitForState('antes.txt', 'completed')).detail).toBeNull();

  // The service stops: connections to it are refused.
  const port = h.sandbox.port;
  await h.sandbox.close();
  const gen = personalizedFile(12, 32);
  await h.dropFile('durante.txt', gen.content);
  const waiting = await h.waitForState('durante.txt', 'sending', { where: (m) => m.detail !== null });
  expect(waiting.detail).toMatchObject({ code: 'SERVICE_UNREACHABLE' });
  expect(waiting.detail!.error).toContain('ECONNREFUSED');
  expect(Date.parse(waiting.detail!.since)).not.toBeNaN();
  // status says it too, in words.
  const [fromStatus] = (await h.statusJson()).filter((m) => m.name === 'durante.txt');
  expect(fromStatus?.detail).toEqual(waiting.detail);
  expect((await h.cli(['status', waiting.fileId])).stdout).toContain(
    `service unreachable since ${waiting.detail!.since}, retrying`,
  );
  // /readyz shows the check and stays ready (200); /healthz is untouched.
  const ready = await fetch(`${h.opsUrl}/readyz`);
  const readiness = (await ready.json()) as { ready: boolean; checks: Record<string, string> };
  expect(ready.status).toBe(200);
  expect(readiness.ready).toBe(true);
  expect(readiness.checks.service).toMatch(/^unreachable since .*ECONNREFUSED/);
  expect((await fetch(`${h.opsUrl}/healthz`)).status).toBe(200);
  expect(await (await fetch(`${h.opsUrl}/metrics`)).text()).toMatch(/^dropline_service_unreachable 1$/m);
  // One alert for the outage, whatever the number of requests refused.
  await waitFor('the service-down alert', () => said.length > 0);
  expect(said[0]).toMatchObject({ event: 'service-down', service: { upAt: null } });
  expect(said[0]!.service!.downSince).toBe(waiting.detail!.since);

  // The service is back: the file goes on and completes, the detail gone, the check ok.
  restarted = await startSandbox({ port, timeScale: 0.01, deliveryDelayMs: 200 });
  const done = await h.waitForState('durante.txt', 'completed');
  expect(done.detail).toBeNull();
  expect(done.counts.delivered! + done.counts.undelivered!).toBe(gen.valid.length);
  expect(
    ((await (await fetch(`${h.opsUrl}/readyz`)).json()) as { checks: Record<string, string> }).checks.service,
  ).toBe('ok');
  expect(await (await fetch(`${h.opsUrl}/metrics`)).text()).toMatch(/^dropline_service_unreachable 0$/m);
  // Its end said once: two alerts in all.
  await waitFor('the recovery alert', () => said.length >= 2);
  expect(said).toHaveLength(2);
  expect(said[1]).toMatchObject({ event: 'service-down', service: { downSince: waiting.detail!.since } });
  expect(Date.parse(said[1]!.service!.upAt!)).toBeGreaterThanOrEqual(Date.parse(waiting.detail!.since));
});
