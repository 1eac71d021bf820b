// File system errors in words a user can act on (errnoInWords), and a store folder's
// (storeFolderError). Kept apart from config/load.ts so that the commands that say them do
// not load the configuration's schema (zod: ~60 ms of every command's start).
import { DroplineError } from './errors.ts';

/** What an errno code means for a path dropline could not use, in words. */
const ERRNO_WORDS: Readonly<Record<string, string>> = {
  ENOTDIR: 'a path in it is a file, not a folder',
  EEXIST: 'it is a file, not a folder',
  EISDIR: 'it is a folder',
  ENOENT: 'its folder does not exist',
  EACCES: 'permission denied',
  EPERM: 'not permitted',
  EROFS: 'a read-only file system',
  ENOSPC: 'no space left on the device',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'the name is too long',
};

/** Why a file system call failed, in words with its code: "it is a folder (EISDIR)". */
export function errnoInWords(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  const words = code === undefined ? undefined : ERRNO_WORDS[code];
  return words ? `${words} (${code})` : (code ?? (err as Error).message);
}

/**
 * A failure to create, read or write something in the store's folder (the folder itself, its
 * notify-token) as the error a user can act on: a permission or a read-only file system means
 * the store cannot be written; anything else, that the store setting cannot be used.
 */
export function storeFolderError(action: string, path: string, err: unknown): DroplineError {
  const code = (err as NodeJS.ErrnoException).code;
  const readonly = code === 'EACCES' || code === 'EPERM' || code === 'EROFS';
  return new DroplineError(
    readonly ? 'DROPLINE_ERR_STORE_READONLY' : 'DROPLINE_ERR_STORE',
    `cannot ${action} ${path}: ${errnoInWords(err)}`,
    { cause: err },
  );
}
