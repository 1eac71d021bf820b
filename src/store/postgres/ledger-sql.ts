// The SQL of the PostgreSQL store's contact ledger (docs/campaign-rules.md "Contact limit"),
// and nothing else: the rule is ../campaign-rules.ts, run by ./campaign.ts; the compliance
// rows are read by ./ledger.ts. The local day and week are the database's (now() in the
// limit's :timezone, or the store's :now), never a worker's, which may be skewed.
import { NOW, statement, THIS_CHUNK } from './sql.ts';

/** The chunk's rows (`r`), from its span. */
const CHUNK = `chunk_spans s JOIN recipients r ON r.id BETWEEN s.first_id AND s.last_id AND r.chunk_seq = s.seq`;
const PENDING = `${THIS_CHUNK} AND r.outcome = 'pending'`;
/** The row's key in the ledger: its normalised number, or its address in lower case. */
const KEY = 'lower(r.number)';
const LOCAL = `(${NOW} AT TIME ZONE :timezone::text)`;
const DAY = `${LOCAL}::date`;
/** The Monday of the local week (ISO weeks start on Monday). */
const WEEK = `date_trunc('week', ${LOCAL})::date`;
const ENTITY = ':entity::text';
const CHANNEL = ':channel::text';
/** The row holds a slot of the day (found by its key: the primary key; no index on `recipient`). */
const HAS_DAY_SLOT = `EXISTS (SELECT 1 FROM contact_ledger c
    WHERE c.entity = ${ENTITY} AND c.day = ${DAY} AND c.key = ${KEY} AND c.recipient = r.id)`;
/** The local days of this week so far. */
const WEEK_DAYS = `ARRAY(SELECT d::date FROM generate_series(${WEEK}::timestamp, ${DAY}::timestamp, interval '1 day') d)`;
const HAS_WEEK_SLOT = `EXISTS (SELECT 1 FROM contact_weeks w
    WHERE w.entity = ${ENTITY} AND w.week = ${WEEK} AND w.key = ${KEY} AND w.channel = ${CHANNEL})`;

/**
 * One week-slot round for the chunk's channel: rows whose key holds none. In key order: two
 * transactions inserting the same keys wait for each other in one order, never in a cycle.
 */
export const TAKE_WEEK_SLOTS = statement(
  `INSERT INTO contact_weeks (entity, week, key, slot, channel, recipient, at)
   SELECT ${ENTITY}, ${WEEK}, ${KEY}, :slot::int, ${CHANNEL}, r.id, ${NOW} FROM ${CHUNK}
   WHERE ${PENDING} AND NOT ${HAS_WEEK_SLOT}
   ORDER BY ${KEY}, r.id
   ON CONFLICT DO NOTHING`,
);

/** One day-slot round (with :weekly, only for keys whose channel holds its week slot). */
export const TAKE_DAY_SLOTS = statement(
  `INSERT INTO contact_ledger (entity, day, key, slot, channel, recipient, at)
   SELECT ${ENTITY}, ${DAY}, ${KEY}, :slot::int, ${CHANNEL}, r.id, ${NOW} FROM ${CHUNK}
   WHERE ${PENDING} AND NOT ${HAS_DAY_SLOT} AND (NOT :weekly::boolean OR ${HAS_WEEK_SLOT})
   ORDER BY ${KEY}, r.id
   ON CONFLICT DO NOTHING`,
);

/**
 * Rows left without a day slot: `week` when the weekly rule refused them (their channel holds
 * no week slot), else `day`; with the latest contact in the way (any this day, or another
 * channel's this week: the week's days one by one, each a look-up of the primary key).
 */
