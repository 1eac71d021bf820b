// What the end-to-end send benches share (bench/pipeline.bench.ts on SQLite,
// bench/postgres.bench.ts on PostgreSQL): the 1M-recipient drop files, and a whole process
// timed with its peak RSS (bench/peak-rss.ts preloaded).
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');

/** The i-th recipient of the generated files: its number, and its text in a personalized one. */
export function benchRecipient(i: number): { number: string; text: string } {
  return {
    number: `573${String((i * 7919 + 12_345) % 1e9).padStart(9, '0')}`,
    text: `Hola cliente ${i}, su factura de este mes ya esta disponible en la app.`,
  };
}

/** A drop file of `lines` recipients (kept between runs: the same file for every bench). */
export async function generate(path: string, kind: 'bulk' | 'personalized', lines: number): Promise<void> {
  if (existsSync(path)) return;
  const ws = createWriteStream(path);
  if (kind === 'bulk')
    ws.write('Recordatorio: su factura vence el viernes. Responda SALIR para no recibir mas.\n');
  let buf = '';
  for (let i = 0; i < lines; i++) {
    const r = benchRecipient(i);
    buf += kind === 'bulk' ? `${r.number}\n` : `${r.number};${r.text}\n`;
    if (buf.length > 1 << 20) {
      if (!ws.write(buf)) await once(ws, 'drain');
      buf = '';
    }
  }
  ws.end(buf);
  await once(ws, 'finish');
}

export interface Timed {
  seconds: number;
  rssMiB: number;
  /** User + system CPU of the whole process (bench/peak-rss.ts). */
  cpuSeconds: number;
  stdout: string;
}

export function median<T extends Timed>(runs: T[]): T {
  return [...runs].sort((a, b) => a.seconds - b.seconds)[Math.floor(runs.length / 2)]!;
}

/** `node <args>` in `cwd`, timed, with its peak RSS; throws when it fails. */
export function timed(args: string[], cwd: string): Timed {
  const t = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['--import', join(root, 'bench', 'peak-rss.ts'), ...args], {
    cwd,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  if (r.status !== 0) throw new Error(`failed: ${args.join(' ')}\n${r.stderr.slice(-2000)}`);
  const m = /peak-rss-kib (\d+)/.exec(r.stderr);
  const cpu = /cpu-us (\d+)/.exec(r.stderr);
  return {
    seconds,
    rssMiB: m ? Number(m[1]) / 1024 : Number.NaN,
    cpuSeconds: cpu ? Number(cpu[1]) / 1e6 : Number.NaN,
    stdout: r.stdout,
  };
}

/**
 * A fresh working directory for one `dropline send` run (`dir`, emptied), with the config both
 * send benches use: the sandbox at `sandboxUrl`, chunks of `chunkSize`, `concurrency` in flight,
 * a local source in ./drop and the given store.
 */
export function sendWorkdir(
  dir: string,
  options: { sandboxUrl: string; chunkSize: number; concurrency: number; store: string },
): string {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'dropline.config.json'),
    JSON.stringify({
      api: {
        baseUrl: options.sandboxUrl,
        username: 'demo',
        password: 'demo',
        chunkSize: options.chunkSize,
        concurrency: options.concurrency,
      },
      notify: { listen: '127.0.0.1:0', token: 'bench' },
      store: options.store,
      sources: [{ name: 'local', type: 'local', path: './drop' }],
    }),
  );
  return dir;
}
