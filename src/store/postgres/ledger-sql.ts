// The SQL of the PostgreSQL store's contact ledger (docs/campaign-rules.md "Contact limit"),
// and nothing else: the rule is ../campaign-rules.ts, run by ./campaign.ts; the compliance
// rows are read by ./ledger.ts. The local day and week are the database's (now() in the
// limit's :timezone, or the store's :now), never a worker's, which may be skewed. A chunk's
// contacts are one record of the chunk (contact_chunks, migration 0020), its slots past the
// first a row each (contact_slots); contact_ledger holds the contacts recorded before 0020.
import { untakenSql } from '../shared-sql.ts';
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
/** A record `c` of the chunk's contacts holds row `r`. */
const inRecord = (r: string) => `(c.excluded IS NULL OR ${r}.id <> ALL (c.excluded))`;
/** The chunk's last id, which names its records (a subquery without correlation: once a statement). */
const CHUNK_HI = `(SELECT last_id FROM chunk_spans WHERE file_no = (SELECT file_no FROM files WHERE file_id = :file_id)
    AND seq = :seq)`;
/**
 * Row `r` of the chunk took its contact of the day already (a chunk stopped and sent again):
 * a record of its chunk that day holds it, or (contacts taken before migration 0020) the old
 * ledger does. Each table is looked into row by row only when it has anything of the chunk's
 * day (the guards have no correlation: they run once a statement).
 */
const hasContact = (r: string) => `(
    coalesce((SELECT true FROM contact_chunks WHERE day = ${DAY} AND hi = ${CHUNK_HI} LIMIT 1), false)
      AND EXISTS (SELECT 1 FROM contact_chunks c WHERE c.day = ${DAY} AND c.hi = ${CHUNK_HI} AND ${inRecord(r)})
    OR coalesce((SELECT true FROM contact_ledger WHERE day = ${DAY} LIMIT 1), false)
      AND EXISTS (SELECT 1 FROM contact_ledger c WHERE c.day = ${DAY} AND c.recipient = ${r}.id))`;
const HAS_CONTACT = hasContact('r');
/**
 * Row `r` took its contact in this transaction, before its chunk's record is written: its
 * key's (`k`, locked by the take) latest contact of the day is a row of the chunk from `r`
 * on that no record holds yet. A key's rows take in id order until one is refused, and a
 * refused one leaves the key as it was, so the rows that took are those up to its latest.
 */
const TOOK = `coalesce(k.day = ${DAY} AND k.recipient BETWEEN r.id AND s.last_id AND EXISTS (SELECT 1 FROM recipients t
    WHERE t.id = k.recipient AND t.chunk_seq = s.seq AND t.outcome = 'pending' AND NOT ${hasContact('t')}), false)`;
/** How many channels a `,sms,whatsapp,` list holds. */
const CHANNEL_COUNT = (list: string) => `(length(${list}) - length(replace(${list}, ',', '')) - 1)`;
/**
 * A value the same for every row, computed once a statement: PostgreSQL computes a scalar
 * subquery without correlation once, the bare expression (a time zone looked up by name) once
 * a row. About 0.6–1.2 ms of a 1000-row take's 10.
 */
const once = (expr: string) => `(SELECT ${expr})`;

/**
 * The round-th row of each key takes a contact when its key's standing allows it (the rule
 * in the upsert's WHERE, evaluated on the row as locked: a transaction taking the same key at
 * once waits for this one's commit and sees its contact); a slot past the first goes to
 * contact_slots in the same statement, and RECORD_CONTACTS records the chunk's contacts once
 * they are all taken. One row a key a round (an upsert touches a row once a statement); in
 * key order, so that two transactions wait for each other in one order. How many were taken.
 */
