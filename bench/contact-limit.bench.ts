// Issue 35: what the contact ledger costs. (1) `dropline send` of a 1M-recipient personalized
// file on SQLite with `contactLimit: { perDay: 1, channelsPerWeek: 1 }` against the same send
// without it, runs interleaved (the machine is shared: medians of RUNS a side). Goal: within
// 1.3×. (2) The ledger's size per million contacts in each backend: on SQLite the ledger the
// send with the limit wrote (the database without its tables, vacuumed, against with); on
// PostgreSQL a million keys and the records of a million contacts in chunks of CHUNK, of the
// same shape, in a migrated schema (pg_total_relation_size: the tables and their indexes).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import { startCluster } from './postgres-cluster.ts';
import { cli, SEMI_SPACE, startSandboxProcess } from './sandbox-process.ts';
import { generate, median, sendWorkdir, type Timed, timed } from './send-run.ts';

const root = join(import.meta.dirname, '..');
const out = join(root, 'bench', 'out');
const LINES = Number(process.env.CONTACT_BENCH_LINES ?? 1_000_000);
const RUNS = Number(process.env.CONTACT_BENCH_RUNS ?? 5);
const PG_RUNS = Number(process.env.CONTACT_BENCH_PG_RUNS ?? 3);
const CHUNK = 1000;
const CONCURRENCY = 4;
const LIMIT = { perDay: 1, channelsPerWeek: 1 };
const LEDGER_TABLES = ['contact_ledger', 'contact_keys', 'contact_chunks', 'contact_slots'];

/** One send of the file in a fresh store, with or without the contact limit. */
function send(
  file: string,
  sandboxUrl: string,
  withLimit: boolean,
  store = 'sqlite:./state.db',
): Timed & { work: string } {
  const work = sendWorkdir(join(out, `contact-limit-${withLimit ? 'on' : 'off'}`), {
    sandboxUrl,
    chunkSize: CHUNK,
    concurrency: CONCURRENCY,
    store,
  });
  const configPath = join(work, 'dropline.config.json');
  const config = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
  if (withLimit) writeFileSync(configPath, JSON.stringify({ ...config, contactLimit: LIMIT }));
  const run = timed([SEMI_SPACE, cli, 'send', '--json', file], work);
  const manifest = JSON.parse(run.stdout) as { counts: { submitted: number; contactLimited: number } };
  if (manifest.counts.submitted !== LINES)
    throw new Error(`submitted ${manifest.counts.submitted} of ${LINES}`);
  return { ...run, work };
}

/** Bytes the ledger's tables and indexes take in the SQLite database at `path`. */
function sqliteLedgerBytes(path: string): number {
  const whole = join(out, 'contact-ledger-whole.db');
  const without = join(out, 'contact-ledger-without.db');
  for (const p of [whole, without]) rmSync(p, { force: true });
  const db = new DatabaseSync(path);
  db.exec(`VACUUM INTO '${whole}'`);
  db.close();
  const copy = new DatabaseSync(whole);
  copy.exec(`VACUUM INTO '${without}'`);
  copy.close();
  const stripped = new DatabaseSync(without);
  for (const t of LEDGER_TABLES) stripped.exec(`DROP TABLE ${t}`);
  stripped.exec('VACUUM');
  stripped.close();
  return statSync(whole).size - statSync(without).size;
}

/** The same pairs of sends on PostgreSQL, each in a fresh schema of `cluster`, dropped after. */
async function postgresSends(
  file: string,
  sandboxUrl: string,
  clusterUrl: string,
  label = '',
): Promise<{ off: Timed[]; on: Timed[] }> {
  const off: Timed[] = [];
  const on: Timed[] = [];
  for (let i = 0; i < PG_RUNS; i++) {
    for (const withLimit of [false, true]) {
      const schema = `limit_${withLimit ? 'on' : 'off'}_${label}${i}`;
      (withLimit ? on : off).push(send(file, sandboxUrl, withLimit, `${clusterUrl}?schema=${schema}`));
      const client = new pg.Client({ connectionString: clusterUrl });
      await client.connect();
      await client.query(`DROP SCHEMA ${schema} CASCADE`).finally(() => client.end());
    }
    process.stderr.write(
      `contact-limit (PostgreSQL${label && `, ${label}`}): without ${off.at(-1)!.seconds.toFixed(2)} s, with ${on.at(-1)!.seconds.toFixed(2)} s\n`,
    );
  }
  return { off, on };
}

