// Issue 11, speed on PostgreSQL, on a private PostgreSQL 15 cluster started here with the
// server's defaults (fsync on, synchronous_commit on: every COMMIT waits for its WAL flush),
// each measure in a fresh schema:
// 1. `dropline send` of the pipeline bench's 1M personalized file with `store: postgres://…`,
//    against the same floor (bench/floor-send.ts), interleaved runs, the median; goals ≤ 4×
//    the floor, peak RSS < 300 MB.
// 2. Delivery-report ingest: the receiver (durable group commit) on a PostgresStore against the
//    bare node:http receiver in the same run (bench/notify-load.ts); goals ≥ 0.5× the bare
//    rate, p99 < 50 ms, none lost.
// 3. Claim and acquisition: ready files claimed by 4 store instances at once (pools of their
//    own), overlapping batches of one inbox, then acquireFile until none is left; every file
//    created once and acquired once (checked here: the bench fails otherwise); goal < 10 s.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { fileIdFor } from '../src/plan/ids.ts';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import type { ClaimedFile, FileRecord, ReadyFile } from '../src/store/store.ts';
import {
  CONNECTIONS,
  ceilingRounds,
  ingestRounds,
  ingestSummary,
  REQUESTS,
  SECONDS,
  WARMUP,
} from './notify-load.ts';
import { type PostgresCluster, startCluster } from './postgres-cluster.ts';
import { cli, SEMI_SPACE, startSandboxProcess } from './sandbox-process.ts';
import { generate, median, sendWorkdir, type Timed, timed } from './send-run.ts';

const root = join(import.meta.dirname, '..');
const out = join(root, 'bench', 'out');
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

/** The pipeline bench's file (bench/pipeline.bench.ts names it the same way). */
const SEND_LINES = env('POSTGRES_BENCH_SEND_LINES', 1_000_000);
const SEND_RUNS = env('POSTGRES_BENCH_SEND_RUNS', 3);
const CHUNK = 1000;
const CONCURRENCY = 4;

const INGEST_ROUNDS = env('POSTGRES_BENCH_INGEST_ROUNDS', 7);
const INGEST_PRESTORED = env('POSTGRES_BENCH_INGEST_PRESTORED', 500_000);
/** The ceiling line: a stand-in store's commit time, and its rounds. */
const CEILING_COMMIT_MS = 1;
const CEILING_ROUNDS = env('POSTGRES_BENCH_CEILING_ROUNDS', 3);

const CLAIM_FILES = env('POSTGRES_BENCH_CLAIM_FILES', 10_000);
const CLAIM_WORKERS = 4;
/** As the daemon claims an inbox (src/app/daemon.ts CLAIM_BATCH). */
const CLAIM_BATCH = 500;
const SOURCE = 'inbox';
/** As `dropline run` acquires (src/pipeline/pipeline.ts DRIVEN_STATES). */
const DRIVEN = ['validating', 'sending'] as const;
/** Longer than the bench: no lease expires, so a second acquisition is a defect. */
const LEASE_MS = 10 * 60_000;

const fresh = (prefix: string) => `${prefix}_${randomBytes(5).toString('hex')}`;
const s = (v: number) => `${v.toFixed(2)} s`;
const ratioList = (xs: number[]) => xs.map((x) => `${x.toFixed(2)}×`).join(', ');

