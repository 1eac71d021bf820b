// docs/format.md "Identifiers": identifiers derived from content, stable across restarts.
import { createHash } from 'node:crypto';

/**
 * The same bytes from the same source always get the same fileId (and so bulkId and
 * messageIds), so a resend after a lost store is recognisable in the service's reports.
 * 16 hex characters (64 bits) keep ids short: services clip long ones. A forced resend of
 * content already sent gets a generation suffix, so its reports stay apart.
 */
export function fileIdFor(source: string, sha256: string, generation = 1): string {
  const base = createHash('sha256').update(`${source}\n${sha256}`).digest('hex').slice(0, 16);
  return generation > 1 ? `${base}-r${generation}` : base;
}

/** `<fileId>-<line>` (personalized) or `<fileId>-<line>-<k>` (bulk). */
export function messageIdFor(fileId: string, line: number, k: number): string {
  return k > 0 ? `${fileId}-${line}-${k}` : `${fileId}-${line}`;
}
