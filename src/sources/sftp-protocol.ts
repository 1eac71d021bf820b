// What SFTP (v3) and ssh2 give the SFTP source to work with: status codes, a file's type from
// its mode, a connection with its requests awaiting an answer, host-key fingerprints.
import { createHash } from 'node:crypto';
import type { SFTPWrapper, Stats } from 'ssh2';
import type SftpClient from 'ssh2-sftp-client';
import { DroplineError } from '../errors.ts';

/** SFTP status codes (draft-ietf-secsh-filexfer-02). */
export const NO_SUCH_FILE = 2;
export const PERMISSION_DENIED = 3;
export const S_IFMT = 0o170000;
export const S_IFREG = 0o100000;
export const S_IFDIR = 0o040000;
export const S_IFLNK = 0o120000;

export type Cb<T> = (err?: Error | null, value?: T) => void;

export interface Conn {
  client: SftpClient;
  sftp: SFTPWrapper;
  lost: boolean;
  /** Requests awaiting an answer: failed at once when the connection goes. */
  pending: Set<(err: Error) => void>;
}

export function sftpCode(err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code;
}

export function isSftpError(err: unknown): boolean {
  return typeof sftpCode(err) === 'number';
}

export function failPending(conn: Conn, message: string): void {
  const pending = [...conn.pending];
  conn.pending.clear();
  for (const fail of pending) fail(new DroplineError('DROPLINE_ERR_SFTP', message));
}

/** Whether two SFTP attributes are of the same regular file as far as v3 tells (no inode). */
export function sameFile(a: Stats, b: Stats): boolean {
  return (
    (a.mode & S_IFMT) === S_IFREG &&
    a.mode === b.mode &&
    a.size === b.size &&
    a.mtime === b.mtime &&
    a.uid === b.uid &&
    a.gid === b.gid
  );
}

/** `SHA256:abc…` (padding optional) → the raw base64 without padding, or null when malformed. */
export function parseHostKeySha256(value: string): string | null {
  const m = /^SHA256:([A-Za-z0-9+/]{43})=?$/.exec(value.trim());
  return m ? m[1]! : null;
}

/** ssh2's hex digest of the host key → OpenSSH's `SHA256:` form. */
export function fingerprintOfHex(hex: string): string {
  return `SHA256:${Buffer.from(hex, 'hex').toString('base64').replace(/=+$/, '')}`;
}

/** OpenSSH's `SHA256:` fingerprint of a host key blob (for messages and tests). */
export function fingerprintOfKey(key: Buffer): string {
  return fingerprintOfHex(createHash('sha256').update(key).digest('hex'));
}