/** Bytes a million contacts of the same shape take on PostgreSQL (tables and indexes). */
async function postgresLedgerBytes(
  cluster: { url: string },
  rows: number,
): Promise<{ ledger: number; keys: number }> {
  const store = new PostgresStore({ connectionString: cluster.url, schema: 'ledger' });
  await store.migrate();
  await store.close();
  const client = new pg.Client({ connectionString: cluster.url });
  await client.connect();
  try {
    const key = "'573' || lpad(((i::bigint * 7919 + 12345) % 1000000000)::text, 9, '0')";
    await client.query(`INSERT INTO ledger.contact_chunks (day, hi, lo, seq, entity, channel, at, contacts)
      SELECT current_date, 4294967296 + i * ${CHUNK}, 4294967296 + (i - 1) * ${CHUNK} + 1, i, 'default', 'sms', now(), ${CHUNK}
      FROM generate_series(1, ${Math.ceil(rows / CHUNK)}) i`);
    await client.query(`INSERT INTO ledger.contact_keys (entity, key, day, day_count, week, channels, at, channel, recipient)
      SELECT 'default', ${key}, current_date, 1, date_trunc('week', current_date)::date, ',sms,', now(), 'sms',
             4294967296 + i FROM generate_series(1, ${rows}) i`);
    await client.query('VACUUM ANALYZE ledger.contact_chunks, ledger.contact_keys');
    const r = await client.query(`SELECT pg_total_relation_size('ledger.contact_chunks') AS ledger,
      pg_total_relation_size('ledger.contact_keys') AS keys`);
    return { ledger: Number(r.rows[0].ledger), keys: Number(r.rows[0].keys) };
  } finally {
    await client.end();
  }
}

/**
 * The cluster's processes on the last CPU, and this process and `others` (with every process
 * they start) on the rest: PostgreSQL on a core of its own, as on a server of its own. Answers
 * the undoing (every process back on all CPUs), or null when it cannot be done here (one CPU,
 * no taskset, the cluster not found).
 */
