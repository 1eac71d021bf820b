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
import { englishTexts } from '../../src/ops/wording.ts';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { openStore } from '../../src/store/index.ts';
import type { DeliveryEvent } from '../../src/store/store.ts';
import { CODES_ES as codesEs, TEXTS as LANGUAGES } from '../helpers/dashboard-texts.ts';
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
    // The first count is the recipients read (a rejection's `3 of 4 recipients` counts them too).
    const c = dropped.counts;
    const recipients = c.valid + c.invalid + c.duplicates + c.suppressed + (c.contactLimited ?? 0);
    expect(numbers).toContain(`${recipients.toLocaleString('en-US')} recipients read`);
    // Dates with a four-digit year (`12/24/30` reads either way round).
    expect(await row.locator('[data-time="arrived"]').textContent()).toMatch(
      /^arrived \d{1,2}\/\d{1,2}\/\d{4}, /,
    );
    // Its source and the channel it goes out on.
    expect(await row.locator('.source').textContent()).toBe('local · SMS');
    // Search narrows the list.
    await h.dropFile('otra.txt', personalizedFile(5, 82).content);
    await page.locator('a.file', { hasText: 'otra.txt' }).waitFor();
    await page.locator('.filters input[type=search]').fill('novi');
    await expect.poll(() => page.locator('a.file').count()).toBe(1);
    await page.locator('.filters input[type=search]').fill('');
    await expect.poll(() => page.locator('a.file').count()).toBe(2);
  });

  it('one campaign: the funnel and the chart with the file’s numbers, errors masked, the timeline', async () => {
    const page = await open();
    await logIn(page);
    await page.locator('a.file', { hasText: 'noviembre.txt' }).click();
    await page.locator('#funnel [data-step="recipients"]').waitFor();
    const m = await manifest(dropped.fileId);
    const step = (k: string) => page.locator(`#funnel [data-step="${k}"]`).getAttribute('data-value');
    const c = m.counts;
    expect(await step('recipients')).toBe(
      String(c.valid + c.invalid + c.duplicates + c.suppressed + (c.contactLimited ?? 0)),
    );
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
    await page.locator('#funnel [data-step="recipients"]').waitFor();
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

describe('a cancelled campaign', () => {
  it('its chunks never sent read cancelled, never "to send", in English and Spanish', async () => {
    // The pages of the tests before: the last one asks every 2 s for a fileId that is not one
    // (404, on purpose there), which would be counted against this test.
    for (const c of contexts.splice(0)) await c.close();
    expect(problems.splice(0).filter((p) => !p.includes('404'))).toEqual([]);
    await h.dropFile(
      'anulada.txt',
      `#! sendAt: 2099-01-01T08:00:00-05:00\n${personalizedFile(120, 85).content}`,
    );
    const scheduled = await h.waitForState('anulada.txt', 'scheduled');
    const chunks = scheduled.counts.chunksPending;
    expect(chunks).toBeGreaterThan(1);
    const res = await fetch(`${h.opsUrl}/api/files/${scheduled.fileId}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(200);
    await expect.poll(async () => (await manifest(scheduled.fileId)).counts.chunksCancelled).toBe(chunks);
    for (const [locale, cancelled, toSend] of [
      ['en-US', 'cancelled (never sent)', 'to send'],
      ['es-CO', 'cancelados (nunca enviados)', 'por enviar'],
    ] as const) {
      const page = await open(locale);
      await logIn(page);
      await page.goto(`${h.opsUrl}/#/file/${scheduled.fileId}`);
      const rows = () => page.locator('#chunks tbody tr').allTextContents();
      await expect.poll(rows).toContain(`${cancelled}${chunks}`);
      expect(await rows()).toContain(`${toSend}0`);
    }
  });
});

// Issue 33: a real campaign's size (200,000 lines) read by a Colombian team. Sent through the
// real pipeline (chunks of 10,000, no rate limit: submitted in 5 to 14 s, by the machine's
// load); three in four of its delivery reports are recorded by the store's own
// recordDeliveries (what the receiver does with a batch), since the sandbox's one POST per
// recipient would take ~90 s on a loaded machine.
describe('a 200,000-recipient campaign, in Spanish', () => {
  let big: PipelineHarness;
  let campaign: Manifest;
  let rejected: Manifest;
  let scheduled: Manifest;
  const LINES = 200_000;

  beforeAll(async () => {
    // The pages of the tests above are done (one keeps asking for a file that is not there).
    for (const c of contexts.splice(0)) await c.close();
    big = await PipelineHarness.create({
      ops: { token: TOKEN },
      api: { chunkSize: 10_000, ratePerSecond: 0 },
      // No report from the sandbox: the test records them (below).
      sandbox: { deliveryDelayMs: 1e9 },
    });
    await big.start();
    await big.dropFile('campaña-diciembre.txt', personalizedFile(LINES, 90).content);
    campaign = await big.waitForState('campaña-diciembre.txt', 'submitted', { timeoutMs: 60_000 });
    const { entries } = await big.ledger(campaign.fileId);
    const store = await openStore(String(big.config.store));
    try {
      // Three reports in four: the rest still waited for, as in a campaign on its way.
      const events: DeliveryEvent[] = entries
        .filter((_, i) => i % 4 !== 3)
        .map((e, i) => ({
          transactionNumber: e.transactionNumber,
          to: e.to,
          messageId: e.messageId,
          bulkId: e.bulkId,
          callbackData: null,
          smsCount: e.count,
          // One in eight not delivered: the chart draws both lines.
          status: i % 8 === 0 ? 'NO_SUCCESS' : 'DELIVERED_TO_HANDSET',
          receivedAt: new Date().toISOString(),
        }));
      for (let i = 0; i < events.length; i += 20_000)
        await store.recordDeliveries(events.slice(i, i + 20_000));
    } finally {
      await store.close();
    }
    await big.dropFile('mala.txt', '123;hola\n456;hola\n3001234567;hola\n');
    rejected = await big.waitForState('mala.txt', 'rejected');
    // A campaign for later: its start in the source's time zone, named.
    await big.dropFile('navidad.txt', '#! sendAt: 2030-12-24 09:00\n3001234567;Feliz Navidad\n');
    scheduled = await big.waitForState('navidad.txt', 'scheduled');
  }, 120_000);

  afterAll(async () => {
    await big?.close();
  });

  async function openBig(locale: string): Promise<Page> {
    const context = await browser.newContext({ locale, viewport: { width: 1280, height: 860 } });
    contexts.push(context);
    const page = await context.newPage();
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !/status of 401/.test(msg.text())) problems.push(msg.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto(big.opsUrl);
    await page.locator('#token').fill(TOKEN);
    await page.locator('form.login button[type=submit]').click();
    await page.locator('#files').waitFor();
    return page;
  }

  /**
   * The page's own English: every word of an English text (i18n.js, and the codes' English
   * the server sends) that no Spanish text uses. Names, numbers, codes and file names are no
   * words of these lists, or are left out below (code, the file's name, downloads).
   */
  const english = (() => {
    const { en, es } = LANGUAGES as Record<'en' | 'es', Record<string, string>>;
    const words = (text: string) =>
      text
        .replace(/\{\w+\}/g, ' ')
        .toLowerCase()
        .match(/\p{L}{3,}/gu) ?? [];
    const spanishTexts = [
      ...Object.values(es),
      ...Object.values(codesEs as Record<string, { message: string; hint: string }>).flatMap((c) => [
        c.message,
        c.hint,
      ]),
    ];
    const spanish = new Set(spanishTexts.flatMap(words));
    const englishTexts_ = [
      ...Object.entries(en)
        .filter(([k, v]) => es[k] !== v)
        .map(([, v]) => v),
      ...Object.values(englishTexts()).flatMap((c) => [c.message, c.hint]),
    ];
    return new Set(englishTexts_.flatMap(words).filter((w) => !spanish.has(w)));
  })();

  /** The English words among the page's visible texts (and placeholders, labels, titles). */
  async function englishOn(page: Page): Promise<string[]> {
    const texts = await page.evaluate(() => {
      type El = {
        closest(s: string): unknown;
        checkVisibility(): boolean;
        getAttribute(n: string): string | null;
      };
      const d = document as unknown as {
        createTreeWalker(
          root: unknown,
          what: number,
        ): { nextNode(): { textContent: string; parentElement: El } | null };
        body: unknown;
        querySelectorAll(s: string): Iterable<El>;
      };
      const out: string[] = [];
      const skip =
        'code, .name, .file-head h1, #downloads a, script, style, select:not(:focus) option:not(:checked)';
      const walker = d.createTreeWalker(d.body, 4);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const el = n.parentElement;
        if (!el || el.closest(skip) || !el.checkVisibility()) continue;
        if (n.textContent.trim()) out.push(n.textContent);
      }
      for (const el of d.querySelectorAll('[placeholder], [aria-label], [title]'))
        if (el.checkVisibility())
          for (const a of ['placeholder', 'aria-label', 'title']) out.push(el.getAttribute(a) ?? '');
      return out;
    });
    const found = new Set<string>();
    // Codes (TOO_MANY_INVALID, DROPLINE_ERR_…) are names, the same in both languages.
    for (const text of texts)
      for (const w of text
        .replace(/\b[A-Z][A-Z0-9]*(_[A-Z0-9]+)+\b/g, ' ')
        .toLowerCase()
        .match(/\p{L}{3,}/gu) ?? [])
        if (english.has(w)) found.add(w);
    return [...found];
  }

  it('the list, its header and the campaign page say nothing in English; the chart’s labels fit', async () => {
    expect(english.size).toBeGreaterThan(300);
    // The banner of `dropline run` (npm start) gives the dashboard's address.
    expect(big.daemonOutput).toContain(`dashboard: ${big.opsUrl}/`);
    const page = await openBig('es-CO');
    const row = page.locator(`a.file[data-file-id="${campaign.fileId}"]`);
    await row.waitFor();
    const m = (await (
      await fetch(`${big.opsUrl}/api/files/${campaign.fileId}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      })
    ).json()) as Manifest;
    expect(m.counts.records).toBe(LINES);
    const es = (n: number) => n.toLocaleString('es-CO');
    // The header: sent today, the delivery rate of today's reports, reports waiting, the service.
    const figure = (k: string) => page.locator(`#summary [data-figure="${k}"] b`);
    await expect.poll(() => figure('sentToday').textContent()).toBe(es(m.counts.submitted));
    const rate = m.counts.delivered / (m.counts.delivered + m.counts.undelivered);
    expect(await figure('rate').textContent()).toBe(
      new Intl.NumberFormat('es-CO', { style: 'percent', maximumFractionDigits: 1 }).format(rate),
    );
    expect(await figure('waiting').textContent()).toBe(es(m.counts.pendingDelivery));
    expect(await figure('service').textContent()).toBe('responde');
    expect(await row.locator('.numbers').textContent()).toContain(`${es(m.counts.delivered)} entregados`);
    // When it arrived; the rejected file when it finished, and why, in Spanish.
    // Dates with a four-digit year: `24/12/30` reads as day/month/year or year/month/day.
    expect(await row.locator('[data-time="arrived"]').textContent()).toMatch(
      /^llegó \d{1,2}\/\d{1,2}\/\d{4}, /,
    );
    const bad = page.locator(`a.file[data-file-id="${rejected.fileId}"]`);
    expect(await bad.locator('[data-time="finished"]').textContent()).toMatch(
      /^terminó \d{1,2}\/\d{1,2}\/\d{4}, /,
    );
    const why = await bad.locator('.why').textContent();
    expect(why).toMatch(
      /^TOO_MANY_INVALID: \d de \d destinatarios son inválidos \(\d+(,\d)? %; el límite es 20 %\)$/,
    );
    // mala.txt is read as bulk (its first line the message): 2 records, 4 recipients. The
    // row counts what its rejection counts, and says so: `3 de 4` and `4 destinatarios leídos`.
    const judged = /de (\d) destinatarios/.exec(why!)![1]!;
    expect(judged).toBe(String(rejected.counts.valid + rejected.counts.invalid));
    expect(await bad.locator('.numbers').textContent()).toContain(`${judged} destinatarios leídos`);
    expect(await page.locator(`a.file[data-file-id="${scheduled.fileId}"] .why`).textContent()).toBe(
      'programado por el archivo (sendAt): empieza 24/12/2030, 9:00 a. m. (America/Bogota)',
    );
    expect(await englishOn(page)).toEqual([]);
    await shot(page, 'campaigns-es.png');

    await row.click();
    await page.locator('#chart canvas').first().waitFor();
    await expect
      .poll(() => page.locator('#errors').textContent())
      .toContain('no es un número celular válido');
    expect(await page.locator('#errors').textContent()).toContain(
      'Línea 97: no es un número celular válido (10097)',
    );
    expect(await englishOn(page)).toEqual([]);
    // The chart's labels, measured with the axes' fonts against the room uPlot gave them.
    const fit = await page.evaluate(() => {
      type Axis = {
        _values: string[] | null;
        _splits: number[] | null;
        _size: number;
        font: string[];
        ticks: { size: number };
        gap: number;
      };
      const box = (document as unknown as { querySelector(s: string): unknown }).querySelector('#chart') as {
        uplot: {
          axes: Axis[];
          bbox: { left: number; width: number };
          width: number;
          valToPos(v: number, s: string): number;
        };
      };
      const u = box.uplot;
      const ctx = (
        document as unknown as {
          createElement(t: string): {
            getContext(k: string): { font: string; measureText(t: string): { width: number } };
          };
        }
      )
        .createElement('canvas')
        .getContext('2d');
      const dpr = (globalThis as unknown as { devicePixelRatio: number }).devicePixelRatio;
      const width = (a: Axis, v: string) => {
        ctx.font = a.font[0]!;
        return ctx.measureText(v).width / dpr;
      };
      const [x, y] = u.axes as [Axis, Axis];
      const plotLeft = u.bbox.left / dpr;
      return {
        yLabels: y._values ?? [],
        // Room for the widest y label: the axis less its ticks and gap.
        yClipped: (y._values ?? []).filter((v) => width(y, v) > y._size - y.ticks.size - y.gap),
        xClipped: (x._values ?? []).filter((v, i) => {
          const centre = plotLeft + u.valToPos(x._splits![i]!, 'x');
          return centre - width(x, v) / 2 < 0 || centre + width(x, v) / 2 > u.width;
        }),
        // A time said twice (ticks 10 s apart labelled by the minute).
        xRepeated: (x._values ?? []).filter((v, i) => i > 0 && v === x._values![i - 1]),
        // Two neighbouring time labels that would overlap.
        xOverlapping: (x._values ?? []).filter((v, i) => {
          if (i === 0) return false;
          const gap = u.valToPos(x._splits![i]!, 'x') - u.valToPos(x._splits![i - 1]!, 'x');
          return gap < (width(x, v) + width(x, x._values![i - 1]!)) / 2;
        }),
      };
    });
    expect(fit.yLabels.some((v) => v.replace(/\D/g, '').length >= 6)).toBe(true);
    expect(fit.yLabels.every((v) => /^\d{1,3}(\.\d{3})*$/.test(v))).toBe(true);
    expect(fit.yClipped).toEqual([]);
    expect(fit.xClipped).toEqual([]);
    expect(fit.xOverlapping).toEqual([]);
    expect(fit.xRepeated).toEqual([]);
    await shot(page, 'campaign-es.png');

    // A file checked in the browser: its rejection, errors and layout in Spanish.
    await page.goto(`${big.opsUrl}/#/check`);
    await page.locator('#check-file').setInputFiles({
      name: 'revisar.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('3001234567;Hola, ¿cómo está?\n123;hola\n456;hola\n'),
    });
    await page.locator('form.check button[type=submit]').click();
    await expect
      .poll(() => page.locator('#check-result .verdict').getAttribute('data-accepted'))
      .toBe('false');
    expect(await page.locator('#check-result').textContent()).toContain('personalizado');
    expect(await page.locator('#check-result .verdict').textContent()).toMatch(
      /\d de \d destinatarios son inválidos/,
    );
    expect(await englishOn(page)).toEqual([]);

    // The rejected file's page: its rejection, hint and timeline in Spanish.
    await page.goto(`${big.opsUrl}/#/file/${rejected.fileId}`);
    await expect.poll(() => page.locator('#timeline').textContent()).toContain('destinatarios son inválidos');
    expect(await englishOn(page)).toEqual([]);
    // Its funnel starts from the same recipients its rejection counts, worded as such.
    const first = page.locator('#funnel .step').first();
    expect(await first.getAttribute('data-value')).toBe(judged);
    expect(await first.locator('.label').textContent()).toBe('destinatarios leídos');
    expect(await page.locator('.file-head .numbers').textContent()).toContain(
      `${judged} destinatarios leídos`,
    );
    expect(await page.locator('#timeline time').first().textContent()).toMatch(/^\d{1,2}\/\d{1,2}\/\d{4}, /);
  });

  it('the same pages in English, for the docs’ pictures', async () => {
    const page = await openBig('en-US');
    await page.locator(`a.file[data-file-id="${campaign.fileId}"]`).waitFor();
    await page.locator('#summary [data-figure="sentToday"] b').waitFor();
    await shot(page, 'campaigns.png');
    await page.goto(`${big.opsUrl}/#/file/${campaign.fileId}`);
    await page.locator('#chart canvas').first().waitFor();
    await page.locator('#errors li').first().waitFor();
    await shot(page, 'campaign.png');
  });
});
