// Issue 11 "Tests": PostgreSQL stopped for 20 s in the middle of a 200k-recipient send and the
// receiver's traffic, then started. The daemon waits for its store (the patient store) and
// the receiver answers 503 meanwhile, which the service retries: the file completes, the
// ledger is exact, every report answered 200 is in the store, reports that arrived while
// PostgreSQL was down got 503. A private cluster: stopping it disturbs no other test file.
// The receiver's answers are the sandbox notifier's own record of each attempt (its code,
// whether it will retry), the same list GET /_sandbox/notifications serves. The send is not
// slowed: PostgreSQL stops once a quarter of the file is accepted, and the send cannot move
// while it is down (every chunk's state is in the store), so the outage lands mid-send.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { NotificationAttempt } from '../../src/sandbox/notifier.ts';
import { openStore } from '../../src/store/index.ts';
import {
  csvRecords,
  expectedMessageId,
  PipelineHarness,
  personalizedFile,
  waitFor,
} from '../helpers/pipeline-harness.ts';
import { type PostgresCluster, startPostgres } from '../helpers/postgres.ts';

const RECIPIENT_LINES = 200_000;
const OUTAGE_MS = 20_000;

let h: PipelineHarness | null = null;
let cluster: PostgresCluster | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
  await cluster?.close();
  cluster = null;
});

