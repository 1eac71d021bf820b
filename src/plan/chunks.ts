// Recipients → the body of one POST /mtmessage/massive. Pure and deterministic: the same
// rows always give the same chunk, so a resumed chunk is byte-for-byte the same request.
import type { PlannedChunk, PlannedMessage } from '../service/wire.ts';

export interface ChunkRecipient {
  number: string;
  messageId: string;
  /** null in bulk files: the file's message. */
  text: string | null;
}

export function chunkIdFor(fileId: string, seq: number): string {
  return `${fileId}/${seq}`;
}

/**
 * Bulk: one message element. Personalized: recipients with identical texts share an element,
 * elements in the order their text first appears, destinations in row order.
 */
export function planChunk(
  fileId: string,
  seq: number,
  rows: readonly ChunkRecipient[],
  bulkText: string | null,
): PlannedChunk {
  const byText = new Map<string, { to: string; messageId: string }[]>();
  for (const r of rows) {
    const text = r.text ?? bulkText ?? '';
    let list = byText.get(text);
    if (!list) {
      list = [];
      byText.set(text, list);
    }
    list.push({ to: r.number, messageId: r.messageId });
  }
  const messages: PlannedMessage[] = [...byText].map(([text, destinations]) => ({ text, destinations }));
  return { chunkId: chunkIdFor(fileId, seq), bulkId: fileId, messages };
}
