// Issue 15 "WhatsApp at the account's configured rate within 5%": `dropline send --json` of a
// WhatsApp file (the `factura` template, 2 parameters a recipient) as a whole process, to a
// sandbox process, with a WhatsApp account paced at 50/s and at 200/s (each run ~15 s, so
// start-up does not weigh), and unpaced (ratePerSecond 0) for the ceiling. The achieved rate
// comes from the sandbox's own timestamps of the requests it accepted (GET /_sandbox/requests):
// the middle 80% of them, chunk-aligned (bench/whatsapp-drop.ts achievedRate says why). Rounds
// interleaved (each round runs every case, starting with a different one); the sandbox is reset
// before each run and checked after it: the WhatsApp ledger holds exactly N entries, each once,
// N requests all answered 200, and the manifest is `completed` with `accepted` N.
// `WHATSAPP_BENCH_CASES` (default "50:750,200:3000,0:100000", rate:recipients) and
// `WHATSAPP_BENCH_ROUNDS` (default 5) change it; `WHATSAPP_BENCH_CONCURRENCY` the account's
// chunks in flight (default 4, api.concurrency's default).
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { cli, SEMI_SPACE, sandboxJson, startSandboxProcess, timedBeside } from './sandbox-process.ts';
import type { Timed } from './send-run.ts';
import {
  type Achieved,
  achievedRate,
  CHUNK,
  generateWhatsApp,
  SOURCE,
  TEMPLATE,
  whatsappWorkdir,
} from './whatsapp-drop.ts';

const root = join(import.meta.dirname, '..');
const out = join(root, 'bench', 'out');
const CASES = (process.env.WHATSAPP_BENCH_CASES ?? '50:750,200:3000,0:100000').split(',').map((c) => {
  const [rate, lines] = c.split(':').map(Number);
  return { rate: rate!, lines: lines! };
});
const ROUNDS = Number(process.env.WHATSAPP_BENCH_ROUNDS ?? 5);
const CONCURRENCY = Number(process.env.WHATSAPP_BENCH_CONCURRENCY ?? 4);
/** The sandbox keeps the last 100,000 requests (src/sandbox/server.ts MAX_REQUEST_LOG). */
const MAX_LOGGED = 100_000;
const PATH = '/MultiChannelInput/SendMessageMetaWhatsApp';
/** The goal: achieved ÷ configured within ±5%. */
const TOLERANCE = 0.05;

interface Run extends Timed, Achieved {
  sandboxCpu: number;
  /** The most messages the sandbox accepted within any one second. */
  peak: number;
}

async function runOnce(url: string, pid: number | undefined, file: string, rate: number, lines: number) {
  const who = `${rate === 0 ? 'unpaced' : `${rate}/s`} run`;
  await sandboxJson(url, '/_sandbox/reset', 'POST');
  // A fresh store each run: the same content again would be DUPLICATE_FILE.
  const work = whatsappWorkdir(join(out, 'whatsapp-dropline'), {
    sandboxUrl: url,
    ratePerSecond: rate,
    concurrency: CONCURRENCY,
  });
  const t = timedBeside([SEMI_SPACE, cli, 'send', '--json', file], work, pid);
  const m = JSON.parse(t.stdout) as {
    state: string;
    counts: { valid: number; chunks: number; submitted: number; accepted: number };
  };
  if (
    m.state !== 'completed' ||
    m.counts.valid !== lines ||
    m.counts.submitted !== lines ||
    m.counts.accepted !== lines ||
    m.counts.chunks !== Math.ceil(lines / CHUNK)
  )
    throw new Error(`${who}: the manifest is ${m.state}, ${JSON.stringify(m.counts)}`);
  const ledger = await sandboxJson<{
    accepted: number;
    duplicates: number;
    entries: { destination: string; source: string; templateId: string; count: number }[];
  }>(url, '/_sandbox/whatsapp/ledger');
  if (
    ledger.accepted !== lines ||
    ledger.duplicates !== 0 ||
    ledger.entries.length !== lines ||
    new Set(ledger.entries.map((e) => e.destination)).size !== lines ||
    ledger.entries.some((e) => e.count !== 1 || e.source !== SOURCE || e.templateId !== TEMPLATE)
  )
    throw new Error(
      `${who}: the WhatsApp ledger has ${ledger.entries.length} entries (${ledger.accepted} accepted, ${ledger.duplicates} duplicates), not ${lines} once each`,
    );
  const { requests } = await sandboxJson<{ requests: { endpoint: string; status: number; at: number }[] }>(
    url,
    '/_sandbox/requests',
  );
  const sends = requests.filter((r) => r.endpoint === PATH);
  if (sends.length !== lines || sends.some((r) => r.status !== 200))
    throw new Error(`${who}: ${sends.length} WhatsApp requests (${lines} expected, all 200)`);
  const rates = await sandboxJson<{ accounts: Record<string, { peakPerSecond: number }> }>(
    url,
    '/_sandbox/rates',
  );
  const peak = rates.accounts['whatsapp:demo']?.peakPerSecond ?? Number.NaN;
  return { ...t, ...achievedRate(sends.map((r) => r.at)), peak } satisfies Run;
}

