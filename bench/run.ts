// `npm run bench [name…]`: runs bench/<name>.bench.ts (all when none named) one after the
// other and rewrites their sections of docs/benchmarks.md, keeping the other sections.
// Each bench module default-exports `(): Promise<string>` returning its markdown section.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';

const dir = import.meta.dirname;
// Every benchmarked process runs as users run dropline (bin/dropline.js enables the compile
// cache): its TypeScript comes from the cache. Without it, the preloaded bench/peak-rss.ts
// and the floors' own .ts files load Node's type stripper, ~20 MB and 30–60 ms in every
// measured process, dropline's and the floors' alike (docs/performance.md).
process.env.NODE_COMPILE_CACHE ??= join(dir, 'out', 'compile-cache');
const docPath = join(dir, '..', 'docs', 'benchmarks.md');
const wanted = process.argv.slice(2);
const names = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .map((f) => f.slice(0, -'.bench.ts'.length))
  .filter((n) => wanted.length === 0 || wanted.includes(n))
  .sort();

let doc: string;
try {
  doc = readFileSync(docPath, 'utf8');
} catch {
  doc = '# Benchmarks\n\nWritten by `npm run bench`; each section is replaced when its bench runs again.\n';
}

for (const name of names) {
  process.stderr.write(`bench: ${name}\n`);
  const mod = (await import(join(dir, `${name}.bench.ts`))) as { default: () => Promise<string> };
  const body = await mod.default();
  const machine = `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const section = `<!-- bench:${name} -->\n## ${name}\n\nMeasured ${new Date().toISOString()} on ${machine}.\n\n${body.trim()}\n<!-- /bench:${name} -->`;
  const re = new RegExp(`<!-- bench:${name} -->[\\s\\S]*?<!-- /bench:${name} -->`);
  doc = re.test(doc) ? doc.replace(re, section) : `${doc.trimEnd()}\n\n${section}\n`;
  writeFileSync(docPath, doc);
  process.stdout.write(`${section}\n\n`);
}
