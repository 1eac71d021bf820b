// The SQL of the SQLite store's contact ledger (docs/campaign-rules.md "Contact limit"), and
// nothing else: the rule is ../campaign-rules.ts, run by ./campaign.ts; the compliance rows
// are read by ./ledger.ts. Parameters: the chunk (:lo, :hi, :seq), the ledger's :entity,
// :channel, local :day and :week (its Monday) on the store's clock, the same as days since
// 1970-01-01 (:day_no, :week_no: contact_keys' columns), and :now. A chunk's
// contacts are one record of the chunk (contact_chunks, migration 0027), its slots past the
// first a row each (contact_slots); contact_ledger holds the contacts recorded before 0027.
import { untakenSql } from '../shared-sql.ts';

/** The chunk's rows still pending (the recipients table as `r`). */
const PENDING = `r.id BETWEEN :lo AND :hi AND r.chunk_seq = :seq AND r.outcome = 'pending'`;
/**
 * The row's key in the ledger: its normalised number, or its address in lower case. Written
 * as text; contact_keys.key keeps a number as the integer it spells (its INTEGER affinity,
 * migration 0030), and converts this text the same way when it is compared with it.
 */
const KEY = 'lower(r.number)';
/** A record of the chunk's contacts `c` holds the row whose id is `id`. */
const inRecord = (id: string) =>
  `(c.excluded IS NULL OR ${id} NOT IN (SELECT value FROM json_each(c.excluded)))`;
const IN_RECORD = inRecord('r.id');
/**
 * The row took its contact of the day already (a chunk stopped and sent again): a record of
 * its chunk that day holds it, or (contacts taken before migration 0027) the old ledger
 * does. Each table is looked into row by row only when it has anything of the chunk's day
 * (a scalar subquery without correlation runs once a statement).
 */
const hasContact = (r: string) => `((SELECT 1 FROM contact_chunks WHERE day = :day AND hi = :hi) IS NOT NULL
    AND EXISTS (SELECT 1 FROM contact_chunks c WHERE c.day = :day AND c.hi = :hi AND ${inRecord(`${r}.id`)})
  OR (SELECT 1 FROM contact_ledger WHERE day = :day) IS NOT NULL
    AND EXISTS (SELECT 1 FROM contact_ledger c WHERE c.day = :day AND c.recipient = ${r}.id))`;
const HAS_CONTACT = hasContact('r');
/**
 * Row `r` took its contact in this transaction, before its chunk's record is written: its
 * key's (`k`) latest contact of the day is a row of the chunk from `r` on that no record
 * holds yet. A key's rows take in id order until one is refused, and a refused one leaves
 * the key as it was, so the rows that took are those up to its latest contact.
 */
const TOOK = `coalesce(k.day = :day_no AND k.recipient BETWEEN r.id AND :hi AND EXISTS (SELECT 1 FROM recipients t
    WHERE t.id = k.recipient AND t.chunk_seq = :seq AND t.outcome = 'pending' AND NOT ${hasContact('t')}), 0)`;
/** How many channels a `,sms,whatsapp,` list holds. */
const CHANNEL_COUNT = (list: string) => `(length(${list}) - length(replace(${list}, ',', '')) - 1)`;

/**
 * Each row takes a contact when its key's standing allows it (the rule in the upsert's
 * WHERE: an update the rule refuses leaves the row as it was); a slot past the first goes to
 * contact_slots by the migration's trigger (contact_slot), and RECORD_CONTACTS records the
 * chunk's contacts once they are all taken. SQLite upserts row by row, in id order: a key's
 * second row sees its first's contact. Its writers take turns: no order of keys is needed
 * against another writer.
 */
export const TAKE_CONTACTS = `INSERT INTO contact_keys (entity, key, day, day_count, week, channels, channel, recipient, opened)
  SELECT :entity, ${KEY}, :day_no, 1, :week_no, ',' || :channel || ',', :channel, r.id, 1
  FROM recipients r WHERE ${PENDING} AND NOT ${HAS_CONTACT}
  ORDER BY r.id
  ON CONFLICT (entity, key) DO UPDATE SET
    day_count = CASE WHEN day = excluded.day THEN day_count + 1 ELSE 1 END,
    channels = CASE WHEN week <> excluded.week THEN excluded.channels
                    WHEN instr(channels, excluded.channels) > 0 THEN channels
                    ELSE channels || substr(excluded.channels, 2) END,
    opened = week <> excluded.week OR instr(channels, excluded.channels) = 0,
    day = excluded.day, week = excluded.week, channel = excluded.channel, recipient = excluded.recipient
  WHERE (day <> excluded.day OR day_count < :per_day)
    AND (:weekly = 0 OR week <> excluded.week OR instr(channels, excluded.channels) > 0
         OR ${CHANNEL_COUNT('channels')} < :channels_per_week)`;

/** The chunk's rows still pending. */
export const PENDING_COUNT = `SELECT count(*) AS n FROM recipients r WHERE ${PENDING}`;