async function sql(url: string, text: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

// ---- 1. send ----

async function sendBench(cluster: PostgresCluster): Promise<string[]> {
  mkdirSync(out, { recursive: true });
  const file = join(out, `pipeline-personalized-${SEND_LINES}.personalized.txt`);
  await generate(file, 'personalized', SEND_LINES);
  const sandbox = await startSandboxProcess(['--no-notifications']);
  const floors: Timed[] = [];
  const runs: (Timed & { state: string })[] = [];
  try {
    for (let i = 0; i < SEND_RUNS; i++) {
      floors.push(
        timed(
          [
            join(root, 'bench', 'floor-send.ts'),
            file,
            'personalized',
            sandbox.url,
            String(CHUNK),
            String(CONCURRENCY),
          ],
          root,
        ),
      );
      // A fresh schema each run (the same content sent again would be DUPLICATE_FILE), dropped
      // after so the cluster holds one run's rows at a time.
      const schema = fresh('send');
      const work = sendWorkdir(join(out, 'postgres-send'), {
        sandboxUrl: sandbox.url,
        chunkSize: CHUNK,
        concurrency: CONCURRENCY,
        store: `${cluster.url}?schema=${schema}`,
      });
      const run = timed([SEMI_SPACE, cli, 'send', '--json', file], work);
      const manifest = JSON.parse(run.stdout) as { state: string; counts: { submitted: number } };
      if (manifest.counts.submitted !== SEND_LINES)
        throw new Error(`submitted ${manifest.counts.submitted} of ${SEND_LINES}`);
      runs.push({ ...run, state: manifest.state });
      await sql(cluster.url, `DROP SCHEMA ${schema} CASCADE`);
    }
  } finally {
    sandbox.child.kill('SIGTERM');
  }
  const floor = median(floors);
  const run = median(runs);
  const ratio = run.seconds / floor.seconds;
  const peak = Math.max(...runs.map((r) => r.rssMiB));
  const list = (xs: Timed[]) => xs.map((x) => x.seconds.toFixed(2)).join(', ');
  const ratios = runs.map((r, i) => (r.seconds / floors[i]!.seconds).toFixed(2)).join(', ');
  return [
    '### 1. `dropline send` of 1M personalized recipients, store on PostgreSQL',
    '',
    '`dropline send --json <file>` with `store: postgres://…?schema=<fresh>` (read, validate, record',
    'every line, plan, send every chunk write-ahead, record every outcome) as a whole process, against',
    "the pipeline bench's floor: the same file read and the same chunk bodies posted with a bare undici",
    'Pool (bench/floor-send.ts), both to a sandbox process without notifications; chunks of',
    `${CHUNK}, ${CONCURRENCY} in flight. ${SEND_RUNS} interleaved runs of each, a fresh schema per run; the`,
    'table shows the medians, peak RSS is the highest of the runs. Goals: at most 4× the floor, peak',
    'RSS under 300 MB.',
    '',
    '| file | floor | dropline send (PostgreSQL) | ratio | peak RSS | state |',
    '|---|---|---|---|---|---|',
    `| personalized ${SEND_LINES.toLocaleString('en-US')} | ${s(floor.seconds)} | ${s(run.seconds)} | ${ratio.toFixed(2)}× | ${peak.toFixed(0)} MiB | ${run.state} |`,
    '',
    `- Runs: floor ${list(floors)} s; send ${list(runs)} s; per-run ratios ${ratios}.`,
    `- Ratio ${ratio.toFixed(2)}× (goal ≤ 4×): ${ratio <= 4 ? 'met' : 'NOT met'}; peak RSS ${peak.toFixed(0)} MiB (goal < 300 MB): ${peak * 2 ** 20 < 300e6 ? 'met' : 'NOT met'}.`,
  ];
}

// ---- 2. delivery-report ingest ----

async function ingestBench(cluster: PostgresCluster): Promise<string[]> {
  const schema = fresh('ingest');
  const t = performance.now();
  const rounds = await ingestRounds({
    storeUrl: `${cluster.url}?schema=${schema}`,
    rounds: INGEST_ROUNDS,
    prestored: INGEST_PRESTORED,
  });
  const elapsed = (performance.now() - t) / 1000;
  const ceiling = await ceilingRounds(
    { storeUrl: `${cluster.url}?schema=${schema}`, rounds: CEILING_ROUNDS, prestored: INGEST_PRESTORED },
    CEILING_COMMIT_MS,
    CEILING_ROUNDS,
  );
  await sql(cluster.url, `DROP SCHEMA ${schema} CASCADE`);
  return [
    '### 2. Delivery-report ingest, store on PostgreSQL',
    '',
    `${CONNECTIONS} keep-alive connections (undici Pool) post one-result [status notifications](service.md#status-notifications),`,
    `${REQUESTS} requests or ${SECONDS} s, after ${WARMUP} warm-up requests; each server runs on its own worker`,
    'thread (bench/notify-load.ts, as the notify bench). The receiver commits each group of reports',
    'in one PostgreSQL transaction (synchronous_commit on: 200 only after the WAL is flushed), every',
    'report updating a recipient of a sent file (generated messageIds, chunks accepted; the warm-up',
    `another file's). The measured file holds ${INGEST_PRESTORED.toLocaleString('en-US')} reports before the first round (and every`,
    "earlier round's: one schema for all rounds; fewer than the notify bench's 2,000,000 to keep the",
    'setup short), and its progress is checked (store.counts) every 250 ms beside the receiver.',
    `${INGEST_ROUNDS} rounds of (bare, receiver), in alternating order; the table shows the round with the`,
    `median ratio. All rounds with setup took ${elapsed.toFixed(0)} s.`,
    '',
    ...ingestSummary(rounds, 'receiver (group commit, PostgreSQL)', 0.5),
    `- Ceiling on this machine: the same receiver on a stand-in store whose every commit takes ${CEILING_COMMIT_MS} ms and`,
    `  no CPU (a timer) reaches ${ratioList(ceiling)} the bare receiver (${CEILING_ROUNDS} rounds, sorted). The`,
    `  service's ${CONNECTIONS} connections each wait for their answer, so the rate is ${CONNECTIONS} / (the time a report waits`,
    '  for its commit + the HTTP round trip): with 2 cores shared by the load, the receiver and',
    '  PostgreSQL, 0.5× needs a commit well under that 1 ms, and a durable PostgreSQL commit of a',
    '  group takes longer (the Commits line above).',
  ];
}

// ---- 3. claim and acquisition ----

interface ClaimOutcome {
  claimSeconds: number;
  acquireSeconds: number;
  created: number;
  claimedRows: number;
  acquired: number;
  perWorker: { created: number; acquired: number }[];
}

async function claimBench(cluster: PostgresCluster): Promise<{ lines: string[]; outcome: ClaimOutcome }> {
  const schema = fresh('claim');
  // As openStore opens it, one pool each (separate connections, as separate workers).
  const connectionString = cluster.url;
  const stores = Array.from({ length: CLAIM_WORKERS }, () => new PostgresStore({ connectionString, schema }));
  try {
    await Promise.all(stores.map((st) => st.migrate()));
    // Warm each pool (connections and prepared statements) outside the timing.
    await Promise.all(stores.map((st) => st.listFiles({ limit: 1 })));
    const inbox: ReadyFile[] = Array.from({ length: CLAIM_FILES }, (_, i) => ({
      name: `drop-${i}.txt`,
      path: `drop-${i}.txt`,
      sha256: `${String(i).padStart(8, '0')}${'0'.repeat(56)}`,
      bytes: 100 + i,
    }));
    const options = {
      idFor: (sha256: string, generation: number) => fileIdFor(SOURCE, sha256, generation),
      duplicateSince: new Date(Date.now() - 86_400_000).toISOString(),
    };
    // Every worker lists the whole inbox in the same order (as they would at start) and claims
    // it in batches whose boundaries are shifted by a quarter of a batch from the previous
    // worker's: the four claim the same files at the same moment, each batch overlapping two
    // of every other worker's.
    const t0 = performance.now();
    const claims = await Promise.all(
      stores.map(async (st, w) => {
        const results: ClaimedFile[] = [];
        const start = Math.floor((w * CLAIM_BATCH) / CLAIM_WORKERS);
        const order = [...inbox.slice(start), ...inbox.slice(0, start)];
        for (let i = 0; i < order.length; i += CLAIM_BATCH)
          results.push(...(await st.claimFiles(SOURCE, order.slice(i, i + CLAIM_BATCH), options)));
        return results;
      }),
    );
    const t1 = performance.now();
    const acquisitions = await Promise.all(
      stores.map(async (st, w) => {
        const got: FileRecord[] = [];
        for (;;) {
          const f = await st.acquireFile(`worker-${w}`, DRIVEN, LEASE_MS);
          if (!f) return got;
          got.push(f);
        }
      }),
    );
    const t2 = performance.now();

    // Exactly once: each path created by one claim, every claim of a path naming the same
    // fileId, every file acquired by one worker, and the database holding CLAIM_FILES files.
    const violations: string[] = [];
    const createdBy = new Map<string, number>();
    const idOf = new Map<string, string>();
    for (const results of claims) {
      if (results.length !== CLAIM_FILES)
        violations.push(`a worker got ${results.length} claim results for ${CLAIM_FILES} files`);
      for (const r of results) {
        const known = idOf.get(r.file.path);
        if (known !== undefined && known !== r.file.fileId)
          violations.push(`${r.file.path} claimed as ${known} and as ${r.file.fileId}`);
        idOf.set(r.file.path, r.file.fileId);
        if (r.created) createdBy.set(r.file.path, (createdBy.get(r.file.path) ?? 0) + 1);
        if (r.file.state !== 'validating' || r.duplicateOf)
          violations.push(`${r.file.path} claimed as ${r.file.state}`);
      }
    }
    for (const f of inbox) {
      const n = createdBy.get(f.path) ?? 0;
      if (n !== 1) violations.push(`${f.path} created ${n} times`);
    }
    const acquiredBy = new Map<string, number>();
    for (const got of acquisitions)
      for (const f of got) acquiredBy.set(f.fileId, (acquiredBy.get(f.fileId) ?? 0) + 1);
    for (const fileId of new Set(idOf.values())) {
      const n = acquiredBy.get(fileId) ?? 0;
      if (n !== 1) violations.push(`${fileId} acquired ${n} times`);
    }
    if (acquiredBy.size !== idOf.size)
      violations.push(`${acquiredBy.size} files acquired, ${idOf.size} claimed`);
    const [row] = (
      await sql(
        cluster.url,
        `SELECT count(*)::int AS files, count(DISTINCT file_no)::int AS numbers,
                count(*) FILTER (WHERE lease_owner IS NULL)::int AS free
         FROM ${schema}.files`,
      )
    ).rows as { files: number; numbers: number; free: number }[];
    if (row?.files !== CLAIM_FILES) violations.push(`the database holds ${row?.files} files`);
    if (row?.numbers !== CLAIM_FILES) violations.push(`${row?.numbers} distinct file numbers`);
    if (row?.free !== 0) violations.push(`${row?.free} files left without a lease`);
    if (violations.length > 0)
      throw new Error(
        `claim and acquisition broke exactly-once (${violations.length} violations):\n${violations.slice(0, 20).join('\n')}`,
      );

    const outcome: ClaimOutcome = {
      claimSeconds: (t1 - t0) / 1000,
      acquireSeconds: (t2 - t1) / 1000,
      created: [...createdBy.values()].reduce((a, b) => a + b, 0),
      claimedRows: claims.reduce((n, c) => n + c.length, 0),
      acquired: acquisitions.reduce((n, a) => n + a.length, 0),
      perWorker: claims.map((c, w) => ({
        created: c.filter((r) => r.created).length,
        acquired: acquisitions[w]!.length,
      })),
    };
    const total = outcome.claimSeconds + outcome.acquireSeconds;
    const lines = [
      '### 3. Claim and acquisition by 4 store instances',
      '',
      `${CLAIM_FILES.toLocaleString('en-US')} ready files of one inbox claimed by ${CLAIM_WORKERS} PostgresStore instances at once (a pool`,
      `each), each claiming the whole inbox in the same order in batches of ${CLAIM_BATCH} (claimFiles, as the daemon),`,
      `the batch boundaries shifted by a quarter batch from one instance to the next: every file is claimed`,
      `${CLAIM_WORKERS} times at about the same moment, each batch overlapping two of every other instance's. Then the`,
      `${CLAIM_WORKERS} acquire (acquireFile of the driven states, the lease longer than the bench) until none is left.`,
      'Checked: every file created by exactly one claim (the others answer `created: false` with the',
      'same fileId), every file acquired exactly once, one file number each.',
      '',
      '| phase | time | per worker |',
      '|---|---:|---|',
      `| claim (${outcome.claimedRows.toLocaleString('en-US')} claim results, ${outcome.created.toLocaleString('en-US')} created) | ${s(outcome.claimSeconds)} | created ${outcome.perWorker.map((p) => p.created).join(' / ')} |`,
      `| acquire (${outcome.acquired.toLocaleString('en-US')} acquired) | ${s(outcome.acquireSeconds)} | acquired ${outcome.perWorker.map((p) => p.acquired).join(' / ')} |`,
      `| total | ${s(total)} | |`,
      '',
      `- Exactly once: held (0 violations). Total ${s(total)} (goal < 10 s): ${total < 10 ? 'met' : 'NOT met'}.`,
    ];
    return { lines, outcome };
  } finally {
    await Promise.all(stores.map((st) => st.close()));
    await sql(cluster.url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  }
}

export default async function postgresBench(): Promise<string> {
  const cluster = await startCluster();
  try {
    const [settings] = (
      await sql(
        cluster.url,
        `SELECT current_setting('server_version') AS version, current_setting('fsync') AS fsync,
                current_setting('synchronous_commit') AS sync, current_setting('shared_buffers') AS buffers`,
      )
    ).rows as { version: string; fsync: string; sync: string; buffers: string }[];
    if (settings?.fsync !== 'on' || settings.sync !== 'on')
      throw new Error(
        `durable commits needed: fsync=${settings?.fsync} synchronous_commit=${settings?.sync}`,
      );
    const parts = (process.env.POSTGRES_BENCH_PARTS ?? 'send,ingest,claim').split(',');
    // Other work on the machine moves every figure here (PostgreSQL and dropline share 2 cores).
    const load = loadavg()
      .map((x) => x.toFixed(1))
      .join(', ');
    // The quick ones first (a broken exactly-once fails the bench within seconds), shown in order.
    const claim = parts.includes('claim') ? (await claimBench(cluster)).lines : [];
    const ingest = parts.includes('ingest') ? await ingestBench(cluster) : [];
    const send = parts.includes('send') ? await sendBench(cluster) : [];
    const sections = [send, ingest, claim].filter((x) => x.length > 0);
    return [
      `PostgreSQL ${settings.version} started by the bench (bench/postgres-cluster.ts: initdb, pg_ctl as the`,
      `postgres user, data on the local disk) with the server's defaults: fsync ${settings.fsync},`,
      `synchronous_commit ${settings.sync}, shared_buffers ${settings.buffers}; dropline and PostgreSQL share the`,
      `2 cores. Each measure works in a schema of its own. Load average when the bench started: ${load}.`,
      '',
      ...sections.flatMap((x) => [...x, '']),
    ].join('\n');
  } finally {
    await cluster.close();
  }
}
