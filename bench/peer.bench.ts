// Issue 16: dropline against the script a campaign team would write instead (bench/peer-script.ts:
// readline, split at `;`, POST batches of 1000 with one token, no validation, no state), on the
// same personalized file and the same sandbox process (notifications off), with the same
// requests in flight. Rounds interleaved (script, dropline, script, …, the first of each pair
// alternating); medians, and the spread of the ratios over the rounds.
// `PEER_LINES=100000,1000000` (default) picks the sizes; `PEER_ROUNDS` the rounds (default 9).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { cli, SEMI_SPACE, startSandboxProcess } from './sandbox-process.ts';
import { generate, median, sendWorkdir, type Timed, timed } from './send-run.ts';

const root = join(import.meta.dirname, '..');
const out = join(root, 'bench', 'out');
const SIZES = (process.env.PEER_LINES ?? '100000,1000000').split(',').map(Number);
const ROUNDS = Number(process.env.PEER_ROUNDS ?? 9);
const CHUNK = 1000;
const IN_FLIGHT = 4;

const byCpu = (runs: Timed[]) =>
  [...runs].sort((a, b) => a.cpuSeconds - b.cpuSeconds)[Math.floor(runs.length / 2)]!;
const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}×`;

export default async function peerBench(): Promise<string> {
  mkdirSync(out, { recursive: true });
  const rows: string[] = [];
  for (const lines of SIZES) {
    const file = join(out, `peer-${lines}.personalized.txt`);
    await generate(file, 'personalized', lines);
    const sandbox = await startSandboxProcess(['--no-notifications']);
    try {
      const script: Timed[] = [];
      const dropline: Timed[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const runScript = () => {
          const t = timed(
            [join(root, 'bench', 'peer-script.ts'), file, sandbox.url, String(CHUNK), String(IN_FLIGHT)],
            root,
          );
          const { sent } = JSON.parse(t.stdout) as { sent: number };
          if (sent !== lines) throw new Error(`the script sent ${sent} of ${lines}`);
          script.push(t);
        };
        const runDropline = () => {
          // A fresh store each round: the same content again would be DUPLICATE_FILE.
          const work = sendWorkdir(join(out, 'peer-dropline'), {
            sandboxUrl: sandbox.url,
            chunkSize: CHUNK,
            concurrency: IN_FLIGHT,
            store: 'sqlite:./state.db',
          });
          const t = timed([SEMI_SPACE, cli, 'send', '--json', file], work);
          const m = JSON.parse(t.stdout) as { counts: { submitted: number } };
          if (m.counts.submitted !== lines)
            throw new Error(`dropline submitted ${m.counts.submitted} of ${lines}`);
          dropline.push(t);
        };
        if (round % 2 === 0) {
          runScript();
          runDropline();
        } else {
          runDropline();
          runScript();
        }
      }
      const wallRatios = dropline.map((d, i) => d.seconds / script[i]!.seconds);
      const cpuRatios = dropline.map((d, i) => d.cpuSeconds / script[i]!.cpuSeconds);
      const s = median(script);
      const d = median(dropline);
      const sc = byCpu(script);
      const dc = byCpu(dropline);
      rows.push(
        `| ${lines.toLocaleString('en-US')} | ${s.seconds.toFixed(2)} s / ${sc.cpuSeconds.toFixed(2)} CPU-s / ${Math.max(...script.map((x) => x.rssMiB)).toFixed(0)} MiB | ${d.seconds.toFixed(2)} s / ${dc.cpuSeconds.toFixed(2)} CPU-s / ${Math.max(...dropline.map((x) => x.rssMiB)).toFixed(0)} MiB | ${(d.seconds / s.seconds).toFixed(2)}× (${range(wallRatios)}) | ${(dc.cpuSeconds / sc.cpuSeconds).toFixed(2)}× (${range(cpuRatios)}) |`,
      );
    } finally {
      sandbox.child.kill('SIGTERM');
    }
  }
  return [
    'The hand-written script (bench/peer-script.ts: readline, split at `;`, POST batches of',
    `${CHUNK} with one token, no validation, no state) against \`dropline send --json\` (validate,`,
    'deduplicate, record every line in SQLite, write-ahead chunks, exact reports), the same',
    `personalized file and the same sandbox process without notifications, ${IN_FLIGHT} requests in flight`,
    `each. ${ROUNDS} interleaved rounds; medians (wall and CPU separately), peak RSS the highest,`,
    'ratios dropline ÷ script with their spread over the rounds. Goals (issue 16): wall at most',
    '1.0×, CPU at most 2×, peak RSS under 250 MB.',
    '',
    '| recipients | script: wall / CPU / RSS | dropline send: wall / CPU / RSS | wall ratio (spread) | CPU ratio (spread) |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}