/**
 * When the key's (`k`) latest contact was taken: the time of the record holding its
 * recipient that day, or of its row in the old ledger (contacts before migration 0027).
 */
const LATEST_AT = `coalesce(
    (SELECT c.at FROM contact_chunks c WHERE c.day = date(k.day * 86400, 'unixepoch') AND c.hi >= k.recipient
       AND c.lo <= k.recipient AND ${inRecord('k.recipient')} ORDER BY c.hi LIMIT 1),
    (SELECT c.at FROM contact_ledger c WHERE c.day = date(k.day * 86400, 'unixepoch') AND c.recipient = k.recipient))`;

/**
 * Rows left without a contact of the day (none before, none taken now): `week` when the
 * weekly rule refused them (their channel is not among the week's and no channel slot is
 * left), else `day`; with their key's latest contact (this day's, or another channel's this
 * week) and its channel.
 */
export const REFUSED = `SELECT r.id,
    CASE WHEN :weekly = 1 AND k.week = :week_no AND instr(k.channels, ',' || :channel || ',') = 0
              AND ${CHANNEL_COUNT('k.channels')} >= :channels_per_week THEN 'week' ELSE 'day' END AS rule,
    ${LATEST_AT} AS at, k.channel
  FROM recipients r LEFT JOIN contact_keys k ON k.entity = :entity AND k.key = ${KEY}
  WHERE ${PENDING} AND NOT ${HAS_CONTACT} AND NOT ${TOOK}
  ORDER BY r.id`;

/** These rows (:details, JSON [{id, detail}]) become contact_limit with their detail. */
export const HOLD_REFUSED = `UPDATE recipients SET outcome = 'contact_limit', code = :code, detail = d.detail, updated_at = :now
  FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.detail') AS detail FROM json_each(:details)) AS d
  WHERE recipients.id = d.id AND recipients.outcome = 'pending'`;

/**
 * The chunk's contacts just taken (:taken of them), recorded once: its rows but those not
 * pending now (held back, or not pending when it began) and those an earlier record of the
 * day holds.
 */
export const RECORD_CONTACTS = `INSERT INTO contact_chunks (day, hi, lo, seq, entity, channel, at, contacts, excluded)
  SELECT :day, :hi, :lo, :seq, :entity, :channel, :now, :taken, CASE WHEN count(*) > 0 THEN json_group_array(r.id) END
  FROM recipients r WHERE r.id BETWEEN :lo AND :hi AND r.chunk_seq = :seq
    AND (r.outcome <> 'pending' OR ${HAS_CONTACT})`;

/**
 * The record the chunk's (:hi) latest start wrote: made at :started_at, the very time the
 * chunk went inflight (a start under the limit writes one even when it took no contact; none
 * without the limit). Equal, not later: a clock stepped back never picks an earlier start's;
 * the latest of two made at the same time (a clock too coarse, or a test's).
 */
export const LATEST_RECORD = `SELECT id, day, entity, channel FROM contact_chunks
  WHERE hi = :hi AND at = :started_at ORDER BY id DESC LIMIT 1`;

/** The contacts of record :record the service never took (their chunk's result just recorded, its state :state). */
export const UNTAKEN = `SELECT r.id FROM contact_chunks c
  JOIN recipients r ON r.id BETWEEN c.lo AND c.hi AND r.chunk_seq = c.seq
  WHERE c.id = :record AND ${IN_RECORD} AND ${untakenSql((name) => `:${name}`)}`;

/** Record :record no longer holds rows :ids (a JSON array). */
export const GIVE_BACK_RECORD = `UPDATE contact_chunks SET contacts = contacts - json_array_length(:ids),
    excluded = (SELECT json_group_array(value) FROM (
      SELECT value FROM json_each(coalesce(excluded, '[]')) UNION SELECT value FROM json_each(:ids)))
  WHERE id = :record`;
export const GIVE_BACK_SLOTS =
  'DELETE FROM contact_slots WHERE day = :day AND recipient IN (SELECT value FROM json_each(:ids))';

const GIVEN = (column: string) => `${column} IN (SELECT value FROM json_each(:ids))`;
/**
 * The key's (`k`) latest contact, given back, added its channel (:channel, the week's latest)
 * to the week's list: no other contact of the week used that channel.
 */
const OPENED = `(k.week = :week_no AND k.opened AND ${GIVEN('k.recipient')}
  AND substr(k.channels, -length(:channel) - 2) = ',' || :channel || ',')`;

/**
 * The keys of rows :ids give back their contacts of the record's day (:day_no) and, when
 * OPENED, the week's channel; a key whose latest contact was given back names none (0).
 */
export const GIVE_BACK_KEYS = `UPDATE contact_keys AS k SET
    day_count = CASE WHEN k.day = :day_no THEN max(k.day_count - g.n, 0) ELSE k.day_count END,
    channels = CASE WHEN ${OPENED} THEN substr(k.channels, 1, length(k.channels) - length(:channel) - 1)
                    ELSE k.channels END,
    opened = k.opened AND NOT ${GIVEN('k.recipient')},
    recipient = CASE WHEN ${GIVEN('k.recipient')} THEN 0 ELSE k.recipient END
  FROM (SELECT ${KEY} AS key, count(*) AS n FROM recipients r WHERE ${GIVEN('r.id')} GROUP BY 1) AS g
  WHERE k.entity = :entity AND k.key = g.key`;