export const REFUSED = statement(
  `WITH q AS (
     SELECT r.id, ${KEY} AS key, CASE WHEN :weekly::boolean AND NOT ${HAS_WEEK_SLOT} THEN 'week' ELSE 'day' END AS rule
     FROM ${CHUNK} WHERE ${PENDING} AND NOT ${HAS_DAY_SLOT})
   SELECT q.id, q.rule, iso_time(w.at) AS at, w.channel FROM q
   LEFT JOIN LATERAL (
     SELECT c.at, c.channel FROM contact_ledger c
     WHERE q.rule = 'day' AND c.entity = ${ENTITY} AND c.day = ${DAY} AND c.key = q.key
     UNION ALL
     SELECT c.at, c.channel FROM contact_ledger c
     WHERE q.rule = 'week' AND c.entity = ${ENTITY} AND c.key = q.key AND c.channel <> ${CHANNEL}
       AND c.day = ANY (${WEEK_DAYS})
     ORDER BY at DESC LIMIT 1) w ON true
   ORDER BY q.id`,
);

/** Week slots of the chunk's rows that hold no day slot this week: no contact was made. */
export const RELEASE_WEEK_SLOTS = statement(
  `DELETE FROM contact_weeks WHERE entity = ${ENTITY} AND week = ${WEEK}
   AND (key, recipient) IN (SELECT ${KEY}, r.id FROM ${CHUNK} WHERE ${PENDING}
     AND NOT EXISTS (SELECT 1 FROM contact_ledger c WHERE c.entity = ${ENTITY}
       AND c.day = ANY (${WEEK_DAYS}) AND c.key = ${KEY} AND c.recipient = r.id))`,
);

/** These rows (:details, JSON [{id, detail}]) become contact_limit with their detail. */
export const HOLD_REFUSED = statement(
  `UPDATE recipients SET outcome = 'contact_limit', code = :code::text, detail = d.detail, updated_at = ${NOW}
   FROM jsonb_to_recordset(:details::jsonb) AS d(id bigint, detail text)
   WHERE recipients.id = d.id AND recipients.outcome = 'pending'`,
);

/** Ledger days more than :keep_days before the local day go, and weeks ended by then. */
export const PRUNE = statement(
  `WITH days AS (DELETE FROM contact_ledger WHERE day < ${DAY} - :keep_days::int RETURNING 1),
   weeks AS (DELETE FROM contact_weeks WHERE week + 6 < ${DAY} - :keep_days::int RETURNING 1)
   SELECT (SELECT count(*) FROM days) + (SELECT count(*) FROM weeks) AS n`,
);

/** What compliance prints beside a file's contacts: set fields replace, absent ones stay. */
export const RECORD_FILE_CHECKS = statement(
  `INSERT INTO file_checks (file_id, account, channel, entity, send_window, lists)
   VALUES (:file_id::text, :account::text, :channel::text, :entity::text, :send_window::text, :lists::jsonb)
   ON CONFLICT (file_id) DO UPDATE SET account = coalesce(EXCLUDED.account, file_checks.account),
     channel = coalesce(EXCLUDED.channel, file_checks.channel), entity = coalesce(EXCLUDED.entity, file_checks.entity),
     send_window = coalesce(EXCLUDED.send_window, file_checks.send_window),
     lists = coalesce(EXCLUDED.lists, file_checks.lists)`,
);

/**
 * A page of contacts of local days :from to :to (an entity's, or every one's), after the
 * cursor (entity, day, key, slot) in that order (the primary key's), with their file and its
 * checks, and the week slot their channel holds.
 */
export const CONTACTS = statement(
  `SELECT c.entity, c.day::text AS day, c.key, c.slot, c.channel, iso_time(c.at) AS at, c.recipient,
     f.file_id, f.name AS file_name, f.source, k.account, k.send_window, k.lists,
     (SELECT w.slot FROM contact_weeks w WHERE w.entity = c.entity AND w.week = date_trunc('week', c.day::timestamp)::date
        AND w.key = c.key AND w.channel = c.channel) AS week_slot
   FROM contact_ledger c
   LEFT JOIN files f ON f.file_no = c.recipient >> 32
   LEFT JOIN file_checks k ON k.file_id = f.file_id
   WHERE c.day BETWEEN :from::date AND :to::date AND (:entity::text IS NULL OR c.entity = :entity::text)
     AND (c.entity, c.day, c.key, c.slot) > (:after_entity::text, :after_day::date, :after_key::text, :after_slot::int)
   ORDER BY c.entity, c.day, c.key, c.slot LIMIT :limit::int`,
);
