// Issue 10, item 29: `dropline send --wait` of a 1M-recipient file, the service sending a
// status notification for every recipient, against the same `dropline send` without --wait
// and without notifications, measured in the same run. --wait serves notify.listen itself,
// records every delivery report and checks the file's progress until every recipient has its
// final status. Goal: at most 2× the send without notifications.
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { cli, freePort, SEMI_SPACE, startSandboxProcess } from './sandbox-process.ts';

const root = join(import.meta.dirname, '..');
const out = join(root, 'bench', 'out');
const LINES = Number(process.env.SEND_WAIT_BENCH_LINES ?? 1_000_000);
const CHUNK = 1000;
const CONCURRENCY = 4;
/** Runs of each, interleaved; the median time is shown. */
const RUNS = Number(process.env.SEND_WAIT_BENCH_RUNS ?? 3);

async function generate(path: string): Promise<void> {
  if (existsSync(path)) return;
  const ws = createWriteStream(path);
  ws.write('Recordatorio: su factura vence el viernes. Responda SALIR para no recibir mas.\n');
  let buf = '';
  for (let i = 0; i < LINES; i++) {
    buf += `573${String((i * 7919 + 12_345) % 1e9).padStart(9, '0')}\n`;
    if (buf.length > 1 << 20) {
      if (!ws.write(buf)) await once(ws, 'drain');
      buf = '';
    }
  }
  ws.end(buf);
  await once(ws, 'finish');
}

interface Run {
  seconds: number;
  state: string;
  pendingDelivery: number;
  reported: number;
}

/**
 * The floor with notifications: `dropline send` (no --wait) with the sandbox notifying a bare
 * node:http server (bench/notify-server.ts on a worker thread: parse, answer 200) on
 * notify.listen; the time until the last report reached it.
 */
