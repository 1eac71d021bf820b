// The consent list seen by operators as the opt-out lists are (issue 35 follow-up): a reload
// that fails is counted and shown (describe(), /metrics' dropline_consent_list_*), the copy in
// use staying; a new content refused publishes on SUPPRESSION_LIST_CHANNEL, so that the
// `suppression-list-refused` alert names consent.list (JSON and Slack), and
// dropline_consent_list_refused says why. docs/opt-outs.md "Consent lists", docs/metrics.md,
// docs/alerts.md.
import diagnosticsChannel from 'node:diagnostics_channel';
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parse from 'parse-prometheus-text-format';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { DroplineError } from '../../src/errors.ts';
import { startAlerts } from '../../src/ops/alerts.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { ConsentList } from '../../src/pipeline/consent-list.ts';
import { SUPPRESSION_LIST_CHANNEL, type SuppressionListEvent } from '../../src/pipeline/suppression-lists.ts';
import type { Store } from '../../src/store/store.ts';
import { waitFor } from '../helpers/pipeline-harness.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-consent-ops-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const events: SuppressionListEvent[] = [];
const onEvent = (m: unknown) => events.push(m as SuppressionListEvent);
diagnosticsChannel.subscribe(SUPPRESSION_LIST_CHANNEL, onEvent);
afterAll(() => diagnosticsChannel.unsubscribe(SUPPRESSION_LIST_CHANNEL, onEvent));
afterEach(() => {
  events.length = 0;
});

/** Twenty Colombian mobiles that agreed to SMS. */
const TEXT = Array.from({ length: 20 }, (_, i) => `300${String(1_000_000 + i * 7919)};sms\n`).join('');

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => lines.push(JSON.parse(s)) });
  return { logger, lines };
}

/** One sample's value of a family in a scrape (undefined when absent). */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const family = parse(text).find((f) => f.name === name);
  const s = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return s?.value === undefined ? undefined : Number(s.value);
}

let n = 0;
async function listWith(content: string): Promise<string> {
  const path = join(dir, `consent-${++n}.txt`);
  await writeFile(path, content);
  return path;
}

const list = { list: 'consent.list' };

it('a reload that fails: counted, warned, the copy in use stays; /metrics says so, and when it is readable again', async () => {
  const path = await listWith(TEXT);
  const { logger, lines } = capture();
  const consent = new ConsentList(path, new Map(), [], logger);
  const metrics = createMetrics({
    gauges: async () => ({ files: {}, chunksInDoubt: 0 }),
  } as unknown as Store);
  const scrape = () => metrics.registry.metrics();
  try {
    // No consent list watched (none configured): no sample at all.
    expect(sample(await scrape(), 'dropline_consent_list_entries', list)).toBeUndefined();
    metrics.watchConsentList(() => consent.describe());
    let text = await scrape();
    expect(sample(text, 'dropline_consent_list_entries', list)).toBe(0);
    expect(sample(text, 'dropline_consent_list_loaded_timestamp_seconds', list)).toBeUndefined();
    await consent.start(3_600_000);
    text = await scrape();
    expect(sample(text, 'dropline_consent_list_entries', list)).toBe(20);
    const loaded = sample(text, 'dropline_consent_list_loaded_timestamp_seconds', list)!;
    expect(Math.abs(loaded * 1000 - Date.now())).toBeLessThan(10_000);
    expect(sample(text, 'dropline_consent_list_checked_timestamp_seconds', list)).toBeGreaterThanOrEqual(
      loaded,
    );
    expect(sample(text, 'dropline_consent_list_error', list)).toBe(0);
    expect(sample(text, 'dropline_consent_list_check_failures_total', list)).toBe(0);
    expect(sample(text, 'dropline_consent_list_refused', list)).toBe(0);

    await unlink(path);
    await consent.check();
    // A file still starts, with the copy in use.
    expect((await consent.forChannel('sms')).allows('573001000000')).toBe(true);
    expect(consent.describe()).toMatchObject({
      entries: 20,
      failures: 2,
      lastError: expect.stringContaining('ENOENT'),
    });
    text = await scrape();
    expect(sample(text, 'dropline_consent_list_error', list)).toBe(1);
    expect(sample(text, 'dropline_consent_list_check_failures_total', list)).toBe(2);
    expect(sample(text, 'dropline_consent_list_entries', list)).toBe(20);
    // The label is the key: never the location.
    expect(text).not.toContain(path);
    // Said once while the reason stays the same.
    expect(lines.filter((l) => l.level === 40)).toHaveLength(1);
    // The timer's check, then two files arriving while it runs: they wait for the next read
    // and share it (a file sees a change made during a check). Two reads, two failures, each
    // counted once however many callers share it.
    await Promise.all([consent.check(), consent.forChannel('sms'), consent.forChannel('sms')]);
    expect(consent.describe().failures).toBe(4);

    await writeFile(path, `${TEXT}3109876543;sms\n`);
    await consent.check();
    text = await scrape();
    expect(sample(text, 'dropline_consent_list_error', list)).toBe(0);
    expect(sample(text, 'dropline_consent_list_check_failures_total', list)).toBe(4);
    expect(sample(text, 'dropline_consent_list_entries', list)).toBe(21);
    expect(lines.some((l) => l.msg === 'consent.list: readable again')).toBe(true);
  } finally {
    metrics.close();
    consent.stop();
  }
});

