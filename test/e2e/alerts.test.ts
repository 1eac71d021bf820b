// Issue 13, alerts: webhooks told when a file completes or is rejected (JSON signed with
// HMAC-SHA256, or a Slack incoming-webhook body), delivered in the background: a receiver
// that is down is retried without holding any file back. And `source-down`, said once an
// outage when a source's listings have failed for sourceDownAfterMs.
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { startAlerts } from '../../src/ops/alerts.ts';
import type { Manifest } from '../../src/pipeline/reports.ts';
import type { Store } from '../../src/store/store.ts';
import { freePort, PipelineHarness, personalizedFile, waitFor } from '../helpers/pipeline-harness.ts';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on loopback that keeps every request. */
async function hookReceiver(): Promise<{ server: Server; url: string; got: Received[] }> {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      got.push({ path: req.url ?? '', headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got };
}

const SECRET = randomBytes(16).toString('hex');
const gen = personalizedFile(1500, 71);
let h: PipelineHarness;
let hooks: Awaited<ReturnType<typeof hookReceiver>>;
let done: Manifest;
let rejected: Manifest;
let text = '';

beforeAll(async () => {
  hooks = await hookReceiver();
  const dead = await freePort();
  h = await PipelineHarness.create({
    ops: { token: 'alerts-ops-token' },
    config: {
      alerts: [
        { url: `${hooks.url}/json`, events: ['completed', 'rejected'], secret: SECRET },
        { url: `${hooks.url}/slack`, events: ['completed'], format: 'slack' },
        // Nothing listens there: every try is refused, and retried for half a minute.
        { url: `http://127.0.0.1:${dead}/hook`, events: ['completed', 'rejected'] },
      ],
    },
  });
  await h.start();
  await h.dropFile('aviso.txt', gen.content);
  await h.dropFile('errada.txt', `#! prioridad: alta\n${gen.content}`);
  done = await h.waitForState('aviso.txt', 'completed', { timeoutMs: 50_000 });
  rejected = await h.waitForState('errada.txt', 'rejected', { timeoutMs: 50_000 });
  const res = await fetch(`${h.opsUrl}/metrics`, { headers: { authorization: 'Bearer alerts-ops-token' } });
  text = await res.text();
  await waitFor('three alerts', () => hooks.got.length >= 3);
}, 70_000);

afterAll(async () => {
  await h?.close();
  await new Promise((r) => hooks?.server.close(r));
});

const json = () => hooks.got.filter((g) => g.path === '/json');

it('a completed and a rejected file: a signed JSON alert each, with the manifest (numbers masked)', () => {
  const byEvent = new Map(json().map((g) => [g.headers['x-dropline-event'], g]));
  expect([...byEvent.keys()].sort()).toEqual(['completed', 'rejected']);
  for (const g of json()) {
    const expected = `sha256=${createHmac('sha256', SECRET).update(g.body).digest('hex')}`;
    expect(g.headers['x-dropline-signature']).toBe(expected);
    expect(g.body).not.toMatch(/57\d{10}/);
  }
  const completed = JSON.parse(byEvent.get('completed')!.body);
  expect(completed).toMatchObject({
    event: 'completed',
    file: {
      fileId: done.fileId,
      name: 'aviso.txt',
      state: 'completed',
      counts: { submitted: gen.valid.length },
    },
  });
  const rejection = JSON.parse(byEvent.get('rejected')!.body);
  expect(rejection).toMatchObject({
    event: 'rejected',
    file: { fileId: rejected.fileId, rejection: { code: 'BAD_DIRECTIVE' } },
  });
});

it('the Slack format: one line of text, unsigned without a secret', () => {
  const slack = hooks.got.filter((g) => g.path === '/slack');
  expect(slack).toHaveLength(1);
  expect(slack[0]!.headers['x-dropline-signature']).toBeUndefined();
  const body = JSON.parse(slack[0]!.body) as { text: string };
  expect(body.text).toMatch(/^dropline: aviso\.txt completed: 1,?500 records, \d+ valid, \d+ submitted/);
});

it('a receiver that is down holds nothing back: both files ended while its alerts were still being retried', () => {
  // Counted when an alert ends: the dead URL's had not (failed 0), the others were delivered.
  const count = (result: string) =>
    [
      ...text.matchAll(
        new RegExp(`^dropline_alerts_total\\{event="(\\w+)",result="${result}"\\} (\\d+)$`, 'gm'),
      ),
    ]
      .map((m) => Number(m[2]))
      .reduce((a, b) => a + b, 0);
  expect(count('failed')).toBe(0);
  expect(done.counts.submitted).toBe(gen.valid.length);
});

describe('source-down', () => {
  it('said once an outage, after sourceDownAfterMs, and again after the source came back and failed again', async () => {
    const local = await hookReceiver();
    const alerts = startAlerts({
      alerts: [
        { url: `${local.url}/down`, events: ['source-down'], format: 'json', sourceDownAfterMs: 1500 },
      ],
      secrets: [null],
      store: {} as Store,
      logger: silentLogger,
    });
    try {
      const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
      alerts.sourceListed('sftp-partner', 'connect ECONNREFUSED');
      await pause(200);
      alerts.sourceListed('sftp-partner', 'connect ECONNREFUSED');
      await pause(200);
      // Some 200 ms into the outage (its second failure): not yet sourceDownAfterMs.
      expect(local.got).toHaveLength(0);
      await pause(1400);
      alerts.sourceListed('sftp-partner', 'connect ECONNREFUSED');
      alerts.sourceListed('sftp-partner', 'connect ECONNREFUSED');
      await waitFor('the alert', () => local.got.length === 1);
      expect(JSON.parse(local.got[0]!.body)).toMatchObject({
        event: 'source-down',
        source: { name: 'sftp-partner', error: 'connect ECONNREFUSED' },
      });
      alerts.sourceListed('sftp-partner', null);
      alerts.sourceListed('sftp-partner', 'timed out');
      await pause(1600);
      alerts.sourceListed('sftp-partner', 'timed out');
      await waitFor('the second outage', () => local.got.length === 2);
      expect(JSON.parse(local.got[1]!.body)).toMatchObject({ source: { error: 'timed out' } });
    } finally {
      await alerts.close();
      await new Promise((r) => local.server.close(r));
    }
  });
});

describe('a webhook URL with credentials', () => {
  /** A source-down alert to `url`: what the receiver got, and every log line meanwhile. */
  async function alertTo(url: string, tries: number): Promise<string[]> {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const alerts = startAlerts({
      alerts: [{ url, events: ['source-down'], format: 'json', sourceDownAfterMs: 0 }],
      secrets: [null],
      store: {} as Store,
      logger,
      retry: { baseMs: 10, maxMs: 10, tries },
    });
    try {
      alerts.sourceListed('s3-partner', 'connect ECONNREFUSED');
      alerts.sourceListed('s3-partner', 'connect ECONNREFUSED');
      await waitFor('the alert ended', () => lines.some((l) => /alert (not )?delivered/.test(l)));
    } finally {
      await alerts.close();
    }
    return lines;
  }

  it('user:password@ is sent as Basic authentication, the query string as it is', async () => {
    const local = await hookReceiver();
    const password = randomBytes(9).toString('hex');
    try {
      const lines = await alertTo(`${local.url.replace('//', `//hook:${password}@`)}/in?key=abc123`, 1);
      expect(local.got).toHaveLength(1);
      expect(local.got[0]!.path).toBe('/in?key=abc123');
      expect(local.got[0]!.headers.authorization).toBe(
        `Basic ${Buffer.from(`hook:${password}`).toString('base64')}`,
      );
      expect(lines.join('')).not.toContain(password);
    } finally {
      await new Promise((r) => local.server.close(r));
    }
  });

  it('a password that is not valid percent-encoding (%zz) is sent as written', async () => {
    const local = await hookReceiver();
    try {
      await alertTo(`${local.url.replace('//', '//hook:p%zz@')}/in`, 1);
      expect(local.got[0]!.headers.authorization).toBe(
        `Basic ${Buffer.from('hook:p%zz').toString('base64')}`,
      );
    } finally {
      await new Promise((r) => local.server.close(r));
    }
  });

  it('not delivered: no log line shows the password or the query string', async () => {
    const password = randomBytes(9).toString('hex');
    const key = randomBytes(9).toString('hex');
    const lines = await alertTo(`http://hook:${password}@127.0.0.1:${await freePort()}/in?key=${key}`, 2);
    const failed = lines.find((l) => l.includes('alert not delivered'));
    expect(failed).toBeDefined();
    for (const l of lines) {
      expect(l).not.toContain(password);
      expect(l).not.toContain(key);
    }
  });
});