const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const range = (xs: number[], f: (x: number) => string) => `${f(Math.min(...xs))}–${f(Math.max(...xs))}`;
const ratio = (x: number) => `${x.toFixed(3)}`;
const within = (r: number) => Math.abs(r - 1) <= TOLERANCE;

export default async function whatsappBench(): Promise<string> {
  for (const c of CASES)
    if (c.lines > MAX_LOGGED) throw new Error(`at most ${MAX_LOGGED} recipients: the sandbox logs no more`);
  mkdirSync(out, { recursive: true });
  const files = new Map<number, string>();
  for (const { lines } of CASES) {
    const file = join(out, `whatsapp-${lines}.txt`);
    await generateWhatsApp(file, lines);
    files.set(lines, file);
  }
  const load = loadavg()[0]!.toFixed(2);
  const sandbox = await startSandboxProcess(['--no-notifications']);
  const runs: Run[][] = CASES.map(() => []);
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < CASES.length; k++) {
        const i = (round + k) % CASES.length;
        const { rate, lines } = CASES[i]!;
        const r = await runOnce(sandbox.url, sandbox.child.pid, files.get(lines)!, rate, lines);
        process.stderr.write(
          `whatsapp: round ${round + 1}/${ROUNDS}, ${rate === 0 ? 'unpaced' : `${rate}/s`}: ${r.steady.toFixed(2)}/s steady, ${r.whole.toFixed(2)}/s whole, ${r.seconds.toFixed(2)} s\n`,
        );
        runs[i]!.push(r);
      }
    }
  } finally {
    sandbox.child.kill('SIGTERM');
  }

  const rows: string[] = [];
  const perRound: string[] = [];
  const verdicts: string[] = [];
  /** The highest peak 1 s above the configured rate, per paced case. */
  const over: string[] = [];
  let overMax = 0;
  CASES.forEach(({ rate, lines }, i) => {
    const rs = runs[i]!;
    const steady = rs.map((r) => r.steady);
    const whole = rs.map((r) => r.whole);
    const walls = rs.map((r) => r.seconds);
    const name = rate === 0 ? 'unpaced (0)' : `${rate}/s`;
    const ratios = steady.map((s) => s / rate);
    const wholeRatios = whole.map((s) => s / rate);
    const ratioCell =
      rate === 0
        ? '—'
        : `**${ratio(med(ratios))}** (${range(ratios, ratio)}) ${rs.every((_, k) => within(ratios[k]!)) ? '✓' : '✗'}`;
    const wholeCell = rate === 0 ? fmt(med(whole)) : `${med(whole).toFixed(2)} (${ratio(med(wholeRatios))})`;
    rows.push(
      `| ${name} | ${fmt(lines)} | ${rate === 0 ? fmt(med(steady)) : med(steady).toFixed(2)} (${range(steady, rate === 0 ? fmt : (x) => x.toFixed(2))}) | ${ratioCell} | ${wholeCell} | ${fmt(med(rs.map((r) => r.peak)))} | ${med(rs.map((r) => r.span)).toFixed(2)} s | ${med(walls).toFixed(2)} s (${range(walls, (x) => x.toFixed(2))}) | ${fmt(lines / med(walls))} | ${med(rs.map((r) => r.cpuSeconds)).toFixed(2)} / ${med(rs.map((r) => r.sandboxCpu)).toFixed(2)} |`,
    );
    perRound.push(
      `- ${name}: ${rs
        .map((r, k) =>
          rate === 0
            ? `${fmt(r.steady)}/s`
            : `${r.steady.toFixed(2)}/s (${ratio(ratios[k]!)}${within(ratios[k]!) ? '' : ' ✗'})`,
        )
        .join('; ')}`,
    );
    if (rate > 0) {
      const above = Math.max(...rs.map((r) => r.peak)) - rate;
      overMax = Math.max(overMax, above);
      over.push(`${name}: ${fmt(above)}`);
      verdicts.push(
        `${name}: median ${ratio(med(ratios))}, ${ratios.filter(within).length} of ${rs.length} rounds within ±${TOLERANCE * 100}%`,
      );
    }
  });

  return [
    `\`dropline send --json\` of a headed WhatsApp file (the \`${TEMPLATE}\` template, 2 parameters a`,
    `recipient) to a sandbox process (notifications off), one POST ${PATH} a`,
    `recipient, chunks of ${CHUNK} sent together once the dispatcher grants the chunk its turn, the`,
    `WhatsApp account's \`concurrency\` ${CONCURRENCY} (chunks in flight) and its \`ratePerSecond\` as below;`,
    'SQLite store, fresh each run. The paced runs last about 15 s each, so start-up weighs little;',
    'the unpaced run (`ratePerSecond: 0`) shows the ceiling on this machine (100,000 recipients: the',
    'sandbox logs the last 100,000 requests).',
    '',
    "**Method.** The achieved rate is read from the sandbox's own timestamps (`at`) of the requests",
    'it accepted (`GET /_sandbox/requests`), not from dropline: *steady* is the rate over the',
    'middle 80% of those requests sorted by time (from the one at 10% to the one at 90%), which',
    'leaves out start-up (the first chunk goes at once, connections open) and the tail (the',
    'last answers, a partial last chunk). Both ends are rounded to a multiple of 10 so each is',
    "the first request of a chunk: a paced account sends a chunk's 10 requests together every",
    '10 ÷ rate seconds, so an unaligned window would count up to 9 messages of a burst without',
    'its interval (1.5% of the 600 messages in the window at 50/s). *Whole run*: (N − 10) ÷ the',
    'time from the first request to the first of the last chunk, the same alignment over',
    "everything. *Peak 1 s*: the sandbox's `/_sandbox/rates` `peakPerSecond`, the most messages",
    'accepted within any one second. Every run verified: the WhatsApp ledger has exactly N',
    'entries, each `count` 1, N requests all answered 200, and the manifest is `completed` with',
    '`accepted` N. ' +
      `${ROUNDS} interleaved rounds (each round runs every case, starting with a different one);`,
    `medians with the range over the rounds in parentheses. Load average ${load} when it started.`,
    'Goal (issue 15): achieved ÷ configured within ±5%.',
    '',
    '| configured rate | recipients | steady msg/s (range) | steady ÷ configured (range) | whole run msg/s (÷ configured) | peak 1 s | first→last request | `dropline send` wall (range) | recipients/s end to end | CPU s dropline / sandbox |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    'Per round (steady, ÷ configured):',
    ...perRound,
    '',
    `Verdict: ${verdicts.join('; ')}.`,
    '',
    'Why it holds: the budget (src/service/budget.ts) reserves each chunk a start time',
    '(`nextAt` moves on by 10 ÷ rate per chunk) when the dispatcher takes its permit, before',
    'it sleeps until then, so a late timer or a slow store write delays one chunk without',
    'moving the ones after it; only a dispatcher that asks after `nextAt` has passed (every',
    'chunk of the account in flight, or the store slower than 10 ÷ rate) loses time for good.',
    `The peak 1 s is above the rate by ${overMax <= CHUNK ? 'at most one chunk' : 'more than one chunk'} (highest peak − configured: ${over.join(', ')}):`,
    "a window whose ends fall on two chunks' bursts 1 s apart (to the millisecond) holds both.",
  ].join('\n');
}
