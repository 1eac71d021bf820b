// A local folder as a Source: inbox/ processing/ done/ failed/ reports/ under `path`.
import { randomBytes } from 'node:crypto';
import { type Dirent, constants as fsConstants, type Stats } from 'node:fs';
import {
  type FileHandle,
  link,
  lstat,
  mkdir,
  open,
  readdir,
  rename,
  rm,
  stat,
  unlink,
} from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { watch as chokidarWatch } from 'chokidar';
import { readHandleChunks } from '../format/file-chunks.ts';
import {
  byName,
  FOLDERS,
  type FolderFile,
  fileRefusalOf,
  type HeldFolder,
  ignoredReason,
  isDropFileName,
  isFolderFileName,
  type ListOptions,
  listedFileOf,
  MARKER_MAX_BYTES,
  type Source,
  type SourceEntry,
  SourceFileError,
  type SourceStat,
  type SourceVersion,
  takenMarkerPath,
} from './source.ts';

export interface LocalSourceOptions {
  name: string;
  path: string;
  /**
   * How openFolder reads a folder's files relative to the folder it listed: `fd` through
   * its held descriptor (`/proc/self/fd/<fd>/<name>`, Linux), `paths` by path with each
   * file's device and inode checked against the listing (systems without /proc). Default:
   * `fd` where /proc answers.
   */
  heldFolders?: 'fd' | 'paths';
}

/** Change events closer together than this wake the pipeline once. */
export const WATCH_COALESCE_MS = 50;

/** Strings from an async iterable are gathered up to this size per write(2). */
const WRITE_BATCH_CHARS = 64 * 1024;
/** Mode of every file dropline writes into a source (reports, manifests, errors.csv). */
const REPORT_MODE = 0o640;

function errCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

export class LocalSource implements Source {
  readonly name: string;
  readonly kind = 'local' as const;
  readonly root: string;
  readonly #stops = new Set<() => void>();
  readonly #heldFolders: 'fd' | 'paths' | undefined;

  constructor(options: LocalSourceOptions) {
    this.name = options.name;
    this.root = resolve(options.path);
    this.#heldFolders = options.heldFolders;
  }

  async start(): Promise<void> {
    for (const folder of FOLDERS) await mkdir(join(this.root, folder), { recursive: true });
  }

