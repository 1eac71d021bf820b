// A file as the receiver tests need it: in `sending`, recipients m-1…m-n (their numbers from
// `numberOf(1…n)`), all sent in chunk 1 under one transaction number.
import type { RecipientInsert, Store } from '../../src/store/store.ts';

export async function registerSentFile(
  store: Store,
  fileId: string,
  n: number,
  numberOf: (i: number) => string,
  transactionNumber: string,
): Promise<void> {
  await store.registerFile({
    fileId,
    source: 'local',
    name: `${fileId}.txt`,
    path: `processing/${fileId}.txt`,
    sha256: fileId,
    bytes: 100,
    state: 'sending',
  });
  const rows: RecipientInsert[] = Array.from({ length: n }, (_, i) => ({
    idx: i + 1,
    line: i + 1,
    k: 0,
    number: numberOf(i + 1),
    value: numberOf(i + 1),
    messageId: `m-${i + 1}`,
    text: 'hola',
    chunkSeq: 1,
    outcome: 'pending',
    code: null,
    detail: null,
    smsCount: 1,
  }));
  await store.insertRecipients(fileId, rows);
  await store.insertChunks(fileId, [{ seq: 1, size: n }]);
  await store.setChunkState(fileId, 1, 'inflight', ['pending']);
  await store.recordChunkResult(fileId, 1, {
    state: 'accepted',
    attempts: 1,
    transactionNumber,
    parts: [{ messageIds: rows.map((r) => r.messageId!), outcome: 'sent' }],
  });
}