export const TAKE_CONTACTS = statement(
  `WITH taken AS (
     INSERT INTO contact_keys AS k (entity, key, day, day_count, week, channels, at, channel, recipient, opened)
     SELECT ${ENTITY}, q.key, ${once(DAY)}, 1, ${once(WEEK)}, ${ONE_CHANNEL}, ${once(NOW)}, :channel::text, q.id, true FROM (
       SELECT r.id, ${KEY} AS key, row_number() OVER (PARTITION BY ${KEY} ORDER BY r.id) AS n
       FROM ${CHUNK} WHERE ${PENDING}) AS q
     WHERE q.n = :round::int AND NOT ${hasContact('q')}
     ORDER BY q.key
     ON CONFLICT (entity, key) DO UPDATE SET
       day_count = CASE WHEN k.day = EXCLUDED.day THEN k.day_count + 1 ELSE 1 END,
       channels = CASE WHEN k.week <> EXCLUDED.week THEN EXCLUDED.channels
                       WHEN strpos(k.channels, EXCLUDED.channels) > 0 THEN k.channels
                       ELSE k.channels || substr(EXCLUDED.channels, 2) END,
       opened = k.week <> EXCLUDED.week OR strpos(k.channels, EXCLUDED.channels) = 0,
       day = EXCLUDED.day, week = EXCLUDED.week, at = EXCLUDED.at, channel = EXCLUDED.channel,
       recipient = EXCLUDED.recipient
     WHERE (k.day <> EXCLUDED.day OR k.day_count < :per_day::int)
       AND (NOT :weekly::boolean OR k.week <> EXCLUDED.week OR strpos(k.channels, EXCLUDED.channels) > 0
            OR ${CHANNEL_COUNT('k.channels')} < :channels_per_week::int)
     RETURNING k.recipient, k.day_count,
       array_position(string_to_array(trim(both ',' from k.channels), ','), :channel::text) AS week_slot),
   slots AS (
     INSERT INTO contact_slots (day, recipient, slot, week_slot)
     SELECT ${DAY}, recipient, day_count, week_slot FROM taken WHERE day_count > 1 OR week_slot > 1)
   SELECT count(*) AS n FROM taken`,
);

/**
 * The chunk's contacts just taken (:taken of them), recorded once: its rows but those not
 * pending now (held back, or not pending when it began) and those an earlier record of the
 * day holds.
 */
export const RECORD_CONTACTS = statement(
  `INSERT INTO contact_chunks (day, hi, lo, seq, entity, channel, at, contacts, excluded)
   SELECT ${DAY}, s.last_id, s.first_id, s.seq, ${ENTITY}, :channel::text, ${NOW}, :taken::int,
     (SELECT array_agg(r.id ORDER BY r.id) FROM recipients r
      WHERE r.id BETWEEN s.first_id AND s.last_id AND r.chunk_seq = s.seq
        AND (r.outcome <> 'pending' OR ${HAS_CONTACT}))
   FROM chunk_spans s WHERE ${THIS_CHUNK}`,
);

/** The chunk's rows still pending. */
export const PENDING_COUNT = statement(`SELECT count(*) AS n FROM ${CHUNK} WHERE ${PENDING}`);

/**
 * Rows left without a contact of the day (none before, none taken now): `week` when the
 * weekly rule refused them (their channel is not among the week's and no channel slot is
 * left), else `day`; with their key's latest contact (this day's, or another channel's this
 * week) and its channel.
 */
export const REFUSED = statement(
  `SELECT r.id,
     CASE WHEN :weekly::boolean AND k.week = ${WEEK} AND strpos(k.channels, ${ONE_CHANNEL}) = 0
               AND ${CHANNEL_COUNT('k.channels')} >= :channels_per_week::int THEN 'week' ELSE 'day' END AS rule,
     CASE WHEN k.recipient <> 0 THEN iso_time(k.at) END AS at, k.channel
   FROM ${CHUNK} LEFT JOIN contact_keys k ON k.entity = ${ENTITY} AND k.key = ${KEY}
   WHERE ${PENDING} AND NOT ${HAS_CONTACT} AND NOT ${TOOK}
   ORDER BY r.id`,
);

/** These rows (:details, JSON [{id, detail}]) become contact_limit with their detail. */
export const HOLD_REFUSED = statement(
  `UPDATE recipients SET outcome = 'contact_limit', code = :code::text, detail = d.detail, updated_at = ${NOW}
   FROM jsonb_to_recordset(:details::jsonb) AS d(id bigint, detail text)
   WHERE recipients.id = d.id AND recipients.outcome = 'pending'`,
);

