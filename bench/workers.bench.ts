// Issue 12, speed of several files on several workers: `dropline run` processes sharing one
// PostgreSQL (a private cluster, durable commits) and one local inbox, sending to a sandbox
// process (no notifications: this measures sending). 20 files of 50,000 personalized
// recipients are dropped at once; measured from the drop to the last file `submitted` (the
// store's clock, which is this machine's):
// 1. total throughput on 1 worker one file at a time (`filesInFlight: 1`, as `dropline run`
//    drove files before issue 12), 1 worker with 8 files in flight, 2 and 3 workers; goal: 8
//    in flight at least as fast as one at a time;
//    and in each of those runs, a 2,000-recipient file alone (before the 20), then dropped one
//    second after them: its drop → submitted time behind a queue of 20 files;
// 2. with `api.ratePerSecond` set, on 1, 2 and 3 workers: the account's rate as the sandbox
//    measured it (accepted destinations per second), goal within 5% of the setting; then the
//    issue's fairness figure: a 2,000-recipient file alone, then dropped one second after a
//    200,000-recipient file, goal under 2× its time alone.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { copyFile, rename } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { AccountRate } from '../src/sandbox/meter.ts';
import { type PostgresCluster, startCluster } from './postgres-cluster.ts';
import { startRun, startSandboxProcess } from './sandbox-process.ts';

const root = join(import.meta.dirname, '..');
const out = join(root, 'bench', 'out', 'workers');
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

const FILES = env('WORKERS_BENCH_FILES', 20);
const LINES = env('WORKERS_BENCH_LINES', 50_000);
const SMALL = 2000;
const ROUNDS = env('WORKERS_BENCH_ROUNDS', 3);
const CHUNK = 1000;
const CONCURRENCY = 4;
/** Rate rounds: a rate every configuration reaches, so the limit is what is measured. */
const RATE = env('WORKERS_BENCH_RATE', 40_000);
const RATE_FILES = env('WORKERS_BENCH_RATE_FILES', 10);
const LARGE = env('WORKERS_BENCH_LARGE', 200_000);

interface Setup {
  label: string;
  workers: number;
  filesInFlight: number;
}
const SETUPS: Setup[] = [
  { label: '1 worker, one file at a time', workers: 1, filesInFlight: 1 },
  { label: '1 worker, 8 files in flight', workers: 1, filesInFlight: 8 },
  { label: '2 workers, 8 files in flight each', workers: 2, filesInFlight: 8 },
  { label: '3 workers, 8 files in flight each', workers: 3, filesInFlight: 8 },
];

/** A personalized file of `lines` recipients, numbers of its own (`seed`): kept between runs. */
async function generate(path: string, lines: number, seed: number): Promise<void> {
  if (existsSync(path)) return;
  const ws = createWriteStream(path);
  let buf = '';
  for (let i = 0; i < lines; i++) {
    const n = `573${String((seed * 10_000_000 + i * 7919 + 12_345) % 1e9).padStart(9, '0')}`;
    buf += `${n};Hola cliente ${i}, su factura de este mes ya esta disponible en la app.\n`;
    if (buf.length > 1 << 20) {
      if (!ws.write(buf)) await once(ws, 'drain');
      buf = '';
    }
  }
  ws.end(buf);
  await once(ws, 'finish');
}

/** Into the inbox whole: copied beside it, then renamed in (the source never sees a part). */
async function drop(work: string, file: string, name: string): Promise<number> {
  const part = join(work, 'drop', `${name}.part`);
  await copyFile(file, part);
  const at = Date.now();
  await rename(part, join(work, 'drop', 'inbox', name));
  return at;
}

async function stopWorkers(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(async (c) => {
      if (c.exitCode !== null) return;
      c.kill('SIGTERM');
      await once(c, 'exit');
    }),
  );
}

