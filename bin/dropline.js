#!/usr/bin/env -S node --max-semi-space-size=16
// The package's command. Node 24 runs the TypeScript sources directly (type stripping);
// the compile cache keeps the stripped and compiled modules between runs, which takes
// start-up from ~150 ms to ~50 ms and spares the type stripper's memory.
//
// --max-semi-space-size=16 (in the shebang, and in `npm start` and the benches, which run
// `node bin/dropline.js`): V8 sizes the young generation from the machine's memory and on a
// 24 GiB host grew it to 128 MB while sending a million-line file, so that peak RSS was
// 240 or 370 MB for the same run, by chance. The flag must be given when node starts:
// v8.setFlagsFromString after start-up does not resize the young generation (measured).
import module from 'node:module';
import { MIN_NODE, nodeSupported } from './supported-node.js';

if (!nodeSupported(process.versions.node)) {
  process.stderr.write(
    `dropline: needs Node.js ${MIN_NODE} or newer (24 LTS recommended); this is Node.js ${process.versions.node} (${process.execPath}).\n`,
  );
  process.exit(2);
}
module.enableCompileCache?.();
await import('../src/cli/main.ts');