/**
 * The contacts of the record the chunk's (:hi) latest start wrote, made at :started_at, the
 * very time the chunk went inflight (a start under the limit writes one even when it took no
 * contact; none without the limit; equal, not later: a clock stepped back never picks an
 * earlier start's; the latest of two made at the same time), that the service never took (their chunk's result just recorded, its
 * state :state).
 */
export const UNTAKEN = statement(
  `SELECT c.id AS record, c.day::text AS day, c.entity, c.channel, r.id, ${KEY} AS key
   FROM (SELECT * FROM contact_chunks WHERE hi = :hi::bigint AND at = :started_at::timestamptz
         ORDER BY id DESC LIMIT 1) AS c
   JOIN recipients r ON r.id BETWEEN c.lo AND c.hi AND r.chunk_seq = c.seq
   WHERE ${inRecord('r')} AND ${untakenSql((name, type) => `:${name}::${type}`)}`,
);

/** The keys :keys of :entity locked in key order, as the take locks them (no cycle of waits). */
export const LOCK_KEYS = statement(
  'SELECT 1 FROM contact_keys WHERE entity = :entity::text AND key = ANY(:keys::text[]) ORDER BY key FOR UPDATE',
);

const GIVEN = (column: string) => `${column} = ANY(:ids::bigint[])`;
/**
 * The key's (`k`) latest contact, given back, added its channel (:channel, the week's latest)
 * to the week's list: no other contact of the week used that channel.
 */
const OPENED = `(k.week = date_trunc('week', :day::date)::date AND k.opened AND ${GIVEN('k.recipient')}
  AND right(k.channels, length(:channel::text) + 2) = ',' || :channel::text || ',')`;

/**
 * Record :record no longer holds rows :ids, their slots go, and their keys give back their
 * contacts of the record's :day and, when OPENED, the week's channel; a key whose latest
 * contact was given back names none (0).
 */
export const GIVE_BACK = statement(
  `WITH chunk AS (
     UPDATE contact_chunks c SET contacts = c.contacts - cardinality(:ids::bigint[]),
       excluded = (SELECT array_agg(x ORDER BY x) FROM (SELECT unnest(c.excluded) UNION SELECT unnest(:ids::bigint[])) AS u(x))
     WHERE c.id = :record::bigint),
   slots AS (DELETE FROM contact_slots WHERE day = :day::date AND ${GIVEN('recipient')})
   UPDATE contact_keys k SET
     day_count = CASE WHEN k.day = :day::date THEN greatest(k.day_count - g.n, 0) ELSE k.day_count END,
     channels = CASE WHEN ${OPENED} THEN left(k.channels, -(length(:channel::text) + 1)) ELSE k.channels END,
     opened = k.opened AND NOT ${GIVEN('k.recipient')},
     recipient = CASE WHEN ${GIVEN('k.recipient')} THEN 0 ELSE k.recipient END
   FROM (SELECT ${KEY} AS key, count(*) AS n FROM recipients r WHERE ${GIVEN('r.id')} GROUP BY 1) AS g
   WHERE k.entity = :entity::text AND k.key = g.key`,
);

/**
 * The contacts of the chunks whose recipients retention deletes next (ids :first to :last of
 * a file ending at :hi), a row each in the ledger of rows (the form before migration 0020,
 * which needs no recipient): a contact outlives its file's recipients until its day is pruned.
 */
export const KEEP_CONTACTS = statement(
  `WITH kept AS (DELETE FROM contact_chunks WHERE hi BETWEEN :first::bigint AND :hi::bigint AND lo <= :last::bigint
     RETURNING *)
   INSERT INTO contact_ledger (day, recipient, entity, key, slot, week_slot, channel, at)
   SELECT c.day, r.id, c.entity, lower(r.number), coalesce(sl.slot, 1), coalesce(sl.week_slot, 1), c.channel, c.at
   FROM kept c JOIN recipients r ON r.id BETWEEN c.lo AND c.hi AND r.chunk_seq = c.seq
   LEFT JOIN contact_slots sl ON sl.day = c.day AND sl.recipient = r.id
   WHERE ${inRecord('r')}`,
);

/**
 * Contacts of days more than :keep_days before the local day go, and keys whose day and week
 * ended by then: how many (a record counts its contacts, an old ledger row one).
 */
