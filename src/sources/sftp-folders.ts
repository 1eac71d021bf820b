// A folder of an SFTP source (attachments: docs/sources.md "Attachments"): listed without
// following a link on the way or in it, and its files read checked against the listing.
import type { Stats } from 'ssh2';
import type { SftpConnection } from './sftp-connection.ts';
import {
  type Conn,
  NO_SUCH_FILE,
  S_IFDIR,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  sameFile,
  sftpCode,
} from './sftp-protocol.ts';
import { readRemote } from './sftp-read.ts';
import {
  byName,
  type FolderFile,
  type HeldFolder,
  isFolderFileName,
  listedFileOf,
  SourceFileError,
} from './source.ts';

/**
 * An lstat of the folder (a link there is not followed: the server's readdir would follow
 * it), then one readdir: OpenSSH gives each entry's lstat attributes, so links, folders and
 * FIFOs are told from regular files without following them.
 */
export async function listFolder(
  link: SftpConnection,
  path: string,
): Promise<{ files: FolderFile[]; attrs: Map<string, Stats> }> {
  const remote = link.remote(path);
  const conn = await link.get();
  const attrs = new Map<string, Stats>();
  if (!(await folderChain(link, conn, path))) return { files: [], attrs };
  let entries: { filename: string; attrs: Stats }[];
  try {
    entries = await link.raw(conn, (cb) => conn.sftp.readdir(remote, cb));
  } catch (err) {
    // Removed (or replaced by a file) since the lstat.
    if (sftpCode(err) === NO_SUCH_FILE) return { files: [], attrs };
    throw link.readError('list', path, err);
  }
  // The server tells each entry's type without following it (readdir's attrs are lstat's).
  const files = entries
    .filter(({ filename, attrs }) => (attrs.mode & S_IFMT) !== S_IFDIR && isFolderFileName(filename))
    .map(({ filename, attrs: st }): FolderFile => {
      const type = st.mode & S_IFMT;
      if (type === S_IFREG) {
        attrs.set(filename, st);
        return { name: filename, size: st.size, kind: 'file' };
      }
      return { name: filename, size: 0, kind: type === S_IFLNK ? 'link' : 'other' };
    })
    .sort(byName);
  return { files, attrs };
}

/**
 * Neither the folder nor any folder on the way to it is followed (a link there could lead
 * anywhere the login may read): each lstat'ed. false: no such folder (or a file on the way).
 */
async function folderChain(link: SftpConnection, conn: Conn, path: string): Promise<boolean> {
  const parts = path.split('/');
  for (let i = 1; i <= parts.length; i++) {
    const sub = parts.slice(0, i).join('/');
    let dir: Stats;
    try {
      dir = await link.raw<Stats>(conn, (cb) => conn.sftp.lstat(link.remote(sub), cb));
    } catch (err) {
      // OpenSSH answers "no such file" for ENOENT and ENOTDIR alike.
      if (sftpCode(err) === NO_SUCH_FILE) return false;
      throw link.readError('stat', sub, err);
    }
    const type = dir.mode & S_IFMT;
    if (type === S_IFLNK)
      throw new SourceFileError(
        'NOT_A_REGULAR_FILE',
        `${sub} is a symbolic link on the server, not a folder: links are never followed`,
      );
    if (type !== S_IFDIR) return false;
  }
  return true;
}

/**
 * SFTP (v3) opens by path and the server follows links: there is no openat. Each file is
 * read through its handle, checked on both sides of the open (docs/sources.md
 * "Attachments"): before, the folders on the way and the name itself lstat'ed (a link
 * refused, never opened); the handle's attributes must be the listed file's (type, size,
 * mtime, owner, mode); after the read, the folders and the name again. A change seen at
 * any of these is NOT_A_REGULAR_FILE (a link) or FILE_CHANGED, and nothing read is used.
 */
export async function openFolder(link: SftpConnection, path: string): Promise<HeldFolder> {
  const { files, attrs } = await listFolder(link, path);
  const remote = link.remote(path);
  async function* read(name: string): AsyncGenerator<Uint8Array> {
    listedFileOf(files, name, path);
    const where = `${path}/${name}`;
    const listed = attrs.get(name)!;
    const changed = () => new SourceFileError('FILE_CHANGED', `${where} was replaced since it was listed`);
    const check = (st: Stats) => {
      if (!sameFile(st, listed)) throw changed();
    };
    const conn = await link.get();
    if (!(await folderChain(link, conn, path))) throw changed();
    yield* readRemote(link, where, `${remote}/${name}`, null, conn, check);
    if (!(await folderChain(link, conn, path))) throw changed();
    let after: Stats;
    try {
      after = await link.raw<Stats>(conn, (cb) => conn.sftp.lstat(`${remote}/${name}`, cb));
    } catch (err) {
      if (sftpCode(err) === NO_SUCH_FILE) throw changed();
      throw link.readError('stat', where, err);
    }
    if ((after.mode & S_IFMT) === S_IFLNK)
      throw new SourceFileError('NOT_A_REGULAR_FILE', `${where} is a symbolic link on the server`);
    check(after);
  }
  return { files, read, close: async () => {} };
}
