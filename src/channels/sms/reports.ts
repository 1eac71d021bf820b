// The reports of the SMS host's POST /mtmessage sends (RCS and flash SMS files: docs/notify.md
// "Reports of POST /mtmessage (RCS, flash SMS): the account webhook"): the chunk a request
// names in its CallbackData, and how its reports, which come back with an empty bulkId, find
// their recipients. The sender (account.ts) writes `callbackData`; the receiver's group
// committer resolves the reports with these before its commit.
import { isObject } from '../../notify/decode.ts';
import type { MtMessageVia } from '../../plan/chunks.ts';
import { isChunkSeq, sentForm } from '../../store/message-ids.ts';
import type { DeliveryEvent, Store } from '../../store/store.ts';

/** The chunk a report's callbackData names: dropline's POST /mtmessage requests (docs/notify.md). */
export interface ChunkRef {
  readonly fileId: string;
  readonly seq: number;
}

/** The CallbackData a POST /mtmessage of chunk `seq` carries (chunkOf reads it back). */
export function chunkCallback(fileId: string, seq: number): MtMessageVia['callbackData'] {
  return { f: fileId, c: seq };
}

/**
 * The chunk named by the callbackData dropline sends with POST /mtmessage, `{"f": "<fileId>",
 * "c": <seq>}` (sent and returned as JSON text), or null for anything else: not JSON, not
 * an object, `f` not non-empty text (or holding NUL, which no fileId has), `c` not an integer
 * from 0 to 2^31 - 1. Other keys are ignored. Called only for reports with an empty bulkId.
 */
export function chunkOf(callbackData: string | null): ChunkRef | null {
  // Every JSON object starts with `{` (after blanks): most other texts need no parse.
  if (callbackData === null || !/^\s*\{/.test(callbackData)) return null;
  let value: unknown;
  try {
    value = JSON.parse(callbackData);
  } catch {
    return null;
  }
  if (!isObject(value)) return null;
  const { f, c } = value;
  if (typeof f !== 'string' || f === '' || f.includes('\0')) return null;
  if (!isChunkSeq(c)) return null;
  return { fileId: f, seq: c };
}

/**
 * Whether a batch may hold reports of POST /mtmessage (their bulkId is empty, docs/notify.md
 * "Reports of POST /mtmessage (RCS, flash SMS): the account webhook"): the massive sends'
 * reports, nearly all of them, cost one comparison each and no parse.
 */
export function namesChunks(events: readonly DeliveryEvent[]): boolean {
  for (const e of events) if (e.bulkId === '' && e.callbackData !== null) return true;
  return false;
}

/**
 * POST /mtmessage carries a chunk's recipients under one CustomMessageId, with CallbackData
 * `{"f": "<fileId>", "c": <seq>}` (docs/notify.md "Reports of POST /mtmessage"): its reports
 * come back with an empty bulkId and that messageId for every recipient. Each one whose
 * callbackData names a chunk and whose `to` is a number of that chunk gets bulkId := fileId and
 * messageId := that recipient's, so the store applies it as any other report; the rest are
 * left as they came (a number not in the chunk stays an orphan). One store read per chunk
 * named in the batch. A failed read rejects: the batch fails as a failed commit.
 */
export async function chunkReports(
  store: Pick<Store, 'chunkMessageIds'>,
  events: DeliveryEvent[],
): Promise<DeliveryEvent[]> {
  /** fileId → seq → indexes of the events naming that chunk. */
  const named = new Map<string, Map<number, number[]>>();
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.bulkId !== '') continue;
    const chunk = chunkOf(e.callbackData);
    if (!chunk) continue;
    let seqs = named.get(chunk.fileId);
    if (!seqs) named.set(chunk.fileId, (seqs = new Map()));
    const at = seqs.get(chunk.seq);
    if (at) at.push(i);
    else seqs.set(chunk.seq, [i]);
  }
  if (named.size === 0) return events;
  const out = events.slice();
  const reads: Promise<void>[] = [];
  for (const [fileId, seqs] of named) {
    for (const [seq, at] of seqs) {
      // Numbers as the store keeps them (digits, country code first), as recordDeliveries compares them.
      const numbers = [...new Set(at.map((i) => sentForm(events[i]!.to)))].filter((n) => n !== '');
      if (numbers.length === 0) continue;
      reads.push(
        store.chunkMessageIds(fileId, seq, numbers).then((ids) => {
          for (const i of at) {
            const e = events[i]!;
            const messageId = ids.get(sentForm(e.to));
            if (messageId !== undefined) out[i] = { ...e, bulkId: fileId, messageId };
          }
        }),
      );
    }
  }
  await Promise.all(reads);
  return out;
}
