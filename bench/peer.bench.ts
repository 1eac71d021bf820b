// Issue 16: dropline against the script a campaign team would write instead (bench/peer-script.ts:
// readline, split at `;`, POST batches of 1000 with one token, no validation, no state), on the
// same personalized file and the same sandbox process (notifications off), with the same
// requests in flight. Rounds interleaved (script, dropline, script, …, the first of each pair
// alternating); medians, and the spread of the ratios over the rounds.
// `PEER_LINES=100000,1000000,5000000` (default) picks the sizes; `PEER_ROUNDS` the rounds
// (default 9, and 3 at 5M and more). It also draws docs/peer.svg: wall and CPU time of each.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, SEMI_SPACE, startSandboxProcess } from './sandbox-process.ts';
import { generate, median, sendWorkdir, type Timed, timed } from './send-run.ts';

const root = join(import.meta.dirname, '..');
const out = join(root, 'bench', 'out');
const SIZES = (process.env.PEER_LINES ?? '100000,1000000,5000000').split(',').map(Number);
const roundsFor = (lines: number) => Number(process.env.PEER_ROUNDS ?? (lines >= 5_000_000 ? 3 : 9));
const CHUNK = 1000;
const IN_FLIGHT = 4;

const byCpu = (runs: Timed[]) =>
  [...runs].sort((a, b) => a.cpuSeconds - b.cpuSeconds)[Math.floor(runs.length / 2)]!;
const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}×`;

export default async function peerBench(): Promise<string> {
  mkdirSync(out, { recursive: true });
  const rows: string[] = [];
  const bars: Bars[] = [];
  for (const lines of SIZES) {
    const ROUNDS = roundsFor(lines);
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
      bars.push({ lines, script: [s.seconds, sc.cpuSeconds], dropline: [d.seconds, dc.cpuSeconds] });
      rows.push(
        `| ${lines.toLocaleString('en-US')} (${ROUNDS} rounds) | ${s.seconds.toFixed(2)} s / ${sc.cpuSeconds.toFixed(2)} CPU-s / ${Math.max(...script.map((x) => x.rssMiB)).toFixed(0)} MiB | ${d.seconds.toFixed(2)} s / ${dc.cpuSeconds.toFixed(2)} CPU-s / ${Math.max(...dropline.map((x) => x.rssMiB)).toFixed(0)} MiB | ${(d.seconds / s.seconds).toFixed(2)}× (${range(wallRatios)}) | ${(dc.cpuSeconds / sc.cpuSeconds).toFixed(2)}× (${range(cpuRatios)}) |`,
      );
    } finally {
      sandbox.child.kill('SIGTERM');
    }
  }
  writeFileSync(join(root, 'docs', 'peer.svg'), chart(bars));
  return [
    '![dropline send against the script: wall and CPU seconds](peer.svg)',
    '',
    'The hand-written script (bench/peer-script.ts: readline, split at `;`, POST batches of',
    `${CHUNK} with one token, no validation, no state) against \`dropline send --json\` (validate,`,
    'deduplicate, record every line in SQLite, write-ahead chunks, exact reports), the same',
    `personalized file and the same sandbox process without notifications, ${IN_FLIGHT} requests in flight`,
    'each. Interleaved rounds; medians (wall and CPU separately), peak RSS the highest,',
    'ratios dropline ÷ script with their spread over the rounds. Goals (issue 16): wall at most',
    '1.0×, CPU at most 2×, peak RSS under 250 MB.',
    '',
    '| recipients | script: wall / CPU / RSS | dropline send: wall / CPU / RSS | wall ratio (spread) | CPU ratio (spread) |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

export interface Bars {
  lines: number;
  /** [wall, CPU] seconds. */
  script: [number, number];
  dropline: [number, number];
}

/**
 * A grouped bar chart as SVG: per size, the script's and dropline's wall and CPU seconds, each
 * size on its own scale (a 5M bar would flatten the 100k ones). Written by hand: four kinds of
 * rectangle and some text, which no charting library is needed for (uPlot draws in a browser).
 */
export function chart(bars: readonly Bars[]): string {
  const W = 220;
  const H = 180;
  const top = 58;
  const colors = { script: '#8a8f98', dropline: '#1f6feb' };
  const parts: string[] = [];
  bars.forEach((b, g) => {
    const x0 = 20 + g * W;
    const max = Math.max(...b.script, ...b.dropline);
    parts.push(
      `<text x="${x0 + 90}" y="${top + H + 34}" text-anchor="middle" font-size="13">${b.lines.toLocaleString('en-US')} recipients</text>`,
    );
    (['wall', 'CPU'] as const).forEach((label, k) => {
      const xs = x0 + 10 + k * 90;
      for (const [i, who] of (['script', 'dropline'] as const).entries()) {
        const v = b[who][k]!;
        const h = (v / max) * H;
        const x = xs + i * 34;
        parts.push(
          `<rect x="${x}" y="${(top + H - h).toFixed(1)}" width="30" height="${h.toFixed(1)}" fill="${colors[who]}"/>`,
          `<text x="${x + 15}" y="${(top + H - h - 4).toFixed(1)}" text-anchor="middle" font-size="10">${v.toFixed(2)}</text>`,
        );
      }
      parts.push(
        `<text x="${xs + 32}" y="${top + H + 16}" text-anchor="middle" font-size="11">${label} s</text>`,
      );
    });
  });
  const width = Math.max(500, 40 + bars.length * W);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${top + H + 50}" font-family="sans-serif">`,
    '<title>dropline send against the hand-written script: wall and CPU seconds per file size</title>',
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="20" y="18" font-size="14">dropline send against the hand-written script (lower is better)</text>`,
    `<rect x="20" y="24" width="10" height="10" fill="${colors.script}"/><text x="34" y="33" font-size="11">script</text>`,
    `<rect x="90" y="24" width="10" height="10" fill="${colors.dropline}"/><text x="104" y="33" font-size="11">dropline send</text>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
