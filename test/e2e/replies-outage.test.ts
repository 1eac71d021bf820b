// Issue 35: replies that come while the store is away are kept and recorded in the order they
// came (docs/replies.md "A store outage"). The receiver acknowledges a reply only once it is
// stored; a reply that meets the store away waits for it, and those after it wait behind it,
// so a reply that comes after the store is back is never recorded before them. SQLite: another
// connection holds the write lock past busy_timeout; PostgreSQL: a private cluster stopped and
// started again.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { csvRecords, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';
import { type PostgresCluster, startPostgres } from '../helpers/postgres.ts';
import { TEST_STORE } from '../helpers/test-store.ts';

let h: PipelineHarness;
let cluster: PostgresCluster | null = null;

beforeAll(async () => {
  if (TEST_STORE === 'postgres') cluster = await startPostgres();
  h = await PipelineHarness.create({
    // An unanswered or refused reply is delivered again 20 s later (2000 s × timeScale 0.01),
    // longer than SQLite's busy timeout (10 s), as an SMSC's retry interval is: a reply refused
    // during the outage would come back after those sent once the store is back.
    sandbox: { smpp: { redeliveryMs: 2_000_000 } },
    config: (sandbox) => ({
      replies: { smpp: { host: '127.0.0.1', port: sandbox.smpp!.port, systemId: 'demo', password: 'demo' } },
      ...(cluster ? { store: `${cluster.url}?schema=outage` } : {}),
    }),
  });
  await h.start();
});

afterAll(async () => {
  await h?.close();
  await cluster?.close();
});

interface ReplyView {
  text: string;
  attempts: number;
  refusals: number;
  state: string;
}

async function sandboxReplies(): Promise<ReplyView[]> {
  const res = await fetch(`${h.sandbox.url}/_sandbox/replies`);
  return ((await res.json()) as { replies: ReplyView[] }).replies;
}

async function post(text: string): Promise<void> {
  const res = await fetch(`${h.sandbox.url}/_sandbox/replies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ from: '573105550000', text }),
  });
  expect(res.status, await res.text()).toBe(202);
}

/** The store goes away: its write lock held by another connection, or PostgreSQL stopped. */
async function outage(): Promise<() => Promise<void>> {
  if (cluster) {
    const c = cluster;
    await c.stop();
    return () => c.start();
  }
  const held = await h.testStore.holdWrites();
  return () => held.release();
}

it('replies received while the store is away are all kept, in the order they came', async () => {
  const restore = await outage();
  await post('uno');
  // The first reply met the store away: it waits for the store (a receiver that refused it
  // instead would leave it with the SMSC, to come again later than the replies after it).
  await waitFor(
    'the first reply met the outage',
    async () =>
      h.daemonOutput.includes('a reply waits for the store') ||
      (await sandboxReplies()).some((r) => r.text === 'uno' && r.refusals > 0),
    { timeoutMs: 30_000 },
  );
  await post('dos');
  await post('tres');
  await waitFor(
    'the next two delivered to dropline',
    async () => (await sandboxReplies()).filter((r) => r.attempts > 0).length === 3,
  );
  await restore();
  await post('cuatro');

  const kept = await waitFor(
    'the four replies kept',
    async () => {
      const r = await h.cli(['replies']);
      const rows = r.code === 0 ? csvRecords(r.stdout) : [];
      return rows.length >= 4 ? rows : undefined;
    },
    { timeoutMs: 60_000 },
  );
  expect(kept.map((r) => r.text)).toEqual(['uno', 'dos', 'tres', 'cuatro']);
  await waitFor('every reply acknowledged', async () =>
    (await sandboxReplies()).every((r) => r.state === 'acknowledged'),
  );
});
