// The receiver's group committer (src/notify/group-committer.ts): reports of many requests in
// one store commit, each request answered once its reports are committed (200) or refused (503).
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  BUSY_BODY,
  type CommitStats,
  GroupCommitter,
  OK_BODY,
  UNAVAILABLE_BODY,
} from '../../src/notify/group-committer.ts';
import type { DeliveryEvent, DeliveryResult } from '../../src/store/store.ts';

function event(n: number): DeliveryEvent {
  return {
    transactionNumber: `t${n}`,
    to: '573001234567',
    messageId: `m${n}`,
    bulkId: 'file-1',
    callbackData: null,
    smsCount: 1,
    status: 'DELIVERED_TO_HANDSET',
    receivedAt: '2026-11-28T00:00:00.000Z',
  };
}

type Commit = { events: DeliveryEvent[]; settle: (r: DeliveryResult | Error) => void };

/** A store whose commits wait until the test settles them. */
function harness(
  o: { connections?: number; maxBatch?: number; maxQueue?: number; commitTimeoutMs?: number } = {},
) {
  const commits: Commit[] = [];
  const delivered: string[][] = [];
  const stats: CommitStats = {
    commits: 0,
    failedCommits: 0,
    events: 0,
    recorded: 0,
    duplicates: 0,
    orphans: 0,
    largestBatch: 0,
    queued: 0,
  };
  const committer = new GroupCommitter({
    store: {
      recordDeliveries: (events: DeliveryEvent[]) =>
        new Promise<DeliveryResult>((resolve, reject) => {
          commits.push({ events, settle: (r) => (r instanceof Error ? reject(r) : resolve(r)) });
        }),
      chunkMessageIds: async () => new Map(),
    },
    batchMs: 1,
    maxBatch: o.maxBatch ?? 100,
    maxQueue: o.maxQueue ?? 1000,
    commitTimeoutMs: o.commitTimeoutMs ?? 60_000,
    log: pino({ level: 'silent' }),
    stats,
    connections: () => o.connections ?? 64,
    onDelivered: (ids) => delivered.push(ids),
  });
  const answers: { status: number; body: string }[][] = [];
  /** Queues a request of `n` events; its answers are collected under its index. */
  const post = (...events: DeliveryEvent[]): Promise<{ status: number; body: string }> => {
    const mine: { status: number; body: string }[] = [];
    answers.push(mine);
    return new Promise((resolve) =>
      committer.add(events, (status, body) => {
        mine.push({ status, body });
        resolve({ status, body });
      }),
    );
  };
  const ok = (n: number): DeliveryResult => ({ recorded: n, duplicates: 0, orphans: 0, fileIds: ['file-1'] });
  const until = async (check: () => boolean) => {
    while (!check()) await new Promise((r) => setImmediate(r));
  };
  return { committer, commits, delivered, stats, answers, post, ok, until };
}

describe('GroupCommitter', () => {
  it('commits the reports of every waiting connection in one transaction, then answers each 200', async () => {
    const h = harness({ connections: 3 });
    const answered = [h.post(event(1)), h.post(event(2), event(3)), h.post(event(4))];
    await h.until(() => h.commits.length === 1);
    expect(h.commits[0]!.events.map((e) => e.messageId)).toEqual(['m1', 'm2', 'm3', 'm4']);
    expect(h.answers.flat()).toEqual([]);
    h.commits[0]!.settle(h.ok(4));
    expect(await Promise.all(answered)).toEqual([
      { status: 200, body: OK_BODY },
      { status: 200, body: OK_BODY },
      { status: 200, body: OK_BODY },
    ]);
    expect(h.stats).toMatchObject({ commits: 1, events: 4, recorded: 4, largestBatch: 4, queued: 0 });
    expect(h.delivered).toEqual([['file-1']]);
  });

  it('runs one commit at a time: reports that come meanwhile make the next batch, up to maxBatch', async () => {
    const h = harness({ maxBatch: 2 });
    void h.post(event(1), event(2));
    await h.until(() => h.commits.length === 1);
    void h.post(event(3));
    void h.post(event(4));
    void h.post(event(5));
    await new Promise((r) => setTimeout(r, 5));
    expect(h.commits).toHaveLength(1);
    h.commits[0]!.settle(h.ok(2));
    await h.until(() => h.commits.length === 2);
    expect(h.commits[1]!.events.map((e) => e.messageId)).toEqual(['m3', 'm4']);
    h.commits[1]!.settle(h.ok(2));
    await h.until(() => h.commits.length === 3);
    expect(h.commits[2]!.events.map((e) => e.messageId)).toEqual(['m5']);
  });

  it('answers a failed commit 503 and commits the next batch afterwards', async () => {
    const h = harness({ connections: 1 });
    const first = h.post(event(1));
    await h.until(() => h.commits.length === 1);
    h.commits[0]!.settle(new Error('disk I/O error'));
    expect(await first).toEqual({ status: 503, body: UNAVAILABLE_BODY });
    expect(h.stats.failedCommits).toBe(1);
    const second = h.post(event(1));
    await h.until(() => h.commits.length === 2);
    h.commits[1]!.settle(h.ok(1));
    expect(await second).toEqual({ status: 200, body: OK_BODY });
  });

  it('answers 503 at once when the queue is full', async () => {
    const h = harness({ connections: 1, maxBatch: 2, maxQueue: 2 });
    void h.post(event(1));
    await h.until(() => h.commits.length === 1);
    void h.post(event(2), event(3));
    expect(await h.post(event(4))).toEqual({ status: 503, body: BUSY_BODY });
  });

  it('answers 503 when a commit hangs, and refuses new reports until it settles', async () => {
    const h = harness({ connections: 1, commitTimeoutMs: 10 });
    const hung = h.post(event(1));
    await h.until(() => h.commits.length === 1);
    expect(await hung).toEqual({ status: 503, body: UNAVAILABLE_BODY });
    expect(await h.post(event(2))).toEqual({ status: 503, body: UNAVAILABLE_BODY });
    h.commits[0]!.settle(h.ok(1));
    await h.until(() => h.stats.events === 1);
    const after = h.post(event(3));
    await h.until(() => h.commits.length === 2);
    h.commits[1]!.settle(h.ok(1));
    expect(await after).toEqual({ status: 200, body: OK_BODY });
    // Each request was answered once, the hung one with its 503 only.
    expect(h.answers.map((a) => a.length)).toEqual([1, 1, 1]);
  });

  it('once stopped: refuses new reports and drains what is queued', async () => {
    const h = harness({ connections: 64 });
    const queued = h.post(event(1));
    h.committer.stop();
    expect(await h.post(event(2))).toEqual({ status: 503, body: UNAVAILABLE_BODY });
    const drained = h.committer.drain();
    await h.until(() => h.commits.length === 1);
    h.commits[0]!.settle(h.ok(1));
    await drained;
    expect(await queued).toEqual({ status: 200, body: OK_BODY });
  });
});
