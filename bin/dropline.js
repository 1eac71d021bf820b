#!/usr/bin/env -S node --max-semi-space-size=16
// The package's command. In a checkout (src/ beside bin/) it runs the TypeScript sources
// directly (Node 24 strips the types), so contributors never build; the installed package
// holds no src/ and runs the JavaScript built into dist/ (Node never strips types under
// node_modules: docs/architecture.md "The package"). The compile cache keeps the compiled
// modules between runs, which takes start-up from ~150 ms to ~50 ms.
//
// --max-semi-space-size=16 (in the shebang, and in `npm start` and the benches, which run
// `node bin/dropline.js`): V8 sizes the young generation from the machine's memory and on a
// 24 GiB host grew it to 128 MB while sending a million-line file, so that peak RSS was
// 240 or 370 MB for the same run, by chance. The flag must be given when node starts:
// v8.setFlagsFromString after start-up does not resize the young generation (measured).
import { existsSync } from 'node:fs';
import module from 'node:module';
import { MIN_NODE, nodeSupported } from './supported-node.js';

if (!nodeSupported(process.versions.node)) {
  process.stderr.write(
    `dropline: needs Node.js ${MIN_NODE} or newer (24 LTS recommended); this is Node.js ${process.versions.node} (${process.execPath}).\n`,
  );
  process.exit(2);
}
module.enableCompileCache?.();
const sources = new URL('../src/cli/main.ts', import.meta.url);
await import(existsSync(sources) ? sources.href : '../dist/cli/main.js');
