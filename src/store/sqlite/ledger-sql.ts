// The SQL of the SQLite store's contact ledger (docs/campaign-rules.md "Contact limit"), and
// nothing else: the rule is ../campaign-rules.ts, run by ./campaign.ts; the compliance rows
// are read by ./ledger.ts. Parameters: the chunk (:lo, :hi, :seq), the ledger's :entity,
// :channel, local :day and :week (its Monday) on the store's clock, and :now.

/** The chunk's rows still pending (the recipients table as `r`). */
const PENDING = `r.id BETWEEN :lo AND :hi AND r.chunk_seq = :seq AND r.outcome = 'pending'`;
/** The row's key in the ledger: its normalised number, or its address in lower case. */
const KEY = 'lower(r.number)';
/** The row took its contact of the day already (a chunk stopped and sent again). */
const HAS_CONTACT = 'EXISTS (SELECT 1 FROM contact_ledger c WHERE c.day = :day AND c.recipient = r.id)';
/** How many channels a `,sms,whatsapp,` list holds. */
const CHANNEL_COUNT = (list: string) => `(length(${list}) - length(replace(${list}, ',', '')) - 1)`;

/**
 * Each row takes a contact when its key's standing allows it (the rule in the upsert's
 * WHERE: an update the rule refuses leaves the row as it was); the contacts taken go to the
 * ledger by the migration's triggers (contact_taken). SQLite upserts row by row, in id
 * order: a key's second row sees its first's contact. Its writers take turns: no order of
 * keys is needed against another writer.
 */
export const TAKE_CONTACTS = `INSERT INTO contact_keys (entity, key, day, day_count, week, channels, at, channel, recipient)
  SELECT :entity, ${KEY}, :day, 1, :week, ',' || :channel || ',', :now, :channel, r.id
  FROM recipients r WHERE ${PENDING} AND NOT ${HAS_CONTACT}
  ORDER BY r.id
  ON CONFLICT (entity, key) DO UPDATE SET
    day_count = CASE WHEN day = excluded.day THEN day_count + 1 ELSE 1 END,
    channels = CASE WHEN week <> excluded.week THEN excluded.channels
                    WHEN instr(channels, excluded.channels) > 0 THEN channels
                    ELSE channels || substr(excluded.channels, 2) END,
    day = excluded.day, week = excluded.week, at = excluded.at, channel = excluded.channel,
    recipient = excluded.recipient
  WHERE (day <> excluded.day OR day_count < :per_day)
    AND (:weekly = 0 OR week <> excluded.week OR instr(channels, excluded.channels) > 0
         OR ${CHANNEL_COUNT('channels')} < :channels_per_week)`;

/** The chunk's rows still pending. */
export const PENDING_COUNT = `SELECT count(*) AS n FROM recipients r WHERE ${PENDING}`;

/**
 * Rows left without a contact of the day: `week` when the weekly rule refused them (their
 * channel is not among the week's and no channel slot is left), else `day`; with their key's
 * latest contact (this day's, or another channel's this week) and its channel.
 */
export const REFUSED = `SELECT r.id,
    CASE WHEN :weekly = 1 AND k.week = :week AND instr(k.channels, ',' || :channel || ',') = 0
              AND ${CHANNEL_COUNT('k.channels')} >= :channels_per_week THEN 'week' ELSE 'day' END AS rule,
    k.at, k.channel
  FROM recipients r LEFT JOIN contact_keys k ON k.entity = :entity AND k.key = ${KEY}
  WHERE ${PENDING} AND NOT ${HAS_CONTACT}
  ORDER BY r.id`;

/** These rows (:details, JSON [{id, detail}]) become contact_limit with their detail. */
export const HOLD_REFUSED = `UPDATE recipients SET outcome = 'contact_limit', code = :code, detail = d.detail, updated_at = :now
  FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.detail') AS detail FROM json_each(:details)) AS d
  WHERE recipients.id = d.id AND recipients.outcome = 'pending'`;

/** Contacts of days before :before go, and keys whose day and week both ended before it. */
export const PRUNE_DAYS = 'DELETE FROM contact_ledger WHERE day < :before';
export const PRUNE_KEYS = `DELETE FROM contact_keys WHERE day < :before AND date(week, '+6 days') < :before`;

/** What compliance prints beside a file's contacts: set fields replace, absent ones stay. */
export const RECORD_FILE_CHECKS = `INSERT INTO file_checks (file_id, account, channel, entity, send_window, lists)
  VALUES (:file_id, :account, :channel, :entity, :send_window, :lists)
  ON CONFLICT (file_id) DO UPDATE SET account = coalesce(excluded.account, account),
    channel = coalesce(excluded.channel, channel), entity = coalesce(excluded.entity, entity),
    send_window = coalesce(excluded.send_window, send_window), lists = coalesce(excluded.lists, lists)`;

/**
 * A page of contacts of local days :from to :to (an entity's, or every one's), after the
 * cursor (day, recipient) in that order (the primary key's), with their file and its checks.
 */
export const CONTACTS = `SELECT c.entity, c.day, c.key, c.slot, c.week_slot, c.channel, c.at, c.recipient,
    f.file_id, f.name AS file_name, f.source, k.account, k.send_window, k.lists
  FROM contact_ledger c
  LEFT JOIN files f ON f.file_no = c.recipient >> 32
  LEFT JOIN file_checks k ON k.file_id = f.file_id
  WHERE c.day BETWEEN :from AND :to AND (:entity IS NULL OR c.entity = :entity)
    AND (c.day, c.recipient) > (:after_day, :after_recipient)
  ORDER BY c.day, c.recipient LIMIT :limit`;
