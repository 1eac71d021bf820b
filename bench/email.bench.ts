// Issue 15 "Speed": 100,000 email recipients end to end to the sandbox within 3× a floor of bare
// undici posting the same 2,000 bodies. `dropline send --json` of a headed email file (an
// email source and account, `#! subject:`, the source's html body) as a whole process, against
// the floor measured in the same run (bench/floor-email.ts: read the file, post the same
// 50-recipient bodies with a bare undici Pool), both to one sandbox process, with the email
// account's requests in flight (api.concurrency's default, 4). Rounds interleaved (the first
// of each pair alternating); the sandbox is reset before each run and its email ledger checked
// after it: every recipient accepted once, in 2,000 requests of 50.
// `EMAIL_BENCH_LINES` (default 100000) and `EMAIL_BENCH_ROUNDS` (default 5) shrink it.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { FROM, generateEmail, HTML } from './email-drop.ts';
import { cli, SEMI_SPACE, sandboxJson, startSandboxProcess, timedBeside } from './sandbox-process.ts';
import type { Timed } from './send-run.ts';

const root = join(import.meta.dirname, '..');
const out = join(root, 'bench', 'out');
const LINES = Number(process.env.EMAIL_BENCH_LINES ?? 100_000);
const ROUNDS = Number(process.env.EMAIL_BENCH_ROUNDS ?? 5);
/** EMAIL_MAX_RECIPIENTS: recipients a request (docs/service.md "Email"). */
const BATCH = 50;
/** The email account's requests in flight: its `concurrency`, by default api.concurrency (4). */
const IN_FLIGHT = 4;
/** The sandbox's default account's email key (docs/sandbox.md "Email"). */
const API_KEY = 'demo-email-key';

interface Run extends Timed {
  /** The sandbox process's CPU seconds during the run. */
  sandboxCpu: number;
}

function workdir(dir: string, sandboxUrl: string): string {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'dropline.config.json'),
    JSON.stringify({
      api: { baseUrl: sandboxUrl, username: 'demo', password: 'demo' },
      notify: { listen: '127.0.0.1:0', token: 'bench' },
      store: 'sqlite:./state.db',
      accounts: { mail: { channel: 'email', baseUrl: sandboxUrl, apiKey: API_KEY, from: FROM } },
      sources: [
        {
          name: 'local',
          type: 'local',
          path: './drop',
          channel: 'email',
          account: 'mail',
          email: { html: HTML },
        },
      ],
    }),
  );
  return dir;
}

/** After a run from a reset sandbox: every recipient accepted once, in requests of 50. */
async function verify(url: string, who: string): Promise<void> {
  const ledger = await sandboxJson<{ recipients: number; accepted: number; duplicates: number }>(
    url,
    '/_sandbox/email/ledger?recipient=none',
  );
  if (ledger.recipients !== LINES || ledger.accepted !== LINES || ledger.duplicates !== 0)
    throw new Error(
      `${who}: the sandbox's email ledger is ${JSON.stringify(ledger)}, not ${LINES} once each`,
    );
  const { requests } = await sandboxJson<{
    requests: { endpoint: string; status: number; recipients?: number }[];
  }>(url, '/_sandbox/requests');
  const deliver = requests.filter((r) => r.endpoint === '/email/v1/deliver');
  const expected = Math.ceil(LINES / BATCH);
  if (deliver.length !== expected || deliver.some((r) => r.status !== 202))
    throw new Error(`${who}: ${deliver.length} deliver requests (${expected} expected, all 202)`);
}

const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const spread = (xs: number[], digits = 2, unit = '') =>
  `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}${unit}`;

