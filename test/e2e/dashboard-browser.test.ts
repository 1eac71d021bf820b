// Issue 13, the dashboard in a real browser (playwright-core driving Debian's chromium, never
// a downloaded one) against `dropline run` and the sandbox: log in, watch a dropped file reach
// completed without reloading, its funnel and chart with the file's numbers, pause and resume
// from the buttons, the Spanish page, a file checked in the browser, the service's health, a
// phone's screen. Screenshots go to DROPLINE_SCREENSHOTS (`npm run screenshots` writes
// docs/screenshots/) or a temporary folder.
import { existsSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { PipelineHarness, personalizedFile, REPO } from '../helpers/pipeline-harness.ts';

// The page's globals as the callbacks given to page.evaluate use them (they run in the
// browser; this project's types are Node's, without the DOM's).
interface PageElement {
  dataset: Record<string, string | undefined>;
  textContent: string | null;
  querySelector(selector: string): PageElement | null;
}
declare const document: {
  querySelectorAll(selector: string): Iterable<PageElement>;
  documentElement: { lang: string; scrollWidth: number };
};
declare const window: { innerWidth: number };

const CHROMIUM = process.env.DROPLINE_CHROMIUM ?? '/usr/bin/chromium';
const TOKEN = 'dashboard-browser-ops-token-0123456789';
const LONG = '573001234567890123';
// Five seconds of sending at the rate below: the list (every 2 s) sees it on its way.
const gen = personalizedFile(2000, 81);
// The long number first: a campaign's page lists the first lines of each error code.
const content = `${LONG};Hola\n${gen.content}`;

let h: PipelineHarness;
let browser: Browser;
let shots: string;
const contexts: BrowserContext[] = [];
/** Console errors and failed requests of every page (a CSP violation is one). */
const problems: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM} (apt-get install chromium)`);
  h = await PipelineHarness.create({
    ops: { token: TOKEN },
    api: { chunkSize: 50, ratePerSecond: 400 },
    sandbox: { failureRatio: 0.1 },
  });
  await h.start();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  shots = process.env.DROPLINE_SCREENSHOTS
    ? resolve(REPO, process.env.DROPLINE_SCREENSHOTS)
    : join(h.dir, 'shots');
  await mkdir(shots, { recursive: true });
}, 60_000);

afterEach(() => {
  expect(problems.splice(0)).toEqual([]);
});

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  await h?.close();
});

async function open(locale = 'en-US', viewport = { width: 1280, height: 860 }): Promise<Page> {
  const context = await browser.newContext({ locale, viewport });
  contexts.push(context);
  const page = await context.newPage();
  page.on('console', (msg) => {
    // The first call of a page without a session answers 401 (the login form follows).
    if (msg.type() === 'error' && !/status of 401/.test(msg.text())) problems.push(msg.text());
  });
  page.on('pageerror', (err) => problems.push(err.message));
  await page.goto(h.opsUrl);
  return page;
}

async function logIn(page: Page): Promise<void> {
  await page.locator('#token').fill(TOKEN);
  await page.locator('form.login button[type=submit]').click();
  await page.locator('#files').waitFor();
}

async function shot(page: Page, name: string): Promise<void> {
  const path = join(shots, name);
  await page.screenshot({ path, fullPage: true });
  expect((await stat(path)).size).toBeGreaterThan(5000);
}

const manifest = async (fileId: string): Promise<Manifest> =>
  (await h.opsGet(`/api/files/${fileId}`)).body as Manifest;

let dropped: Manifest;

describe('campaigns', () => {
  it('asks for the token, then follows a dropped file to completed without reloading', async () => {
    const page = await open();
    await page.locator('#token').fill('not the token');
    await page.locator('form.login button[type=submit]').click();
    await expect.poll(() => page.locator('form.login .error').textContent()).toBe('Wrong token.');
    await logIn(page);
    // Marks this very document: a reload would lose it.
    await page.evaluate(() => {
      const w = globalThis as unknown as { seen: Set<string>; sameDocument: boolean };
      w.sameDocument = true;
      w.seen = new Set();
      setInterval(() => {
        for (const row of document.querySelectorAll('a.file'))
          if (row.querySelector('.name')?.textContent === 'noviembre.txt')
            w.seen.add(row.dataset.state ?? '');
      }, 50);
    });
    await h.dropFile('noviembre.txt', content);
    const row = page.locator('a.file', { hasText: 'noviembre.txt' });
    await row.and(page.locator('[data-state="completed"]')).waitFor({ timeout: 40_000 });
    const seen = await page.evaluate(() => {
      const w = globalThis as unknown as { seen: Set<string>; sameDocument: boolean };
      return { same: w.sameDocument, states: [...w.seen] };
    });
    expect(seen.same).toBe(true);
    // It was seen on its way, not only at the end.
    expect(seen.states.some((s) => s === 'sending' || s === 'submitted' || s === 'validating')).toBe(true);
    dropped = (await h.files()).find((f) => f.name === 'noviembre.txt')!;
    const numbers = await row.locator('.numbers').textContent();
    expect(numbers).toContain(`${dropped.counts.delivered.toLocaleString('en-US')} delivered`);
    expect(numbers).toContain(`${dropped.counts.records.toLocaleString('en-US')} read`);
    // Its source and the channel it goes out on.
    expect(await row.locator('.source').textContent()).toBe('local · SMS');
    // Search narrows the list.
    await h.dropFile('otra.txt', personalizedFile(5, 82).content);
    await page.locator('a.file', { hasText: 'otra.txt' }).waitFor();
    await page.locator('.filters input[type=search]').fill('novi');
    await expect.poll(() => page.locator('a.file').count()).toBe(1);
    await page.locator('.filters input[type=search]').fill('');
    await expect.poll(() => page.locator('a.file').count()).toBe(2);
    await shot(page, 'campaigns.png');
  });

  it('one campaign: the funnel and the chart with the file’s numbers, errors masked, the timeline', async () => {
    const page = await open();
    await logIn(page);
    await page.locator('a.file', { hasText: 'noviembre.txt' }).click();
    await page.locator('#funnel [data-step="records"]').waitFor();
    const m = await manifest(dropped.fileId);
    const step = (k: string) => page.locator(`#funnel [data-step="${k}"]`).getAttribute('data-value');
    expect(await step('records')).toBe(String(m.counts.records));
    expect(await step('valid')).toBe(String(m.counts.valid));
    expect(await step('submitted')).toBe(String(m.counts.submitted));
    expect(await step('delivered')).toBe(String(m.counts.delivered));
    expect(await step('undelivered')).toBe(String(m.counts.undelivered));
    expect(m.counts.undelivered).toBeGreaterThan(0);
    // The chart is uPlot's canvas; the numbers it plots end at the file's counts.
    await page.locator('#chart canvas').first().waitFor();
    const totals = page.locator('#chart-totals');
    expect(await totals.getAttribute('data-delivered')).toBe(String(m.counts.delivered));
    expect(await totals.getAttribute('data-undelivered')).toBe(
      String(m.counts.undelivered - m.counts.unknown),
    );
    const errors = page.locator('#errors');
    await expect.poll(() => errors.textContent()).toContain('INVALID_NUMBER');
    expect(await errors.textContent()).toContain('57300**********123');
    expect(await page.content()).not.toContain(LONG);
    const states = await page
      .locator('#timeline [data-state]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-state')));
    expect(states).toEqual(['validating', 'sending', 'submitted', 'completed']);
    // The cost: the manifest's segments by country, and what GSM-7 would save.
    const cost = page.locator('#cost');
    for (const [country, n] of Object.entries(m.cost!.segmentsByCountry))
      expect(await cost.textContent()).toContain(`${country}${n.toLocaleString('en-US')}`);
    expect(await cost.locator('[data-transliteration="never"]').textContent()).toContain(
      `As written: ${m.cost!.transliteration!.segmentsAsWritten.toLocaleString('en-US')} segments`,
    );
    // Nothing to do to a completed file: every action is disabled.
    for (const a of ['pause', 'resume', 'cancel', 'retry'])
      expect(await page.locator(`[data-action="${a}"]`).isDisabled()).toBe(true);
    const report = await page.locator('#downloads a', { hasText: 'report.csv' }).getAttribute('href');
    const res = await page.request.get(`${h.opsUrl}${report}`);
    expect(res.status()).toBe(200);
    expect((await res.text()).trim().split('\n').length).toBe(m.counts.records + 1);
    await shot(page, 'campaign.png');
  });

  it('pause and resume from the buttons; an action the state refuses says why', async () => {
    const slow = personalizedFile(4000, 83);
    await h.dropFile('lenta.txt', slow.content);
    const sending = await h.waitForState('lenta.txt', 'sending', {
      where: (f) => f.name === 'lenta.txt' && f.counts.submitted > 0,
    });
    // The service answers 429 until the pause is done: the file cannot finish meanwhile,
    // however long a busy machine takes to start the browser and click.
    await h.faults({ massive: { '429': 1 } });
    const page = await open();
    await logIn(page);
    await page.goto(`${h.opsUrl}/#/file/${sending.fileId}`);
    const state = page.locator('.file-head .badge');
    await page.locator('[data-action="pause"]:not([disabled])').click();
    await expect.poll(() => page.locator('#confirm-text').textContent()).toContain('lenta.txt');
    await page.locator('#confirm-yes').click();
    await expect.poll(() => state.getAttribute('data-state')).toBe('paused');
    await expect.poll(() => page.locator('#notice').textContent()).toContain('paused');
    await h.faults({});
    // The chunks in flight at the pause answered and recorded: what was sent is all there is.
    await h.waitIdle(sending.fileId);
    const held = (await h.ledger(sending.fileId)).destinations;
    await new Promise((r) => setTimeout(r, 1200));
    expect((await h.ledger(sending.fileId)).destinations).toBe(held);
    expect(held).toBeLessThan(slow.valid.length);
    await expect.poll(() => page.locator('[data-action="pause"]').isDisabled()).toBe(true);
    await page.locator('[data-action="resume"]:not([disabled])').click();
    await page.locator('#confirm-yes').click();
    await expect
      .poll(() => state.getAttribute('data-state'), { timeout: 40_000 })
      .toMatch(/^(submitted|completed)$/);
    expect((await h.ledger(sending.fileId)).duplicates).toBe(0);
    // The page's own POST for an action the state does not allow: refused with the reason.
    const refused = await page.evaluate(async (id) => {
      const r = await fetch(`/api/files/${id}/resume`, { method: 'POST' });
      return { status: r.status, body: (await r.json()) as { error: string } };
    }, dropped.fileId);
    expect(refused.status).toBe(409);
    // The browser reports that refusal on its console, as it does any 4xx.
    expect(problems.splice(0)).toEqual([expect.stringContaining('409')]);
    expect(refused.body.error).toContain('resume applies to a file that is paused');
  });

  it('speaks Spanish to a Spanish browser, and switches to English', async () => {
    const page = await open('es-CO');
    await expect.poll(() => page.locator('form.login h1').textContent()).toBe('Iniciar sesión');
    await logIn(page);
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('es');
    expect(await page.locator('header nav a').first().textContent()).toBe('Campañas');
    const row = page.locator('a.file', { hasText: 'noviembre.txt' });
    await expect.poll(() => row.locator('.badge').textContent()).toBe('completado');
    expect(await row.locator('.numbers').textContent()).toContain('entregados');
    await shot(page, 'campaigns-es.png');
    await page.locator('#lang').selectOption('en');
    await expect.poll(() => page.locator('header nav a').first().textContent()).toBe('Campaigns');
    await expect.poll(() => row.locator('.badge').textContent()).toBe('completed');
  });
});

