// Issue 35 follow-up: the dashboard's file check, in a real browser (playwright-core driving
// Debian's chromium, as dashboard-browser.test.ts), against `dropline run` with a consent list:
// the recipients without consent for the source's channel are counted (of the suppressed) and
// NO_CONSENT is worded, in English and in Spanish. Nothing is stored or sent.
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { PipelineHarness } from '../helpers/pipeline-harness.ts';

const CHROMIUM = process.env.DROPLINE_CHROMIUM ?? '/usr/bin/chromium';
const TOKEN = 'dashboard-consent-ops-token-0123456789';
// A agreed to SMS, B to WhatsApp only, C to nothing; D agreed to SMS but opted out.
const A = '3001110001';
const B = '3002220002';
const C = '3003330003';
const D = '3004440004';

let h: PipelineHarness;
let browser: Browser;
const problems: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM} (apt-get install chromium)`);
  h = await PipelineHarness.create({ ops: { token: TOKEN } });
  const lists = join(h.dir, 'lists');
  await mkdir(lists, { recursive: true });
  await writeFile(join(lists, 'consent.txt'), `# numero;canales\n${A};sms\n${B};whatsapp\n${D};sms\n`);
  await writeFile(join(lists, 'optout.txt'), `${D}\n`);
  const config = {
    ...h.config,
    consent: { list: join(lists, 'consent.txt') },
    suppressionList: join(lists, 'optout.txt'),
  };
  await writeFile(h.configPath, `${JSON.stringify(config, null, 2)}\n`);
  await h.start();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}, 60_000);

afterEach(() => {
  expect(problems.splice(0)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

/** The check page of a logged-in browser in `locale`, `content` checked as `name`. */
async function checked(locale: string, name: string, content: string): Promise<Page> {
  const context = await browser.newContext({ locale });
  const page = await context.newPage();
  page.on('console', (msg) => {
    // The first call of a page without a session answers 401 (the login form follows).
    if (msg.type() === 'error' && !/status of 401/.test(msg.text())) problems.push(msg.text());
  });
  page.on('pageerror', (err) => problems.push(err.message));
  await page.goto(h.opsUrl);
  await page.locator('#token').fill(TOKEN);
  await page.locator('form.login button[type=submit]').click();
  await page.locator('#files').waitFor();
  await page.goto(`${h.opsUrl}/#/check`);
  await page.locator('#check-file').setInputFiles({
    name,
    mimeType: 'text/plain',
    buffer: Buffer.from(content),
  });
  await page.locator('form.check button[type=submit]').click();
  await page.locator('#check-result .verdict').waitFor();
  return page;
}

const count = (page: Page, k: string) => page.locator(`#check-result [data-count="${k}"]`).textContent();

it('counts and words NO_CONSENT in English and in Spanish; stores and sends nothing', async () => {
  const before = { files: (await h.files()).length, sent: (await h.ledger()).destinations };
  const file = `Hola\n${A}\n${B}\n${C}\n${D}\n`;

  const en = await checked('en-US', 'consentimiento.txt', file);
  expect(await en.locator('#check-result .verdict').getAttribute('data-accepted')).toBe('true');
  expect(await count(en, 'valid')).toBe('1');
  expect(await count(en, 'suppressed')).toBe('3');
  expect(await count(en, 'noConsent')).toBe('2');
  const enText = (await en.locator('#check-result').textContent()) ?? '';
  expect(enText).toContain('of which without consent');
  const enNote = (await en.locator('#check-result [data-code="NO_CONSENT"]').textContent()) ?? '';
  expect(enNote).toContain("has no consent for the file's channel on the consent list");
  expect(enNote).toContain('consent.list');

  const es = await checked('es-CO', 'consentimiento.txt', file);
  expect(await count(es, 'noConsent')).toBe('2');
  expect((await es.locator('#check-result').textContent()) ?? '').toContain('de ellos, sin consentimiento');
  expect((await es.locator('#check-result [data-code="NO_CONSENT"]').textContent()) ?? '').toContain(
    'no tiene consentimiento para el canal del archivo',
  );

  // Everyone agreed: no NO_CONSENT count or note.
  const ok = await checked('en-US', 'todos.txt', `Hola\n${A}\n`);
  expect(await count(ok, 'valid')).toBe('1');
  expect(await ok.locator('#check-result [data-count="noConsent"]').count()).toBe(0);
  expect(await ok.locator('#check-result [data-code="NO_CONSENT"]').count()).toBe(0);

  expect((await h.files()).length).toBe(before.files);
  expect((await h.ledger()).destinations).toBe(before.sent);
});