/** The rows a prune step deletes next (ids :lo to :hi, :max_rows of them): the first and last. */
export const PRUNE_BATCH = `SELECT min(id) AS first, max(id) AS last
  FROM (SELECT id FROM recipients WHERE id BETWEEN :lo AND :hi LIMIT :max_rows)`;

/** The records of chunks of ids :first to :last (a file ending at :hi) that KEEP_CONTACTS rewrote. */
const KEPT = 'c.hi BETWEEN :first AND :hi AND c.lo <= :last';

/**
 * The contacts of the chunks whose recipients retention deletes next, a row each in the
 * ledger of rows (the form before migration 0027, which needs no recipient): a contact
 * outlives its file's recipients until its day is pruned.
 */
export const KEEP_CONTACTS = `INSERT INTO contact_ledger (day, recipient, entity, key, slot, week_slot, channel, at)
  SELECT c.day, r.id, c.entity, lower(r.number), coalesce(s.slot, 1), coalesce(s.week_slot, 1), c.channel, c.at
  FROM contact_chunks c
  CROSS JOIN recipients r ON r.id BETWEEN c.lo AND c.hi AND +r.chunk_seq = c.seq
  LEFT JOIN contact_slots s ON s.day = c.day AND s.recipient = r.id
  WHERE ${KEPT} AND ${IN_RECORD}`;
export const DROP_KEPT = `DELETE FROM contact_chunks AS c WHERE ${KEPT}`;

/** Contacts of days before :before go (how many: the records' counts), and keys whose day and week both ended before it. */
export const PRUNE_CHUNKS = 'DELETE FROM contact_chunks WHERE day < :before RETURNING contacts';
export const PRUNE_SLOTS = 'DELETE FROM contact_slots WHERE day < :before';
export const PRUNE_DAYS = 'DELETE FROM contact_ledger WHERE day < :before';
export const PRUNE_KEYS = 'DELETE FROM contact_keys WHERE day < :before_no AND week + 6 < :before_no';

/** What compliance prints beside a file's contacts: set fields replace, absent ones stay. */
export const RECORD_FILE_CHECKS = `INSERT INTO file_checks (file_id, account, channel, entity, send_window, lists)
  VALUES (:file_id, :account, :channel, :entity, :send_window, :lists)
  ON CONFLICT (file_id) DO UPDATE SET account = coalesce(excluded.account, account),
    channel = coalesce(excluded.channel, channel), entity = coalesce(excluded.entity, entity),
    send_window = coalesce(excluded.send_window, send_window), lists = coalesce(excluded.lists, lists)`;

/** A page's filter: local days :from to :to (an entity's, or every one's), after the cursor (day, recipient). */
const PAGE = `c.day BETWEEN :from AND :to AND (:entity IS NULL OR c.entity = :entity)`;
const AFTER = '(:after_day, :after_recipient)';
const CHECKS = `LEFT JOIN files f ON f.file_no = c.file_no LEFT JOIN file_checks k ON k.file_id = f.file_id`;

/**
 * A page of the chunks' contacts, in the recipients' order (day, then recipient: a record's
 * id range, then its rows), with their slots, file and its checks. A row's key is its
 * number as the take read it. The records drive the join (CROSS JOIN), each reading its
 * rows by their id range (+: never an index of chunk_seq built for the query).
 */
export const CONTACTS = `SELECT c.entity, c.day, lower(r.number) AS key, coalesce(s.slot, 1) AS slot,
    coalesce(s.week_slot, 1) AS week_slot, c.channel, c.at, r.id AS recipient,
    f.file_id, f.name AS file_name, f.source, k.account, k.send_window, k.lists
  FROM (SELECT *, hi >> 32 AS file_no FROM contact_chunks) c
  CROSS JOIN recipients r ON r.id BETWEEN c.lo AND c.hi AND +r.chunk_seq = c.seq
  LEFT JOIN contact_slots s ON s.day = c.day AND s.recipient = r.id
  ${CHECKS}
  WHERE ${PAGE} AND (c.day, c.hi) > ${AFTER} AND (c.day, r.id) > ${AFTER} AND ${IN_RECORD}
  ORDER BY c.day, c.hi, r.id LIMIT :limit`;

/** The same page of the contacts recorded one row each before migration 0027. */
export const OLD_CONTACTS = `SELECT c.entity, c.day, c.key, c.slot, c.week_slot, c.channel, c.at, c.recipient,
    f.file_id, f.name AS file_name, f.source, k.account, k.send_window, k.lists
  FROM (SELECT *, recipient >> 32 AS file_no FROM contact_ledger) c
  ${CHECKS}
  WHERE ${PAGE} AND (c.day, c.recipient) > ${AFTER}
  ORDER BY c.day, c.recipient LIMIT :limit`;
