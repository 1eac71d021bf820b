// Issue 35: a campaign sent from a short code shows its replies on its page, in a real browser
// (playwright-core driving Debian's chromium, as dashboard-browser.test.ts): the reply rate in
// Spanish and in English, the latest replies with their numbers masked (digit runs in their
// texts too).
import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { csvRecords, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

const CHROMIUM = process.env.DROPLINE_CHROMIUM ?? '/usr/bin/chromium';
const TOKEN = 'dashboard-replies-ops-token-0123456789';
const SHORT_CODE = '890123';

let h: PipelineHarness;
let browser: Browser;
const problems: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM} (apt-get install chromium)`);
  h = await PipelineHarness.create({
    ops: { token: TOKEN },
    // The sandbox refuses a massive message from a short code not assigned to the account.
    sandbox: { accounts: [{ username: 'demo', password: 'demo', shortCodes: [SHORT_CODE] }], smpp: {} },
    source: { shortCode: SHORT_CODE },
    config: (sandbox) => ({
      replies: { smpp: { host: '127.0.0.1', port: sandbox.smpp!.port, systemId: 'demo', password: 'demo' } },
    }),
  });
  await h.start();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

async function campaignPage(locale: string, fileId: string): Promise<Page> {
  const context = await browser.newContext({ locale });
  const page = await context.newPage();
  page.on('pageerror', (err) => problems.push(err.message));
  await page.goto(h.opsUrl);
  await page.locator('#token').fill(TOKEN);
  await page.locator('form.login button[type=submit]').click();
  await page.locator('#files').waitFor();
  await page.goto(`${h.opsUrl}/#/file/${fileId}`);
  await page.locator('#funnel [data-step="recipients"]').waitFor();
  return page;
}

it('the campaign page shows the reply rate and the latest replies, masked, in both languages', async () => {
  const numbers = Array.from({ length: 4 }, (_, i) => `3${String(530_000_000 + i)}`);
  await h.dropFile('respuestas.txt', `${numbers.map((n) => `${n};Responde SI`).join('\n')}\n`);
  const { fileId } = await h.waitForState('respuestas.txt', 'completed');
  const res = await fetch(`${h.sandbox.url}/_sandbox/replies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([
      { from: `57${numbers[1]}`, to: SHORT_CODE, text: 'SI' },
      { from: `57${numbers[2]}`, to: SHORT_CODE, text: 'No, llamen al 3001234567' },
    ]),
  });
  expect(res.status).toBe(202);
  await waitFor('both replies joined', async () => {
    const r = await h.cli(['replies', '--file', fileId]);
    return r.code === 0 && csvRecords(r.stdout).length === 2;
  });

  const es = await campaignPage('es-CO', fileId);
  const section = es.locator('#replies');
  await expect.poll(() => section.textContent()).toContain('Tasa de respuesta: 50');
  const text = (await section.textContent()) ?? '';
  expect(text).toContain('2 de 4 destinatarios respondieron');
  expect(text).toContain(`57${numbers[2]!.slice(0, 3)}****${numbers[2]!.slice(-3)}`);
  expect(text).toContain('No, llamen al');
  expect(await es.content()).not.toContain(numbers[2]!);
  expect(await es.content()).not.toContain('3001234567');

  const en = await campaignPage('en-US', fileId);
  await expect.poll(() => en.locator('#replies').textContent()).toContain('Reply rate: 50%');
  expect(problems).toEqual([]);
});
