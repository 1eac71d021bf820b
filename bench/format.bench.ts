// Issue 2: `dropline validate --json` as a whole process on 1M-line files, against a floor
// measured in the same run (stream the file, split lines, regex-check the number), and
// peak RSS at 1M and 5M lines (memory may grow only with the duplicate index). docs/format.md
// "Templates": a headed 1M-line file whose `#! message:` template names two columns, checked
// against a 1M-number suppression list (loaded by validate's loadSuppressionList).
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const out = join(root, 'bench', 'out');
const RUNS = 3;

type Kind = 'personalized' | 'bulk' | 'template' | 'suppression';

const MONTHS = ['enero', 'febrero', 'marzo', 'abril', 'mayo', 'junio', 'julio', 'agosto'];

async function generate(path: string, lines: number, kind: Kind): Promise<void> {
  if (existsSync(path)) return;
  const ws = createWriteStream(path);
  if (kind === 'bulk')
    ws.write('Recordatorio: su factura vence el viernes. Responda SALIR para no recibir mas.\n');
  if (kind === 'template') {
    // Spanish as written (está): UCS-2, so the cost of the gsm7 alternative is computed too.
    ws.write(
      '#! message: Hola {{Nombre}}, su factura de {{mes}} ya está disponible en la app. Gracias.\nNúmero;Nombre;Mes\n',
    );
  }
  let buf = '';
  for (let i = 0; i < lines; i++) {
    // Distinct numbers in scattered order (7919 is coprime to 10^9), as in a real campaign.
    const n = `3${String((i * 7919 + 12_345) % 1e9).padStart(9, '0')}`;
    if (kind === 'suppression') {
      // Other numbers (104729 is coprime to 10^9 too), a few of them in the campaign.
      buf += `57 3${String((i * 104_729 + 5) % 1e9).padStart(9, '0')}\n`;
    } else if (kind === 'template') {
      buf += `57${n};Cliente ${i};${MONTHS[i % MONTHS.length]}\n`;
    } else {
      buf +=
        kind === 'bulk'
          ? `57${n}\n`
          : `57${n};Hola cliente ${i}, su factura de este mes ya esta disponible en la app. Gracias.\n`;
    }
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
  rssMiB: number;
}

function run(args: string[]): Run {
  const t = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['--import', join(root, 'bench', 'peak-rss.ts'), ...args], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  if (r.status !== 0 && r.status !== 1) throw new Error(`bench run failed: ${args.join(' ')}\n${r.stderr}`);
  const m = /peak-rss-kib (\d+)/.exec(r.stderr);
  return { seconds, rssMiB: m ? Number(m[1]) / 1024 : Number.NaN };
}

function median(runs: Run[]): Run {
  const s = [...runs].sort((a, b) => a.seconds - b.seconds);
  return s[Math.floor(s.length / 2)]!;
}

const cli = join(root, 'bin', 'dropline.js');
// The node flag of the bin's shebang (bin/dropline.js), which `node <file>` does not read.
const SEMI_SPACE = '--max-semi-space-size=16';
const floor = join(root, 'bench', 'floor-read.ts');

export default async function formatBench(): Promise<string> {
  mkdirSync(out, { recursive: true });
  const files = {
    personalized1m: join(out, 'personalized-1m.txt'),
    bulk1m: join(out, 'bulk-1m.txt'),
    personalized5m: join(out, 'personalized-5m.txt'),
    template1m: join(out, 'template-1m.txt'),
    suppression1m: join(out, 'suppression-1m.list'),
  };
  await generate(files.personalized1m, 1_000_000, 'personalized');
  await generate(files.bulk1m, 1_000_000, 'bulk');
  await generate(files.personalized5m, 5_000_000, 'personalized');
  await generate(files.template1m, 1_000_000, 'template');
  await generate(files.suppression1m, 1_000_000, 'suppression');

  // `FORMAT_CASES=template,bulk npm run bench format`: only the cases whose names start so.
  const only = (process.env.FORMAT_CASES ?? '').split(',').filter((c) => c.length > 0);
  const cases = (
    [
      ['personalized 1M', files.personalized1m, 'personalized', []],
      ['bulk 1M', files.bulk1m, 'bulk', []],
      ['personalized 5M', files.personalized5m, 'personalized', []],
      [
        'template 1M + 1M suppression list',
        files.template1m,
        'personalized',
        ['--suppression-list', files.suppression1m],
        // validate reads the list too: so does its floor.
        [files.suppression1m, 'bulk'],
      ],
    ] as const
  ).filter(([name]) => only.length === 0 || only.some((o) => name.startsWith(o)));

  const rows: string[] = [];
  const notes: string[] = [];
  const results: Record<string, { validate: Run; floor: Run }> = {};
  for (const [name, path, kind, extra, floorExtra = []] of cases) {
    const f: Run[] = [];
    const alone: Run[] = [];
    const v: Run[] = [];
    for (let i = 0; i < RUNS; i++) {
      f.push(run([floor, path, kind, ...floorExtra]));
      if (floorExtra.length > 0) alone.push(run([floor, path, kind]));
      v.push(run([SEMI_SPACE, cli, 'validate', '--json', ...extra, path]));
    }
    const validate = median(v);
    const fl = median(f);
    results[name] = { validate, floor: fl };
    if (alone.length > 0) {
      const a = median(alone);
      notes.push(
        `${name}: the drop file's floor alone is ${a.seconds.toFixed(2)} s, ${(validate.seconds / a.seconds).toFixed(2)}× (the list is read in the floor above).`,
      );
    }
    const mb = (statSync(path).size / 1e6).toFixed(0);
    rows.push(
      `| ${name} (${mb} MB) | ${fl.seconds.toFixed(2)} s | ${validate.seconds.toFixed(2)} s | ${(validate.seconds / fl.seconds).toFixed(2)}× | ${validate.rssMiB.toFixed(0)} MiB |`,
    );
  }
  const five = results['personalized 5M'];
  const one = results['personalized 1M'];
  const growth = five && one ? five.validate.rssMiB - one.validate.rssMiB : Number.NaN;
  return [
    '`dropline validate --json` as a whole process (median of 3 runs), against the floor: the same',
    'file streamed, split into lines and the number regex-checked (bench/floor-read.ts); with a',
    'suppression list, the list is streamed and checked the same way in the floor, as validate reads it.',
    'Goals: at most 3× the floor at 1M lines, peak RSS under 150 MB, and the 5M-line file within',
    '70 MB of the 1M-line RSS. The template file is headed, `#! message:` names two columns',
    '(`Hola {{Nombre}}, su factura de {{mes}} ya está…`: UCS-2 as written, so the gsm7 cost is',
    'computed too) and validate also loads a 1M-number suppression list (`--suppression-list`).',
    '',
    '| file | floor | validate | ratio | validate peak RSS |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    ...notes.flatMap((n) => [n, '']),
    Number.isNaN(growth)
      ? ''
      : `RSS growth from 1M to 5M lines: ${growth.toFixed(0)} MiB (${((growth * 2 ** 20) / 4e6).toFixed(1)} bytes per added recipient).`,
  ].join('\n');
}
