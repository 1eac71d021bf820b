// Issue 35, consent lists (Ley 2300 de 2023, art. 3: authorised channels only): with
// `consent.list`, a recipient without consent for its file's channel is NO_CONSENT at read,
// counted suppressed, never sent; the list is checked before each file and read again when it
// changed; a new content that is mostly no list is refused and the files wait until it is put
// right. `dropline compliance` shows the sha256 of the lists each contact's file was read
// against. `dropline run` as a process against the sandbox, on both stores.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Manifest, reportFileName } from '../../src/pipeline/reports.ts';
import { localDate } from '../../src/plan/send-window.ts';
import { csvRecords, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

// A agreed to SMS, B to WhatsApp only, C to nothing; D is on the opt-out list.
const A = '3001110001';
const B = '3002220002';
const C = '3003330003';
const D = '3004440004';
const sent = (n: string) => `57${n}`;

let h: PipelineHarness;
let consentPath: string;
let optOutPath: string;

beforeAll(async () => {
  h = await PipelineHarness.create();
  const lists = join(h.dir, 'lists');
  await mkdir(lists, { recursive: true });
  consentPath = join(lists, 'consent.txt');
  optOutPath = join(lists, 'optout.txt');
  await writeFile(consentPath, `# numero;canales\n${A};sms\n${B};whatsapp\n${D};sms\n`);
  await writeFile(optOutPath, `${D}\n`);
  const config = {
    ...h.config,
    contactLimit: { perDay: 1 },
    consent: { list: consentPath },
    suppressionList: optOutPath,
  };
  await writeFile(h.configPath, `${JSON.stringify(config, null, 2)}\n`);
  await h.start();
});

afterAll(async () => {
  await h?.close();
});

async function drop(name: string, numbers: string[]): Promise<void> {
  const tmp = join(h.drop, 'inbox', `.${name}.tmp`);
  await writeFile(tmp, `Hola, mensaje de prueba\n${numbers.join('\n')}\n`);
  await rename(tmp, join(h.drop, 'inbox', name));
}

/** A finished file's manifest and its report's codes by number ('' when sent). */
async function outcomes(name: string): Promise<{ m: Manifest; codes: Map<string, string> }> {
  const m = await waitFor(`${name} completed`, async () => {
    for (const entry of await readdir(join(h.drop, 'reports'))) {
      if (entry.startsWith('.') || !entry.endsWith('.manifest.json')) continue;
      const got = JSON.parse(await readFile(join(h.drop, 'reports', entry), 'utf8')) as Manifest;
      if (got.name === name && got.state === 'completed') return got;
    }
    return undefined;
  });
  const report = await readFile(
    join(h.drop, 'reports', reportFileName(m.name, m.fileId, 'report.csv')),
    'utf8',
  );
  return { m, codes: new Map(csvRecords(report).map((r) => [r.number!, r.code!])) };
}

const sha = async (path: string) =>
  `sha256:${createHash('sha256')
    .update(await readFile(path))
    .digest('hex')}`;

it('no consent for the channel: NO_CONSENT at read, counted suppressed, never sent; compliance names the lists checked', async () => {
  await drop('uno.txt', [A, B, C, D]);
  const uno = await outcomes('uno.txt');
  expect(uno.m.counts).toMatchObject({ records: 4, valid: 1, suppressed: 3, submitted: 1 });
  expect([A, B, C, D].map((n) => uno.codes.get(sent(n)))).toEqual([
    '',
    'NO_CONSENT',
    'NO_CONSENT',
    'SUPPRESSED',
  ]);
  expect((await h.ledger(uno.m.fileId)).entries.map((e) => e.to)).toEqual([sent(A)]);

  const today = localDate(new Date(), 'America/Bogota');
  const printed = await h.cli(['compliance', '--from', today, '--to', today]);
  expect(printed.code, printed.stderr).toBe(0);
  const rows = csvRecords(printed.stdout);
  expect(rows.map((r) => [r.number, r.fileId, r.lists])).toEqual([
    [
      sent(A),
      uno.m.fileId,
      `suppressionList=${await sha(optOutPath)};consent.list=${await sha(consentPath)}`,
    ],
  ]);
});

it('the list changed while the daemon runs: the next file sees it; a content that is no list is refused and the file waits until it is put right', async () => {
  await writeFile(consentPath, `${A};sms\n${B};whatsapp,sms\n${C};sms\n`);
  await drop('dos.txt', [B, C]);
  const dos = await outcomes('dos.txt');
  expect(dos.m.counts).toMatchObject({ valid: 2, suppressed: 0, submitted: 2 });

  // A spreadsheet saved over it: no line is an entry. Never used as an empty list.
  await writeFile(consentPath, 'numero,canales,fecha\n"3001110001","sms","2026-01-01"\nfin\n');
  await drop('tres.txt', [A]);
  await waitFor('the refusal in the log', () => h.daemonOutput.includes('consent.list: refused'));
  const waiting = await h.fileNamed('tres.txt');
  expect(waiting?.state).not.toBe('completed');
  await writeFile(consentPath, `${A};sms\n${B};whatsapp,sms\n${C};sms\n`);
  const tres = await outcomes('tres.txt');
  // A was reached today by uno.txt: the contact limit, not the list, holds it back now.
  expect(tres.codes.get(sent(A))).toBe('CONTACT_LIMIT');
});
