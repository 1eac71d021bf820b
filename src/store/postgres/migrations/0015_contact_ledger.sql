-- One contact ledger per entity (issue 35, docs/campaign-rules.md "Contact limit"): the
-- per-account slots of `contacts` become an entity's (a company: every account and channel
-- it sends with), keyed by the normalised number or the address in lower case, with the
-- channels a key was contacted by in the week (Monday to Sunday).

-- Where a key stands: its contacts on its latest local day, the channels of its latest week
-- (`,sms,whatsapp,`), and its latest contact. One row a key, updated in place by an upsert
-- whose condition is the rule: two workers taking the last contact of one key at once, the
-- second waits for the first's row lock and finds the rule no longer allows it; a contact
-- costs one look-up of one row whatever the ledger's length.
CREATE TABLE contact_keys (
  entity    text NOT NULL,
  key       text NOT NULL,
  day       date NOT NULL,
  day_count integer NOT NULL,
  week      date NOT NULL,
  channels  text NOT NULL,
  at        timestamptz NOT NULL,
  channel   text NOT NULL,
  recipient bigint NOT NULL,
  PRIMARY KEY (entity, key)
);

-- Every contact made (a slot taken just before its chunk was sent), what `dropline
-- compliance` prints: by local day and recipient (its row id, whose upper bits are its file's
-- number), so that a recipient finds the contact it took already (a chunk stopped and sent
-- later takes no second one) and rows are written near the end of the index.
CREATE TABLE contact_ledger (
  day       date NOT NULL,
  recipient bigint NOT NULL,
  entity    text NOT NULL,
  key       text NOT NULL,
  slot      smallint NOT NULL,
  week_slot smallint,
  channel   text NOT NULL,
  at        timestamptz NOT NULL,
  PRIMARY KEY (day, recipient)
);

-- What `dropline compliance` prints beside a file's contacts and the store alone knows: the
-- file's account, channel and entity and the send window in force when it was sent, and the
-- sha256 of the suppression and consent lists it was read against.
CREATE TABLE file_checks (
  file_id     text PRIMARY KEY,
  account     text,
  channel     text,
  entity      text,
  send_window text,
  lists       jsonb
);

-- The per-account slots carried over under the default entity (a number an account reached
-- today stays reached); their time is unknown: the start of their day in Bogotá.
INSERT INTO contact_ledger (day, recipient, entity, key, slot, channel, at)
  SELECT day, recipient, 'default', number, slot, 'sms', (day::timestamp AT TIME ZONE 'America/Bogota')
  FROM contacts ON CONFLICT DO NOTHING;
INSERT INTO contact_keys (entity, key, day, day_count, week, channels, at, channel, recipient)
  SELECT 'default', number, day, count(*), date_trunc('week', day::timestamp)::date, ',sms,',
         (day::timestamp AT TIME ZONE 'America/Bogota'), 'sms', max(recipient)
  FROM contacts WHERE day = (SELECT max(day) FROM contacts) GROUP BY number, day;
DROP TABLE contacts;
