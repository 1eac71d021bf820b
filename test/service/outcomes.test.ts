import diagnosticsChannel from 'node:diagnostics_channel';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RequestRecord, type Sandbox, startSandbox } from '../../src/sandbox/server.ts';
import {
  ATTEMPT_CHANNEL,
  type AttemptEvent,
  type SendResult,
  ServiceClient,
  type ServiceClientOptions,
} from '../../src/service/client.ts';
import { closedPort, getJson, makeChunk, postJson, startReceiver, waitFor } from './helpers.ts';

let sandbox: Sandbox;
const clients: ServiceClient[] = [];

beforeEach(async () => {
  sandbox = await startSandbox({ timeScale: 0.001, notify: false });
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await sandbox.close();
});

function client(opts: Partial<ServiceClientOptions> = {}): ServiceClient {
  const c = new ServiceClient({
    baseUrl: sandbox.url,
    username: 'demo',
    password: 'demo',
    retry: { baseMs: 5, maxMs: 40, maxAttempts: 4 },
    ...opts,
  });
  clients.push(c);
  return c;
}

async function massiveRequests(): Promise<RequestRecord[]> {
  const { requests } = await getJson<{ requests: RequestRecord[] }>(`${sandbox.url}/_sandbox/requests`);
  return requests.filter((r) => r.endpoint === '/mtmessage/massive');
}

interface LedgerView {
  destinations: number;
  accepted: number;
  duplicates: number;
  entries: { messageId: string; to: string; count: number }[];
}
const ledger = () => getJson<LedgerView>(`${sandbox.url}/_sandbox/ledger`);
const faults = (body: unknown) => postJson(`${sandbox.url}/_sandbox/faults`, body);

/** Every destination of the chunk is in exactly one part, in order. */
function expectCovered(result: SendResult, size: number): void {
  let next = 0;
  for (const part of result.parts) {
    expect(part.start).toBe(next);
    expect(part.destinations.length).toBe(part.end - part.start);
    next = part.end;
  }
  expect(next).toBe(size);
}

