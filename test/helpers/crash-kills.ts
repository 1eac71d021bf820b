// The kill loop of the crash tests of a channel's campaign (email-crash, twoway-crash): the
// daemon sending a file is killed with SIGKILL at seeded random moments and restarted each
// time; every other kill comes while a chunk is inflight (its requests out, their answers not
// recorded), so the next daemon finds it in doubt.
import type { Manifest } from '../../src/pipeline/reports.ts';
import type { SandboxOptions } from '../../src/sandbox/options.ts';
import type { Sandbox } from '../../src/sandbox/server.ts';
import { openStore } from '../../src/store/index.ts';
import { csvRecords, PipelineHarness, waitFor } from './pipeline-harness.ts';

/**
 * A harness whose one source sends `channel` with the one account `name`: chunks in doubt are
 * resent (api.inDoubt), leases and polls short, so a restarted daemon takes the file over soon.
 */
export function crashHarness(o: {
  readonly sandbox?: SandboxOptions;
  readonly channel: string;
  readonly name: string;
  readonly account: (sandbox: Sandbox) => Record<string, unknown>;
}): Promise<PipelineHarness> {
  return PipelineHarness.create({
    ...(o.sandbox ? { sandbox: o.sandbox } : {}),
    api: { timeoutMs: 2000, inDoubt: 'resend', inDoubtGraceMs: 300 },
    source: { channel: o.channel, account: o.name, stableMs: 100, pollMs: 100 },
    config: (sandbox) => ({ leaseMs: 1000, accounts: { [o.name]: o.account(sandbox) } }),
  });
}

/** One kill: the file's state then, what the service had taken before and at it, chunks left inflight. */
export interface Kill {
  readonly state: string;
  readonly takenBefore: number;
  readonly takenAt: number;
  /** Chunks the killed daemon left inflight (started, answer not recorded): in doubt next. */
  readonly leftInflight: number;
}

export async function killWhileSending(
  h: PipelineHarness,
  fileId: string,
  o: {
    readonly kills: number;
    readonly random: () => number;
    /** The longest random wait (ms, after 100) between the daemon sending and its kill. */
    readonly spreadMs: number;
    /** What the sandbox has taken so far (its ledger's count). */
    readonly taken: () => number;
  },
): Promise<Kill[]> {
  // The test's own view of the store: which chunks the daemon has committed inflight.
  const store = await openStore(String(h.config.store));
  const inflight = async (): Promise<number> => (await store.listChunks(fileId, ['inflight'])).length;
  const kills: Kill[] = [];
  try {
    while (kills.length < o.kills) {
      // Each daemon is killed while it sends: once it holds the file (a restarted one takes it
      // over when the killed one's lease ends), at a random moment after.
      await drivenByDaemon(h, fileId);
      const takenBefore = o.taken();
      await new Promise((r) => setTimeout(r, 100 + o.random() * o.spreadMs));
      const seen = await h.opsGet(`/api/files/${fileId}`).then((r) => (r.body as Manifest).state);
      // Every other kill: the store's writes held (as another writer would) until a chunk is
      // inflight, so the killed daemon leaves it there, its answers never recorded.
      let held: { release(): Promise<void> } | null = null;
      if (kills.length % 2 === 1) {
        const until = Date.now() + 10_000;
        for (;;) {
          const hold = await h.testStore.holdWrites();
          if ((await inflight()) > 0 || Date.now() > until) {
            held = hold;
            break;
          }
          await hold.release();
          await new Promise((r) => setTimeout(r, 5 + o.random() * 20));
        }
      }
      const child = h.daemon!;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      h.daemon = null;
      await held?.release();
      kills.push({ state: seen, takenBefore, takenAt: o.taken(), leftInflight: await inflight() });
      await h.start();
    }
  } finally {
    await store.close();
  }
  return kills;
}

/** The file completed by the last daemon (the in-doubt chunks resent), and its report's `rows` rows. */
export async function completedReport(
  h: PipelineHarness,
  fileId: string,
  rows: number,
): Promise<{ m: Manifest; report: Record<string, string>[] }> {
  const m = await h.waitForFile(fileId, 'completed', { timeoutMs: 120_000 });
  const report = await waitFor(
    'report.csv of the completed file',
    async () => {
      const records = csvRecords(await h.readReport(m));
      return records.length === rows ? records : undefined;
    },
    { timeoutMs: 30_000 },
  );
  return { m, report };
}

/**
 * The running daemon's manifest of the file, once that daemon drives it (holds its lease) and
 * sends it: on a busy machine the first daemon may still be reading the file.
 */
function drivenByDaemon(h: PipelineHarness, fileId: string): Promise<Manifest> {
  const pid = h.daemon!.pid;
  return waitFor(
    `the daemon ${pid} to send the file`,
    async () => {
      const r = await h.opsGet(`/api/files/${fileId}`);
      const m = r.body as Manifest;
      return r.status === 200 && m.worker?.includes(`:${pid}:`) && m.state === 'sending' ? m : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 20 },
  );
}
