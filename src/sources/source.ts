// Where drop files come from: a local folder, an SFTP site, an S3 prefix. One interface,
// one conformance suite (test/contract/source.contract.ts) for every implementation.
//
// Paths are relative to the source root and use `/`: `inbox/x.txt`, `processing/x.txt`,
// `done/x.txt`, `failed/x.txt`, `failed/x.<fileId>.errors.csv`, `reports/x.<fileId>.report.csv`.

import { randomBytes } from 'node:crypto';

export const FOLDERS = ['inbox', 'processing', 'done', 'failed', 'reports'] as const;
export type Folder = (typeof FOLDERS)[number];

export interface SourceEntry {
  /** File name (`x.txt`). */
  name: string;
  /** `inbox/x.txt`. */
  path: string;
  size: number;
  mtimeMs: number;
  /** A content version when the backend has one (S3 ETag). */
  etag?: string | undefined;
}

/** The version of a file a claim read: what a move checks it is still moving. */
export type SourceVersion = Pick<SourceStat, 'size' | 'mtimeMs'>;

/** What stat() tells of one file. */
export interface SourceStat {
  size: number;
  /** Whole seconds on SFTP (protocol v3) and S3 (Last-Modified). */
  mtimeMs: number;
  /** A content version when the backend has one (S3 ETag). */
  etag?: string | undefined;
}

export interface Source {
  readonly name: string;
  readonly kind: 'local' | 'sftp' | 's3';
  /** Connects and creates the folders when missing. A backend that is down is not an error here: ping says so. */
  start(): Promise<void>;
  close(): Promise<void>;
  /** Throws when the backend cannot be reached (readiness). */
  ping(): Promise<void>;
  /**
   * The drop files in `inbox/`: the names of docs/format.md "Which files are picked up" (`.txt`, no
   * dot/tilde/partial names). `ignored` hears of every other entry worth a word to the operator
   * (see ignoredReason).
   */
  list(options?: ListOptions): Promise<SourceEntry[]>;
  /** Whether a file exists (the `<name>.done` marker). */
  exists(path: string): Promise<boolean>;
  /**
   * A file's size, mtime and (S3) ETag without reading it: one cheap request (an lstat, a
   * HEAD), for change checks (opt-out lists on a source). null when nothing is at `path`.
   * The name itself is never followed: a symbolic link, a folder, a FIFO… at `path` is a
   * SourceFileError NOT_A_REGULAR_FILE, one the login may not look at FILE_UNREADABLE, as
   * open() refuses them; a backend that cannot be reached fails as the other methods do.
   * S3 has no folders: a name with only keys below it is null.
   */
  stat(path: string): Promise<SourceStat | null>;
  /**
   * The files directly in a folder of the source (relative to its root, e.g.
   * `attachments/facturas`), sorted by name; [] when the folder does not exist (S3: no key
   * under the prefix). Regular files with their size in bytes; symbolic links and FIFOs,
   * sockets, devices named as such (`kind`), never followed. Sub-folders are left out, as are
   * names starting with `.` or `~` and upload temporaries (.part, .tmp, .filepart, .partial,
   * .crdownload).
   *
   * Neither the folder nor any folder on the way to it is followed: a symbolic link at `path`
   * or above it is a SourceFileError NOT_A_REGULAR_FILE, one the login may not read
   * FILE_UNREADABLE; a file at `path` is no folder ([]). A backend that cannot be reached fails as the other methods do.
   */
  listFolder(path: string): Promise<FolderFile[]>;
  /**
   * A folder held for reading its files (an email file's attachments): listed as listFolder
   * lists it (the same refusals of a link at the folder or on the way to it), then each of
   * its regular files read as the one listed, whatever is swapped in meanwhile: a link put
   * in a file's place, or in place of the folder or a folder above it, is never followed
   * (docs/sources.md "Attachments"). Close it when done.
   */
  openFolder(path: string): Promise<HeldFolder>;
  /** Streams a file's bytes. Each call starts from the beginning. */
  open(path: string): AsyncIterable<Uint8Array>;
  /** The last `bytes` bytes of a file (trailer readiness), decoded as latin1 (the trailer is ASCII). */
  readTail(path: string, bytes: number): Promise<string>;
  /**
   * Moves a file inside the source. Resolves false when `from` is gone (another worker
   * moved it first): not an error. Fails when `to` already exists. Never removes what it did
   * not take: a newer file written at `from` while the move runs (a partner's next upload of
   * the same name) stays there. With `expect` (the size and mtime of the file a claim hashed),
   * a file at `from` that is not that one (replaced since) is not moved: SourceFileError
   * FILE_CHANGED, and it stays at `from` (local sources; the others ignore it).
   */
  move(from: string, to: string, options?: { expect?: SourceVersion }): Promise<boolean>;
  remove(path: string): Promise<void>;
  /**
   * Takes the `.done` marker at `path` out of its folder and gives its content (its first
   * MARKER_MAX_BYTES, UTF-8; '' for a marker that is not a regular file); null when none is
   * there. A claim consumes its file's marker this way (docs/sources.md "readiness"): in one
   * step (a rename into processing/, then removed; on S3 a delete by the ETag read), so a
   * marker written after the take stays in place: it belongs to the next file.
   */
  takeMarker(path: string): Promise<string | null>;
  /** Writes (replaces) a file, e.g. reports/x.report.csv; streamed for big reports. */
  write(path: string, content: string | AsyncIterable<string>): Promise<void>;
  /** Optional wake-up when the inbox changes (chokidar locally); listing stays the truth. */
  watch?(onChange: () => void): () => void;
}

