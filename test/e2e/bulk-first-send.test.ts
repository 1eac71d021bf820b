// Issue 16: the worker that reads a bulk file sends its chunks the first time from what it
// read (src/plan/kept-destinations.ts) instead of reading their rows back from the store.
// The requests must be the very ones the store's rows give (a resend, another worker),
// whether all, some or none of the recipients are kept; a personalized file's chunks always
// come from the store (their texts are not kept).
import { afterEach, describe, expect, it } from 'vitest';
import type { SendOptions } from '../../src/service/client.ts';
import type { PlannedChunk } from '../../src/service/wire.ts';
import type { Store } from '../../src/store/store.ts';
import { Workers } from '../helpers/pipeline-workers.ts';

let w: Workers | null = null;
afterEach(async () => {
  await w?.close();
  w = null;
});

const mobile = (i: number) => `3${String(100_000_000 + i * 37)}`;

/** A bulk file: lines of one to four numbers, a number repeated (a DUPLICATE) and a bad one. */
function bulkFile(): string {
  const lines = ['Recordatorio: su factura vence el viernes.'];
  let n = 0;
  for (let line = 0; line < 12; line++) {
    const numbers = Array.from({ length: 1 + (line % 4) }, () => mobile(n++));
    if (line === 5) numbers.push(mobile(3));
    if (line === 8) numbers.push('12');
    lines.push(numbers.join(';'));
  }
  return `${lines.join('\n')}\n`;
}

const personalizedFile = () =>
  `${Array.from({ length: 23 }, (_, i) => `${mobile(i)};Hola cliente ${i}, su factura está lista`).join('\n')}\n`;

/** Sends `content` with a fresh store: the requests' chunks in order, and how many chunk reads the store served. */
async function send(
  content: string,
  keptRecipients: number | undefined,
): Promise<{ chunks: PlannedChunk[]; reads: number; state: string | undefined }> {
  w = await Workers.create({ api: { chunkSize: 5, concurrency: 1 } });
  const chunks: PlannedChunk[] = [];
  let reads = 0;
  const worker = await w.worker('a', {
    ...(keptRecipients !== undefined ? { keptRecipients } : {}),
    wrapStore: (store) =>
      new Proxy(store, {
        get(target, key, receiver) {
          const value = Reflect.get(target, key, receiver) as unknown;
          if (key !== 'chunkDestinations' || typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            reads++;
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      }) as Store,
    wrapClient: (client) =>
      new Proxy(client, {
        get(target, key, receiver) {
          const value = Reflect.get(target, key, receiver) as unknown;
          if (key !== 'sendChunk' || typeof value !== 'function') return value;
          return (chunk: PlannedChunk, options?: SendOptions) => {
            chunks.push(structuredClone(chunk));
            return (value as (c: PlannedChunk, o?: SendOptions) => unknown).apply(target, [chunk, options]);
          };
        },
      }),
  });
  const entry = await w.dropFile('campaign.txt', content);
  const file = await worker.pipeline.claim(worker.source, entry);
  await worker.pipeline.drive(file!.fileId);
  const state = (await w.store.getFile(file!.fileId))?.state;
  await w.close();
  w = null;
  return { chunks, reads, state };
}

describe('a bulk file sent by the worker that read it', () => {
  it('sends the requests its stored rows give, whether all, some or none of its recipients are kept', async () => {
    const fromStore = await send(bulkFile(), 0);
    const allKept = await send(bulkFile(), undefined);
    const someKept = await send(bulkFile(), 7);
    expect(fromStore.state).toBe('submitted');
    // 32 numbers, one repeated and one invalid: 30 recipients in chunks of 5.
    const sent = fromStore.chunks.flatMap((c) => c.messages.flatMap((m) => m.destinations));
    expect(sent).toHaveLength(30);
    expect(fromStore.chunks.length).toBe(6);
    expect(fromStore.chunks.every((c) => c.messages.length === 1)).toBe(true);
    expect(fromStore.chunks[0]!.messages[0]!.text).toBe('Recordatorio: su factura vence el viernes.');
    expect(fromStore.reads).toBe(6);

    expect(allKept.state).toBe('submitted');
    expect(allKept.chunks).toEqual(fromStore.chunks);
    expect(allKept.reads).toBe(0);

    expect(someKept.state).toBe('submitted');
    expect(someKept.chunks).toEqual(fromStore.chunks);
    // The first chunk (5) is kept whole, the second (its first 2 kept) is not: 5 read back.
    expect(someKept.reads).toBe(5);
  });

  it('a personalized file is read back from the store: its texts are not kept', async () => {
    const fromStore = await send(personalizedFile(), 0);
    const byDefault = await send(personalizedFile(), undefined);
    expect(byDefault.chunks).toEqual(fromStore.chunks);
    expect(byDefault.reads).toBe(5);
    expect(byDefault.chunks[0]!.messages[0]!.text).toBe('Hola cliente 0, su factura está lista');
  });
});
