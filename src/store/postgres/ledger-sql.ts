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
/** The chunk's channel as a `,sms,` list of one. */
const ONE_CHANNEL = `(',' || :channel::text || ',')`;
/** The row took its contact of the day already (a chunk stopped and sent again). */
const HAS_CONTACT = `EXISTS (SELECT 1 FROM contact_ledger c WHERE c.day = ${DAY} AND c.recipient = r.id)`;
/** How many channels a `,sms,whatsapp,` list holds. */
const CHANNEL_COUNT = (list: string) => `(length(${list}) - length(replace(${list}, ',', '')) - 1)`;

/**
 * The round-th row of each key takes a contact when its key's standing allows it (the rule
 * in the upsert's WHERE, evaluated on the row as locked: a transaction taking the same key at
 * once waits for this one's commit and sees its contact), and the contacts taken go to the
 * ledger in the same statement. One row a key a round (an upsert touches a row once a
 * statement); in key order, so that two transactions wait for each other in one order.
 */
export const TAKE_CONTACTS = statement(
  `WITH taken AS (
     INSERT INTO contact_keys AS k (entity, key, day, day_count, week, channels, at, channel, recipient)
     SELECT ${ENTITY}, q.key, ${DAY}, 1, ${WEEK}, ${ONE_CHANNEL}, ${NOW}, :channel::text, q.id FROM (
       SELECT r.id, ${KEY} AS key, row_number() OVER (PARTITION BY ${KEY} ORDER BY r.id) AS n
       FROM ${CHUNK} WHERE ${PENDING}) AS q
     WHERE q.n = :round::int AND NOT EXISTS (SELECT 1 FROM contact_ledger c WHERE c.day = ${DAY} AND c.recipient = q.id)
     ORDER BY q.key
     ON CONFLICT (entity, key) DO UPDATE SET
       day_count = CASE WHEN k.day = EXCLUDED.day THEN k.day_count + 1 ELSE 1 END,
       channels = CASE WHEN k.week <> EXCLUDED.week THEN EXCLUDED.channels
                       WHEN strpos(k.channels, EXCLUDED.channels) > 0 THEN k.channels
                       ELSE k.channels || substr(EXCLUDED.channels, 2) END,
       day = EXCLUDED.day, week = EXCLUDED.week, at = EXCLUDED.at, channel = EXCLUDED.channel,
       recipient = EXCLUDED.recipient
     WHERE (k.day <> EXCLUDED.day OR k.day_count < :per_day::int)
       AND (NOT :weekly::boolean OR k.week <> EXCLUDED.week OR strpos(k.channels, EXCLUDED.channels) > 0
            OR ${CHANNEL_COUNT('k.channels')} < :channels_per_week::int)
     RETURNING k.key, k.recipient, k.day_count, k.channels)
   INSERT INTO contact_ledger (day, recipient, entity, key, slot, week_slot, channel, at)
   SELECT ${DAY}, recipient, ${ENTITY}, key, day_count,
          array_position(string_to_array(trim(both ',' from channels), ','), :channel::text),
          :channel::text, ${NOW}
   FROM taken`,
);

/** The chunk's rows still pending. */
export const PENDING_COUNT = statement(`SELECT count(*) AS n FROM ${CHUNK} WHERE ${PENDING}`);

/**
 * Rows left without a contact of the day: `week` when the weekly rule refused them (their
 * channel is not among the week's and no channel slot is left), else `day`; with their key's
 * latest contact (this day's, or another channel's this week) and its channel.
 */
export const REFUSED = statement(
  `SELECT r.id,
     CASE WHEN :weekly::boolean AND k.week = ${WEEK} AND strpos(k.channels, ${ONE_CHANNEL}) = 0
               AND ${CHANNEL_COUNT('k.channels')} >= :channels_per_week::int THEN 'week' ELSE 'day' END AS rule,
     iso_time(k.at) AS at, k.channel
   FROM ${CHUNK} LEFT JOIN contact_keys k ON k.entity = ${ENTITY} AND k.key = ${KEY}
   WHERE ${PENDING} AND NOT ${HAS_CONTACT}
   ORDER BY r.id`,
);

/** These rows (:details, JSON [{id, detail}]) become contact_limit with their detail. */
export const HOLD_REFUSED = statement(
  `UPDATE recipients SET outcome = 'contact_limit', code = :code::text, detail = d.detail, updated_at = ${NOW}
   FROM jsonb_to_recordset(:details::jsonb) AS d(id bigint, detail text)
   WHERE recipients.id = d.id AND recipients.outcome = 'pending'`,
);

/** Contacts of days more than :keep_days before the local day go, and keys whose day and week ended by then. */
export const PRUNE = statement(
  `WITH days AS (DELETE FROM contact_ledger WHERE day < ${DAY} - :keep_days::int RETURNING 1),
   keys AS (DELETE FROM contact_keys WHERE day < ${DAY} - :keep_days::int AND week + 6 < ${DAY} - :keep_days::int RETURNING 1)
   SELECT (SELECT count(*) FROM days) + (SELECT count(*) FROM keys) AS n`,
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
 * cursor (day, recipient) in that order (the primary key's), with their file and its checks.
 */
export const CONTACTS = statement(
  `SELECT c.entity, c.day::text AS day, c.key, c.slot, c.week_slot, c.channel, iso_time(c.at) AS at, c.recipient,
     f.file_id, f.name AS file_name, f.source, k.account, k.send_window, k.lists
   FROM contact_ledger c
   LEFT JOIN files f ON f.file_no = c.recipient >> 32
   LEFT JOIN file_checks k ON k.file_id = f.file_id
   WHERE c.day BETWEEN :from::date AND :to::date AND (:entity::text IS NULL OR c.entity = :entity::text)
     AND (c.day, c.recipient) > (:after_day::date, :after_recipient::bigint)
   ORDER BY c.day, c.recipient LIMIT :limit::int`,
);
