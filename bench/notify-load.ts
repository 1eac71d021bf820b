// The load and the rounds of the delivery-report ingest benches (bench/notify.bench.ts on
// SQLite, bench/postgres.bench.ts on PostgreSQL): CONNECTIONS keep-alive connections posting
// one-result status notifications (docs/service.md "Status notifications"), REQUESTS of them or for
// SECONDS, whichever ends first, after WARMUP requests to another file; the server under load on
// its own worker thread (bench/notify-server.ts), the bare node:http receiver or
// src/notify/receiver.ts on the store at a given URL. Rounds of (bare, receiver) in alternating
// order, each round's ratio taken in that round: the machine's speed drifts by tens of percent
// within a minute.
import { Worker } from 'node:worker_threads';
import { Pool } from 'undici';
import type { ServerData, ServerReport } from './notify-server.ts';

export const CONNECTIONS = 64;
export const REQUESTS = 50_000;
export const SECONDS = 10;
export const WARMUP = 20_000;
/** The warm-up file's numbers start here (distinct from the measured file's). */
const WARMUP_FIRST = 10_000_000;
const TOKEN = 'bench-token';
const FILE = 'f-bench';
const WARMUP_FILE = 'f-warmup';

export interface IngestPlan {
  /** The receiver's store (one for every round: the measured file's reports only grow). */
  storeUrl: string;
  rounds: number;
  /** Reports already in the measured file before the first round. */
  prestored: number;
}

export interface Load {
  sent: number;
  ok: number;
  failed: Record<number, number>;
  seconds: number;
  p50: number;
  p99: number;
  max: number;
}

export type Measured = { load: Load; server: ServerReport };
export type Round = { bare: Measured; store: Measured; ratio: number };

/** The report of line `i + 1` of `bulkId`, whose recipient is number `n` (bench/notify-server.ts). */
function body(i: number, n: number, bulkId: string): string {
  return JSON.stringify({
    results: [
      {
        bulkId,
        messageId: `${bulkId}-${i + 1}`,
        to: `573${String(n).padStart(9, '0')}`,
        transactionNumber: `17000000000000${String(n).padStart(14, '0')}`,
        callbackData: '',
        smsCount: 1,
        status: { name: i % 10 === 0 ? 'NO_SUCCESS' : 'DELIVERED_TO_HANDSET' },
      },
    ],
  });
}

/** Reports for lines start+1 … start+count of `bulkId`, whose numbers start at `first`. */
async function load(
  url: string,
  start: number,
  first: number,
  count: number,
  seconds: number,
  bulkId: string,
): Promise<Load> {
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections: CONNECTIONS, pipelining: 1 });
  const path = `${u.pathname}?token=${TOKEN}`;
  const latency = new Float64Array(count);
  const failed: Record<number, number> = {};
  let next = 0;
  let ok = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const loop = async () => {
    while (next < count && performance.now() < deadline) {
      const i = next++;
      const t = performance.now();
      const res = await pool.request({
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: body(start + i, first + start + i, bulkId),
      });
      await res.body.dump();
      latency[i] = performance.now() - t;
      if (res.statusCode === 200) ok++;
      else failed[res.statusCode] = (failed[res.statusCode] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, loop));
  const elapsed = (performance.now() - started) / 1000;
  await pool.close();
  const sorted = latency.subarray(0, next).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return {
    sent: next,
    ok,
    failed,
    seconds: elapsed,
    p50: at(0.5),
    p99: at(0.99),
    max: sorted.at(-1) ?? Number.NaN,
  };
}

async function measure(
  mode: ServerData['mode'],
  plan: IngestPlan,
  round: number,
  commitMs?: number,
): Promise<Measured> {
  const data: ServerData = {
    mode,
    storeUrl: plan.storeUrl,
    token: TOKEN,
    fileId: FILE,
    recipients: plan.prestored + plan.rounds * REQUESTS,
    prestored: plan.prestored,
    warmupFileId: WARMUP_FILE,
    warmup: plan.rounds * WARMUP,
    warmupFirst: WARMUP_FIRST,
    chunkSize: 1000,
    ...(commitMs === undefined ? {} : { commitMs }),
  };
  const worker = new Worker(new URL('./notify-server.ts', import.meta.url), { workerData: data });
  const messages: unknown[] = [];
  let wake: (() => void) | null = null;
  worker.on('message', (m) => {
    messages.push(m);
    wake?.();
  });
  const failure = new Promise<never>((_, reject) => worker.once('error', reject));
  const nextMessage = <T>() =>
    Promise.race([
      failure,
      new Promise<T>((resolve) => {
        const take = () => resolve(messages.shift() as T);
        if (messages.length > 0) take();
        else
          wake = () => {
            wake = null;
            take();
          };
      }),
    ]);
  const { url } = await nextMessage<{ url: string }>();
  // Warm-up reports go to another file: the same code path, the measured file untouched.
  await load(url, round * WARMUP, WARMUP_FIRST, WARMUP, SECONDS, WARMUP_FILE);
  const measured = await load(url, plan.prestored + round * REQUESTS, 0, REQUESTS, SECONDS, FILE);
  worker.postMessage('stop');
  const server = await nextMessage<ServerReport>();
  await worker.terminate();
  return { load: measured, server: { ...server, events: server.events - WARMUP } };
}

