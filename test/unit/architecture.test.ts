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

const texts = new Map(sources(SRC).map((file) => [relative(SRC, file), readFileSync(file, 'utf8')]));

/** The files of src/ a file imports: static (`from`) or also dynamic (`import()`), types too. */
function importsOf(file: string, text: string, dynamic: boolean): string[] {
  const pattern = dynamic ? /(?:from\s+|import\()\s*'(\.{1,2}\/[^']+)'/g : /from\s+'(\.{1,2}\/[^']+)'/g;
  return [...text.matchAll(pattern)].map((m) => relative(SRC, resolve(dirname(join(SRC, file)), m[1]!)));
}

/** Every file of src/ (relative) and the files of src/ it imports, static or dynamic, types too. */
const graph = new Map<string, string[]>(
  [...texts].map(([file, text]) => [file, importsOf(file, text, true)]),
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
const IO = ['sources', 'store', 'service', 'notify', 'ops', 'pipeline', 'app', 'cli', 'sandbox', 'replies'];

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

describe('the channels (docs/architecture.md "Channels")', () => {
  it('no file outside src/channels/ compares a channel name: the registry is the one list', () => {
    const comparison =
      /(?:channel|ch)\s*[!=]==\s*['"](?:sms|rcs|email|whatsapp|twoway)['"]|['"](?:sms|rcs|email|whatsapp|twoway)['"]\s*[!=]==\s*\w*channel|case\s+['"](?:rcs|email|whatsapp|twoway)['"]\s*:/;
    const found = [...texts]
      .filter(([file]) => !file.startsWith('channels/') && !file.startsWith('sandbox/'))
      .flatMap(([file, text]) =>
        text
          .split('\n')
          .flatMap((line, i) => (comparison.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
      );
    expect(found).toEqual([]);
  });

  it("a channel's definition and rules are pure: its account and client are loaded only when opened", () => {
    // What the reader and the configuration import (index.ts, names.ts, each channel.ts and
    // rules.ts) must not pull an I/O room in statically; `import()` of ./account.ts is how a
    // definition opens an account.
    const pure = [...texts.keys()].filter(
      (f) =>
        f.startsWith('channels/') && !/\/(account|client|attachments|template-check|reports)\.ts$/.test(f),
    );
    const found = pure.flatMap((file) => {
      const text = texts.get(file)!;
      return importsOf(file, text, false)
        .filter((i) => IO.includes(folderOf(i)) || /\/(account|client|attachments)\.ts$/.test(i))
        .filter((i) => !isTypeOnly(text, i, file))
        .map((i) => `${file} → ${i}`);
    });
    expect(found).toEqual([]);
  });

  it('format/ reaches the channels only through their registry and names', () => {
    const found = crossings(
      'format',
      ['channels'],
      ['format/record-parser.ts → channels/index.ts', 'format/directives.ts → channels/names.ts'],
    );
    expect(found).toEqual([]);
  });
});

/** Whether every import of `target` in `text` is `import type` (erased: no I/O at run time). */
function isTypeOnly(text: string, target: string, file: string): boolean {
  const statements = [...text.matchAll(/import\s+(type\s+)?[^;]*?from\s+'(\.{1,2}\/[^']+)'/g)];
  return statements
    .filter((m) => relative(SRC, resolve(dirname(join(SRC, file)), m[2]!)) === target)
    .every((m) => m[1] !== undefined);
}
