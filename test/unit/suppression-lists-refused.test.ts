// An opt-out list replaced by content that is not a list (issue 32 item 11): a gzip copy,
// UTF-16 without its BOM, a truncated upload. Refused, never used as an empty list: the
// files of the sources it applies to wait (forSource throws DROPLINE_ERR_SUPPRESSION_LIST_REFUSED),
// the copy read before stays the copy in use, an error line, describe() (the metric) and an
// event on SUPPRESSION_LIST_CHANNEL (the alert) say why. docs/opt-outs.md, "Refused lists".
import diagnosticsChannel from 'node:diagnostics_channel';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DroplineError } from '../../src/errors.ts';
import { silentLogger } from '../../src/log.ts';
import { startAlerts } from '../../src/ops/alerts.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import {
  SUPPRESSION_LIST_CHANNEL,
  type SuppressionListEvent,
  SuppressionLists,
} from '../../src/pipeline/suppression-lists.ts';
import type { Store } from '../../src/store/store.ts';
import { waitFor } from '../helpers/pipeline-harness.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-refused-'));
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

/** Twenty opted-out Colombian mobiles, as a campaign team's export writes them. */
const NUMBERS = Array.from({ length: 20 }, (_, i) => `300${String(1_000_000 + i * 7919).padStart(7, '0')}`);
const TEXT = `${NUMBERS.join('\n')}\n`;
const sent = (n: string) => `57${n}`;

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => lines.push(JSON.parse(s)) });
  return { logger, lines };
}

let n = 0;
async function listWith(content: string | Uint8Array): Promise<string> {
  const path = join(dir, `list-${++n}.txt`);
  await writeFile(path, content);
  return path;
}

/** What forSource threw (undefined: it returned a list). */
async function refusal(l: SuppressionLists): Promise<DroplineError | undefined> {
  try {
    await l.forSource('partner');
    return undefined;
  } catch (err) {
    return err as DroplineError;
  }
}

const BAD: [string, Uint8Array | string][] = [
  ['a gzip copy', gzipSync(TEXT)],
  ['UTF-16 without its BOM', Buffer.from(TEXT, 'utf16le')],
  ['a truncated upload (its first two lines)', TEXT.slice(0, 23)],
];

describe('a reloaded list that is not a list any more', () => {
  it.each(BAD)(
    '%s: refused, files wait, the copy read before stays, an error, a metric and an alert say why',
    async (_what, bad) => {
      const path = await listWith(TEXT);
      const { logger, lines } = capture();
      const l = new SuppressionLists({ global: path, sources: new Map(), logger, checkEveryMs: 3_600_000 });
      await l.start();
      try {
        expect((await l.forSource('partner'))?.has(sent(NUMBERS[0]!))).toBe(true);
        await writeFile(path, bad);
        const err = await refusal(l);
        expect(err).toBeInstanceOf(DroplineError);
        expect(err?.code).toBe('DROPLINE_ERR_SUPPRESSION_LIST_REFUSED');
        expect(err?.message).toContain(`suppressionList (${path})`);
        // Asked again (the next file, the timer): still refused, said once.
        expect((await refusal(l))?.code).toBe('DROPLINE_ERR_SUPPRESSION_LIST_REFUSED');
        await l.checkAll();
        const [info] = l.describe();
        expect(info?.numbers).toBe(20);
        expect(info?.refused).not.toBeNull();
        expect(info?.refused?.reason).toMatch(/^(unparseable|shrank)$/);
        const said = lines.filter((x) => x.level === 50);
        expect(said).toHaveLength(1);
        expect(String(said[0]?.msg)).toContain('refused');
        expect(events).toHaveLength(1);
        expect(events[0]).toMatchObject({ refused: true, names: ['suppressionList'], location: path });
        // Put right: taken, files go on, and that is said too.
        await writeFile(path, `${TEXT}3109876543\n`);
        const back = await l.forSource('partner');
        expect(back?.has('573109876543')).toBe(true);
        expect(l.describe()[0]?.refused).toBeNull();
        expect(events.at(-1)).toMatchObject({ refused: false });
      } finally {
        await l.stop();
      }
    },
  );

  it('a list that grows, keeps its size, or shrinks by less than half is taken as before', async () => {
    const path = await listWith(TEXT);
    const l = new SuppressionLists({ global: path, sources: new Map(), logger: capture().logger });
    await l.start();
    try {
      await writeFile(path, `${NUMBERS.slice(0, 10).join('\n')}\n# a comment\nnúmero\n`);
      expect((await l.forSource('partner'))?.size).toBe(10);
      expect(events).toHaveLength(0);
    } finally {
      await l.stop();
    }
  });
});

