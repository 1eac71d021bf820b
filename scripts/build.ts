// `npm run build` (and `prepack`): the package's JavaScript in dist/, built from src/ by the
// project's TypeScript (tsconfig.build.json: `.ts` import specifiers rewritten to `.js`,
// declarations and source maps), with the files src/ holds beside its modules (the SQL
// migrations, the dashboard's page, scripts and styles) copied where the built modules look
// for them. Development runs src/ directly and never needs this (docs/architecture.md
// "The package").
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');

rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
  cwd: root,
  stdio: 'inherit',
});
cpSync(join(root, 'src'), dist, {
  recursive: true,
  filter: (from) => !from.endsWith('.ts'),
});
