// The notify port's connection cap within the process's open-file limit (docs/notify.md
// "Connections"). A cap above RLIMIT_NOFILE is never reached: accept() fails first (EMFILE) and
// the connection of a real report is reset, a report the service never sends again. Node has
// no getrlimit: on Linux the soft limit is read from /proc/self/limits; elsewhere (or when it
// cannot be read) the configured cap stands.
import { readFileSync } from 'node:fs';

export interface ConnectionCap {
  /** Open connections kept. */
  readonly maxConnections: number;
  /** Connections beyond maxConnections whose requests are answered 503. */
  readonly reserve: number;
}

/**
 * Descriptors left to everything but the notify port: the store (SQLite's files, or a
 * PostgreSQL pool), the sources (SFTP and S3 connections), the service's connection pools, the
 * ops server's clients, the reports being written, Node's own: a quarter of the limit, at least
 * 128.
 */
export function othersShare(limit: number): number {
  return Math.max(128, Math.floor(limit / 4));
}

/** The smallest cap given, whatever the limit: the service's reports need a few connections. */
const MIN_CAP = 8;

/**
 * `wanted` bounded by the open-files limit (null: unknown or unlimited, `wanted` as it is):
 * the cap and its reserve share what othersShare leaves, in the proportion of the defaults
 * (512 + 64: one ninth for the reserve).
 */
export function connectionCap(limit: number | null, wanted: ConnectionCap): ConnectionCap {
  if (limit === null) return wanted;
  const room = limit - othersShare(limit);
  if (wanted.maxConnections + wanted.reserve <= room) return wanted;
  const reserve = Math.min(wanted.reserve, Math.max(0, Math.floor(room / 9)));
  return { maxConnections: Math.max(MIN_CAP, Math.min(wanted.maxConnections, room - reserve)), reserve };
}

/**
 * The soft limit of open files (`Max open files` of /proc/self/limits); null when unlimited,
 * not Linux, or unreadable.
 */
export function openFilesLimit(
  read: () => string = () => readFileSync('/proc/self/limits', 'utf8'),
): number | null {
  let text: string;
  try {
    text = read();
  } catch {
    return null;
  }
  const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(text);
  return m && m[1] !== 'unlimited' ? Number(m[1]) : null;
}