function pinApart(port: number, others: number[]): (() => void) | null {
  const cpus = availableParallelism();
  if (cpus < 2) return null;
  const pids = (args: string[]) => {
    try {
      return execFileSync('pgrep', args, { encoding: 'utf8' }).trim().split('\n');
    } catch {
      return [];
    }
  };
  // A process that ended meanwhile (a backend, an autovacuum worker) is skipped.
  const pin = (cpuList: string, pid: number | string) => {
    try {
      execFileSync('taskset', ['-apc', cpuList, String(pid)], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  const [postmaster] = pids(['-f', '--', `-p ${port} -k`]);
  // The postmaster first: the processes it starts from then on inherit its CPU.
  if (!postmaster || !pin(String(cpus - 1), postmaster)) return null;
  const cluster = () => [postmaster, ...pids(['-P', postmaster])];
  for (const pid of cluster()) pin(String(cpus - 1), pid);
  const ours = [process.pid, ...others];
  for (const pid of ours) pin(cpus === 2 ? '0' : `0-${cpus - 2}`, pid);
  return () => {
    for (const pid of [...cluster(), ...ours]) pin(`0-${cpus - 1}`, pid);
  };
}

/**
 * What a key row costs PostgreSQL, without the send: a million keys of the bench's numbers
 * written in statements of CHUNK rows, three ways, a fresh table each, medians of 3 runs:
 * the take's upsert into a table of contact_keys' shape (its rule left out), a plain INSERT
 * into the same table (no conflict handled: a floor no rule can go under), and an upsert of
 * the narrowest row the rule could live with (a bigint key alone, small integers).
 */
async function keyRowCosts(url: string, rows: number): Promise<{ name: string; seconds: number[] }[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const keys = `(SELECT r.id, '573' || lpad(((r.id * 7919 + 12345) % 1000000000)::text, 9, '0') AS number
    FROM generate_series($1::bigint * ${CHUNK}, $1::bigint * ${CHUNK} + ${CHUNK - 1}) AS r(id))`;
  const shape = 'CREATE TABLE k (LIKE ledger.contact_keys INCLUDING ALL)';
  const row = `'default', q.number, current_date, 1, current_date, ',sms,', now(), 'sms', q.id, true FROM ${keys} q ORDER BY 2`;
  const ways = [
    {
      name: "the take's upsert (key, entity: text)",
      table: shape,
      sql: `INSERT INTO k AS k SELECT ${row} ON CONFLICT (entity, key) DO UPDATE SET day_count = k.day_count + 1 WHERE k.day_count < 1`,
    },
    { name: 'a plain INSERT into the same table', table: shape, sql: `INSERT INTO k SELECT ${row}` },
    {
      name: 'an upsert of the narrowest row (bigint key)',
      table:
        'CREATE TABLE k (key bigint PRIMARY KEY, recipient bigint, day int2, day_count int2, week int2, channels int2)',
      sql: `INSERT INTO k AS k SELECT q.number::bigint, q.id, 1, 1, 1, 1 FROM ${keys} q ORDER BY 1
        ON CONFLICT (key) DO UPDATE SET day_count = k.day_count + 1 WHERE k.day_count < 1`,
    },
  ];
  const costs = ways.map((w) => ({ name: w.name, seconds: [] as number[] }));
  try {
    for (let run = 0; run < 3; run++)
      for (const [i, w] of ways.entries()) {
        await client.query('DROP TABLE IF EXISTS k');
        await client.query(w.table);
        await client.query('CHECKPOINT');
        const started = performance.now();
        for (let chunk = 0; chunk < rows / CHUNK; chunk++) await client.query(w.sql, [chunk]);
        costs[i]!.seconds.push((performance.now() - started) / 1000);
      }
    await client.query('DROP TABLE k');
  } finally {
    await client.end();
  }
  return costs;
}

/** A without/with table of `runs`, after its `title`. */
function pairTable(title: string, runs: { off: Timed[]; on: Timed[] }): string[] {
  const a = median(runs.off).seconds;
  const b = median(runs.on).seconds;
  const cells = (r: Timed[]) => r.map((x) => x.seconds.toFixed(2)).join(', ');
  return [
    title,
    '',
    '| send | runs (s) | median | ratio |',
    '|---|---|---|---|',
    `| without contactLimit | ${cells(runs.off)} | ${a.toFixed(2)} s | 1.00× |`,
    `| with contactLimit | ${cells(runs.on)} | ${b.toFixed(2)} s | ${(b / a).toFixed(2)}× |`,
    '',
  ];
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

export default async function contactLimitBench(): Promise<string> {
  mkdirSync(out, { recursive: true });
  const file = join(out, `pipeline-personalized-${LINES}.personalized.txt`);
  await generate(file, 'personalized', LINES);
  const sandbox = await startSandboxProcess(['--no-notifications']);
  const off: Timed[] = [];
  const on: (Timed & { work: string })[] = [];
  let ledgerBytes = 0;
  let pgRuns: { off: Timed[]; on: Timed[] } = { off: [], on: [] };
  let pinned: { off: Timed[]; on: Timed[] } | null = null;
  let pgBytes = { ledger: 0, keys: 0 };
  let keyCosts: { name: string; seconds: number[] }[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      off.push(send(file, sandbox.url, false));
      on.push(send(file, sandbox.url, true));
      process.stderr.write(
        `contact-limit: without ${off.at(-1)!.seconds.toFixed(2)} s, with ${on.at(-1)!.seconds.toFixed(2)} s\n`,
      );
      if (i === RUNS - 1) ledgerBytes = sqliteLedgerBytes(join(on.at(-1)!.work, 'state.db'));
    }
    const cluster = await startCluster();
    try {
      pgRuns = await postgresSends(file, sandbox.url, cluster.url);
      const undo = pinApart(cluster.port, sandbox.child.pid === undefined ? [] : [sandbox.child.pid]);
      if (undo) {
        try {
          pinned = await postgresSends(file, sandbox.url, cluster.url, 'pinned');
        } finally {
          undo();
        }
      }
      pgBytes = await postgresLedgerBytes(cluster, LINES);
      keyCosts = await keyRowCosts(cluster.url, LINES);
    } finally {
      await cluster.close();
    }
  } finally {
    sandbox.child.kill('SIGTERM');
  }
  const perMillion = (bytes: number) => mib((bytes * 1_000_000) / LINES);
  const load = execFileSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).split(' ').slice(0, 3).join(' ');
  return [
    ...pairTable(
      [
        `\`dropline send --json\` of the pipeline bench's personalized file (${LINES.toLocaleString('en-US')} recipients, chunks of`,
        `${CHUNK}, ${CONCURRENCY} in flight, SQLite, a sandbox process without notifications) without and with`,
        `\`contactLimit: ${JSON.stringify(LIMIT)}\`, each run in a fresh store, ${RUNS} runs a side interleaved;`,
        `medians. Goal: within 1.3×. Load average when it ended: ${load}.`,
      ].join('\n'),
      { off, on },
    ),
    ...pairTable(
      `The same on PostgreSQL 15 (bench/postgres-cluster.ts), a fresh schema each run, ${PG_RUNS} runs a side interleaved:`,
      pgRuns,
    ),
    ...(pinned
      ? pairTable(
          'The same with PostgreSQL on a core of its own (its processes on the last CPU, the send and the sandbox on the others):',
          pinned,
        )
      : []),
    `What a key row costs PostgreSQL alone: ${LINES.toLocaleString('en-US')} keys in statements of ${CHUNK}, a fresh table each, 3 runs:`,
    '',
    '| written as | runs (s) | median |',
    '|---|---|---|',
    ...keyCosts.map(
      (k) =>
        `| ${k.name} | ${k.seconds.map((x) => x.toFixed(2)).join(', ')} | ${[...k.seconds].sort((x, y) => x - y)[1]!.toFixed(2)} s |`,
    ),
    '',
    'The ledger per million contacts of a million numbers (a contact each, 12-digit numbers, chunks of',
    `${CHUNK}):`,
    '',
    '| backend | contact_keys + contact_chunks (+ contact_slots, contact_ledger), with their indexes |',
    '|---|---|',
    `| SQLite (the ledger the send wrote) | ${perMillion(ledgerBytes)} |`,
    `| PostgreSQL 15 (rows of the same shape) | ${perMillion(pgBytes.ledger + pgBytes.keys)} (chunk records ${perMillion(pgBytes.ledger)}, keys ${perMillion(pgBytes.keys)}) |`,
  ].join('\n');
}
