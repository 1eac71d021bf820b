// The repository stands on its own (issue 34): a file under src/ cites docs/ sections, never
// the documents it was first written against, which are not in the repository. The whole text is
// scanned, not only comments: a message citing them would leave a user with the same dead end.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');

/** Documents outside the repository, by name, by path or by section number ("spec 2.4"). */
const OUTSIDE =
  /service-interface|FORMAT\.md|CONTRACT\.md|ARCHITECTURE\.md|DESIGN-NOTES|TOOLING\.md|\.\.\/shared(?![\w-])|\b[Ss]pec \d/;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  );
}

it('no file under src/ cites a document outside the repository', () => {
  const found: string[] = [];
  for (const file of files(SRC)) {
    const name = relative(SRC, file);
    if (!/\.(ts|js|sql|css|html)$/.test(name)) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (OUTSIDE.test(line)) found.push(`src/${name}:${i + 1}: ${line.trim()}`);
      });
  }
  expect(found).toEqual([]);
});
