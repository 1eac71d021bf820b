// SQL text both backends write the same way (standard SQL, named parameters): the rules they
// share, built once from the tables they come from.

import { CHUNK_OUTCOME } from './outcomes.ts';

/**
 * In a file's acquisition: the previous holder when this acquisition takes its expired lease
 * (a dead or stalled worker; not this worker's own), else null.
 */
export const TAKEN_OVER_FROM = `taken_over_from = CASE WHEN lease_owner IS NOT NULL AND lease_owner <> :owner
  THEN lease_owner END`;

/** /metrics: files by state (read from the state index). */
export const GAUGE_FILES = 'SELECT state, count(*) AS n FROM files GROUP BY state';
/** /metrics: chunks in doubt of the files not finished (a finished file's are settled history). */
export const GAUGE_IN_DOUBT = `SELECT count(*) AS n FROM chunks c JOIN files f ON f.file_id = c.file_id
  WHERE c.state = 'in_doubt' AND f.state NOT IN ('rejected', 'duplicate', 'completed', 'cancelled')`;

// ---- which file next (Store.acquireFile) ----

/**
 * A file in a wanted state is due: any but `scheduled`, which is due once its time came
 * (`state` the state column, `now` the store's clock).
 */
export function isDue(state: string, now: string): string {
  return `(${state} <> 'scheduled' OR scheduled_until <= ${now})`;
}

/** Its lease is free: never taken, or run out (a dead or stalled worker's). */
export function leaseFree(now: string): string {
  return `(lease_owner IS NULL OR lease_until <= ${now})`;
}

/** Which file next: the least recently updated first (a file put back waits its turn), then by fileId. */
export function acquisitionOrder(alias = ''): string {
  return `ORDER BY ${alias}updated_at, ${alias}file_id`;
}

// ---- a row follows its chunk (../outcomes.ts) ----

/**
 * A valid recipient whose row says `pending` without a code follows its chunk (migration 0003):
 * its outcome is the chunk's state as a recipient outcome (CHUNK_OUTCOME), its code, message
 * and transaction number the chunk's. `pending` with a code is a row held back on its own (a
 * part of the chunk the service refused with 403 while other parts went on).
 */
export const FOLLOWS_CHUNK = `r.outcome = 'pending' AND r.code IS NULL`;

/** SQL of a chunk state's recipient outcome, from the one table of it (CHUNK_OUTCOME). */
export function chunkOutcomeSql(column: string): string {
  const whens = Object.entries(CHUNK_OUTCOME)
    .map(([state, outcome]) => `WHEN '${state}' THEN '${outcome}'`)
    .join(' ');
  return `CASE ${column} ${whens} END`;
}

/** A row's outcome as it reads: its own, or that of its chunk `c` (joined only for rows that follow it). */
export const ROW_OUTCOME = `CASE WHEN c.state IS NULL THEN r.outcome ELSE ${chunkOutcomeSql('c.state')} END`;

/**
 * A recipient row as it reads (mapping.ts toRecipient, toReportRow: in this order), its chunk's
 * result applied; a report row has no text. `latest(a, b)` is the backend's later of two
 * timestamps, either NULL.
 */
export function recipientColumns(withText: boolean, latest: (a: string, b: string) => string): string {
  return `r.id, r.line, r.k, r.number, r.value, r.message_id, ${withText ? 'r.text, ' : ''}r.chunk_seq, r.sms_count, r.status,
  ${ROW_OUTCOME} AS outcome,
  CASE WHEN c.state IS NULL THEN r.code ELSE c.error_code END AS code,
  CASE WHEN c.state = 'accepted' THEN coalesce(c.transaction_number, r.transaction_number)
    ELSE r.transaction_number END AS transaction_number,
  ${latest('c.updated_at', 'r.updated_at')} AS updated_at,
  CASE WHEN c.state IS NULL THEN r.detail ELSE c.error_message END AS detail`;
}

// ---- the messageId scheme (../message-ids.ts) ----

/**
 * The SQL form of readMessageId: the row's messageId from message_id (NULL: the generated
 * <fileId>-<line>[-<k>], `fileId` its parameter; '': none, read NULL). `r` the table's alias
 * with its dot, or ''.
 */
export function messageIdSql(fileId: string, r: string): string {
  return `CASE WHEN ${r}message_id IS NULL THEN ${fileId} || '-' || ${r}line || CASE WHEN ${r}k > 0 THEN '-' || ${r}k ELSE '' END
  ELSE nullif(${r}message_id, '') END`;
}