describe('outcomes', () => {
  it('2xx: accepted with the parsed body and its 28-digit transaction number', async () => {
    const result = await client().sendChunk(makeChunk(3));
    expect(result.parts).toHaveLength(1);
    const outcome = result.parts[0]!.outcome;
    expect(outcome).toMatchObject({ kind: 'accepted', status: 200, attempts: 1 });
    if (outcome.kind !== 'accepted') throw new Error('not accepted');
    expect(outcome.transactionNumber).toMatch(/^\d{28}$/);
    expect(outcome.body).toMatchObject({ transactionNumber: outcome.transactionNumber, bulkId: 'b1' });
  });

  it('400: bisects a 1000-destination chunk until the 2 bad numbers are isolated; the rest go out once', async () => {
    const bad = [137, 802];
    const result = await client({ concurrency: 4 }).sendChunk(makeChunk(1000, { bad }));
    expectCovered(result, 1000);
    const rejected = result.parts.filter((p) => p.outcome.kind === 'rejected');
    expect(rejected.map((p) => [p.start, p.end])).toEqual(bad.map((i) => [i, i + 1]));
    for (const p of rejected) {
      expect(p.outcome).toMatchObject({ code: 'DROPLINE_ERR_SERVICE_REJECTED', status: 400 });
      expect(p.outcome.kind !== 'accepted' && p.outcome.reason).toMatch(
        /destinations\[0\]\.to is not a number/,
      );
      expect(p.destinations[0]!.messageId).toBe(`m${p.start}`);
    }
    expect(
      result.parts.filter((p) => p.outcome.kind === 'accepted').reduce((n, p) => n + p.end - p.start, 0),
    ).toBe(998);
    const l = await ledger();
    expect([l.destinations, l.accepted, l.duplicates]).toEqual([998, 998, 0]);
    expect(l.entries.some((e) => e.messageId === 'm137' || e.messageId === 'm802')).toBe(false);
  });

  it('413: splits the chunk in halves until the parts fit', async () => {
    await faults({ maxBodyBytes: 20_000 });
    const result = await client().sendChunk(makeChunk(1000));
    expectCovered(result, 1000);
    expect(result.parts.length).toBeGreaterThan(1);
    expect(result.parts.every((p) => p.outcome.kind === 'accepted')).toBe(true);
    const l = await ledger();
    expect([l.destinations, l.duplicates]).toEqual([1000, 0]);
  });

  it('413 on a single destination: failed, too large', async () => {
    await faults({ maxBodyBytes: 10 });
    const result = await client().sendChunk(makeChunk(2));
    expectCovered(result, 2);
    expect(result.parts.map((p) => p.outcome.kind !== 'accepted' && p.outcome.code)).toEqual([
      'DROPLINE_ERR_SERVICE_TOO_LARGE',
      'DROPLINE_ERR_SERVICE_TOO_LARGE',
    ]);
  });

  it('429: waits for Retry-After, then sends', async () => {
    await faults({ massive: { '429': { probability: 1, times: 1, retryAfter: '1' } } });
    const c = client();
    const events: AttemptEvent[] = [];
    c.on('attempt', (e: AttemptEvent) => events.push(e));
    const started = Date.now();
    const result = await c.sendChunk(makeChunk(5));
    expect(result.parts[0]!.outcome).toMatchObject({ kind: 'accepted', attempts: 2 });
    expect(events.map((e) => [e.status, e.result, e.delayMs ?? null])).toEqual([
      [429, 'rate_limited', 1000],
      [200, 'accepted', null],
    ]);
    // The wait is the service's, not a guess: the second request cannot come sooner.
    expect(Date.now() - started).toBeGreaterThanOrEqual(990);
  });

  it('5xx: retried with backoff, then accepted', async () => {
    await faults({ massive: { '503': { probability: 1, times: 1 }, '500': { probability: 1, times: 1 } } });
    const result = await client().sendChunk(makeChunk(5));
    expect(result.parts[0]!.outcome).toMatchObject({ kind: 'accepted', attempts: 3 });
    expect((await massiveRequests()).map((r) => r.status)).toEqual([500, 503, 200]);
    expect((await ledger()).duplicates).toBe(0);
  });

  it('500/503 through every try: failed, retryable, with the last error', async () => {
    await faults({ massive: { '503': 1 } });
    const c = client();
    const events: AttemptEvent[] = [];
    c.on('attempt', (e: AttemptEvent) => events.push(e));
    const result = await c.sendChunk(makeChunk(5));
    expect(result.parts[0]!.outcome).toMatchObject({
      kind: 'failed',
      code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE',
      status: 503,
      retryable: true,
      attempts: 4,
    });
    expect(events.map((e) => e.result)).toEqual(['retry', 'retry', 'retry', 'failed']);
    // Exponential: each wait at least half the doubled base.
    expect(events.slice(0, 3).map((e) => e.delayMs! >= 2.5 * 2 ** (e.attempt - 1))).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('connection refused: retried, then failed; nothing was written', async () => {
    const port = await closedPort();
    const c = client({ baseUrl: `http://127.0.0.1:${port}` });
    const result = await c.sendChunk(makeChunk(2));
    expect(result.parts[0]!.outcome).toMatchObject({
      kind: 'failed',
      code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE',
      status: null,
    });
    expect(result.parts[0]!.outcome.kind !== 'accepted' && result.parts[0]!.outcome.reason).toMatch(
      /ECONNREFUSED/,
    );
  });

  it('reset after the body was read: in_doubt, never resent', async () => {
    await faults({ massive: { reset: { probability: 1, times: 1 } } });
    const c = client();
    const events: AttemptEvent[] = [];
    c.on('attempt', (e: AttemptEvent) => events.push(e));
    const result = await c.sendChunk(makeChunk(4));
    expect(result.parts[0]!.outcome).toMatchObject({
      kind: 'in_doubt',
      code: 'DROPLINE_ERR_SERVICE_IN_DOUBT',
      status: null,
      attempts: 1,
    });
    expect(events.map((e) => [e.result, e.written, e.status])).toEqual([['in_doubt', true, 0]]);
    // The service did take it: exactly why the client must not resend on its own.
    const l = await ledger();
    expect([l.destinations, l.duplicates]).toEqual([4, 0]);
    expect((await massiveRequests()).length).toBe(1);
  });

  it.each([502, 504])(
    '%i (a gateway) after the body was written: in_doubt, never resent, SMS and RCS alike',
    async (status) => {
      const rcs = {
        channel: 'RCS',
        flash: false,
        customMessageId: 'c1',
        callbackData: { f: 'b1', c: 1 },
      } as const;
      await faults({ massive: { [status]: 1 }, mtmessage: { [status]: 1 } });
      const c = client();
      const events: AttemptEvent[] = [];
      c.on('attempt', (e: AttemptEvent) => events.push(e));
      for (const chunk of [makeChunk(3), { ...makeChunk(3), via: rcs }]) {
        const result = await c.sendChunk(chunk);
        expect(result.parts[0]!.outcome).toMatchObject({
          kind: 'in_doubt',
          code: 'DROPLINE_ERR_SERVICE_IN_DOUBT',
          status,
          retryable: false,
          attempts: 1,
        });
      }
      expect(events.map((e) => [e.status, e.result, e.written])).toEqual([
        [status, 'in_doubt', true],
        [status, 'in_doubt', true],
      ]);
      const { requests } = await getJson<{ requests: RequestRecord[] }>(`${sandbox.url}/_sandbox/requests`);
      expect(requests.filter((r) => r.endpoint !== '/token').map((r) => [r.endpoint, r.status])).toEqual([
        ['/mtmessage/massive', status],
        ['/mtmessage', status],
      ]);
    },
  );

  it('no answer before the headers timeout: in_doubt', async () => {
    await faults({ massive: { timeout: { probability: 1, times: 1 } } });
    const result = await client({ headersTimeoutMs: 300 }).sendChunk(makeChunk(2));
    expect(result.parts[0]!.outcome).toMatchObject({
      kind: 'in_doubt',
      code: 'DROPLINE_ERR_SERVICE_IN_DOUBT',
    });
    expect(result.parts[0]!.outcome.kind !== 'accepted' && result.parts[0]!.outcome.reason).toMatch(
      /HEADERS_TIMEOUT/,
    );
  });

  it('403: forbidden with the service message, not retried', async () => {
    await faults({ massive: { '403': 1 } });
    const result = await client().sendChunk(makeChunk(3));
    expect(result.parts[0]!.outcome).toMatchObject({
      kind: 'forbidden',
      code: 'DROPLINE_ERR_SERVICE_FORBIDDEN',
      status: 403,
      reason: 'injected fault 403',
      attempts: 1,
    });
    expect((await massiveRequests()).length).toBe(1);
  });

  it('an unexpected status fails without retry', async () => {
    const odd = await startReceiver((req, res) => {
      if (req.path !== '/token') return 404;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: 't', expires_in: 14400 }));
      return null;
    });
    try {
      const result = await client({ baseUrl: odd.url }).sendChunk(makeChunk(1));
      expect(result.parts[0]!.outcome).toMatchObject({
        kind: 'failed',
        code: 'DROPLINE_ERR_SERVICE_FAILED',
        status: 404,
        attempts: 1,
      });
    } finally {
      await odd.close();
    }
  });

  it('a token endpoint that is missing leaves the chunk failed, not sent', async () => {
    const result = await client({ baseUrl: `${sandbox.url}/nowhere` }).sendChunk(makeChunk(1));
    expect(result.parts[0]!.outcome).toMatchObject({
      kind: 'failed',
      code: 'DROPLINE_ERR_SERVICE_UNAVAILABLE',
    });
    expect(result.parts[0]!.outcome.kind !== 'accepted' && result.parts[0]!.outcome.reason).toMatch(
      /token.*404/,
    );
  });

  it('publishes every attempt on the diagnostics channel', async () => {
    await faults({ massive: { '503': { probability: 1, times: 1 } } });
    const seen: AttemptEvent[] = [];
    const listener = (m: unknown) => seen.push(m as AttemptEvent);
    diagnosticsChannel.subscribe(ATTEMPT_CHANNEL, listener);
    try {
      await client().sendChunk(makeChunk(7, { chunkId: 'chunk-7' }));
    } finally {
      diagnosticsChannel.unsubscribe(ATTEMPT_CHANNEL, listener);
    }
    expect(seen.map((e) => [e.chunkId, e.partId, e.attempt, e.status, e.destinations, e.result])).toEqual([
      ['chunk-7', 'chunk-7', 1, 503, 7, 'retry'],
      ['chunk-7', 'chunk-7', 2, 200, 7, 'accepted'],
    ]);
    expect(seen.every((e) => typeof e.latencyMs === 'number' && e.latencyMs >= 0)).toBe(true);
  });

  it('keeps the password and the notifyUrl token out of outcomes', async () => {
    const receiver = await startReceiver();
    try {
      const events: AttemptEvent[] = [];
      const c = client({
        baseUrl: receiver.url,
        notifyUrl: 'https://hooks.example/notify?token=s3cret-token',
        notifyContentType: 'application/json; charset=utf-8',
        password: 'pw-secret',
      });
      c.on('attempt', (e: AttemptEvent) => events.push(e));
      // The bare receiver answers 200 to /token with no access_token: the client reports it.
      const result = await c.sendChunk(makeChunk(1));
      expect(result.parts[0]!.outcome.kind).toBe('failed');
      expect(JSON.stringify(result)).not.toMatch(/s3cret|pw-secret/);
    } finally {
      await receiver.close();
    }
  });

  it('sends byte-identical bodies for the same chunk and the notify settings as given', async () => {
    const bodies: string[] = [];
    const capture = await startReceiver((req, res) => {
      if (req.path === '/token') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ access_token: 't', expires_in: 14400, refresh_token: 'r', token_type: 'bearer' }),
        );
        return null;
      }
      bodies.push(req.body);
      return 200;
    });
    try {
      const chunk = {
        ...makeChunk(3),
        messages: [
          ...makeChunk(3).messages,
          { text: 'otro', destinations: [{ to: '573009999999', messageId: 'x' }] },
        ],
        callbackData: JSON.stringify({ file: 'f1', n: 1 }),
      };
      const c = client({
        baseUrl: capture.url,
        notifyUrl: 'https://hooks.example/notify?token=abc',
        notifyContentType: 'application/json',
      });
      await c.sendChunk(chunk);
      await c.sendChunk(chunk);
      expect(bodies).toHaveLength(2);
      expect(bodies[0]).toBe(bodies[1]);
      const parsed = JSON.parse(bodies[0]!);
      expect(Object.keys(parsed)).toEqual(['bulkId', 'messages']);
      expect(parsed.messages[1]).toEqual({
        destinations: [{ to: '573009999999', messageId: 'x' }],
        text: 'otro',
        notifyUrl: 'https://hooks.example/notify?token=abc',
        notifyContentType: 'application/json',
        callbackData: '{"file":"f1","n":1}',
      });
    } finally {
      await capture.close();
    }
  });
});

