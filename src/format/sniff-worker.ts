// A worker thread running the sniff pass (encoding, NUL bytes, size, sha256) of a local
// file, so `validate` can parse on the main thread at the same time instead of reading the
// file twice in a row.
import { parentPort, workerData } from 'node:worker_threads';
import { sniff } from './decode.ts';
import { readFileChunks } from './file-chunks.ts';

const { path, maxBytes } = workerData as { path: string; maxBytes: number };
try {
  parentPort?.postMessage({ sniff: await sniff(readFileChunks(path, 1 << 20), { hash: true, maxBytes }) });
} catch (err) {
  parentPort?.postMessage({ error: (err as Error).message });
}
