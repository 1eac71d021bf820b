// The daemon's opt-out lists seen from the ops server: /metrics shows each list's size, when
// its copy in use was read and whether its last check failed (labels: the configuration key,
// never a location); the dashboard's file check (POST /api/validate) uses the daemon's lists
// (OpsControl.suppressionLists) instead of reading them again for every request.

import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import parse from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { silentLogger } from '../../src/log.ts';
import { validateUpload } from '../../src/ops/api.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { SuppressionLists } from '../../src/pipeline/suppression-lists.ts';
import { LocalSource } from '../../src/sources/local-source.ts';
import type { Source } from '../../src/sources/source.ts';
import type { Store } from '../../src/store/store.ts';
import { PipelineHarness } from '../helpers/pipeline-harness.ts';

const TOKEN = 'suppression-ops-token-0123456789';
// A on the global list, B on the source's own, C on neither.
const A = '3001110001';
const B = '3002220002';
const C = '3003330003';

/** One sample's value of a family in a scrape (undefined when absent). */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const family = parse(text).find((f) => f.name === name);
  const s = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return s?.value === undefined ? undefined : Number(s.value);
}

describe('through dropline run', () => {
  let h: PipelineHarness;
  let globalList: string;
  let t0: number;

  beforeAll(async () => {
    h = await PipelineHarness.create({ ops: { token: TOKEN }, source: {} });
    globalList = join(h.dir, 'global-optout.txt');
    await writeFile(globalList, `${A}\n3009990009\n`);
    await mkdir(join(h.drop, 'lists'), { recursive: true });
    await writeFile(join(h.drop, 'lists', 'optout.txt'), `${B}\n`);
    const config = {
      ...h.config,
      suppressionList: globalList,
      sources: (h.config.sources as Record<string, unknown>[]).map((s) => ({
        ...s,
        suppressionList: 'local:lists/optout.txt',
      })),
    };
    await writeFile(h.configPath, `${JSON.stringify(config, null, 2)}\n`);
    t0 = Date.now();
    await h.start();
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  it('/metrics: each list by its configuration key, its size and when it was read', async () => {
    const res = await fetch(`${h.opsUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    const global = { list: 'suppressionList' };
    const own = { list: 'sources.local.suppressionList' };
    expect(sample(text, 'dropline_suppression_list_numbers', global)).toBe(2);
    expect(sample(text, 'dropline_suppression_list_numbers', own)).toBe(1);
    for (const labels of [global, own]) {
      const loaded = sample(text, 'dropline_suppression_list_loaded_timestamp_seconds', labels)!;
      expect(loaded * 1000).toBeGreaterThanOrEqual(t0 - 1000);
      expect(loaded * 1000).toBeLessThanOrEqual(Date.now());
      expect(sample(text, 'dropline_suppression_list_checked_timestamp_seconds', labels)).toBeGreaterThan(0);
      expect(sample(text, 'dropline_suppression_list_error', labels)).toBe(0);
      expect(sample(text, 'dropline_suppression_list_check_failures_total', labels)).toBe(0);
    }
    // The label is the key: no location (a path, a source's path, an s3:// URL) anywhere.
    const labels = parse(text)
      .filter((f) => f.name.startsWith('dropline_suppression_list'))
      .flatMap((f) => f.metrics.flatMap((s) => Object.values(s.labels ?? {})));
    expect(new Set(labels)).toEqual(new Set(['suppressionList', 'sources.local.suppressionList']));
    expect(text).not.toContain(globalList);
    expect(text).not.toContain('lists/optout.txt');
  });

  it("the dashboard's file check: a number on the source's list or the global one is SUPPRESSED", async () => {
    const res = await fetch(`${h.opsUrl}/api/validate?source=local&name=check.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: `Hola\n${A}\n${B}\n${C}\n`,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ source: 'local', valid: 1, suppressed: 2, accepted: true });
  });
});

describe("validateUpload with the daemon's lists", () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dropline-check-lists-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A request whose body is `body`, as the ops server hands it over. */
  function upload(body: string): IncomingMessage {
    return Object.assign(Readable.from([Buffer.from(body)]), { headers: {} }) as unknown as IncomingMessage;
  }

  it("asks the lists (a check, no reading) and answers SUPPRESSED for a number on the source's list", async () => {
    const root = join(dir, 'drop');
    await mkdir(join(root, 'lists'), { recursive: true });
    await writeFile(join(root, 'lists', 'optout.txt'), `${B}\n`);
    const config = parseConfig({
      sources: [
        { name: 'partner', type: 'local', path: root, suppressionList: 'partner:lists/optout.txt' },
        { name: 'plain', type: 'local', path: join(dir, 'plain') },
      ],
    });
    const sources = new Map<string, Source>([['partner', new LocalSource({ name: 'partner', path: root })]]);
    const lists = SuppressionLists.fromConfig(config, sources, silentLogger, { checkEveryMs: 3_600_000 })!;
    await lists.start();
    const asked: string[] = [];
    const daemonLists = {
      forSource: (name: string) => {
        asked.push(name);
        return lists.forSource(name);
      },
    };
    try {
      const query = new URLSearchParams({ source: 'partner', name: 'check.txt' });
      const first = await validateUpload(upload(`Hola\n${B}\n${C}\n`), config, query, daemonLists);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ source: 'partner', valid: 1, suppressed: 1 });
      expect(asked).toEqual(['partner']);
      // The list gone from the source: the daemon keeps its last good copy, and so does the
      // check (reading the list again, as without the daemon's lists, would fail it).
      await unlink(join(root, 'lists', 'optout.txt'));
      const second = await validateUpload(upload(`Hola\n${B}\n`), config, query, daemonLists);
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ valid: 0, suppressed: 1 });
      expect(lists.describe()[0]?.lastError).toContain('ENOENT');
      // A source with no list: nothing is suppressed.
      const plain = await validateUpload(
        upload(`Hola\n${B}\n`),
        config,
        new URLSearchParams({ source: 'plain' }),
        daemonLists,
      );
      expect(plain.body).toMatchObject({ valid: 1, suppressed: 0 });
      expect(asked).toEqual(['partner', 'partner', 'plain']);
      // Without the daemon's lists (today's behaviour): the list is read for the check.
      const alone = await validateUpload(upload(`Hola\n${B}\n`), config, query);
      expect(alone.status).toBe(422);
      expect(alone.body).toMatchObject({ code: 'DROPLINE_ERR_SUPPRESSION_LIST' });
    } finally {
      await lists.stop();
    }
  });
});

