// Issue 4: end to end to the sandbox: `dropline send` of 1M-recipient files (bulk and
// personalized) as a whole process, against a floor measured in the same run (read the file
// and post the same chunk bodies with a bare undici Pool: bench/floor-send.ts). The sandbox
// runs in its own process without notifications, so this measures the send path. Peak RSS
// of `dropline send` is read by bench/peak-rss.ts.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { cli, SEMI_SPACE, startSandboxProcess } from './sandbox-process.ts';
import { generate, median, sendWorkdir, type Timed, timed } from './send-run.ts';

const root = join(import.meta.dirname, '..');
const out = join(root, 'bench', 'out');
// The node flag of the bin's shebang (bin/dropline.js), which `node <file>` does not read.
const LINES = Number(process.env.PIPELINE_BENCH_LINES ?? 1_000_000);
const CHUNK = 1000;
const CONCURRENCY = 4;
/** Runs of each, interleaved; the table shows the median time and the highest peak RSS. */
const RUNS = 3;

export default async function pipelineBench(): Promise<string> {
  mkdirSync(out, { recursive: true });
  const files = {
    bulk: join(out, `pipeline-bulk-${LINES}.bulk.txt`),
    personalized: join(out, `pipeline-personalized-${LINES}.personalized.txt`),
  };
  await generate(files.bulk, 'bulk', LINES);
  await generate(files.personalized, 'personalized', LINES);
  const rows: string[] = [];
  for (const kind of ['bulk', 'personalized'] as const) {
    const sandbox = await startSandboxProcess(['--no-notifications']);
    try {
      const floors: Timed[] = [];
      const runs: (Timed & { state: string })[] = [];
      for (let i = 0; i < RUNS; i++) {
        floors.push(
          timed(
            [
              join(root, 'bench', 'floor-send.ts'),
              files[kind],
              kind,
              sandbox.url,
              String(CHUNK),
              String(CONCURRENCY),
            ],
            root,
          ),
        );
        // A fresh store each run: the same content sent again would be DUPLICATE_FILE.
        const work = sendWorkdir(join(out, `pipeline-${kind}`), {
          sandboxUrl: sandbox.url,
          chunkSize: CHUNK,
          concurrency: CONCURRENCY,
          store: 'sqlite:./state.db',
        });
        const run = timed([SEMI_SPACE, cli, 'send', '--json', files[kind]], work);
        const manifest = JSON.parse(run.stdout) as { state: string; counts: { submitted: number } };
        if (manifest.counts.submitted !== LINES)
          throw new Error(`submitted ${manifest.counts.submitted} of ${LINES}`);
        runs.push({ ...run, state: manifest.state });
      }
      const floor = median(floors);
      const run = median(runs);
      const peak = Math.max(...runs.map((r) => r.rssMiB));
      rows.push(
        `| ${kind} ${LINES.toLocaleString('en-US')} | ${floor.seconds.toFixed(2)} s | ${run.seconds.toFixed(2)} s | ${(run.seconds / floor.seconds).toFixed(2)}× | ${peak.toFixed(0)} MiB | ${run.state} |`,
      );
    } finally {
      sandbox.child.kill('SIGTERM');
    }
  }
  return [
    '`dropline send --json <file>` (read, validate, record every line in SQLite, plan, send every',
    'chunk write-ahead, record every outcome) as a whole process against the floor: the same file',
    'read and the same chunk bodies posted with a bare undici Pool (bench/floor-send.ts), both to',
    `a sandbox process without notifications; chunks of ${CHUNK}, ${CONCURRENCY} in flight. Median of ${RUNS}`,
    'interleaved runs of each; peak RSS is the highest of the runs. Goals: at most 3× the floor,',
    'peak RSS under 300 MB.',
    '',
    '| file | floor | dropline send | ratio | peak RSS | state |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}
