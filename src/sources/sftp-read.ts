// Reading a file of an SFTP source through its handle, one read ahead, without following a
// link put in its place (SFTP has no O_NOFOLLOW).
import type { Stats } from 'ssh2';
import { DroplineError } from '../errors.ts';
import type { SftpConnection } from './sftp-connection.ts';
import { type Conn, S_IFMT, S_IFREG } from './sftp-protocol.ts';
import { SourceFileError } from './source.ts';

const READ_CHUNK = 64 * 1024;

/**
 * The bytes of `remote` (`path` as the source names it, for messages): the whole file, or
 * `range` of it. `given`: a connection already looked up. `check` throws when the opened
 * handle's attributes are not the file expected (openFolder).
 */
export async function* readRemote(
  link: SftpConnection,
  path: string,
  remote: string,
  range: { start: number; end: number } | null = null,
  given?: Conn,
  check?: (st: Stats) => void,
): AsyncGenerator<Uint8Array> {
  const conn = given ?? (await link.get());
  // SFTP has no O_NOFOLLOW: look at the name itself first. A link, folder or FIFO put in
  // place of a listed file is refused before it is opened (a FIFO would hold the server).
  // (A ranged read is readTail's, which looked already.)
  if (range === null) {
    let st: Stats;
    try {
      st = await link.raw<Stats>(conn, (cb) => conn.sftp.lstat(remote, cb));
    } catch (err) {
      throw link.readError('stat', path, err);
    }
    if ((st.mode & S_IFMT) !== S_IFREG)
      throw new SourceFileError('NOT_A_REGULAR_FILE', `${path} is not a regular file on the server`);
  }
  let handle: Buffer;
  try {
    handle = await link.raw<Buffer>(conn, (cb) => conn.sftp.open(remote, 'r', cb));
  } catch (err) {
    throw link.readError('open', path, err);
  }
  const h = handle;
  if (check) {
    try {
      check(await link.raw<Stats>(conn, (cb) => conn.sftp.fstat(h, cb)));
    } catch (err) {
      if (!conn.lost) await link.raw(conn, (cb) => conn.sftp.close(h, cb)).catch(() => {});
      throw err instanceof SourceFileError ? err : link.readError('stat', path, err);
    }
  }
  const end = range ? range.end + 1 : Number.POSITIVE_INFINITY;
  let position = range ? range.start : 0;
  // One read ahead: the next request is on the wire while the consumer works on a chunk.
  const readAt = (at: number): Promise<Buffer> => {
    const len = Math.min(READ_CHUNK, end - at);
    if (len <= 0) return Promise.resolve(Buffer.alloc(0));
    const ahead = link.raw<Buffer>(conn, (cb) =>
      conn.sftp.read(h, Buffer.allocUnsafe(len), 0, len, at, (err, n, data) =>
        cb(err, err ? undefined : data.subarray(0, n)),
      ),
    );
    // It may fail (the connection lost) while the consumer still works on the chunk before
    // it, with nobody awaiting it yet: an unhandled rejection would end the process. The
    // failure still reaches the consumer, at its next read.
    ahead.catch(() => {});
    return ahead;
  };
  let next = readAt(position);
  try {
    for (;;) {
      let chunk: Buffer;
      try {
        chunk = await next;
      } catch (err) {
        throw link.readError('read', path, err);
      }
      if (chunk.length === 0) break;
      position += chunk.length;
      next = readAt(position);
      yield chunk;
    }
  } finally {
    await next.catch(() => {});
    if (!conn.lost) await link.raw(conn, (cb) => conn.sftp.close(h, cb)).catch(() => {});
  }
  // A connection that dropped may end the reads quietly: never pass a short file as whole.
  if (conn.lost)
    throw new DroplineError('DROPLINE_ERR_SFTP', `${link.name}: connection lost while reading ${path}`);
}