/** Until every named file is submitted (or further); their submitted times, ms since the epoch. */
async function submitted(run: Run, names: string[]): Promise<Map<string, number>> {
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    // One connection for the run's polls: a new one every 50 ms would fork a backend each
    // time on the machine being measured.
    const { rows } = await run.db.query<{ name: string; state: string; at: string | null }>(
      `SELECT name, state, timestamps->>'submitted' AS at FROM ${run.schema}.files`,
    );
    const bad = rows.find((r) => ['rejected', 'paused', 'partial', 'cancelled'].includes(r.state));
    if (bad) throw new Error(`${bad.name} is ${bad.state}`);
    const done = new Map(rows.filter((r) => r.at !== null).map((r) => [r.name, Date.parse(r.at!)]));
    if (names.every((n) => done.has(n))) return done;
    if (Date.now() > deadline)
      throw new Error(`not submitted in 15 minutes: ${names.filter((n) => !done.has(n))}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One configuration's workers at work: its directory, schema, processes, and a connection to poll. */
interface Run {
  work: string;
  schema: string;
  children: ChildProcess[];
  db: pg.Client;
}

interface Round {
  throughput: number;
  seconds: number;
  alone: number;
  behind: number;
}

interface Context {
  cluster: PostgresCluster;
  sandboxUrl: string;
  files: string[];
  small: string[];
  large: string;
}

/** A working directory and a fresh schema for one run, and its workers started. */
async function runWorkers(ctx: Context, setup: Setup, ratePerSecond: number | null): Promise<Run> {
  const schema = `w_${randomBytes(5).toString('hex')}`;
  const work = join(out, 'run');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'drop', 'inbox'), { recursive: true });
  writeFileSync(
    join(work, 'dropline.config.json'),
    JSON.stringify({
      api: {
        baseUrl: ctx.sandboxUrl,
        username: 'demo',
        password: 'demo',
        chunkSize: CHUNK,
        concurrency: CONCURRENCY,
        ...(ratePerSecond === null ? {} : { ratePerSecond }),
      },
      notify: { listen: '127.0.0.1:0', token: 'bench' },
      ops: { listen: '127.0.0.1:0' },
      store: `${ctx.cluster.url}?schema=${schema}`,
      workers: { filesInFlight: setup.filesInFlight },
      // Files arrive whole by rename: no need to wait for them to settle.
      sources: [{ name: 'local', type: 'local', path: './drop', stableMs: 0, pollMs: 100 }],
    }),
  );
  // The first worker makes the schema (migrations); the others then start against it.
  const children = [await startRun(work)];
  children.push(...(await Promise.all(Array.from({ length: setup.workers - 1 }, () => startRun(work)))));
  const db = new pg.Client({ connectionString: ctx.cluster.url });
  db.on('error', () => {});
  await db.connect();
  return { work, schema, children, db };
}

/** The run's workers stopped, its schema dropped, its connection closed. */
async function endRun(run: Run): Promise<void> {
  await stopWorkers(run.children);
  try {
    await run.db.query(`DROP SCHEMA ${run.schema} CASCADE`);
  } finally {
    await run.db.end();
  }
}

async function round(ctx: Context, setup: Setup): Promise<Round> {
  const run = await runWorkers(ctx, setup, null);
  const { work } = run;
  try {
    const alone = await sendOne(run, ctx.small[0]!, 'small-alone.txt');
    const names = ctx.files.map((_, i) => `f${String(i + 1).padStart(2, '0')}.txt`);
    const start = Date.now();
    await Promise.all(ctx.files.map((f, i) => drop(work, f, names[i]!)));
    await new Promise((r) => setTimeout(r, 1000));
    const behindAt = await drop(work, ctx.small[1]!, 'small-behind.txt');
    const times = await submitted(run, [...names, 'small-behind.txt']);
    const last = Math.max(...names.map((n) => times.get(n)!));
    const seconds = (last - start) / 1000;
    return {
      throughput: ((FILES * LINES + SMALL) / seconds) | 0,
      seconds,
      alone,
      behind: (times.get('small-behind.txt')! - behindAt) / 1000,
    };
  } finally {
    await endRun(run);
  }
}

interface RateRound {
  rate: AccountRate;
  alone: number;
  behind: number;
  large: number;
}

/** Drop → submitted of one file, in s. */
async function sendOne(run: Run, file: string, name: string): Promise<number> {
  const at = await drop(run.work, file, name);
  return ((await submitted(run, [name])).get(name)! - at) / 1000;
}

/**
 * 1, 2 or 3 workers under `api.ratePerSecond`: the rate the sandbox saw over 10 files; then
 * the small file alone, and one second behind the large one.
 */
async function rateRound(ctx: Context, workers: number): Promise<RateRound> {
  await fetch(`${ctx.sandboxUrl}/_sandbox/reset`, { method: 'POST' });
  const setup = { label: '', workers, filesInFlight: 8 };
  const run = await runWorkers(ctx, setup, RATE);
  try {
    const names = ctx.files.slice(0, RATE_FILES).map((_, i) => `r${String(i + 1).padStart(2, '0')}.txt`);
    await Promise.all(names.map((n, i) => drop(run.work, ctx.files[i]!, n)));
    await submitted(run, names);
    const rates = (await (await fetch(`${ctx.sandboxUrl}/_sandbox/rates`)).json()) as {
      accounts: Record<string, AccountRate>;
    };
    const alone = await sendOne(run, ctx.small[0]!, 'small-alone.txt');
    const largeAt = await drop(run.work, ctx.large, 'large.txt');
    await new Promise((r) => setTimeout(r, 1000));
    const behind = await sendOne(run, ctx.small[1]!, 'small-behind.txt');
    const large = ((await submitted(run, ['large.txt'])).get('large.txt')! - largeAt) / 1000;
    return { rate: rates.accounts.demo!, alone, behind, large };
  } finally {
    await endRun(run);
  }
}

/** Met; or equal within the runs' spread (the best run of `a` reached the worst of `b`); or not. */
function verdict(a: Round[], b: Round[]): string {
  const tp = (rs: Round[]) => rs.map((x) => x.throughput);
  if (med(tp(a)) >= med(tp(b))) return 'met';
  return Math.max(...tp(a)) >= Math.min(...tp(b))
    ? 'not met by the medians, equal within the runs’ spread'
    : 'not met';
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const f1 = (x: number) => x.toFixed(1);
const f2 = (x: number) => x.toFixed(2);
const k = (x: number) => x.toLocaleString('en-US');

export default async function workersBench(): Promise<string> {
  mkdirSync(out, { recursive: true });
  const files = await Promise.all(
    Array.from({ length: FILES }, async (_, i) => {
      const path = join(out, `f${i + 1}-${LINES}.txt`);
      await generate(path, LINES, i + 1);
      return path;
    }),
  );
  const small = await Promise.all(
    [90, 91].map(async (seed) => {
      const path = join(out, `small-${seed}-${SMALL}.txt`);
      await generate(path, SMALL, seed);
      return path;
    }),
  );
  const load = loadavg()
    .map((x) => x.toFixed(1))
    .join(', ');
  const cluster = await startCluster();
  const sandbox = await startSandboxProcess(['--no-notifications']);
  const large = join(out, `large-${LARGE}.txt`);
  await generate(large, LARGE, 95);
  const ctx: Context = { cluster, sandboxUrl: sandbox.url, files, small, large };
  const results = new Map<string, Round[]>(SETUPS.map((s) => [s.label, []]));
  const rates: ({ workers: number } & RateRound)[] = [];
  try {
    // Interleaved: each round runs every setup once, so a slow minute hits them all.
    for (let r = 0; r < ROUNDS; r++) {
      for (const setup of SETUPS) {
        process.stderr.write(`workers: round ${r + 1}, ${setup.label}\n`);
        results.get(setup.label)!.push(await round(ctx, setup));
      }
    }
    for (const workers of [1, 2, 3]) {
      process.stderr.write(`workers: rate ${RATE}/s on ${workers}\n`);
      rates.push({ workers, ...(await rateRound(ctx, workers)) });
    }
  } finally {
    sandbox.child.kill('SIGTERM');
    await cluster.close();
  }

  const base = med(results.get(SETUPS[0]!.label)!.map((x) => x.throughput));
  const rows = SETUPS.map((s) => {
    const rs = results.get(s.label)!;
    const tp = med(rs.map((x) => x.throughput));
    const alone = med(rs.map((x) => x.alone));
    const behind = med(rs.map((x) => x.behind));
    return {
      s,
      tp,
      line: `| ${s.label} | ${f1(med(rs.map((x) => x.seconds)))} s | ${k(tp)}/s | ${f2(tp / base)}× | ${f2(alone)} s | ${f2(behind)} s | ${f1(behind / alone)}× |`,
      runs: rs,
    };
  });
  const eight = rows[1]!.tp;
  const worst = (x: AccountRate) => x.meanPerSecond / RATE;
  return [
    `${FILES} personalized files of ${k(LINES)} recipients (${k(FILES * LINES)} in all) dropped at once into one`,
    'local inbox shared by `dropline run` workers on one PostgreSQL 15 (a private cluster started by',
    'the bench, durable commits), sending to a sandbox process without notifications, chunks of',
    `${CHUNK}, ${CONCURRENCY} requests in flight for the account (shared by the workers). Everything shares the`,
    `machine's cores. ${ROUNDS} interleaved rounds; medians. Load average when the bench started: ${load}.`,
    '',
    `- **throughput**: every recipient of the ${FILES} files (and the small file) over the time from the`,
    "  drop to the last file `submitted` (the store's timestamps).",
    `- **small file**: a ${k(SMALL)}-recipient file dropped alone, then one second after the ${FILES};`,
    '  drop → `submitted`. No goal: it measures a queue longer than the slots (below).',
    '',
    `| setup | ${FILES} files sent in | throughput | vs one at a time | small file alone | small file behind | behind / alone |`,
    '|---|---|---|---|---|---|---|',
    ...rows.map((r) => r.line),
    '',
    ...rows.map(
      (r) =>
        `- ${r.s.label}: runs ${r.runs.map((x) => `${f1(x.seconds)} s`).join(', ')}; small file alone/behind ${r.runs.map((x) => `${f2(x.alone)}/${f2(x.behind)} s`).join(', ')}.`,
    ),
    `- 8 files in flight against one at a time: ${f2(eight / base)}× the throughput (goal ≥ 1×): ${verdict(rows[1]!.runs, rows[0]!.runs)}.`,
    '',
    `### The account's rate shared by the workers (\`api.ratePerSecond\` ${k(RATE)})`,
    '',
    `${RATE_FILES} of the files (${k(RATE_FILES * LINES)} recipients) on 1, 2 and 3 workers; the sandbox's own measure of`,
    'accepted destinations per second for the account (`/_sandbox/rates`): the mean from the first',
    'request to the last, and the busiest one-second window. Goal: the mean within 5% of the setting.',
    `Then the issue's fairness figure at that rate: a ${k(SMALL)}-recipient file alone, and dropped one`,
    `second after a ${k(LARGE)}-recipient file; drop → \`submitted\`, goal under 2× alone.`,
    '',
    '| workers | mean | mean / setting | busiest second | requests | small file alone | behind the large one | behind / alone | large file |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rates.map(
      ({ workers, rate, alone, behind, large }) =>
        `| ${workers} | ${k(Math.round(rate.meanPerSecond))}/s | ${f2(worst(rate))} | ${k(rate.peakPerSecond)}/s | ${k(rate.requests)} | ${f2(alone)} s | ${f2(behind)} s | ${f2(behind / alone)}× | ${f1(large)} s |`,
    ),
    '',
    `- Mean within 5% of ${k(RATE)}/s on every worker count: ${rates.every(({ rate }) => Math.abs(worst(rate) - 1) <= 0.05) ? 'met' : 'not met'}.`,
    `- Small file behind the large one under 2× alone on every worker count: ${rates.every((r) => r.behind < 2 * r.alone) ? 'met' : 'not met'}.`,
  ].join('\n');
}
