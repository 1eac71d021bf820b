// SQL text both backends write the same way (standard SQL, named parameters): the rules they
// share, built once from the tables they come from.

import { CHUNK_OUTCOME, UNTAKEN_OUTCOMES } from './outcomes.ts';

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

/** setPaths' precondition: no `from` given (NULL), or the path is still `from`. */
export function pathStill(path: string, from: string): string {
  return `(${from} IS NULL OR ${path} = ${from})`;
}

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

/**
 * Row `r` of a chunk whose result was just recorded (its new state :state) was never taken by
 * the service, itself or by following its chunk (outcomes.ts UNTAKEN_OUTCOMES).
 */
export function untakenSql(p: Param): string {
  const outcome = `CASE WHEN ${FOLLOWS_CHUNK} THEN ${chunkOutcomeSql(p('state', 'text'))} ELSE r.outcome END`;
  return `(${outcome}) IN (${UNTAKEN_OUTCOMES.map((o) => `'${o}'`).join(', ')})`;
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

// ---- replies joined to their campaign (docs/replies.md) ----

/** A named parameter as the backend writes it: `:name` (SQLite), `:name::type` (PostgreSQL). */
export type Param = (name: string, type: string) => string;

/** The factor of a recipient's id that is its file's number (file_no * 2^32 + idx). */
const FILE_NO_OF_ID = 4294967296;

/**
 * A chunk's recipients the service took (outcome sent, their chunk's result applied) become
 * the reply targets of its file's short code, sent at :now. Run with the chunk's result, for
 * a file with a short code only.
 */
export function insertReplyTargets(p: Param, now: string): string {
  return `INSERT INTO reply_targets (short_code, number, sent_at, recipient)
  SELECT ${p('short_code', 'text')}, r.number, ${now}, r.id
  FROM recipients r LEFT JOIN chunks c ON ${FOLLOWS_CHUNK} AND c.file_id = ${p('file_id', 'text')} AND c.seq = r.chunk_seq
  WHERE r.id BETWEEN ${p('lo', 'bigint')} AND ${p('hi', 'bigint')} AND r.chunk_seq = ${p('seq', 'int')}
    AND r.number IS NOT NULL AND ${ROW_OUTCOME} = 'sent'
  ON CONFLICT DO NOTHING`;
}

/**
 * A reply kept (once per message_id; without one, once per sender, short code and text within
 * the window of ./reply-redelivery.ts, its :fingerprint, :cell_a, :cell_b, :after and :before)
 * with what it asked (intent, keyword), joined to the latest recipient sent to its number from
 * the short code it was sent to, at or after :since (a NULL :since joins nothing); its id and
 * the file joined. None when it was kept already. The standing change it makes is
 * ./standing-rules.ts's, in the same transaction.
 */
export function recordReplySql(p: Param): string {
  return `INSERT INTO replies (received_at, from_number, to_number, text, opt_out, message_id, intent, keyword, recipient, file_id,
    fingerprint, cell_a, cell_b)
  SELECT ${p('received_at', 'timestamptz')}, ${p('from_number', 'text')}, ${p('to_number', 'text')}, ${p('text', 'text')},
    ${p('opt_out', 'boolean')}, ${p('message_id', 'text')}, ${p('intent', 'text')}, ${p('keyword', 'text')}, t.recipient, f.file_id,
    ${p('fingerprint', 'text')}, ${p('cell_a', 'bigint')}, ${p('cell_b', 'bigint')}
  FROM (SELECT 1 AS one) one
  LEFT JOIN (SELECT recipient FROM reply_targets
      WHERE short_code = ${p('to_number', 'text')} AND number = ${p('from_number', 'text')}
        AND sent_at >= ${p('since', 'timestamptz')}
      ORDER BY sent_at DESC, recipient DESC LIMIT 1) t ON true
  LEFT JOIN files f ON f.file_no = t.recipient / ${FILE_NO_OF_ID}
  WHERE NOT EXISTS (SELECT 1 FROM replies d WHERE d.fingerprint = ${p('fingerprint', 'text')}
    AND d.received_at > ${p('after', 'timestamptz')} AND d.received_at < ${p('before', 'timestamptz')})
  ON CONFLICT DO NOTHING
  RETURNING id, file_id`;
}

/**
 * The replies joined to file :file_id, newest first, with their recipient's line and k;
 * :limit of them (SQLite: -1, PostgreSQL: NULL for all).
 */
export function fileRepliesSql(p: Param): string {
  return `SELECT y.id, y.received_at, y.from_number, y.to_number, y.text, y.opt_out, y.message_id, y.intent,
    y.keyword, y.file_id, r.line, r.k
  FROM replies y JOIN recipients r ON r.id = y.recipient
  WHERE y.file_id = ${p('file_id', 'text')} ORDER BY y.id DESC LIMIT ${p('limit', 'bigint')}`;
}

/** A file's replies and the recipients who replied. */
export function replyCountsSql(p: Param): string {
  return `SELECT count(*) AS replies, count(DISTINCT recipient) AS replied FROM replies WHERE file_id = ${p('file_id', 'text')}`;
}

/**
 * Retention: the reply targets of recipients just pruned, found by their file's short code and
 * their numbers (`numbers`: the backend's list of :numbers as a subquery) within the file's
 * id range [:lo, :hi]: lookups of the primary key, no index of its own to keep at every send.
 * The file's replies stay, unjoined from rows that are gone.
 */
export function pruneReplyTargetsSql(p: Param, numbers: string): string {
  return `DELETE FROM reply_targets WHERE short_code = ${p('short_code', 'text')} AND number IN (${numbers})
    AND recipient BETWEEN ${p('lo', 'bigint')} AND ${p('hi', 'bigint')}`;
}

/** The replies a prune step removes: the oldest received before :before, :max_rows of them. */
export function oldRepliesSql(p: Param): string {
  return `SELECT id FROM replies WHERE received_at < ${p('before', 'timestamptz')}
    ORDER BY received_at, id LIMIT ${p('max_rows', 'int')}`;
}

/**
 * Retention: the replies picked (`ids`, the backend's list of :ids) and their answers. Picked
 * once, then deleted by id: a prune running at once finds them gone and deletes nothing, and
 * never an answer of another batch than its replies'.
 */
export function pruneReplyAnswersSql(ids: string): string {
  return `DELETE FROM reply_answers WHERE reply IN (${ids})`;
}
export function pruneRepliesSql(ids: string): string {
  return `DELETE FROM replies WHERE id IN (${ids})`;
}

// ---- answers owed to replies (docs/opt-outs.md "Answers") ----

/** The answer a reply just kept is owed, in the transaction that keeps it (`now`: the backend's clock). */
export function oweAnswerSql(p: Param, now: string): string {
  return `INSERT INTO reply_answers (reply, number, short_code, text, what, confirmation, state, attempts, created_at, updated_at)
  VALUES (${p('reply', 'bigint')}, ${p('number', 'text')}, ${p('short_code', 'text')}, ${p('text', 'text')}, ${p('what', 'text')},
    ${p('confirmation', 'boolean')}, 'owed', 0, ${now}, ${now})
  ON CONFLICT DO NOTHING`;
}

/**
 * An owed answer claimed: `sending`, by whichever process's UPDATE finds it owed (one does), or
 * `skipped` when it was owed since before `stale` (a day: an answer that late answers nothing).
 * Returns the row as claimed.
 */
export function claimAnswerSql(p: Param, now: string, stale: string): string {
  return `UPDATE reply_answers SET state = CASE WHEN created_at < ${stale} THEN 'skipped' ELSE 'sending' END,
    detail = CASE WHEN created_at < ${stale} THEN ${p('stale_detail', 'text')} ELSE detail END,
    attempts = attempts + 1, updated_at = ${now}
  WHERE reply = ${p('reply', 'bigint')} AND state = 'owed'
  RETURNING reply, number, short_code, text, what, confirmation, state, attempts, day`;
}

/** A claimed answer that found the number's confirmation day taken: skipped, never sent. */
export function skipAnswerSql(p: Param, now: string): string {
  return `UPDATE reply_answers SET state = 'skipped', detail = ${p('detail', 'text')}, updated_at = ${now}
  WHERE reply = ${p('reply', 'bigint')} AND state = 'sending'`;
}

/**
 * What sending a claimed answer came to: `sent`, `failed` (never sent again: it may have been
 * taken), or `owed` again (refused without being taken), `failed` once :max_attempts claims
 * were made.
 */
export function settleAnswerSql(p: Param, now: string): string {
  return `UPDATE reply_answers SET state = CASE WHEN ${p('state', 'text')} = 'owed' AND attempts >= ${p('max_attempts', 'int')}
      THEN 'failed' ELSE ${p('state', 'text')} END,
    detail = ${p('detail', 'text')}, updated_at = ${now}
  WHERE reply = ${p('reply', 'bigint')} AND state = 'sending'`;
}

/** Answers `sending` since before `before` (their process died) are failed, with :detail. */
export function abandonAnswersSql(p: Param, now: string, before: string): string {
  return `UPDATE reply_answers SET state = 'failed', detail = ${p('detail', 'text')}, updated_at = ${now}
  WHERE state = 'sending' AND updated_at < ${before}`;
}

/** The answers owed, oldest reply first. */
export function answersOwedSql(p: Param): string {
  return `SELECT reply FROM reply_answers WHERE state = 'owed' AND reply > ${p('after', 'bigint')}
    ORDER BY reply LIMIT ${p('limit', 'bigint')}`;
}

/** A reply's answer, as kept (docs/opt-outs.md "Answers"). */
export function replyAnswerSql(p: Param): string {
  return `SELECT reply, number, short_code, text, what, confirmation, state, attempts, day, detail
  FROM reply_answers WHERE reply = ${p('reply', 'bigint')}`;
}