describe('checking a file in the browser', () => {
  it('shows the counts and the first errors, masked; stores and sends nothing', async () => {
    const page = await open();
    await logIn(page);
    const before = { files: (await h.files()).length, sent: (await h.ledger()).destinations };
    await page.goto(`${h.opsUrl}/#/check`);
    await page.locator('#check-file').setInputFiles({
      name: 'revisar.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from(content),
    });
    await page.locator('form.check button[type=submit]').click();
    const verdict = page.locator('#check-result .verdict');
    await verdict.waitFor();
    expect(await verdict.getAttribute('data-accepted')).toBe('true');
    const count = (k: string) => page.locator(`#check-result [data-count="${k}"]`).textContent();
    expect(await count('records')).toBe((gen.records + 1).toLocaleString('en-US'));
    expect(await count('valid')).toBe(gen.valid.length.toLocaleString('en-US'));
    expect(await page.locator('#check-result').textContent()).toContain('57300**********123');
    expect(await page.content()).not.toContain(LONG);
    await shot(page, 'check.png');
    // A file mostly wrong: rejected, with its code.
    await page.locator('#check-file').setInputFiles({
      name: 'mala.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('123;hola\n456;hola\n3001234567;hola\n'),
    });
    await page.locator('form.check button[type=submit]').click();
    await expect.poll(() => verdict.getAttribute('data-accepted')).toBe('false');
    expect(await verdict.textContent()).toContain('TOO_MANY_INVALID');
    expect((await h.files()).length).toBe(before.files);
    expect((await h.ledger()).destinations).toBe(before.sent);
  });
});

