// Issue 13, the dashboard's speed. (1) Its API's answers with 20,000 files and a 1M-recipient
// file (every recipient reported) in a SQLite store: the list page, a search, a campaign's
// manifest and activity, the page itself. (2) What an open dashboard costs the sender:
// `dropline run` sending a dropped 1M-recipient file (sandbox process without
// notifications), timed by the store (first `validating` → `submitted`), with and without
// three open pages polling as the dashboard does (two campaign lists, one campaign page,
// every 2 s), interleaved rounds.
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFile, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '../src/log.ts';
import { startOpsServer } from '../src/ops/server.ts';
import type { Manifest } from '../src/pipeline/reports.ts';
import { openStore } from '../src/store/index.ts';
import type { DeliveryEvent } from '../src/store/store.ts';
import { cli, freePort, SEMI_SPACE, startRun, startSandboxProcess } from './sandbox-process.ts';
import { generate } from './send-run.ts';

const root = join(import.meta.dirname, '..');
const out = join(root, 'bench', 'out');
const LINES = Number(process.env.DASHBOARD_BENCH_LINES ?? 1_000_000);
const FILES = 20_000;
const ROUNDS = 5;
/** Requests timed per endpoint. */
const SAMPLES = 30;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function config(sandboxUrl: string, opsPort: number, store: string): string {
  return JSON.stringify({
    api: { baseUrl: sandboxUrl, username: 'demo', password: 'demo', chunkSize: 1000, concurrency: 4 },
    notify: { listen: '127.0.0.1:0', token: 'bench-notify-token' },
    ops: { listen: `127.0.0.1:${opsPort}` },
    store,
    sources: [{ name: 'local', type: 'local', path: './drop', stableMs: 200, pollMs: 100 }],
  });
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return (await res.json()) as T;
}

async function stopDaemon(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

// ---- (1) answers with a large store ---------------------------------------------------

function numberOf(i: number): string {
  return `573${String((i * 7919 + 12_345) % 1e9).padStart(9, '0')}`;
}

async function answers(sandboxUrl: string, file: string): Promise<string[]> {
  const dir = join(out, 'dashboard-answers');
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(dir, 'drop', 'inbox'), { recursive: true });
  await writeFile(join(dir, 'dropline.config.json'), config(sandboxUrl, 0, 'sqlite:./state.db'));
  // The 1M-recipient file, sent (the sandbox reports nothing: its reports are recorded below).
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [SEMI_SPACE, cli, 'send', '--json', file], {
      cwd: dir,
      stdio: 'ignore',
    });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`send exited ${code}`))));
  });
  const store = await openStore(`sqlite:${join(dir, 'state.db')}`);
  const [big] = await store.listFiles({ limit: 1 });
  if (!big) throw new Error('the sent file is not in the store');
  // Its delivery reports, as the receiver records them (batches of 500), 10% undelivered.
  const started = performance.now();
  for (let from = 0; from < LINES; from += 500) {
    const events: DeliveryEvent[] = [];
    for (let i = from; i < Math.min(from + 500, LINES); i++)
      events.push({
        transactionNumber: `t${i}`,
        to: numberOf(i),
        messageId: `${big.fileId}-${i + 1}`,
        bulkId: big.fileId,
        callbackData: null,
        smsCount: 1,
        status: i % 10 === 0 ? 'NO_SUCCESS' : 'DELIVERED_TO_HANDSET',
        receivedAt: new Date().toISOString(),
      });
    await store.recordDeliveries(events);
  }
  const reportsS = (performance.now() - started) / 1000;
  // 20,000 more files (a year of campaigns), claimed in batches as the daemon claims them.
  for (let from = 0; from < FILES; from += 500) {
    const batch = Array.from({ length: Math.min(500, FILES - from) }, (_, k) => ({
      name: `campaña-${from + k}.txt`,
      path: `inbox/campaña-${from + k}.txt`,
      sha256: `${String(from + k).padStart(64, '0')}`,
      bytes: 1000,
    }));
    await store.claimFiles('local', batch, {
      idFor: (sha, n) => `f${sha.slice(-8)}${n}`,
      duplicateSince: new Date(0).toISOString(),
    });
  }
  const counts = await store.counts(big.fileId);
  if (counts.delivered + counts.undelivered !== LINES)
    throw new Error(`reports recorded: ${JSON.stringify(counts)}`);
  const ops = await startOpsServer({
    listen: '127.0.0.1:0',
    store,
    sources: new Map(),
    logger: silentLogger,
  });
  const rows: string[] = [];
  try {
    const paths: [string, string][] = [
      ['campaign list (50 newest)', '/api/files?limit=50'],
      ['search by name', '/api/files?limit=50&q=campa%C3%B1a-1999'],
      ['filter by state', '/api/files?limit=50&state=submitted'],
      ['1M-recipient manifest', `/api/files/${big.fileId}`],
      ['1M-recipient activity', `/api/files/${big.fileId}/activity`],
      ['the page', '/'],
    ];
    for (const [what, path] of paths) {
      const ms: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        const t = performance.now();
        const res = await fetch(`${ops.url}${path}`);
        await res.arrayBuffer();
        if (!res.ok) throw new Error(`${path}: ${res.status}`);
        ms.push(performance.now() - t);
      }
      ms.sort((a, b) => a - b);
      const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!;
      rows.push(
        `| ${what} | \`${path.replace(big.fileId, ':fileId')}\` | ${at(0.5).toFixed(1)} ms | ${at(0.95).toFixed(1)} ms |`,
      );
    }
  } finally {
    await ops.close();
    await store.close();
  }
  return [
    `A SQLite store holding ${FILES.toLocaleString('en-US')} files and one of ${LINES.toLocaleString('en-US')} recipients, every one`,
    `reported (${LINES.toLocaleString('en-US')} reports recorded through the store in ${reportsS.toFixed(1)} s); the ops server in the`,
    `bench's process; ${SAMPLES} requests each, one at a time. Goal: under 200 ms.`,
    '',
    '| page | request | median | p95 |',
    '|---|---|---|---|',
    ...rows,
  ];
}

