// A local file as byte chunks through two reused buffers: reading a 2 GB file costs the
// memory of two chunks, where fs streams allocate a new buffer per chunk and leave the
// garbage collector to free them late. The next chunk is read while the consumer works on
// the current one. The consumer must be done with a chunk before it asks for the next one
// (the reader decodes or copies every chunk at once).
import { type FileHandle, open } from 'node:fs/promises';

export const CHUNK_BYTES = 256 * 1024;

export async function* readFileChunks(path: string, chunkBytes = CHUNK_BYTES): AsyncGenerator<Uint8Array> {
  yield* readHandleChunks(await open(path, 'r'), chunkBytes);
}

/** The same from a descriptor already open (and checked) by the caller; closes it when done. */
export async function* readHandleChunks(
  fh: FileHandle,
  chunkBytes = CHUNK_BYTES,
): AsyncGenerator<Uint8Array> {
  const buffers = [Buffer.allocUnsafe(chunkBytes), Buffer.allocUnsafe(chunkBytes)];
  let turn = 0;
  // A read ahead that fails while the consumer still holds the chunk before it has nobody
  // awaiting it yet: marked handled, so it cannot end the process; the consumer's next read
  // gets the error.
  const ahead = (buffer: Buffer) => {
    const read = fh.read(buffer, 0, chunkBytes, null);
    read.catch(() => {});
    return read;
  };
  let next = ahead(buffers[0]!);
  try {
    for (;;) {
      const { bytesRead, buffer } = await next;
      if (bytesRead === 0) return;
      turn ^= 1;
      // Ahead: the other buffer is free, its chunk was consumed before this one was asked for.
      next = ahead(buffers[turn]!);
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    // A consumer that stops early leaves a read in flight: let it end before closing.
    await next.catch(() => {});
    await fh.close();
  }
}
