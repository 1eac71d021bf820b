// The daemon's consent list seen from the ops server (issue 35 follow-up), as its opt-out lists
// are (suppression-lists-ops.test.ts): /metrics shows its size, when its copy in use was read
// and checked and whether its last check failed (label: the configuration key, never its
// location); the dashboard's file check (POST /api/validate) answers NO_CONSENT with the
// daemon's list (OpsControl.consentList), and reads the configured one without it.
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
import { ConsentList } from '../../src/pipeline/consent-list.ts';
import { LocalSource } from '../../src/sources/local-source.ts';
import type { Source } from '../../src/sources/source.ts';
import { PipelineHarness } from '../helpers/pipeline-harness.ts';

const TOKEN = 'consent-ops-token-0123456789abcdef';
// A agreed to SMS, B to WhatsApp only, C to nothing.
const A = '3001110001';
const B = '3002220002';
const C = '3003330003';
const CONSENT = `# numero;canales\n${A};sms\n${B};whatsapp\nana@example.com;email\n`;

/** One sample's value of a family in a scrape (undefined when absent). */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const family = parse(text).find((f) => f.name === name);
  const s = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return s?.value === undefined ? undefined : Number(s.value);
}

describe('through dropline run', () => {
  let h: PipelineHarness;
  let t0: number;

  beforeAll(async () => {
    h = await PipelineHarness.create({ ops: { token: TOKEN } });
    await mkdir(join(h.drop, 'lists'), { recursive: true });
    await writeFile(join(h.drop, 'lists', 'consent.txt'), CONSENT);
    const config = { ...h.config, consent: { list: 'local:lists/consent.txt' } };
    await writeFile(h.configPath, `${JSON.stringify(config, null, 2)}\n`);
    t0 = Date.now();
    await h.start();
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  it('/metrics: the consent list by its configuration key, its size and when it was read', async () => {
    const res = await fetch(`${h.opsUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    const list = { list: 'consent.list' };
    expect(sample(text, 'dropline_consent_list_entries', list)).toBe(3);
    const loaded = sample(text, 'dropline_consent_list_loaded_timestamp_seconds', list)!;
    expect(loaded * 1000).toBeGreaterThanOrEqual(t0 - 1000);
    expect(loaded * 1000).toBeLessThanOrEqual(Date.now());
    expect(sample(text, 'dropline_consent_list_checked_timestamp_seconds', list)).toBeGreaterThan(0);
    expect(sample(text, 'dropline_consent_list_error', list)).toBe(0);
    expect(sample(text, 'dropline_consent_list_check_failures_total', list)).toBe(0);
    expect(sample(text, 'dropline_consent_list_refused', list)).toBe(0);
    const labels = parse(text)
      .filter((f) => f.name.startsWith('dropline_consent_list'))
      .flatMap((f) => f.metrics.flatMap((s) => Object.values(s.labels ?? {})));
    expect(new Set(labels)).toEqual(new Set(['consent.list']));
    expect(text).not.toContain('lists/consent.txt');
  });

  it("the dashboard's file check: a recipient without consent for the source's channel is NO_CONSENT", async () => {
    const res = await fetch(`${h.opsUrl}/api/validate?name=check.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: `Hola\n${A}\n${B}\n${C}\n`,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ valid: 1, suppressed: 2, noConsent: 2, accepted: true });
  });
});

describe("validateUpload with the daemon's consent list", () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dropline-check-consent-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A request whose body is `body`, as the ops server hands it over. */
  function upload(body: string): IncomingMessage {
    return Object.assign(Readable.from([Buffer.from(body)]), { headers: {} }) as unknown as IncomingMessage;
  }

  it("asks the daemon's list for the source's channel; without it, reads the configured one", async () => {
    const path = join(dir, 'consent.txt');
    await writeFile(path, CONSENT);
    const config = parseConfig({
      consent: { list: path },
      sources: [{ name: 'partner', type: 'local', path: join(dir, 'drop') }],
    });
    const sources = new Map<string, Source>([
      ['partner', new LocalSource({ name: 'partner', path: join(dir, 'drop') })],
    ]);
    const consent = ConsentList.fromConfig(config, sources, silentLogger)!;
    await consent.start(3_600_000);
    const asked: string[] = [];
    const daemons = {
      forChannel: (channel: string) => {
        asked.push(channel);
        return consent.forChannel(channel);
      },
    };
    try {
      const query = new URLSearchParams({ source: 'partner', name: 'check.txt' });
      const first = await validateUpload(upload(`Hola\n${A}\n${B}\n${C}\n`), config, query, null, daemons);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ source: 'partner', valid: 1, suppressed: 2, noConsent: 2 });
      expect(asked).toEqual(['sms']);
      // The list gone: the daemon keeps its copy in use, and so does the check.
      await unlink(path);
      const second = await validateUpload(upload(`Hola\n${A}\n${C}\n`), config, query, null, daemons);
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ valid: 1, suppressed: 1, noConsent: 1 });
      expect(consent.describe().lastError).toContain('ENOENT');
      // Without the daemon's list: the configured one is read for the check, and cannot be.
      const alone = await validateUpload(upload(`Hola\n${A}\n`), config, query);
      expect(alone.status).toBe(422);
      expect(alone.body).toMatchObject({ code: 'DROPLINE_ERR_CONSENT_LIST' });
      expect(JSON.stringify(alone.body)).toContain('consent.list');
      await writeFile(path, CONSENT);
      const read = await validateUpload(upload(`Hola\n${A}\n${C}\n`), config, query);
      expect(read.body).toMatchObject({ valid: 1, suppressed: 1, noConsent: 1 });
    } finally {
      consent.stop();
    }
  });
});
