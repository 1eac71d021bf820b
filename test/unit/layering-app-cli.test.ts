// The composition root's rules (docs/architecture.md "What each folder may import"): nothing
// imports src/cli/, and only src/cli/ imports src/app/ (the pipeline, ops and notify are
// built by app, never the other way round).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : /\.(ts|js)$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

/** Each file's imports (static and dynamic) as folders of src/ they reach: `cli`, `app`… */
function importedFolders(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from\s+|import\()\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
  return specs.map((s) => relative(SRC, resolve(file, '..', s)).split('/')[0]!);
}

it('nothing imports src/cli/, and only src/cli/ imports src/app/', () => {
  const crossings: string[] = [];
  for (const file of sources(SRC)) {
    const own = relative(SRC, file).split('/')[0];
    for (const folder of importedFolders(file)) {
      if (folder === own) continue;
      if (folder === 'cli' || (folder === 'app' && own !== 'cli'))
        crossings.push(`${relative(SRC, file)} → ${folder}/`);
    }
  }
  expect(crossings).toEqual([]);
});