export const PRUNE = statement(
  `WITH chunks AS (DELETE FROM contact_chunks WHERE day < ${DAY} - :keep_days::int RETURNING contacts),
   slots AS (DELETE FROM contact_slots WHERE day < ${DAY} - :keep_days::int),
   days AS (DELETE FROM contact_ledger WHERE day < ${DAY} - :keep_days::int RETURNING 1),
   keys AS (DELETE FROM contact_keys WHERE day < ${DAY} - :keep_days::int AND week + 6 < ${DAY} - :keep_days::int RETURNING 1)
   SELECT (SELECT coalesce(sum(contacts), 0) FROM chunks) + (SELECT count(*) FROM days) + (SELECT count(*) FROM keys) AS n`,
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

/** A page's filter: local days :from to :to (an entity's, or every one's). */
const PAGE =
  'c.day BETWEEN :from::date AND :to::date AND (:entity::text IS NULL OR c.entity = :entity::text)';
const AFTER = '(:after_day::date, :after_recipient::bigint)';
const CHECKS = 'LEFT JOIN files f ON f.file_no = c.file_no LEFT JOIN file_checks k ON k.file_id = f.file_id';

/**
 * The last record a page needs: the first, after the cursor's own chunk, by which the records'
 * contacts reach :limit (among the records holding one at least, :limit are enough to look
 * at; a start that took none, or gave every one back, holds none). None when fewer remain.
 */
const PAGE_END = `SELECT day, hi FROM (
     SELECT day, hi, id, sum(contacts) OVER (ORDER BY day, hi, id) AS upto FROM (
       SELECT day, hi, id, contacts FROM contact_chunks c
       WHERE ${PAGE} AND (c.day, c.hi) > ${AFTER} AND NOT (c.day = :after_day::date AND c.lo <= :after_recipient::bigint)
         AND c.contacts > 0
       ORDER BY day, hi, id LIMIT :limit::int) AS x) AS y
   WHERE upto >= :limit::int ORDER BY day, hi, id LIMIT 1`;

/**
 * A page of the chunks' contacts after the cursor (day, recipient), in the recipients' order
 * (day, then recipient: a record's id range, then its rows), with their slots, file and its
 * checks. A row's key is its number as the take read it. Only the records up to PAGE_END
 * are read and sorted: a page sorts about :limit rows, not every contact after the cursor.
 */
export const CONTACTS = statement(
  `WITH page_end AS (${PAGE_END})
   SELECT c.entity, c.day::text AS day, lower(r.number) AS key, coalesce(sl.slot, 1) AS slot,
     coalesce(sl.week_slot, 1) AS week_slot, c.channel, iso_time(c.at) AS at, r.id AS recipient,
     f.file_id, f.name AS file_name, f.source, k.account, k.send_window, k.lists
   FROM (SELECT *, hi >> 32 AS file_no FROM contact_chunks) c
   JOIN recipients r ON r.id BETWEEN c.lo AND c.hi AND r.chunk_seq = c.seq
   LEFT JOIN contact_slots sl ON sl.day = c.day AND sl.recipient = r.id
   ${CHECKS}
   WHERE ${PAGE} AND (c.day, c.hi) > ${AFTER} AND (c.day, r.id) > ${AFTER} AND ${inRecord('r')}
     AND (NOT EXISTS (SELECT 1 FROM page_end) OR (c.day, c.hi) <= (SELECT day, hi FROM page_end))
   ORDER BY c.day, c.hi, r.id LIMIT :limit::int`,
);

/** The same page of the contacts recorded one row each before migration 0020. */
export const OLD_CONTACTS = statement(
  `SELECT c.entity, c.day::text AS day, c.key, c.slot, c.week_slot, c.channel, iso_time(c.at) AS at, c.recipient,
     f.file_id, f.name AS file_name, f.source, k.account, k.send_window, k.lists
   FROM (SELECT *, recipient >> 32 AS file_no FROM contact_ledger) c
   ${CHECKS}
   WHERE ${PAGE} AND (c.day, c.recipient) > ${AFTER}
   ORDER BY c.day, c.recipient LIMIT :limit::int`,
);