describe('at start, when there is no copy read before', () => {
  it('a list whose lines mostly are no number: the start goes on, files wait until it is put right', async () => {
    const path = await listWith(gzipSync(TEXT));
    const { logger, lines } = capture();
    const l = new SuppressionLists({ global: path, sources: new Map(), logger, checkEveryMs: 3_600_000 });
    await l.start();
    try {
      expect((await refusal(l))?.code).toBe('DROPLINE_ERR_SUPPRESSION_LIST_REFUSED');
      expect(l.describe()[0]).toMatchObject({
        numbers: 0,
        loadedAt: null,
        refused: { reason: 'unparseable' },
      });
      expect(lines.filter((x) => x.level === 50)).toHaveLength(1);
      expect(events).toHaveLength(1);
      await writeFile(path, TEXT);
      expect((await l.forSource('partner'))?.has(sent(NUMBERS[19]!))).toBe(true);
    } finally {
      await l.stop();
    }
  });

  it('an empty list, or one with a header line and a few numbers, is taken', async () => {
    for (const content of ['', 'telefono\n3001234567\n']) {
      const path = await listWith(content);
      const l = new SuppressionLists({ global: path, sources: new Map(), logger: capture().logger });
      await l.start();
      try {
        expect((await l.forSource('partner'))?.size).toBe(content === '' ? 0 : 1);
      } finally {
        await l.stop();
      }
    }
    expect(events).toHaveLength(0);
  });
});

describe('what operators see', () => {
  it('the suppression-list-refused alert (JSON and Slack) and dropline_suppression_list_refused', async () => {
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
        { url: `${url}/other`, events: ['completed'], format: 'json', sourceDownAfterMs: 0 },
      ],
      secrets: [null, null, null],
      store: {} as Store,
      logger: silentLogger,
    });
    const metrics = createMetrics({} as Store);
    const path = await listWith(TEXT);
    const l = new SuppressionLists({ global: path, sources: new Map(), logger: capture().logger });
    metrics.watchSuppressionLists(() => l.describe());
    const refused = () => metrics.registry.getSingleMetricAsString('dropline_suppression_list_refused');
    try {
      await l.start();
      expect(await refused()).toContain('dropline_suppression_list_refused{list="suppressionList"} 0');
      await writeFile(path, gzipSync(TEXT));
      await refusal(l);
      expect(await refused()).toContain(
        'dropline_suppression_list_refused{list="suppressionList",reason="unparseable"} 1',
      );
      await waitFor('both alerts', () => got.length >= 2);
      const json = JSON.parse(got.find((g) => g.path === '/json')!.body);
      expect(json).toMatchObject({
        event: 'suppression-list-refused',
        list: { names: ['suppressionList'], location: path, reason: 'unparseable' },
      });
      expect(JSON.parse(got.find((g) => g.path === '/slack')!.body).text).toMatch(
        /^dropline: opt-out list suppressionList \(.*\) refused \(unparseable\): .*its files wait$/,
      );
    } finally {
      await l.stop();
      await alerts.close();
      metrics.close();
      await new Promise((r) => hook.close(r));
    }
    expect(got.map((g) => g.path).sort()).toEqual(['/json', '/slack']);
  });
});
