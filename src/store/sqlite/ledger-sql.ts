// The SQL of the SQLite store's contact ledger (docs/campaign-rules.md "Contact limit"), and
// nothing else: the rule is ../campaign-rules.ts, run by ./campaign.ts; the compliance rows
// are read by ./ledger.ts. Parameters: the chunk (:lo, :hi, :seq), the ledger's :entity,
// :channel, local :day and :week (its Monday) on the store's clock, and :now.

/** The chunk's rows still pending (the recipients table as `r`). */
const PENDING = `r.id BETWEEN :lo AND :hi AND r.chunk_seq = :seq AND r.outcome = 'pending'`;
/** The row's key in the ledger: its normalised number, or its address in lower case. */
const KEY = 'lower(r.number)';
/** The row holds a slot of the day (found by its key: the primary key; no index on `recipient`). */
const HAS_DAY_SLOT = `EXISTS (SELECT 1 FROM contact_ledger c
    WHERE c.entity = :entity AND c.day = :day AND c.key = ${KEY} AND c.recipient = r.id)`;
const HAS_WEEK_SLOT = `EXISTS (SELECT 1 FROM contact_weeks w
    WHERE w.entity = :entity AND w.week = :week AND w.key = ${KEY} AND w.channel = :channel)`;

/**
 * One week-slot round for the chunk's channel: rows whose key holds none. In key order, as
 * on PostgreSQL (two writers inserting the same keys in one order cannot deadlock).
 */
export const TAKE_WEEK_SLOTS = `INSERT INTO contact_weeks (entity, week, key, slot, channel, recipient, at)
  SELECT :entity, :week, ${KEY}, :slot, :channel, r.id, :now FROM recipients r
  WHERE ${PENDING} AND NOT ${HAS_WEEK_SLOT}
  ORDER BY ${KEY}, r.id
  ON CONFLICT DO NOTHING`;

/** One day-slot round (with :weekly, only for keys whose channel holds its week slot). */
export const TAKE_DAY_SLOTS = `INSERT INTO contact_ledger (entity, day, key, slot, channel, recipient, at)
  SELECT :entity, :day, ${KEY}, :slot, :channel, r.id, :now FROM recipients r
  WHERE ${PENDING} AND NOT ${HAS_DAY_SLOT} AND (:weekly = 0 OR ${HAS_WEEK_SLOT})
  ORDER BY ${KEY}, r.id
  ON CONFLICT DO NOTHING`;

/**
 * The latest contact in the way of refused row `q`: any this day (`day`), another channel's
 * this week (`week`: the week's days one by one, each a look-up of the primary key).
 */
const IN_THE_WAY = (column: 'at' | 'channel') => `CASE q.rule
    WHEN 'week' THEN (SELECT c.${column} FROM contact_ledger c WHERE c.entity = :entity
      AND c.day IN (SELECT value FROM json_each(:week_days)) AND c.key = q.key AND c.channel <> :channel
      ORDER BY c.at DESC LIMIT 1)
    ELSE (SELECT c.${column} FROM contact_ledger c WHERE c.entity = :entity AND c.day = :day AND c.key = q.key
      ORDER BY c.at DESC LIMIT 1) END`;

/**
 * Rows left without a day slot: `week` when the weekly rule refused them (their channel holds
 * no week slot), else `day`; with the latest contact in the way (another channel's this week,
 * or any this day) and its channel.
 */
export const REFUSED = `WITH q AS (
    SELECT r.id, ${KEY} AS key, CASE WHEN :weekly = 1 AND NOT ${HAS_WEEK_SLOT} THEN 'week' ELSE 'day' END AS rule
    FROM recipients r WHERE ${PENDING} AND NOT ${HAS_DAY_SLOT})
  SELECT q.id, q.rule, ${IN_THE_WAY('at')} AS at, ${IN_THE_WAY('channel')} AS channel
  FROM q ORDER BY q.id`;

/** Week slots of the chunk's rows that hold no day slot this week: no contact was made. */
export const RELEASE_WEEK_SLOTS = `DELETE FROM contact_weeks WHERE entity = :entity AND week = :week
  AND (key, recipient) IN (SELECT ${KEY}, r.id FROM recipients r WHERE ${PENDING}
    AND NOT EXISTS (SELECT 1 FROM contact_ledger c WHERE c.entity = :entity
      AND c.day IN (SELECT value FROM json_each(:week_days)) AND c.key = ${KEY} AND c.recipient = r.id))`;

/** These rows (:details, JSON [{id, detail}]) become contact_limit with their detail. */
export const HOLD_REFUSED = `UPDATE recipients SET outcome = 'contact_limit', code = :code, detail = d.detail, updated_at = :now
  FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.detail') AS detail FROM json_each(:details)) AS d
  WHERE recipients.id = d.id AND recipients.outcome = 'pending'`;

/** Ledger days before :day and weeks ending before it go. */
export const PRUNE_DAYS = 'DELETE FROM contact_ledger WHERE day < ?';
export const PRUNE_WEEKS = "DELETE FROM contact_weeks WHERE date(week, '+6 days') < ?";

/** What compliance prints beside a file's contacts: set fields replace, absent ones stay. */
export const RECORD_FILE_CHECKS = `INSERT INTO file_checks (file_id, account, channel, entity, send_window, lists)
  VALUES (:file_id, :account, :channel, :entity, :send_window, :lists)
  ON CONFLICT (file_id) DO UPDATE SET account = coalesce(excluded.account, account),
    channel = coalesce(excluded.channel, channel), entity = coalesce(excluded.entity, entity),
    send_window = coalesce(excluded.send_window, send_window), lists = coalesce(excluded.lists, lists)`;

/**
 * A page of contacts of local days :from to :to (an entity's, or every one's), after the
 * cursor (entity, day, key, slot) in that order, with their file and its checks, and the week
 * slot their channel holds.
 */
export const CONTACTS = `SELECT c.entity, c.day, c.key, c.slot, c.channel, c.at, c.recipient,
    f.file_id, f.name AS file_name, f.source, k.account, k.send_window, k.lists,
    (SELECT w.slot FROM contact_weeks w WHERE w.entity = c.entity AND w.key = c.key AND w.channel = c.channel
       AND w.week = date(c.day, 'weekday 0', '-6 days')) AS week_slot
  FROM contact_ledger c
  LEFT JOIN files f ON f.file_no = c.recipient >> 32
  LEFT JOIN file_checks k ON k.file_id = f.file_id
  WHERE c.day BETWEEN :from AND :to AND (:entity IS NULL OR c.entity = :entity)
    AND (c.entity, c.day, c.key, c.slot) > (:after_entity, :after_day, :after_key, :after_slot)
  ORDER BY c.entity, c.day, c.key, c.slot LIMIT :limit`;