export const ms = (v: number) => v.toFixed(1);
export const rate = (l: Load) => l.ok / l.seconds;

/** The round whose ratio is the median (rounds sorted by ratio). */
export function medianRound<T extends { ratio: number }>(rounds: T[]): T {
  return [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(rounds.length / 2)]!;
}

/** The rounds of (bare, receiver on plan.storeUrl), in alternating order. */
export async function ingestRounds(plan: IngestPlan): Promise<Round[]> {
  const rounds: Round[] = [];
  for (let r = 0; r < plan.rounds; r++) {
    let bare: Measured;
    let store: Measured;
    if (r % 2 === 0) {
      bare = await measure('bare', plan, r);
      store = await measure('receiver', plan, r);
    } else {
      store = await measure('receiver', plan, r);
      bare = await measure('bare', plan, r);
    }
    rounds.push({ bare, store, ratio: rate(store.load) / rate(bare.load) });
  }
  return rounds;
}

/**
 * Rounds of (bare, receiver on a stand-in store whose every commit takes `commitMs` and no
 * CPU), in alternating order: the ratio the receiver's group commit allows on this machine
 * when a commit lasts that long, whatever does the committing. The stand-in records nothing,
 * so the warm-up and measured reports of plan's store are untouched.
 */
export async function ceilingRounds(plan: IngestPlan, commitMs: number, rounds: number): Promise<number[]> {
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    let bare: Measured;
    let standIn: Measured;
    if (r % 2 === 0) {
      bare = await measure('bare', plan, r);
      standIn = await measure('receiver', plan, r, commitMs);
    } else {
      standIn = await measure('receiver', plan, r, commitMs);
      bare = await measure('bare', plan, r);
    }
    ratios.push(rate(standIn.load) / rate(bare.load));
  }
  return ratios.sort((a, b) => a - b);
}

/** The table (median round) and the goal lines of an ingest bench. */
export function ingestSummary(rounds: Round[], receiver: string, goalRatio: number): string[] {
  const { bare, store, ratio } = medianRound(rounds);
  const ratios = rounds.map((x) => x.ratio).sort((a, b) => a - b);
  const p99 = Math.max(...rounds.map((x) => x.store.load.p99));
  const lost = rounds.reduce((n, x) => n + x.store.load.ok - x.store.server.delivered, 0);
  const answered = rounds.reduce((n, x) => n + x.store.load.ok, 0);
  const row = (name: string, r: Measured, extra: string) =>
    `| ${name} | ${r.load.sent} | ${r.load.ok} | ${Math.round(rate(r.load))} | ${ms(r.load.p50)} | ${ms(r.load.p99)} | ${ms(r.load.max)} | ${extra} |`;
  const failed: Record<string, number> = {};
  for (const x of rounds)
    for (const [code, n] of Object.entries(x.store.load.failed)) failed[code] = (failed[code] ?? 0) + n;
  const failures = Object.entries(failed)
    .map(([code, n]) => `${n}× ${code}`)
    .join(', ');
  return [
    '| server | sent | 200 | requests/s | p50 ms | p99 ms | max ms | commits |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    row('bare node:http (parse, 200)', bare, '-'),
    row(
      receiver,
      store,
      `${store.server.commits} transactions (warm-up included), largest batch ${store.server.largestBatch}`,
    ),
    '',
    `- Rate: ${ratio.toFixed(2)}× the bare receiver, median of ${rounds.length} rounds (${ratios.map((x) => x.toFixed(2)).join(', ')}); goal ≥ ${goalRatio}×: ${ratio >= goalRatio ? 'met' : 'NOT met'}.`,
    `- p99: ${ms(p99)} ms, the highest of the rounds (goal < 50 ms): ${p99 < 50 ? 'met' : 'NOT met'}.`,
    `- Commits: median ${ms(store.server.commitMs)} ms for a median group of ${store.server.commitEvents} reports (store.recordDeliveries, the flush to disk included; median round).`,
    `- Progress checks: the slowest took ${ms(Math.max(...rounds.map((x) => x.store.server.slowestProgressMs)))} ms ` +
      `(${rounds.reduce((n, x) => n + x.store.server.progressChecks, 0)} checks over all rounds).`,
    `- Lost: ${lost} over all rounds (200s ${answered}, each checked against the recipients with a status in its store; ` +
      `median round: duplicates ${store.server.duplicates}, orphans ${store.server.orphans})` +
      (failures ? `; non-200 answers: ${failures} (retried by the service)` : '') +
      '.',
  ];
}
