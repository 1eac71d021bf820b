// Issue 4, delivery-report ingest: the receiver with its durable group commit on a SQLite file
// store against a bare node:http receiver (parse the JSON, answer 200), on the same load in the
// same run (bench/notify-load.ts). Goals: at least 0.6× the bare rate, p99 under 50 ms, and no
// report lost (every 200 is a recipient with a status in the store). Issue 10 item 29: the
// measured file holds PRESTORED reports already (a campaign well under way) and its progress is
// checked every 250 ms beside the receiver, as `dropline run` does.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONNECTIONS, ingestRounds, ingestSummary, REQUESTS, SECONDS, WARMUP } from './notify-load.ts';

const ROUNDS = Number(process.env.NOTIFY_BENCH_ROUNDS ?? 15);
/** Reports already in the measured file before the first round. */
const PRESTORED = Number(process.env.NOTIFY_BENCH_PRESTORED ?? 2_000_000);

export default async function notifyBench(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'dropline-notify-bench-'));
  try {
    const rounds = await ingestRounds({
      storeUrl: `sqlite:${join(dir, 'state.db')}`,
      rounds: ROUNDS,
      prestored: PRESTORED,
    });
    return [
      `${CONNECTIONS} keep-alive connections (undici Pool) post one-result [status notifications](service.md#status-notifications),`,
      `${REQUESTS} requests or ${SECONDS} s, after ${WARMUP} warm-up requests; each server runs on its own worker`,
      'thread. The receiver commits to a SQLite file store (WAL, checkpoints on a worker thread as in',
      '`dropline run`), every report updating a recipient of a sent file (generated messageIds, chunks',
      `accepted; the warm-up another file's); 200 is sent only after the commit. The measured file holds`,
      `${PRESTORED.toLocaleString('en-US')} reports before the first round (and every earlier round's: one store for all rounds), and its`,
      'progress is checked (store.counts) every 250 ms beside the receiver, as `dropline run` does.',
      `${ROUNDS} rounds of (bare, receiver), in alternating order`,
      "(the machine's speed drifts between runs); the table shows the round with the median ratio.",
      '',
      ...ingestSummary(rounds, 'receiver (group commit, SQLite)', 0.6),
    ].join('\n');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
