// The rooms' import rules (docs/architecture.md "What each folder may import"), read from the
// sources as the fastify errors-versus-docs test reads its table: a forbidden direction or an
// import circle fails `npm test`, so the structure cannot drift back.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : /\.(ts|js)$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

/** Every file of src/ (relative) and the files of src/ it imports, static or dynamic, types too. */
const graph = new Map<string, string[]>(
  sources(SRC).map((file) => {
    const text = readFileSync(file, 'utf8');
    const specs = [...text.matchAll(/(?:from\s+|import\()\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
    return [relative(SRC, file), specs.map((s) => relative(SRC, resolve(dirname(file), s)))];
  }),
);
const folderOf = (file: string) => (file.includes('/') ? file.split('/')[0]! : '.');

/** Each import from `from` into a folder it must not reach, as `file → imported`. */
function crossings(from: string, forbidden: readonly string[], allowed: readonly string[] = []): string[] {
  const out: string[] = [];
  for (const [file, imports] of graph)
    if (folderOf(file) === from)
      for (const i of imports)
        if (forbidden.includes(folderOf(i)) && !allowed.includes(`${file} → ${i}`))
          out.push(`${file} → ${i}`);
  return out;
}

/** The I/O rooms: what talks to files, networks, the store, processes. */
const IO = ['sources', 'store', 'service', 'notify', 'ops', 'pipeline', 'app', 'cli', 'sandbox', 'optout'];

describe('what each folder may import', () => {
  it('nothing imports cli/; only cli/ imports app/ (the composition root)', () => {
    const found: string[] = [];
    for (const [file, imports] of graph)
      for (const i of imports) {
        const [own, to] = [folderOf(file), folderOf(i)];
        if (own !== to && (to === 'cli' || (to === 'app' && own !== 'cli'))) found.push(`${file} → ${i}`);
      }
    expect(found).toEqual([]);
  });

  it('core/ and plan/ are pure: they import no I/O room (plan only core/)', () => {
    expect(crossings('core', [...IO, 'format', 'plan', 'config'])).toEqual([]);
    expect(crossings('plan', [...IO, 'format', 'config'])).toEqual([]);
  });

  it('format/ imports no I/O room, but for the one crossing still to remove', () => {
    // validate.ts reads a source's opt-out lists through pipeline/suppression-lists.ts (its
    // backends read sources): to go when the lists move to a room of their own.
    expect(crossings('format', IO, ['format/validate.ts → pipeline/suppression-lists.ts'])).toEqual([]);
  });

  it('store/ does not import service/ (nor any room above it)', () => {
    expect(
      crossings('store', ['service', 'pipeline', 'app', 'ops', 'cli', 'notify', 'sources', 'sandbox']),
    ).toEqual([]);
  });

  it('no import circles between files', () => {
    const circles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const path: string[] = [];
    const visit = (file: string) => {
      state.set(file, 'open');
      path.push(file);
      for (const next of graph.get(file) ?? []) {
        if (!graph.has(next)) continue;
        if (state.get(next) === 'open') circles.push([...path.slice(path.indexOf(next)), next].join(' → '));
        else if (!state.has(next)) visit(next);
      }
      path.pop();
      state.set(file, 'done');
    };
    for (const file of graph.keys()) if (!state.has(file)) visit(file);
    expect(circles).toEqual([]);
  });
});
