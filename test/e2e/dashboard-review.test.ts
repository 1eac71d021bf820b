// Issue 35, replies flagged for review on the dashboard, in a real browser (playwright-core
// driving Debian's chromium, as dashboard-browser.test.ts): the header's count links to the
// list, numbers masked, in both languages; no count, no link.
import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { maskNumber } from '../../src/core/redact.ts';
import { openStore } from '../../src/store/index.ts';
import { PipelineHarness } from '../helpers/pipeline-harness.ts';

const CHROMIUM = process.env.DROPLINE_CHROMIUM ?? '/usr/bin/chromium';
let h: PipelineHarness;
let browser: Browser;
const problems: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM} (apt-get install chromium)`);
  h = await PipelineHarness.create();
  await h.start();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

async function open(locale: string): Promise<Page> {
  const context = await browser.newContext({ locale });
  const page = await context.newPage();
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(msg.text());
  });
  page.on('pageerror', (err) => problems.push(err.message));
  await page.goto(h.opsUrl);
  return page;
}

const figure = (page: Page) => page.locator('#summary [data-figure="review"]');

it('the header counts the replies to review and links to them, numbers masked, in both languages', async () => {
  const en = await open('en-US');
  await expect.poll(() => figure(en).locator('b').textContent()).toBe('0');
  expect(await figure(en).locator('a').count()).toBe(0);

  // Two replies flagged, one not (as the daemon records them: docs/opt-outs.md).
  const store = await openStore(String(h.config.store));
  const base = { to: '85000', messageId: null, optOut: false };
  const at = new Date().toISOString();
  await store.recordReply({
    ...base,
    receivedAt: at,
    from: '573001110003',
    text: 'no me escriban más',
    intent: 'review',
  });
  await store.recordReply({ ...base, receivedAt: at, from: '573001110006', text: 'gracias', intent: null });
  await store.recordReply({
    ...base,
    receivedAt: at,
    from: '573001110007',
    text: 'stop please',
    intent: 'review',
  });
  await store.close();

  await expect.poll(() => figure(en).locator('a').textContent(), { timeout: 10_000 }).toBe('2');
  expect(await figure(en).locator('.label').textContent()).toBe('Replies to review');
  await figure(en).locator('a').click();
  await en.locator('#review table').waitFor();
  expect(await en.locator('h1').textContent()).toBe('Replies to review');
  const rows = await en
    .locator('#review tbody tr')
    .evaluateAll((trs) =>
      trs.map((tr) =>
        [...(tr as unknown as { cells: { textContent: string }[] }).cells].map((c) => c.textContent),
      ),
    );
  expect(rows.map((r) => r.slice(1))).toEqual([
    [maskNumber('573001110003'), '85000', 'no me escriban más'],
    [maskNumber('573001110007'), '85000', 'stop please'],
  ]);
  expect(await en.content()).not.toContain('573001110003');

  const es = await open('es-CO');
  await expect.poll(() => figure(es).locator('.label').textContent()).toBe('Respuestas por revisar');
  await figure(es).locator('a').click();
  await es.locator('#review table').waitFor();
  expect(await es.locator('h1').textContent()).toBe('Respuestas por revisar');
  expect(await es.locator('#review thead').textContent()).toBe('RecibidaDeA (código corto)Respuesta');
  expect(problems).toEqual([]);
});
