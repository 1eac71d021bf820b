// The repository stands on its own (issue 34): a file under src/, test/, bench/ or scripts/ cites
// docs/ sections, never the documents it was first written against, which are not in the
// repository. The whole text is scanned, not only comments: a message, a test's name or a bench's
// output citing them would leave a reader with the same dead end. This file is skipped: it must
// name what it looks for.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const SCANNED = ['src', 'test', 'bench', 'scripts'];
/** What the scan leaves out: this file, and the benches' output (not in the repository). */
const SKIPPED = new Set(['test/unit/self-contained.test.ts', 'bench/out']);

/** Documents outside the repository, by name, by path or by section number ("spec 2.4", "FORMAT 5"). */
const OUTSIDE =
  /service-interface|FORMAT\.md|CONTRACT\.md|ARCHITECTURE\.md|DESIGN-NOTES|TOOLING\.md|\.\.\/shared(?![\w-])|\b[Ss]pec \d|\bFORMAT \d/;

/** The files under `dir` (a path relative to the repository, with `/`), skipped ones left out. */
function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (SKIPPED.has(path)) return [];
    return e.isDirectory() ? files(path) : [path];
  });
}

it('no file under src/, test/, bench/ or scripts/ cites a document outside the repository', () => {
  const found: string[] = [];
  for (const file of SCANNED.flatMap(files)) {
    if (!/\.(ts|js|mjs|sql|css|html|sh|txt)$/.test(file)) continue;
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (OUTSIDE.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
      });
  }
  expect(found).toEqual([]);
});

// A folder moved or misspelt would be scanned as empty, and the first test pass on nothing.
it('every scanned folder has files to scan', () => {
  for (const dir of SCANNED) expect(files(dir).length, dir).toBeGreaterThan(0);
});
