// Issue 35 (docs/campaign-rules.md "Size and speed"): the contact ledger's statements timed
// chunk by chunk on a copy of a store a 1M send wrote, one variant of the ledger's writes a
// run (VARIANT), to choose the design before building it. Not part of bench/run.ts.
//   node bench/ledger-micro.ts <sent state.db> <scratch dir>
import { copyFileSync, existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

const [src, dir] = process.argv.slice(2) as [string, string];
const base = join(dir, 'micro-base.db');
const path = join(dir, 'micro.db');
const variant = process.env.VARIANT ?? 'old';
if (!existsSync(base)) {
  const s = new DatabaseSync(src);
  s.exec(`VACUUM INTO '${base}'`);
  s.close();
  const b = new DatabaseSync(base);
  b.exec(
    `UPDATE recipients SET outcome = 'pending'; DELETE FROM contact_ledger; DELETE FROM contact_keys; VACUUM;`,
  );
  b.close();
}
for (const s of ['', '-wal', '-shm']) rmSync(path + s, { force: true });
copyFileSync(base, path);
const db = new DatabaseSync(path);
db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0;');
const PENDING = `r.id BETWEEN :lo AND :hi AND r.chunk_seq = :seq AND r.outcome = 'pending'`;
const HAS_OLD = 'EXISTS (SELECT 1 FROM contact_ledger c WHERE c.day = :day AND c.recipient = r.id)';
const HAS_NEW = `EXISTS (SELECT 1 FROM contact_chunks c WHERE c.day = :day AND c.hi = :hi
   AND (c.excluded IS NULL OR r.id NOT IN (SELECT value FROM json_each(c.excluded))))`;
const HAS = variant === 'old' ? HAS_OLD : HAS_NEW;
if (variant !== 'old') {
  db.exec(`DROP TRIGGER contact_taken; DROP TRIGGER contact_taken_again;
    CREATE TABLE contact_chunks (day TEXT NOT NULL, hi INTEGER NOT NULL, lo INTEGER NOT NULL, seq INTEGER NOT NULL,
      entity TEXT NOT NULL, channel TEXT NOT NULL, at TEXT NOT NULL, contacts INTEGER NOT NULL, excluded TEXT,
      PRIMARY KEY (day, hi, at)) WITHOUT ROWID;
    CREATE TABLE contact_slots (day TEXT NOT NULL, recipient INTEGER NOT NULL, slot INTEGER NOT NULL, week_slot INTEGER NOT NULL,
      PRIMARY KEY (day, recipient)) WITHOUT ROWID;`);
  if (variant !== 'none')
    db.exec(`CREATE TRIGGER contact_slot AFTER UPDATE ON contact_keys
      WHEN NEW.day_count > 1 OR instr(NEW.channels, ',' || NEW.channel || ',') > 1 BEGIN
      INSERT INTO contact_slots VALUES (NEW.day, NEW.recipient, NEW.day_count, 2);
    END;`);
}
const slim = process.env.SLIM === '1';
if (slim)
  db.exec(`DROP TABLE contact_keys; CREATE TABLE contact_keys (entity TEXT NOT NULL, key TEXT NOT NULL,
    day INTEGER NOT NULL, day_count INTEGER NOT NULL, week INTEGER NOT NULL, channels TEXT NOT NULL,
    channel TEXT NOT NULL, recipient INTEGER NOT NULL, PRIMARY KEY (entity, key)) WITHOUT ROWID;`);
const CC = (list: string) => `(length(${list}) - length(replace(${list}, ',', '')) - 1)`;
const TAKE_FAT = `INSERT INTO contact_keys (entity, key, day, day_count, week, channels, at, channel, recipient)
  SELECT :entity, lower(r.number), :day, 1, :week, ',' || :channel || ',', :now, :channel, r.id
  FROM recipients r WHERE ${PENDING} AND NOT ${HAS}
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
         OR ${CC('channels')} < :channels_per_week)`;
const TAKE = slim
  ? TAKE_FAT.replace('channel, recipient)', 'channel, recipient)'.replace('', ''))
      .replace(
        '(entity, key, day, day_count, week, channels, at, channel, recipient)',
        '(entity, key, day, day_count, week, channels, channel, recipient)',
      )
      .replace(
        ":day, 1, :week, ',' || :channel || ',', :now, :channel, r.id",
        ":day_no, 1, :week_no, ',' || :channel || ',', :channel, r.id",
      )
      .replace('at = excluded.at, ', '')
  : TAKE_FAT;
const RECORD_REF = `INSERT INTO contact_chunks (day, hi, lo, seq, entity, channel, at, contacts, excluded)
  SELECT :day, :hi, :lo, :seq, :entity, :channel, :now, :taken, CASE WHEN count(*) > 0 THEN json_group_array(r.id) END
  FROM recipients r WHERE r.id BETWEEN :lo AND :hi AND r.chunk_seq = :seq AND (r.outcome <> 'pending' OR ${HAS_NEW})`;
const RECORD_KEYS = `INSERT INTO contact_chunks (day, hi, lo, seq, entity, channel, at, contacts, excluded)
  SELECT :day, :hi, :lo, :seq, :entity, :channel, :now, :taken, json_group_array(json_array(r.id - :lo, lower(r.number)))
  FROM recipients r WHERE ${PENDING} AND NOT ${HAS_NEW}`;
const record = variant === 'ref' ? RECORD_REF : variant === 'keys' ? RECORD_KEYS : null;
const names = (sql: string) => [
  ...new Set(Array.from(sql.matchAll(/(?<![:\w]):([a-z_][a-z0-9_]*)/g), (m) => m[1]!)),
];
const pick = (sql: string, all: Record<string, unknown>) =>
  Object.fromEntries(names(sql).map((n) => [n, all[n]])) as Record<string, string | number>;
db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
const spans = db.prepare('SELECT seq, first_id AS lo, last_id AS hi FROM chunk_spans ORDER BY seq').all();
const take = db.prepare(TAKE);
const rec = record ? db.prepare(record) : null;
const count = db.prepare(`SELECT count(*) AS n FROM recipients r WHERE ${PENDING}`);
const sent = db.prepare(`UPDATE recipients SET outcome = 'sent' WHERE id BETWEEN ? AND ?`);
const fixed = {
  entity: 'default',
  channel: 'sms',
  day: '2026-11-28',
  week: '2026-11-23',
  per_day: 1,
  day_no: 20785,
  week_no: 20780,
};
let tTake = 0;
let tRecord = 0;
let tRest = 0;
let taken = 0;
const t0 = performance.now();
for (const s of spans) {
  const all: Record<string, unknown> = {
    ...fixed,
    ...s,
    weekly: 1,
    channels_per_week: 1,
    now: new Date().toISOString(),
  };
  db.exec('BEGIN IMMEDIATE');
  let t = performance.now();
  const n = Number(take.run(pick(TAKE, all)).changes);
  taken += n;
  tTake += performance.now() - t;
  t = performance.now();
  count.get(pick(`:lo :hi :seq`, all));
  if (rec && n > 0) rec.run(pick(record!, { ...all, taken: n }));
  tRecord += performance.now() - t;
  t = performance.now();
  sent.run(s.lo as number, s.hi as number);
  db.exec('COMMIT');
  tRest += performance.now() - t;
}
const total = performance.now() - t0;
const wal = statSync(`${path}-wal`).size;
const f = (x: number) => (x / 1000).toFixed(2);
console.log(
  `${variant}${slim ? ' slim' : ''}: total ${f(total)} s, take ${f(tTake)} s, count+record ${f(tRecord)} s, sent+commit ${f(tRest)} s, taken ${taken}, WAL ${(wal / 2 ** 20).toFixed(0)} MiB, load ${(await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`,
);
db.close();