export default async function emailBench(): Promise<string> {
  mkdirSync(out, { recursive: true });
  const file = join(out, `email-${LINES}.txt`);
  await generateEmail(file, LINES);
  const load = loadavg()[0]!.toFixed(2);
  const sandbox = await startSandboxProcess(['--no-notifications']);
  const pid = sandbox.child.pid;
  const floors: Run[] = [];
  const droplines: Run[] = [];
  try {
    const runFloor = async () => {
      await sandboxJson(sandbox.url, '/_sandbox/reset', 'POST');
      const t = timedBeside(
        [join(root, 'bench', 'floor-email.ts'), file, sandbox.url, String(IN_FLIGHT), API_KEY],
        root,
        pid,
      );
      const { posted, accepted } = JSON.parse(t.stdout) as { posted: number; accepted: number };
      if (accepted !== LINES)
        throw new Error(`the floor: ${accepted} of ${LINES} accepted (${posted} requests)`);
      await verify(sandbox.url, 'the floor');
      floors.push(t);
    };
    const runDropline = async () => {
      await sandboxJson(sandbox.url, '/_sandbox/reset', 'POST');
      // A fresh store each round: the same content again would be DUPLICATE_FILE.
      const work = workdir(join(out, 'email-dropline'), sandbox.url);
      const t = timedBeside([SEMI_SPACE, cli, 'send', '--json', file], work, pid);
      const m = JSON.parse(t.stdout) as {
        state: string;
        counts: { valid: number; chunks: number; submitted: number; accepted: number };
      };
      if (
        m.state !== 'completed' ||
        m.counts.accepted !== LINES ||
        m.counts.chunks !== Math.ceil(LINES / BATCH)
      )
        throw new Error(`dropline: ${m.state}, ${JSON.stringify(m.counts)}`);
      await verify(sandbox.url, 'dropline');
      droplines.push(t);
    };
    for (let round = 0; round < ROUNDS; round++) {
      process.stderr.write(`email: round ${round + 1} of ${ROUNDS}\n`);
      if (round % 2 === 0) {
        await runFloor();
        await runDropline();
      } else {
        await runDropline();
        await runFloor();
      }
    }
  } finally {
    sandbox.child.kill('SIGTERM');
  }
  const ratios = droplines.map((d, i) => d.seconds / floors[i]!.seconds);
  const cpuRatios = droplines.map((d, i) => d.cpuSeconds / floors[i]!.cpuSeconds);
  const row = (name: string, runs: Run[]) => {
    const wall = med(runs.map((r) => r.seconds));
    return `| ${name} | ${wall.toFixed(2)} s (${spread(runs.map((r) => r.seconds))}) | ${Math.round(LINES / wall).toLocaleString('en-US')} | ${med(runs.map((r) => r.cpuSeconds)).toFixed(2)} | ${med(runs.map((r) => r.sandboxCpu)).toFixed(2)} | ${Math.max(...runs.map((r) => r.rssMiB)).toFixed(0)} MiB |`;
  };
  const fWall = med(floors.map((r) => r.seconds));
  const dWall = med(droplines.map((r) => r.seconds));
  const rounds = droplines
    .map((d, i) => `${floors[i]!.seconds.toFixed(2)} / ${d.seconds.toFixed(2)} s (${ratios[i]!.toFixed(2)}×)`)
    .join('; ');
  return [
    `${LINES.toLocaleString('en-US')} email recipients (a headed file: address, two fields, \`#! subject:\`,`,
    `the source's ${HTML.length}-character html body) to a sandbox process, ${Math.ceil(LINES / BATCH).toLocaleString('en-US')} requests of ${BATCH}, ${IN_FLIGHT} in flight`,
    'each. The floor (bench/floor-email.ts) reads the same file and posts the same bodies with a',
    'bare undici Pool and the x-api-key header; `dropline send --json` reads, validates and',
    'deduplicates every address, records every line, chunk and outcome in SQLite (each chunk',
    'written ahead of its request), takes a send permit per request, and writes the manifest and',
    'report. Both are whole processes; the sandbox is reset before each run and its email ledger',
    'checked after: every recipient accepted once, one request a body, all answered 202.',
    `${ROUNDS} interleaved rounds; medians (wall, CPU), the wall's range in parentheses, peak RSS the`,
    'highest. Goal (issue 15): dropline at most 3× the floor.',
    '',
    '| run | wall (range) | recipients/s | CPU s | sandbox CPU s | peak RSS |',
    '|---|---|---:|---:|---:|---:|',
    row('floor: bare undici Pool', floors),
    row('`dropline send`', droplines),
    '',
    `Ratio of the medians: **${(dWall / fWall).toFixed(2)}×** (goal ≤ 3×); per round ${spread(ratios, 2, '×')}. CPU ratio of the medians ${(med(droplines.map((r) => r.cpuSeconds)) / med(floors.map((r) => r.cpuSeconds))).toFixed(2)}× (per round ${spread(cpuRatios, 2, '×')}): the wall ratio moves with whatever else the machine runs (load average ${load} when it started), the CPU ratio much less.`,
    `Rounds (floor / dropline): ${rounds}.`,
  ].join('\n');
}