describe('pacing', () => {
  it('never has more requests in flight than `concurrency`', async () => {
    let inflight = 0;
    let peak = 0;
    const holds: (() => void)[] = [];
    const slow = await startReceiver((req, res) => {
      if (req.path === '/token') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ access_token: 't', expires_in: 14400 }));
        return null;
      }
      inflight++;
      peak = Math.max(peak, inflight);
      holds.push(() => {
        inflight--;
        res.writeHead(200).end('{}');
      });
      return null;
    });
    try {
      const c = client({ baseUrl: slow.url, concurrency: 2 });
      const all = Promise.all(
        Array.from({ length: 6 }, (_, i) => c.sendChunk(makeChunk(1, { chunkId: `c${i}` }))),
      );
      for (let released = 0; released < 6; released++) {
        await waitFor(() => holds.length > 0, 'a request in flight');
        await new Promise((r) => setTimeout(r, 20)); // give a third request the chance to show up
        holds.shift()!();
      }
      await all;
      expect(peak).toBe(2);
    } finally {
      await slow.close();
    }
  });

  it('spaces requests by ratePerSecond counted in destinations', async () => {
    const c = client({ ratePerSecond: 1000, concurrency: 4 });
    const starts: number[] = [];
    c.on('attempt', () => starts.push(Date.now()));
    const begun = Date.now();
    // 4 chunks of 100 at 1000 destinations/s: the 4th may not start before 300 ms.
    await Promise.all(
      Array.from({ length: 4 }, (_, i) => c.sendChunk(makeChunk(100, { chunkId: `c${i}`, bulkId: `b${i}` }))),
    );
    expect(Date.now() - begun).toBeGreaterThanOrEqual(295);
    expect(starts).toHaveLength(4);
  });
});