export interface ListOptions {
  /** An inbox entry that is not a drop file, and why (said once by the daemon). */
  ignored?: (name: string, why: string) => void;
}

/**
 * One entry of a folder, as listFolder gives it: a regular file with its size, or a symbolic
 * link or FIFO, socket, device (`other`, size 0) in a file's place, named so that the caller
 * can say so; never followed or opened.
 */
export interface FolderFile {
  name: string;
  /** Bytes (0 for a link or other). */
  size: number;
  kind: 'file' | 'link' | 'other';
}

/** How much of a `.done` marker takeMarker reads: a marker holds a word or a `sha256=<hex>` line. */
export const MARKER_MAX_BYTES = 4096;

/** A private name in processing/ for a marker being taken (a dot-name: never listed). */
export function takenMarkerPath(): string {
  return `processing/.marker.${process.pid}.${randomBytes(6).toString('hex')}`;
}

/** A folder opened by Source.openFolder. */
export interface HeldFolder {
  /** Its files, as listFolder gives them ([] for a folder that does not exist). */
  readonly files: readonly FolderFile[];
  /**
   * The bytes of one of `files` (a regular file), the file listed and no other: a link,
   * FIFO… now in its place is a SourceFileError NOT_A_REGULAR_FILE; another file in its
   * place, or a folder on the way replaced, FILE_CHANGED. Never what a link points to.
   */
  read(name: string): AsyncIterable<Uint8Array>;
  close(): Promise<void>;
}

/**
 * A name openFolder's read() takes: one of the folder's listed regular files, never a path
 * (`/`, `.`, `..`), so that no read leaves the folder, whatever the backend does with names.
 */
export function listedFileOf(files: readonly FolderFile[], name: string, folder: string): FolderFile {
  const f = files.find((x) => x.name === name);
  if (f === undefined || f.kind !== 'file' || name.includes('/') || name === '.' || name === '..')
    throw new Error(`${folder}/${name}: not a file listed in the folder`);
  return f;
}

/** What an inbox entry is, as the listing sees it. */
export type EntryKind = 'file' | 'folder' | 'link' | 'other';

// Names of the upload protocols: temporary names a writer renames when done.
const UPLOAD_SUFFIXES = ['.part', '.tmp', '.filepart', '.partial', '.crdownload'];
// With the `.done` markers, the names an inbox ignores without a word (normal traffic).
const QUIET_SUFFIXES = [...UPLOAD_SUFFIXES, '.done'];

/**
 * Whether a regular file's name is one listFolder gives: not hidden (`.`, `~`), not an
 * upload still in progress (any case of the temporary suffixes).
 */
export function isFolderFileName(name: string): boolean {
  const lower = name.toLowerCase();
  if (lower.startsWith('.') || lower.startsWith('~')) return false;
  return !UPLOAD_SUFFIXES.some((s) => lower.endsWith(s));
}

/** listFolder's order: by name, UTF-16 code units (the same on every backend, whatever the locale). */
export function byName(a: FolderFile, b: FolderFile): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * Why an inbox entry that is not a drop file is ignored; null for a drop file, and for the
 * names uploads and markers use in passing (they need no word).
 */
export function ignoredReason(name: string, kind: EntryKind): string | null {
  const lower = name.toLowerCase();
  if (lower.startsWith('.') || lower.startsWith('~')) return null;
  if (QUIET_SUFFIXES.some((s) => lower.endsWith(s))) return null;
  if (kind === 'folder') return 'a folder: only files directly in inbox/ are drop files';
  if (kind === 'link') return 'a symbolic link: links are never followed; put the file itself in inbox/';
  if (kind === 'other') return 'not a regular file (a FIFO, socket or device)';
  if (!isDropFileName(name)) return 'not a .txt name: only <name>.txt files are drop files';
  return null;
}

/** Which names in an inbox are drop files (docs/format.md "Which files are picked up"). */
export function isDropFileName(name: string): boolean {
  const lower = name.toLowerCase();
  if (!lower.endsWith('.txt')) return false;
  if (lower.startsWith('.') || lower.startsWith('~')) return false;
  return true;
}

/** `x.txt` → `x` (report names: `<name>.<fileId>.report.csv`). */
export function baseName(name: string): string {
  return name.replace(/\.txt$/i, '');
}

/** Why one file of a source cannot be read as a drop file: it is rejected alone, the others go on. */
export type FileRefusal = 'NOT_A_REGULAR_FILE' | 'FILE_UNREADABLE' | 'FILE_CHANGED';

export class SourceFileError extends Error {
  readonly reason: FileRefusal;
  constructor(reason: FileRefusal, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SourceFileError';
    this.reason = reason;
  }
}

/**
 * A per-file refusal from an open/read error: a link, FIFO or folder put in place of a
 * listed file, or one dropline may not read. null: not the file's fault (the backend is
 * down, the file is gone): the caller retries on its next poll.
 */
export function fileRefusalOf(err: unknown, path: string): SourceFileError | null {
  if (err instanceof SourceFileError) return err;
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'ELOOP' || code === 'EISDIR' || code === 'ENXIO' || code === 'ENODEV')
    return new SourceFileError('NOT_A_REGULAR_FILE', `${path} is not a regular file (${code})`, {
      cause: err,
    });
  if (code === 'EACCES' || code === 'EPERM')
    return new SourceFileError('FILE_UNREADABLE', `${path}: permission denied (${code})`, { cause: err });
  return null;
}