describe('metrics from SuppressionLists.describe()', () => {
  it('a failed check: error 1 and the failure counted, the size of the copy kept; recovery: error 0', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dropline-metrics-lists-'));
    const path = join(dir, 'optout.txt');
    await writeFile(path, `${A}\n${B}\n`);
    const lists = new SuppressionLists({
      global: path,
      sources: new Map(),
      logger: silentLogger,
      checkEveryMs: 3_600_000,
    });
    const store = { gauges: async () => ({ files: {}, chunksInDoubt: 0 }) } as unknown as Store;
    const metrics = createMetrics(store);
    const scrape = () => metrics.registry.metrics();
    const list = { list: 'suppressionList' };
    try {
      // Not watched yet (no list configured): no sample at all.
      expect(sample(await scrape(), 'dropline_suppression_list_numbers', list)).toBeUndefined();
      metrics.watchSuppressionLists(() => lists.describe());
      // Configured, not read yet: 0 numbers, no load time.
      let text = await scrape();
      expect(sample(text, 'dropline_suppression_list_numbers', list)).toBe(0);
      expect(sample(text, 'dropline_suppression_list_loaded_timestamp_seconds', list)).toBeUndefined();
      await lists.start();
      text = await scrape();
      expect(sample(text, 'dropline_suppression_list_numbers', list)).toBe(2);
      const loaded = sample(text, 'dropline_suppression_list_loaded_timestamp_seconds', list)!;
      expect(Math.abs(loaded * 1000 - Date.now())).toBeLessThan(10_000);
      await unlink(path);
      await lists.checkAll();
      await lists.checkAll();
      text = await scrape();
      expect(sample(text, 'dropline_suppression_list_error', list)).toBe(1);
      expect(sample(text, 'dropline_suppression_list_check_failures_total', list)).toBe(2);
      expect(sample(text, 'dropline_suppression_list_numbers', list)).toBe(2);
      expect(text).not.toContain(path);
      await writeFile(path, `${A}\n${B}\n${C}\n`);
      await lists.checkAll();
      text = await scrape();
      expect(sample(text, 'dropline_suppression_list_error', list)).toBe(0);
      expect(sample(text, 'dropline_suppression_list_check_failures_total', list)).toBe(2);
      expect(sample(text, 'dropline_suppression_list_numbers', list)).toBe(3);
      expect(sample(text, 'dropline_suppression_list_loaded_timestamp_seconds', list)).toBeGreaterThanOrEqual(
        loaded,
      );
    } finally {
      metrics.close();
      await lists.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