describe('service health and small screens', () => {
  it('shows the three monitoring endpoints, answered', async () => {
    const page = await open();
    await logIn(page);
    await page.goto(`${h.opsUrl}/#/health`);
    for (const name of ['platformmonitory', 'effectivitybyclient', 'msgmtclient'])
      await page.locator(`[data-endpoint="${name}"].ok`).waitFor();
    await shot(page, 'health.png');
  });

  it('fits a phone’s screen without sideways scrolling', async () => {
    const page = await open('es-CO', { width: 390, height: 844 });
    await logIn(page);
    await page.locator('a.file').first().waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await page.goto(`${h.opsUrl}/#/file/${dropped.fileId}`);
    await page.locator('#funnel [data-step="records"]').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await shot(page, 'campaign-phone.png');
  });
});

describe('hostile input', () => {
  it('a file named as markup, and a campaign link with a broken fileId, are shown as text', async () => {
    const hostile = '<img src=x onerror=globalThis.injected=1>"\'<script>.txt';
    await h.dropFile(hostile, personalizedFile(3, 84).content);
    const m = await h.waitForState(hostile, 'completed');
    const page = await open();
    await logIn(page);
    const row = page.locator(`a.file[data-file-id="${m.fileId}"]`);
    await expect.poll(() => row.locator('.name').textContent()).toBe(hostile);
    await row.click();
    await expect.poll(() => page.locator('.file-head h1').textContent()).toBe(hostile);
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { injected?: number }).injected)).toBeUndefined();
    // A link cut in the middle of an escape (`%E0%A4%A`): the page says there is no such file,
    // rather than stay blank with an error.
    await page.goto(`${h.opsUrl}/#/file/%E0%A4%A`);
    await expect.poll(() => page.locator('.file-head').textContent()).toBe('No file %E0%A4%A.');
    // The 404 of that fileId, as the browser reports any 4xx.
    expect(problems.splice(0)).toEqual([expect.stringContaining('404')]);
  });
});
