// Issue 10 item 12: the notify port is public. Hundreds of idle, half-sent or unauthenticated
// sockets must neither exhaust the daemon's file descriptors nor cost a real delivery report:
// the receiver caps its connections (evicting the oldest that never sent a request with the
// token), and reports it cannot take are answered 503, which the service retries.
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { startReceiver } from '../../src/notify/receiver.ts';
import { openStore } from '../../src/store/index.ts';
import { PipelineHarness, personalizedFile, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const s of sockets) s.destroy();
  sockets.length = 0;
  await h?.close();
  h = null;
});

function fds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** Opens `n` sockets to the port, each sending `first` (maybe nothing) and then nothing more. */
async function openIdle(port: number, n: number, first: string): Promise<void> {
  for (let i = 0; i < n; i++) {
    await new Promise<void>((done) => {
      const s = connect({ host: '127.0.0.1', port });
      s.on('error', () => {});
      s.once('connect', () => {
        if (first) s.write(first);
        done();
      });
      s.once('close', () => done());
      sockets.push(s);
    });
  }
}

describe('notify port under a socket flood', () => {
  it('700 idle sockets: the daemon’s fds stay bounded and every real report is recorded', async () => {
    h = await PipelineHarness.create({ api: { chunkSize: 100, concurrency: 2 } });
    await h.start();
    const pid = h.daemon!.pid!;
    const baseline = fds(pid);
    // Never a byte; half a request line; a request without the token, then silence.
    await openIdle(h.notifyPort, 500, '');
    await openIdle(h.notifyPort, 100, 'POST /notify?tok');
    await openIdle(h.notifyPort, 100, 'GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n');
    // Settled: the same count three polls in a row once most sockets are in.
    const seen: number[] = [];
    const flooded = await waitFor(
      'the daemon to take the connections',
      () => {
        seen.push(fds(pid));
        const last = seen.slice(-3);
        return last.length === 3 && last.every((n) => n === last[0]) && last[0]! - baseline >= 400
          ? last[0]
          : undefined;
      },
      { intervalMs: 200 },
    );
    // The cap (512 connections and a reserve of 64 for 503 answers), not one fd per socket.
    expect(flooded - baseline).toBeLessThanOrEqual(600);

    const gen = personalizedFile(400, 91);
    await h.dropFile('inundado.txt', gen.content);
    const m = await h.waitForState('inundado.txt', 'completed', { timeoutMs: 60_000 });
    expect(m.counts.delivered! + m.counts.undelivered!).toBe(gen.valid.length);
    expect(m.counts.unknown).toBe(0);
    const { attempts } = await h.notifications();
    const mine = attempts.filter((a) => a.bulkId === m.fileId);
    // No report went unanswered (code 0 is lost for good); 503s were retried.
    expect(mine.filter((a) => a.code === 0)).toEqual([]);
    expect(fds(pid) - baseline).toBeLessThanOrEqual(600);
    // The ops server and health checks still answer.
    expect((await h.opsGet('/healthz')).status).toBe(200);
  });
});

/** util-linux's: runs the daemon under a lower RLIMIT_NOFILE. */
const PRLIMIT = '/usr/bin/prlimit';

describe('notify port under a low file-descriptor limit', () => {
  // Issue 32 item 8: under `prlimit --nofile=400` the default cap (512 + 64) was never reached:
  // accept() failed first (EMFILE) and a real report's connection was reset, lost for good.
  it('prlimit --nofile=400 and 450 idle sockets: the cap is below the limit and every real report is recorded', async () => {
    if (!existsSync(PRLIMIT)) throw new Error(`no ${PRLIMIT} (apt-get install util-linux)`);
    h = await PipelineHarness.create({ api: { chunkSize: 10, concurrency: 2 } });
    await h.start({ wrap: [PRLIMIT, '--nofile=400:400', '--'] });
    // The start-up log says the cap in force, and why.
    const said = JSON.parse(
      h.daemonOutput.split('\n').find((l) => l.includes('"notify: receiver listening"')) ?? '{}',
    ) as { maxConnections?: number; reserve?: number; openFilesLimit?: number };
    expect(said.openFilesLimit).toBe(400);
    expect(said.maxConnections! + said.reserve!).toBeLessThan(400);
    await openIdle(h.notifyPort, 450, '');
    const gen = personalizedFile(40, 92);
    await h.dropFile('pocos-descriptores.txt', gen.content);
    const m = await h.waitForState('pocos-descriptores.txt', 'completed', { timeoutMs: 60_000 });
    expect(m.counts.delivered! + m.counts.undelivered!).toBe(gen.valid.length);
    expect(m.counts.unknown).toBe(0);
    const { attempts } = await h.notifications();
    const mine = attempts.filter((a) => a.bulkId === m.fileId);
    // Every report answered 200 in the end (a 503 is retried); none met a reset (code 0).
    expect(mine.filter((a) => a.code === 0)).toEqual([]);
    expect(mine.some((a) => a.code === 200)).toBe(true);
    expect((await h.opsGet('/healthz')).status).toBe(200);
  });
});

describe('the receiver at its cap', () => {
  it('trusted connections are never evicted; a newcomer past the cap gets 503 (retried), not a reset', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dropline-cap-'));
    const store = await openStore(`sqlite:${join(dir, 'state.db')}`);
    await store.migrate();
    const receiver = await startReceiver({
      listen: '127.0.0.1:0',
      path: '/notify',
      token: 'cap-token',
      store,
      maxConnections: 4,
      reserve: 2,
    });
    const clients: Client[] = [];
    try {
      const post = (c: Client, i: number) =>
        c.request({
          method: 'POST',
          path: '/notify?token=cap-token',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            results: [
              {
                bulkId: 'f',
                messageId: `m-${i}`,
                to: '573001000001',
                transactionNumber: String(1e27 + i),
                callbackData: '',
                smsCount: 1,
                status: { name: 'DELIVERED_TO_HANDSET' },
              },
            ],
          }),
        });
      // Four keep-alive connections that have each delivered a report: trusted, idle.
      for (let i = 0; i < 4; i++) {
        const c = new Client(receiver.url.replace('/notify', ''), { pipelining: 1 });
        clients.push(c);
        const r = await post(c, i);
        expect(r.statusCode).toBe(200);
        await r.body.text();
      }
      // A fifth: over the cap, nobody to evict, so its report is answered 503 and not dropped.
      const fifth = new Client(receiver.url.replace('/notify', ''));
      clients.push(fifth);
      const r5 = await post(fifth, 5);
      expect(r5.statusCode).toBe(503);
      await r5.body.text();
      // The trusted ones still work on their own sockets.
      const again = await post(clients[0]!, 6);
      expect(again.statusCode).toBe(200);
      await again.body.text();
      // One goes away: the next newcomer is served.
      await clients[1]!.close();
      const sixth = new Client(receiver.url.replace('/notify', ''));
      clients.push(sixth);
      const r6 = await waitFor('a free slot', async () => {
        const r = await post(sixth, 7);
        const code = r.statusCode;
        await r.body.text();
        return code === 200 ? code : undefined;
      });
      expect(r6).toBe(200);
    } finally {
      for (const c of clients) await c.destroy().catch(() => {});
      await receiver.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