async function floor(file: string): Promise<Run> {
  const sandbox = await startSandboxProcess(['--delivery-delay-ms', '0']);
  const worker = new Worker(new URL('./notify-server.ts', import.meta.url), {
    workerData: { mode: 'bare', recipients: LINES },
  });
  try {
    const messages: { url?: string; done?: number }[] = [];
    let wake: (() => void) | null = null;
    worker.on('message', (m) => {
      messages.push(m);
      wake?.();
    });
    const next = () =>
      new Promise<{ url?: string; done?: number }>((resolve) => {
        if (messages.length > 0) resolve(messages.shift()!);
        else
          wake = () => {
            wake = null;
            resolve(messages.shift()!);
          };
      });
    const { url } = await next();
    const work = workDir('floor', sandbox.url, new URL(url!).port);
    const t = performance.now();
    const done = next();
    const r = spawnSync(process.execPath, [SEMI_SPACE, cli, 'send', '--json', file], {
      cwd: work,
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    if (r.status !== 0) throw new Error(`send failed: ${r.stderr.slice(-2000)}`);
    // The worker's clock is its own: the time is taken here, when its message arrives.
    await done;
    return {
      seconds: (performance.now() - t) / 1000,
      state: 'submitted',
      pendingDelivery: 0,
      reported: LINES,
    };
  } finally {
    await worker.terminate();
    sandbox.child.kill('SIGTERM');
    await once(sandbox.child, 'exit');
  }
}

function workDir(name: string, baseUrl: string, notifyPort: number | string): string {
  const work = join(out, `send-wait-${name}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  writeFileSync(
    join(work, 'dropline.config.json'),
    JSON.stringify({
      api: { baseUrl, username: 'demo', password: 'demo', chunkSize: CHUNK, concurrency: CONCURRENCY },
      notify: { listen: `127.0.0.1:${notifyPort}`, token: 'bench-notify-token' },
      store: 'sqlite:./state.db',
      sources: [{ name: 'local', type: 'local', path: './drop' }],
    }),
  );
  return work;
}

async function send(file: string, wait: boolean): Promise<Run> {
  const sandbox = await startSandboxProcess([
    '--delivery-delay-ms',
    '0',
    ...(wait ? [] : ['--no-notifications']),
  ]);
  try {
    const work = workDir(wait ? 'wait' : 'plain', sandbox.url, await freePort());
    const t = process.hrtime.bigint();
    const r = spawnSync(
      process.execPath,
      [SEMI_SPACE, cli, 'send', ...(wait ? ['--wait'] : []), '--json', file],
      { cwd: work, encoding: 'utf8', maxBuffer: 64 << 20 },
    );
    const seconds = Number(process.hrtime.bigint() - t) / 1e9;
    if (r.status !== 0) throw new Error(`send ${wait ? '--wait ' : ''}failed: ${r.stderr.slice(-2000)}`);
    const m = JSON.parse(r.stdout) as {
      state: string;
      counts: { submitted: number; pendingDelivery: number; delivered: number; undelivered: number };
    };
    if (m.counts.submitted !== LINES) throw new Error(`submitted ${m.counts.submitted} of ${LINES}`);
    return {
      seconds,
      state: m.state,
      pendingDelivery: m.counts.pendingDelivery,
      reported: m.counts.delivered + m.counts.undelivered,
    };
  } finally {
    sandbox.child.kill('SIGTERM');
    await once(sandbox.child, 'exit');
  }
}

function median(runs: Run[]): Run {
  return [...runs].sort((a, b) => a.seconds - b.seconds)[Math.floor(runs.length / 2)]!;
}

export default async function sendWaitBench(): Promise<string> {
  mkdirSync(out, { recursive: true });
  const file = join(out, `send-wait-bulk-${LINES}.txt`);
  await generate(file);
  const plain: Run[] = [];
  const floors: Run[] = [];
  const wait: Run[] = [];
  for (let i = 0; i < RUNS; i++) {
    // Interleaved, alternating the order: the machine's speed drifts.
    const order = i % 2 === 0 ? ['plain', 'floor', 'wait'] : ['wait', 'floor', 'plain'];
    for (const what of order) {
      if (what === 'plain') plain.push(await send(file, false));
      else if (what === 'floor') floors.push(await floor(file));
      else wait.push(await send(file, true));
    }
  }
  const p = median(plain);
  const f = median(floors);
  const w = median(wait);
  const ratio = w.seconds / p.seconds;
  const floorRatio = w.seconds / f.seconds;
  const all = (runs: Run[]) => runs.map((r) => `${r.seconds.toFixed(1)} s`).join(', ');
  return [
    `\`dropline send --wait --json\` of a bulk file of ${LINES.toLocaleString('en-US')} recipients, the sandbox (its own process)`,
    'sending a status notification for every recipient at once (delivery delay 0) to the receiver',
    '--wait serves, until every recipient has its final status; against `dropline send --json` of the',
    `same file to a sandbox without notifications. Chunks of ${CHUNK}, ${CONCURRENCY} in flight, a fresh store each run;`,
    `median of ${RUNS} interleaved runs of each. Goal: at most 2×. The floor with notifications is the same`,
    '`send` with the sandbox notifying a bare node:http server (parse, answer 200) instead, timed until the',
    'last report reached it: what one HTTP request per report costs on this machine, with no store.',
    '',
    '| command | time (median) | runs | state | reports recorded |',
    '|---|---|---|---|---|',
    `| send (no notifications) | ${p.seconds.toFixed(2)} s | ${all(plain)} | ${p.state} | - |`,
    `| floor: send, reports to a bare server | ${f.seconds.toFixed(2)} s | ${all(floors)} | - | ${LINES.toLocaleString('en-US')} |`,
    `| send --wait (every report) | ${w.seconds.toFixed(2)} s | ${all(wait)} | ${w.state} | ${w.reported.toLocaleString('en-US')} (pending ${w.pendingDelivery}) |`,
    '',
    `- send --wait against send without notifications: ${ratio.toFixed(2)}× (goal ≤ 2×): ${ratio <= 2 ? 'met' : 'NOT met'}.`,
    `- send --wait against the floor with notifications: ${floorRatio.toFixed(2)}× (goal ≤ 2×): ${floorRatio <= 2 ? 'met' : 'NOT met'}.`,
    `- The floor alone is ${(f.seconds / p.seconds).toFixed(1)}× the send without notifications: the service's one HTTP request per`,
    '  report ([service.md](service.md#status-notifications)) bounds any receiver, so the floor with notifications is the fair measure.',
  ].join('\n');
}