  async close(): Promise<void> {
    for (const stop of [...this.#stops]) stop();
  }

  async ping(): Promise<void> {
    const st = await stat(join(this.root, 'inbox'));
    if (!st.isDirectory()) throw new Error(`${this.name}: ${join(this.root, 'inbox')} is not a directory`);
  }

  async list(options: ListOptions = {}): Promise<SourceEntry[]> {
    const dir = join(this.root, 'inbox');
    const dirents = await readdir(dir, { withFileTypes: true });
    const out: SourceEntry[] = [];
    for (const d of dirents) {
      if (!d.isFile() || !isDropFileName(d.name)) {
        const kind = d.isFile() ? 'file' : d.isDirectory() ? 'folder' : d.isSymbolicLink() ? 'link' : 'other';
        const why = ignoredReason(d.name, kind);
        if (why !== null) options.ignored?.(d.name, why);
        continue;
      }
      try {
        const st = await stat(join(dir, d.name));
        // The name may have been replaced by something else between readdir and stat.
        if (!st.isFile()) continue;
        out.push({ name: d.name, path: `inbox/${d.name}`, size: st.size, mtimeMs: st.mtimeMs });
      } catch (err) {
        if (errCode(err) !== 'ENOENT') throw err;
        // readdir gave the name with U+FFFD for bytes that are not UTF-8 (a Latin-1 "ñ"), so
        // that name opens nothing: said, or the file would wait in the inbox unseen.
        if (d.name.includes('\uFFFD'))
          options.ignored?.(d.name, 'its name is not valid UTF-8 (written by a Latin-1 tool?): rename it');
        // Else claimed or deleted between readdir and stat: not in the inbox any more.
      }
    }
    return out;
  }

  async exists(path: string): Promise<boolean> {
    try {
      await stat(this.#abs(path));
      return true;
    } catch (err) {
      if (errCode(err) === 'ENOENT') return false;
      throw err;
    }
  }

  async stat(path: string): Promise<SourceStat | null> {
    const abs = this.#abs(path);
    let st: Stats;
    try {
      // The name itself is not followed, as open() refuses links (O_NOFOLLOW).
      st = await lstat(abs);
    } catch (err) {
      // ENOTDIR: a file where a folder of the path should be; nothing is at `path` (what an
      // SFTP server answers for it too).
      const code = errCode(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return null;
      throw fileRefusalOf(err, path) ?? err;
    }
    if (!st.isFile())
      throw new SourceFileError('NOT_A_REGULAR_FILE', `${path} is ${kindOf(st)}, not a regular file`);
    return { size: st.size, mtimeMs: st.mtimeMs };
  }

  async listFolder(path: string): Promise<FolderFile[]> {
    const folder = await this.openFolder(path);
    await folder.close();
    return [...folder.files];
  }

  /**
   * Neither the folder nor any folder on the way to it is followed: a link there (one a
   * partner made, `attachments` → /run/secrets) could lead anywhere on the disk. With /proc
   * (Linux: Node has no openat), each folder of the path is opened relative to the one
   * before it, `/proc/self/fd/<fd>/<name>` with O_NOFOLLOW, and the folder is held: its
   * listing and every read go through its descriptor, so a link swapped in later, for the
   * folder, a folder above it or a file, is never reached. Without /proc, each folder on
   * the way is lstat'ed before and after the listing (a change: FILE_CHANGED) and each file
   * opened by path must be the device and inode listed.
   */
  async openFolder(path: string): Promise<HeldFolder> {
    this.#abs(path);
    const mode = this.#heldFolders ?? ((await fdPathsWork()) ? 'fd' : 'paths');
    const held = mode === 'fd' ? await this.#holdByFd(path) : await this.#checkPath(path);
    if (held === null) return EMPTY_FOLDER;
    const close = async () => {
      await held.fh?.close().catch(() => {});
    };
    try {
      const ids = new Map<string, FileId>();
      const files = await listEntries(held.dir, path, ids);
      if (held.fh === null) {
        // By path: the folders on the way must be the ones checked before the listing.
        const again = await this.#checkPath(path);
        if (again === null || again.chain.some((id, i) => !sameId(id, held.chain[i])))
          throw new SourceFileError('FILE_CHANGED', `${path} changed while it was listed`);
      }
      async function* read(name: string): AsyncGenerator<Uint8Array> {
        listedFileOf(files, name, path);
        const where = `${path}/${name}`;
        const fh = await openRegular(join(held!.dir, name), where);
        try {
          // The file listed, not another put in its place (or reached by a link above it).
          if (!sameId(await fh.stat(), ids.get(name)))
            throw new SourceFileError('FILE_CHANGED', `${where} was replaced since it was listed`);
        } catch (err) {
          await fh.close();
          throw err;
        }
        yield* readHandleChunks(fh);
      }
      return { files, read, close };
    } catch (err) {
      await close();
      throw err;
    }
  }

  /**
   * The folder at `path` opened one folder at a time, each relative to the descriptor of
   * the one before (O_NOFOLLOW: a link is refused, never followed); the root as configured.
   * null: no such folder (or a file on the way).
   */
  async #holdByFd(path: string): Promise<HeldPath | null> {
    let dir = await open(this.root, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY);
    const parts = path.split('/');
    try {
      for (let i = 0; i < parts.length; i++) {
        const sub = parts.slice(0, i + 1).join('/');
        const at = `/proc/self/fd/${dir.fd}/${parts[i]}`;
        let next: FileHandle;
        try {
          next = await open(at, DIR_FLAGS);
        } catch (err) {
          const code = errCode(err);
          if (code === 'ENOENT') return closed(dir);
          // O_NOFOLLOW|O_DIRECTORY answers ENOTDIR for a link and a file alike: told apart
          // without following (the lstat of the name in the held folder).
          if (code === 'ENOTDIR' || code === 'ELOOP') {
            const st = await lstat(at).catch(() => null);
            if (st?.isSymbolicLink()) throw linkOnTheWay(sub);
            return closed(dir);
          }
          throw fileRefusalOf(err, sub) ?? err;
        }
        await dir.close();
        dir = next;
      }
    } catch (err) {
      await dir.close().catch(() => {});
      throw err;
    }
    return { dir: `/proc/self/fd/${dir.fd}`, fh: dir, chain: [] };
  }

  /** Without /proc: each folder of `path` lstat'ed (a link refused), their devices and inodes. */
  async #checkPath(path: string): Promise<HeldPath | null> {
    const parts = path.split('/');
    const chain: FileId[] = [];
    for (let i = 1; i <= parts.length; i++) {
      const sub = parts.slice(0, i).join('/');
      let dir: Stats;
      try {
        dir = await lstat(this.#abs(sub));
      } catch (err) {
        const code = errCode(err);
        if (code === 'ENOENT' || code === 'ENOTDIR') return null;
        throw fileRefusalOf(err, sub) ?? err;
      }
      if (dir.isSymbolicLink()) throw linkOnTheWay(sub);
      if (!dir.isDirectory()) return null;
      chain.push({ dev: dir.dev, ino: dir.ino });
    }
    return { dir: this.#abs(path), fh: null, chain };
  }

  open(path: string): AsyncIterable<Uint8Array> {
    return readRegular(this.#abs(path), path);
  }

  async readTail(path: string, bytes: number): Promise<string> {
    const fh = await openRegular(this.#abs(path), path);
    try {
      const { size } = await fh.stat();
      const n = Math.max(0, Math.min(bytes, size));
      const buf = Buffer.alloc(n);
      let got = 0;
      while (got < n) {
        const { bytesRead } = await fh.read(buf, got, n - got, size - n + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return buf.toString('latin1', 0, got);
    } finally {
      await fh.close();
    }
  }

  async move(from: string, to: string, options: { expect?: SourceVersion } = {}): Promise<boolean> {
    const src = this.#abs(from);
    const dst = this.#abs(to);
    if (src === dst) throw new Error(`${this.name}: cannot move ${from} onto itself`);
    const { expect } = options;
    // rename(2) silently replaces an existing target; link(2) refuses with EEXIST, so the
    // "target exists" check and the copy of the name are one atomic step.
    let linked: Stats;
    try {
      await link(src, dst);
      linked = await lstat(dst);
    } catch (err) {
      const code = errCode(err);
      if (code === 'ENOENT') {
        if ((await lstatOrNull(src)) === null) return false;
        throw err; // the target's folder is missing
      }
      if (code === 'EEXIST') {
        // A concurrent mover of the same file may have linked it and not yet taken it from
        // `from`: that is "someone else claimed it", not a conflicting target.
        const [s, d] = await Promise.all([lstatOrNull(src), lstatOrNull(dst)]);
        if (s === null) return false;
        if (d !== null && s.ino === d.ino && s.dev === d.dev) return false;
        throw new Error(`${this.name}: cannot move ${from}: ${to} already exists`, { cause: err });
      }
      if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'EXDEV') {
        return this.#moveWithoutLinks(src, dst, from, to, expect);
      }
      throw err;
    }
    // The name linked is the file moved: one other than the claimed (a partner's newer upload
    // renamed onto it since the hash) is unlinked again and stays where it came.
    if (expect && !isVersion(linked, expect)) {
      await unlink(dst);
      throw replaced(from, linked, expect);
    }
    // Then `from` is taken away in one step, under a private dot-name beside the target, and
    // removed only if it is the file linked (device and inode): an unlink of `from` would
    // delete a newer upload a partner renamed there meanwhile. Such a newer file is put back.
    const taken = join(dirname(dst), `.${process.pid}.${randomBytes(6).toString('hex')}.moving`);
    try {
      await rename(src, taken);
    } catch (err) {
      if (errCode(err) !== 'ENOENT') throw err;
      // Two movers both linked (to different targets) and the other took it first: it won.
      await unlink(dst).catch(() => {});
      return false;
    }
    const st = await lstat(taken);
    if (st.ino === linked.ino && st.dev === linked.dev) {
      await unlink(taken);
      return true;
    }
    await this.#putBack(taken, src, from);
    return true;
  }

  /** A newer file taken from `from` by a move: back at its name, never over a newer one still. */
  async #putBack(taken: string, src: string, from: string): Promise<void> {
    try {
      await link(taken, src);
      await unlink(taken);
    } catch (err) {
      throw new Error(
        `${this.name}: a newer ${from} came in while it was moved and cannot be put back (${errCode(err) ?? 'error'}): it is kept as ${taken}`,
        { cause: err },
      );
    }
  }

  /** Filesystems without hard links (FAT, some network mounts): check, then rename. */
  async #moveWithoutLinks(
    src: string,
    dst: string,
    from: string,
    to: string,
    expect: SourceVersion | undefined,
  ): Promise<boolean> {
    if ((await lstatOrNull(dst)) !== null)
      throw new Error(`${this.name}: cannot move ${from}: ${to} already exists`);
    // Checked, then renamed: without links the two cannot be one step.
    const now = expect ? await lstatOrNull(src) : null;
    if (expect && now !== null && !isVersion(now, expect)) throw replaced(from, now, expect);
    try {
      await rename(src, dst);
      return true;
    } catch (err) {
      if (errCode(err) === 'ENOENT' && (await lstatOrNull(src)) === null) return false;
      throw err;
    }
  }

  async takeMarker(path: string): Promise<string | null> {
    const abs = this.#abs(path);
    const taken = this.#abs(takenMarkerPath());
    try {
      await rename(abs, taken);
    } catch (err) {
      if (errCode(err) === 'ENOENT' && (await lstatOrNull(abs)) === null) return null;
      throw err;
    }
    try {
      const fh = await openRegular(taken, path).catch((err: unknown) => {
        if (err instanceof SourceFileError) return null; // a link, FIFO or folder: no content
        throw err;
      });
      if (fh === null) return '';
      try {
        const buf = Buffer.alloc(MARKER_MAX_BYTES);
        const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
        return buf.toString('utf8', 0, bytesRead);
      } finally {
        await fh.close();
      }
    } finally {
      await rm(taken, { recursive: true, force: true });
    }
  }

  async remove(path: string): Promise<void> {
    try {
      await unlink(this.#abs(path));
    } catch (err) {
      // Already gone is what the caller wanted (a resumed cleanup after a crash).
      if (errCode(err) !== 'ENOENT') throw err;
    }
  }

  async write(path: string, content: string | AsyncIterable<string>): Promise<void> {
    const dst = this.#abs(path);
    // A dot-name in the same folder: never a drop file, and rename(2) within one
    // filesystem is atomic, so a reader sees the old file or the whole new one.
    const tmp = join(dirname(dst), `.${basename(dst)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    // Reports and errors.csv carry phone numbers: 0640 whatever the umask.
    const fh = await open(tmp, 'wx', REPORT_MODE);
    let ok = false;
    try {
      await fh.chmod(REPORT_MODE);
      if (typeof content === 'string') {
        await fh.writeFile(content, 'utf8');
      } else {
        let pending = '';
        for await (const piece of content) {
          pending += piece;
          if (pending.length >= WRITE_BATCH_CHARS) {
            await fh.write(pending, null, 'utf8');
            pending = '';
          }
        }
        if (pending.length > 0) await fh.write(pending, null, 'utf8');
      }
      // Without it a crash right after the rename can leave an empty report in place.
      await fh.datasync();
      ok = true;
    } finally {
      await fh.close();
      if (!ok) await unlink(tmp).catch(() => {});
    }
    try {
      await rename(tmp, dst);
    } catch (err) {
      await unlink(tmp).catch(() => {});
      throw err;
    }
  }

  watch(onChange: () => void): () => void {
    const watcher = chokidarWatch(join(this.root, 'inbox'), { depth: 0, ignoreInitial: true });
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    // Coalesce a burst, but never postpone past WATCH_COALESCE_MS: a file that is
    // written continuously must not keep the pipeline asleep.
    const wake = (): void => {
      if (stopped || timer !== undefined) return;
      timer = setTimeout(() => {
        timer = undefined;
        if (!stopped) onChange();
      }, WATCH_COALESCE_MS);
    };
    watcher.on('add', wake).on('change', wake).on('unlink', wake);
    // An 'error' without a listener would throw; the periodic rescan covers what is missed.
    watcher.on('error', () => {});
    const stop = (): void => {
      if (stopped) return;
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      this.#stops.delete(stop);
      void watcher.close().catch(() => {});
    };
    this.#stops.add(stop);
    return stop;
  }

  #abs(path: string): string {
    const parts = path.split('/');
    if (isAbsolute(path) || parts.some((p) => p === '..' || p === '' || p === '.')) {
      throw new Error(`${this.name}: invalid source path ${JSON.stringify(path)}`);
    }
    return join(this.root, ...parts);
  }
}

/** A held folder: where its names are opened, its descriptor (fd mode), its folders' ids (paths mode). */
interface HeldPath {
  dir: string;
  fh: FileHandle | null;
  chain: FileId[];
}

interface FileId {
  dev: number;
  ino: number;
}

const sameId = (a: FileId, b: FileId | undefined): boolean =>
  b !== undefined && a.dev === b.dev && a.ino === b.ino;

const DIR_FLAGS = fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW;

const EMPTY_FOLDER: HeldFolder = {
  files: [],
  // biome-ignore lint/correctness/useYield: it has nothing to yield
  read: async function* (name) {
    listedFileOf([], name, '');
  },
  close: async () => {},
};

async function closed(fh: FileHandle): Promise<null> {
  await fh.close();
  return null;
}

function linkOnTheWay(sub: string): SourceFileError {
  return new SourceFileError(
    'NOT_A_REGULAR_FILE',
    `${sub} is a symbolic link, not a folder: links are never followed`,
  );
}

let fdPaths: Promise<boolean> | null = null;

/**
 * Whether `/proc/self/fd/<fd>` reaches the folder a descriptor holds (Linux with /proc):
 * asked once a process.
 */
function fdPathsWork(): Promise<boolean> {
  fdPaths ??= (async () => {
    const fh = await open('/', fsConstants.O_RDONLY | fsConstants.O_DIRECTORY);
    try {
      return sameId(await stat(`/proc/self/fd/${fh.fd}`), await fh.stat());
    } catch {
      return false;
    } finally {
      await fh.close();
    }
  })();
  return fdPaths;
}

/**
 * The files directly in the folder at `dir` (a path or /proc/self/fd/<fd>), as listFolder
 * gives them; each regular file's device and inode into `ids`.
 */
async function listEntries(dir: string, path: string, ids: Map<string, FileId>): Promise<FolderFile[]> {
  let dirents: Dirent[];
  try {
    dirents = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    const code = errCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw fileRefusalOf(err, path) ?? err;
  }
  const found = await Promise.all(
    dirents
      .filter((d) => !d.isDirectory() && isFolderFileName(d.name))
      .map(async (d): Promise<FolderFile | null> => {
        try {
          // lstat: the name may have been replaced (by a link…) since readdir.
          const st = await lstat(join(dir, d.name));
          if (st.isDirectory()) return null;
          if (st.isFile()) {
            ids.set(d.name, { dev: st.dev, ino: st.ino });
            return { name: d.name, size: st.size, kind: 'file' };
          }
          return { name: d.name, size: 0, kind: st.isSymbolicLink() ? 'link' : 'other' };
        } catch (err) {
          // Removed or renamed since readdir: not in the folder any more.
          if (errCode(err) === 'ENOENT') return null;
          throw fileRefusalOf(err, `${path}/${d.name}`) ?? err;
        }
      }),
  );
  return found.filter((f): f is FolderFile => f !== null).sort(byName);
}

// Never a link (O_NOFOLLOW), never a wait on a FIFO with no writer (O_NONBLOCK: the open
// returns at once and fstat refuses it); reads go through this very descriptor, so what was
// checked is what is read, whatever the name points to a moment later.
const READ_FLAGS = fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK;

/** A regular file opened for reading, or a SourceFileError (NOT_A_REGULAR_FILE, FILE_UNREADABLE). */
async function openRegular(abs: string, path: string): Promise<FileHandle> {
  let fh: FileHandle;
  try {
    fh = await open(abs, READ_FLAGS);
  } catch (err) {
    if (errCode(err) === 'ELOOP')
      throw new SourceFileError('NOT_A_REGULAR_FILE', `${path} is a symbolic link`, { cause: err });
    throw fileRefusalOf(err, path) ?? err;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile())
      throw new SourceFileError('NOT_A_REGULAR_FILE', `${path} is ${kindOf(st)}, not a regular file`);
    return fh;
  } catch (err) {
    await fh.close();
    throw err;
  }
}

async function* readRegular(abs: string, path: string): AsyncGenerator<Uint8Array> {
  yield* readHandleChunks(await openRegular(abs, path));
}

function kindOf(st: Stats): string {
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isDirectory()) return 'a folder';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/** Whether the file is the version a claim read (its size and mtime). */
function isVersion(st: Stats, v: SourceVersion): boolean {
  return st.size === v.size && st.mtimeMs === v.mtimeMs;
}

function replaced(from: string, st: Stats, v: SourceVersion): SourceFileError {
  return new SourceFileError(
    'FILE_CHANGED',
    `${from} was replaced after it was claimed (${st.size} bytes now; claimed ${v.size} bytes)`,
  );
}

async function lstatOrNull(abs: string) {
  try {
    return await lstat(abs);
  } catch (err) {
    if (errCode(err) === 'ENOENT') return null;
    throw err;
  }
}