it('a refused content: the files wait, the suppression-list-refused alert names consent.list, dropline_consent_list_refused says why', async () => {
  const got: { path: string; body: string }[] = [];
  const hook = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      got.push({ path: req.url ?? '', body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}`;
  const alerts = startAlerts({
    alerts: [
      { url: `${url}/json`, events: ['suppression-list-refused'], format: 'json', sourceDownAfterMs: 0 },
      { url: `${url}/slack`, events: ['suppression-list-refused'], format: 'slack', sourceDownAfterMs: 0 },
    ],
    secrets: [null, null],
    store: {} as Store,
    logger: capture().logger,
  });
  const metrics = createMetrics({} as Store);
  const path = await listWith(TEXT);
  const { logger, lines } = capture();
  const consent = new ConsentList(path, new Map(), [], logger);
  metrics.watchConsentList(() => consent.describe());
  const refused = () => metrics.registry.getSingleMetricAsString('dropline_consent_list_refused');
  try {
    await consent.start(3_600_000);
    // A truncated upload: its first two entries of twenty.
    await writeFile(path, TEXT.split('\n').slice(0, 2).join('\n'));
    const err = await consent.forChannel('sms').then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DroplineError);
    expect((err as DroplineError).code).toBe('DROPLINE_ERR_CONSENT_LIST_REFUSED');
    // Asked again (the next file, the timer): still refused, said once.
    await consent.check();
    expect(consent.describe()).toMatchObject({ entries: 20, failures: 0, refused: { reason: 'shrank' } });
    expect(await refused()).toContain('dropline_consent_list_refused{list="consent.list",reason="shrank"} 1');
    expect(lines.filter((l) => l.level === 50)).toHaveLength(1);
    expect(events).toEqual([
      expect.objectContaining({
        kind: 'consent',
        refused: true,
        names: ['consent.list'],
        location: path,
        reason: 'shrank',
      }),
    ]);
    await waitFor('both alerts', () => got.length >= 2);
    expect(JSON.parse(got.find((g) => g.path === '/json')!.body)).toMatchObject({
      event: 'suppression-list-refused',
      list: { kind: 'consent', names: ['consent.list'], location: path, reason: 'shrank' },
    });
    expect(JSON.parse(got.find((g) => g.path === '/slack')!.body).text).toMatch(
      /^dropline: consent list consent\.list \(.*\) refused \(shrank\): it holds 2 entries .*its files wait$/,
    );
    // Put right: taken again, the files go on, and that is said.
    await writeFile(path, TEXT);
    expect((await consent.forChannel('sms')).allows('573001000000')).toBe(true);
    expect(consent.describe().refused).toBeNull();
    expect(await refused()).toContain('dropline_consent_list_refused{list="consent.list"} 0');
    expect(events.at(-1)).toMatchObject({ kind: 'consent', refused: false });
  } finally {
    consent.stop();
    await alerts.close();
    metrics.close();
    await new Promise((r) => hook.close(r));
  }
  expect(got.map((g) => g.path).sort()).toEqual(['/json', '/slack']);
});

it('a list refused on its very first read does not stop the start (reports and replies go on being received): the files wait until it is put right', async () => {
  const path = await listWith('not;a;consent;list\nnor this\n');
  const { logger, lines } = capture();
  const consent = new ConsentList(path, new Map(), [], logger);
  try {
    await consent.start(3_600_000);
    expect(consent.describe().refused).toMatchObject({ reason: 'unparseable' });
    expect(lines.filter((l) => l.level === 50).map((l) => l.msg)).toEqual([
      expect.stringContaining('consent.list: refused'),
    ]);
    expect(events).toEqual([
      expect.objectContaining({ kind: 'consent', refused: true, reason: 'unparseable' }),
    ]);
    const err = await consent.forChannel('sms').then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as DroplineError).code).toBe('DROPLINE_ERR_CONSENT_LIST_REFUSED');
    expect((err as DroplineError).message).toContain('no copy of it was read before');
    await writeFile(path, TEXT);
    expect((await consent.forChannel('sms')).allows('573001000000')).toBe(true);
  } finally {
    consent.stop();
  }
});
