// What recording a file's rows costs on its own (issue 16's analysis, docs/performance.md): the
// SQLite store's insertRecipients of the rows `dropline send` records for a personalized file
// of N lines (the peer bench's texts), in its batches of 2000, one after another, no reader and
// no service; then the rows read back chunk by chunk as the send path does (chunkDestinations).
// Usage: node bench/record-floor.ts [lines=1000000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/store/index.ts';
import type { RecipientInsert } from '../src/store/store.ts';
import { benchRecipient } from './send-run.ts';

const lines = Number(process.argv[2] ?? 1_000_000);
const dir = mkdtempSync(join(tmpdir(), 'dropline-record-floor-'));
const store = await openStore(`sqlite:${join(dir, 'state.db')}`);
await store.migrate();
try {
  const [claimed] = await store.claimFiles(
    'local',
    [{ name: 'floor.txt', path: 'inbox/floor.txt', sha256: 'f'.repeat(64), bytes: 1 }],
    { idFor: () => 'floor', duplicateSince: new Date(0).toISOString() },
  );
  const fileId = claimed!.file.fileId;
  const started = performance.now();
  let batch: RecipientInsert[] = [];
  for (let i = 0; i < lines; i++) {
    const { number, text } = benchRecipient(i);
    batch.push({
      idx: i + 1,
      line: i + 1,
      k: 0,
      number,
      value: null,
      messageId: null,
      generatedMessageId: true,
      text,
      chunkSeq: Math.floor(i / 1000) + 1,
      outcome: 'pending',
      code: null,
      detail: null,
      smsCount: 1,
    });
    if (batch.length === 2000) {
      await store.insertRecipients(fileId, batch);
      batch = [];
    }
  }
  await store.insertRecipients(fileId, batch);
  const recorded = (performance.now() - started) / 1000;
  const readStart = performance.now();
  let read = 0;
  for (let seq = 1; seq <= Math.ceil(lines / 1000); seq++)
    read += (await store.chunkDestinations(fileId, seq)).length;
  const readBack = (performance.now() - readStart) / 1000;
  process.stdout.write(
    `${JSON.stringify({ lines, recordSeconds: +recorded.toFixed(2), readBackSeconds: +readBack.toFixed(2), read })}\n`,
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