describe('PostgreSQL stopped for 20 s during a 200k-recipient send and its delivery reports', () => {
  it('the file completes, every recipient is sent once, every report answered 200 is stored, the outage answered 503', async () => {
    cluster = await startPostgres();
    const storeUrl = `${cluster.url}?schema=restart`;
    h = await PipelineHarness.create({
      sandbox: {
        // The service retries a 503 five times, 10..50 s apart (150 s in all) × timeScale:
        // 0.3 spreads the retries over 45 s, past the 20 s outage and the restart, while the
        // retry after the restart still comes within a few seconds.
        timeScale: 0.3,
        // Two final statuses: a report stored under the wrong one would show in report.csv.
        failureRatio: 0.1,
      },
      config: { store: storeUrl },
    });
    await h.start();
    const pid = h.daemon!.pid;
    const exits: (number | string | null)[] = [];
    // A daemon that dies fails the test at once, with its last words, not at a wait's timeout.
    const died = new Promise<never>((_, fail) =>
      h!.daemon!.once('exit', (code, signal) => {
        exits.push(code ?? signal);
        fail(new Error(`dropline run exited (${code ?? signal}):\n${h!.daemonOutput.slice(-3000)}`));
      }),
    );
    died.catch(() => {});
    const unlessDied = <T>(p: Promise<T>): Promise<T> => Promise.race([p, died]);

    const gen = personalizedFile(RECIPIENT_LINES, 111);
    await h.dropFile('reinicio.txt', gen.content);

    // A good part sent and reports flowing (answered 200) before PostgreSQL goes away.
    const before = await unlessDied(
      h.waitForState('reinicio.txt', 'sending', {
        timeoutMs: 90_000,
        where: (m) =>
          m.name === 'reinicio.txt' &&
          m.counts.submitted >= gen.valid.length / 4 &&
          m.counts.delivered + m.counts.undelivered > 0,
      }),
    );
    const { fileId } = before;
    const attempts = h.sandbox.notifier.attempts;
    expect(attempts.some((a) => a.code === 200)).toBe(true);

    await cluster.stop();
    const downAt = Date.now();
    // In the middle of the send: part of the file is still to be sent.
    const sentBeforeDown = h.sandbox.ledger.size;
    expect(sentBeforeDown).toBeLessThan(gen.valid.length);
    // Kept down 20 s: the notifier goes on posting reports meanwhile (their first attempts
    // and the retries of those answered 503).
    await unlessDied(sleep(OUTAGE_MS));
    const upAt = Date.now();
    await cluster.start();

    const done = await unlessDied(h.waitForFile(fileId, 'completed', { timeoutMs: 120_000 }));
    expect(h.daemon?.pid).toBe(pid);
    expect(exits).toEqual([]);

    // ---- report.csv: exactly the file's valid recipients, each sent with its final status ----
    const rows = csvRecords(await h.readReport(done)).filter((r) => r.outcome === 'sent');
    const want = gen.valid.map((r) => expectedMessageId(gen, fileId, r)).sort();
    expect(rows.map((r) => r.messageId).sort()).toEqual(want);
    const statusOf = new Map(rows.map((r) => [r.messageId, r.status]));
    const notFinal = rows.filter(
      (r) => r.status !== 'DELIVERED_TO_HANDSET' && r.status !== 'NO_SUCCESS',
    ).length;
    expect(notFinal).toBe(0);
    expect(done.counts.submitted).toBe(gen.valid.length);
    expect(done.counts.delivered + done.counts.undelivered).toBe(gen.valid.length);

    // ---- the sandbox ledger: every recipient accepted exactly once ----
    const ledger = [...h.sandbox.ledger.entries({ bulkId: done.bulkId })];
    const twice = ledger.filter((e) => e.count !== 1).map((e) => `${e.messageId} ×${e.count}`);
    expect(twice).toEqual([]);
    expect(ledger.map((e) => e.messageId).sort()).toEqual(want);
    const toOf = new Map(gen.valid.map((r) => [expectedMessageId(gen, fileId, r), r.to]));
    expect(ledger.filter((e) => toOf.get(e.messageId) !== e.to)).toEqual([]);

    // ---- the receiver's answers, as the service saw them ----
    // Every notification ends in a 200 (none lost to a timeout, a reset or a final non-503),
    // and the status it carried is the one the store holds.
    await waitFor('the notifier to have nothing pending', () => h!.sandbox.notifier.pending === 0, {
      timeoutMs: 30_000,
    });
    const mine = attempts.filter((a) => a.bulkId === done.bulkId);
    const byCode = countBy(mine, (a) => String(a.code));
    const lost = mine.filter((a) => a.code !== 200 && !a.willRetry);
    expect(lost.map(describeAttempt).slice(0, 10), JSON.stringify(byCode)).toEqual([]);
    const ok = mine.filter((a) => a.code === 200);
    expect(new Set(ok.map((a) => a.messageId)).size).toBe(gen.valid.length);
    const wrong = ok.filter((a) => statusOf.get(a.messageId) !== a.statusName);
    expect(wrong.map(describeAttempt).slice(0, 10)).toEqual([]);

    // While PostgreSQL was down, every report the receiver answered was answered 503, and
    // there were such reports (the notifier posted through the whole outage).
    const duringOutage = mine.filter((a) => a.at >= downAt && a.at + a.latencyMs <= upAt);
    expect(duringOutage.length).toBeGreaterThan(0);
    expect(countBy(duringOutage, (a) => String(a.code))).toEqual({ '503': duringOutage.length });

    // The store itself, read back: every recipient answered 200 holds that status.
    const store = await openStore(storeUrl);
    try {
      const stored = new Map<string, string | null>();
      for await (const page of store.reportPages(fileId))
        for (const r of page) if (r.messageId) stored.set(r.messageId, r.status);
      expect(ok.filter((a) => stored.get(a.messageId) !== a.statusName).map(describeAttempt)).toEqual([]);
    } finally {
      await store.close();
    }

    // ---- the daemon said the store went away and came back, and stops cleanly ----
    const lines = h.daemonOutput.split('\n');
    const said = (text: string) => lines.filter((l) => l.includes(text)).length;
    // The pipeline's workers waited for the store (the patient store)...
    expect(said('"msg":"the store is unavailable: waiting for it')).toBeGreaterThan(0);
    expect(said('"msg":"the store answers again: going on where the work was"')).toBeGreaterThan(0);
    // ...and the receiver said it once each way, not a line per commit that failed meanwhile.
    expect(said('notify: the store is unavailable')).toBe(1);
    expect(said('notify: the store answers again')).toBe(1);
    expect(said('notify: commit failed')).toBe(0);
    // pg's warnings (a statement queued behind another on one client) are defects to fix,
    // not noise for whoever reads the daemon's output.
    expect(lines.filter((l) => /^\(node:\d+\) \w*Warning/.test(l))).toEqual([]);
    expect(await h.stop()).toBe(0);
  }, 170_000);
});

function countBy<T>(items: readonly T[], key: (t: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of items) out[key(t)] = (out[key(t)] ?? 0) + 1;
  return out;
}

function describeAttempt(a: NotificationAttempt): string {
  return `${a.messageId} attempt ${a.attempt} ${a.statusName} → ${a.code}${a.error ? ` (${a.error})` : ''}`;
}
