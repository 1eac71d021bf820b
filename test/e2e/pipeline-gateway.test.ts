// Issue 32, item 3: behind a load balancer, a gateway answers 502 or 504 when the backend took
// the request and then its answer was lost. The service has the messages: resending them sends
// every recipient twice. A gateway process of its own stands between dropline and the sandbox,
// forwards the request (the sandbox accepts it) and answers 502 / 504. The chunk is in doubt,
// never resent by the client: held for `retry` without reports, settled by the delivery
// reports when they come; the sandbox took each recipient once either way.
import { afterEach, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { type GatewayHandle, startGateway } from '../helpers/gateway.ts';
import { freePort, PipelineHarness, personalizedFile } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;
let gateway: GatewayHandle | null = null;

afterEach(async () => {
  await h?.close();
  await gateway?.close();
  h = null;
  gateway = null;
});

/** The sandbox behind a gateway answering `status` to the first massive request it forwards. */
async function behindGateway(status: number, notify: boolean): Promise<PipelineHarness> {
  const port = await freePort();
  gateway = await startGateway({
    target: `http://127.0.0.1:${port}`,
    path: '/mtmessage/massive',
    status,
    times: 1,
  });
  return PipelineHarness.create({
    sandbox: { port, notify },
    api: { baseUrl: gateway.url, chunkSize: 100, concurrency: 1, inDoubt: 'hold' },
    // Without reports, a file the client wrongly resent completes at its delivery timeout.
    config: { deliveryTimeoutMs: notify ? 20_000 : 1500 },
  });
}

async function sentOnce(harness: PipelineHarness, m: Manifest, recipients: number): Promise<void> {
  const ledger = await harness.ledger(m.fileId);
  expect(ledger.entries.map((e) => e.count)).toEqual(Array(recipients).fill(1));
  expect(m.counts.possibleDuplicates).toBe(0);
}

it('502 from the gateway after the service took the chunk: in doubt, held, nobody sent twice', async () => {
  h = await behindGateway(502, false);
  await h.start();
  const gen = personalizedFile(6, 32);
  await h.dropFile('pasarela.txt', gen.content);
  const settled = await h.waitForState('pasarela.txt', ['partial', 'completed']);
  const idle = await h.waitIdle(settled.fileId);
  expect(idle.state).toBe('partial');
  expect(idle.counts).toMatchObject({ chunksInDoubt: 1, inDoubt: 6, chunksFailed: 0, submitted: 0 });
  expect(idle.reason).toContain('in doubt');
  await sentOnce(h, idle, 6);
});

it('504 from the gateway after the service took the chunk: the delivery reports settle it, nobody sent twice', async () => {
  h = await behindGateway(504, true);
  await h.start();
  const gen = personalizedFile(6, 33);
  await h.dropFile('pasarela.txt', gen.content);
  const done = await h.waitForState('pasarela.txt', 'completed');
  expect(done.counts).toMatchObject({ submitted: 6, delivered: 6, chunksInDoubt: 0, inDoubt: 0 });
  await sentOnce(h, done, 6);
  // One request, whose answer (and transaction number) the gateway lost: the reports proved it.
  const { chunks } = await h.stored(done.fileId);
  expect(chunks.map((c) => [c.state, c.attempts, c.transactionNumber])).toEqual([['accepted', 1, null]]);
});
