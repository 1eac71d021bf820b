#!/usr/bin/env node
// The package's command. Node 24 runs the TypeScript sources directly (type stripping);
// the compile cache keeps the stripped and compiled modules between runs, which takes
// start-up from ~150 ms to ~50 ms and spares the type stripper's memory.
import module from 'node:module';
import v8 from 'node:v8';

// V8 sizes the young generation from the machine's memory: on a 24 GiB host it grew to
// ~200 MB while streaming a large file (peak RSS 220 or 400 MB for the same run, by
// chance). A 16 MB cap keeps memory flat at no measurable cost in speed.
v8.setFlagsFromString('--max-semi-space-size=16');
module.enableCompileCache?.();
await import('../src/cli/main.ts');