// ---- (2) what an open dashboard costs the sender --------------------------------------

async function sendOnce(sandboxUrl: string, file: string, watched: boolean, round: number): Promise<number> {
  const dir = join(out, `dashboard-send-${watched ? 'watched' : 'alone'}`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(dir, 'drop', 'inbox'), { recursive: true });
  const opsPort = await freePort();
  await writeFile(join(dir, 'dropline.config.json'), config(sandboxUrl, opsPort, 'sqlite:./state.db'));
  const daemon = await startRun(dir);
  const api = `http://127.0.0.1:${opsPort}`;
  let stop = false;
  const pages: Promise<void>[] = [];
  try {
    const tmp = join(dir, 'drop', 'inbox', '.bench.tmp');
    await copyFile(file, tmp);
    await rename(tmp, join(dir, 'drop', 'inbox', `bench-${round}.txt`));
    let fileId: string | null = null;
    if (watched) {
      // Two campaign lists and one campaign page, each polling every 2 s as the pages do.
      const every = async (fn: () => Promise<unknown>) => {
        while (!stop) {
          await fn().catch(() => {});
          await sleep(2000);
        }
      };
      pages.push(every(() => getJson(`${api}/api/files?limit=50`)));
      pages.push(every(() => getJson(`${api}/api/files?limit=50&state=sending`)));
      pages.push(
        every(async () => {
          if (!fileId) return;
          await Promise.all([
            getJson(`${api}/api/files/${fileId}`),
            getJson(`${api}/api/files/${fileId}/activity`),
          ]);
        }),
      );
    }
    // The bench's own check (the same in both variants): once a second.
    for (;;) {
      await sleep(1000);
      const [m] = await getJson<Manifest[]>(`${api}/api/files?limit=1`);
      if (!m) continue;
      fileId = m.fileId;
      if (m.state === 'submitted' || m.state === 'completed') {
        if (m.counts.submitted !== LINES) throw new Error(`submitted ${m.counts.submitted} of ${LINES}`);
        const from = Date.parse(m.timestamps.validating ?? '');
        const to = Date.parse(m.timestamps.submitted ?? '');
        return (to - from) / 1000;
      }
      if (m.state === 'rejected' || m.state === 'partial') throw new Error(`the file ended ${m.state}`);
    }
  } finally {
    stop = true;
    await Promise.all(pages);
    await stopDaemon(daemon);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export default async function dashboardBench(): Promise<string> {
  await mkdir(out, { recursive: true });
  const file = join(out, `pipeline-personalized-${LINES}.personalized.txt`);
  await generate(file, 'personalized', LINES);
  const sandbox = await startSandboxProcess(['--no-notifications']);
  try {
    const part1 = await answers(sandbox.url, file);
    const alone: number[] = [];
    const watched: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      alone.push(await sendOnce(sandbox.url, file, false, round));
      watched.push(await sendOnce(sandbox.url, file, true, round));
    }
    const a = median(alone);
    const w = median(watched);
    return [
      '### Answers with a large store',
      '',
      ...part1,
      '',
      '### An open dashboard against the sender',
      '',
      `\`dropline run\` sending a dropped ${LINES.toLocaleString('en-US')}-recipient personalized file to a sandbox process`,
      'without notifications (chunks of 1000, 4 in flight), timed by the store from `validating` to',
      '`submitted`; with three open pages polling as the dashboard does (two campaign lists and the',
      `file's page, every 2 s) and without. ${ROUNDS} interleaved rounds; medians. Goal: the pages cost under 5%.`,
      '',
      '| | runs | median | cost |',
      '|---|---|---|---|',
      `| alone | ${alone.map((s) => s.toFixed(2)).join(', ')} s | ${a.toFixed(2)} s | |`,
      `| dashboard open | ${watched.map((s) => s.toFixed(2)).join(', ')} s | ${w.toFixed(2)} s | ${(((w - a) / a) * 100).toFixed(1)}% |`,
    ].join('\n');
  } finally {
    sandbox.child.kill('SIGTERM');
  }
}
