// A local file as byte chunks through one reused buffer: reading a 2 GB file costs the
// memory of one chunk, where fs streams allocate a new buffer per chunk and leave the
// garbage collector to free them late. The consumer must be done with a chunk before it
// asks for the next one (the reader decodes or copies every chunk at once).
import { open } from 'node:fs/promises';

export const CHUNK_BYTES = 256 * 1024;

export async function* readFileChunks(path: string, chunkBytes = CHUNK_BYTES): AsyncGenerator<Uint8Array> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(chunkBytes);
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, chunkBytes, null);
      if (bytesRead === 0) return;
      yield buf.subarray(0, bytesRead);
    }
  } finally {
    await fh.close();
  }
}
