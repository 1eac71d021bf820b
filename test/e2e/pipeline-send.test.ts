// Issue 4 "Tests", `dropline send <file>` with no daemon running: it exits 0 once every chunk is
// accepted and warns that nothing listens on notify.listen (the delivery reports would be lost);
// with --wait it serves notify.listen itself and exits 0 with a completed manifest; a rejected
// file exits 1.
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Manifest, reportFileName } from '../../src/pipeline/reports.ts';
import {
  bulkFile,
  expectedMessageId,
  type GeneratedFile,
  PipelineHarness,
  personalizedFile,
} from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({ sandbox: { failureRatio: 0.2 }, api: { chunkSize: 300 } });
});

afterAll(async () => {
  await h?.close();
});

async function ledgerExactlyOnce(m: Manifest, gen: GeneratedFile): Promise<void> {
  const ledger = await h.ledger(m.fileId);
  const got = ledger.entries.map((e) => `${e.messageId} ${e.to} ${e.count}`).sort();
  expect(got).toEqual(gen.valid.map((r) => `${expectedMessageId(gen, m.fileId, r)} ${r.to} 1`).sort());
}

it('send without --wait exits 0 once every chunk is accepted, warning that nothing listens on notify.listen', async () => {
  const gen = personalizedFile(1000, 31);
  const path = join(h.dir, 'programado.txt');
  await writeFile(path, gen.content);
  const r = await h.cli(['send', path, '--json']);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).toContain('nothing listens on notify.listen');
  expect(r.stderr).toContain(`127.0.0.1:${h.notifyPort}`);
  const m = JSON.parse(r.stdout) as Manifest;
  expect(['submitted', 'completed']).toContain(m.state);
  expect(m.counts).toMatchObject({
    valid: gen.valid.length,
    chunks: Math.ceil(gen.valid.length / 300),
    chunksAccepted: Math.ceil(gen.valid.length / 300),
    submitted: gen.valid.length,
  });
  await ledgerExactlyOnce(m, gen);
  // The user's file is left alone; the copy sent is in done/ with its reports.
  expect(existsSync(path)).toBe(true);
  expect(existsSync(join(h.drop, 'done', 'programado.txt'))).toBe(true);
  const onDisk = JSON.parse(await h.readReport(m, 'manifest.json')) as Manifest;
  expect(onDisk.fileId).toBe(m.fileId);
  expect(onDisk.counts.submitted).toBe(gen.valid.length);
});

it('send --wait --json serves notify.listen itself and exits 0 with a completed manifest', async () => {
  const gen = bulkFile(1500, 25, 32);
  const path = join(h.dir, 'espera.txt');
  await writeFile(path, gen.content);
  const r = await h.cli(['send', path, '--wait', '--json']);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).not.toContain('nothing listens');
  const m = JSON.parse(r.stdout) as Manifest;
  expect(m.state).toBe('completed');
  expect(m.layout).toBe('bulk');
  expect(m.counts).toMatchObject({
    records: gen.records,
    valid: gen.valid.length,
    invalid: gen.invalidLines.length,
    duplicates: gen.duplicateLines.length,
    submitted: gen.valid.length,
    pendingDelivery: 0,
    unknown: 0,
  });
  const { attempts } = await h.notifications();
  const mine = attempts.filter((a) => a.bulkId === m.fileId);
  expect(mine.every((a) => a.code === 200)).toBe(true);
  expect(mine.length).toBe(gen.valid.length);
  expect(m.counts.undelivered).toBe(mine.filter((a) => a.statusName === 'NO_SUCCESS').length);
  expect(m.counts.delivered).toBe(mine.filter((a) => a.statusName === 'DELIVERED_TO_HANDSET').length);
  await ledgerExactlyOnce(m, gen);
});

it('send exits 1 for a rejected file, which lands in failed/', async () => {
  const path = join(h.dir, 'malo.txt');
  await writeFile(path, '12345;Hola\n678;Hola\n3001234567;Hola\n');
  const before = (await h.ledger()).accepted;
  const r = await h.cli(['send', path, '--json']);
  expect(r.code).toBe(1);
  const m = JSON.parse(r.stdout) as Manifest;
  expect(m.state).toBe('rejected');
  expect(m.rejection?.code).toBe('TOO_MANY_INVALID');
  expect(existsSync(join(h.drop, 'failed', 'malo.txt'))).toBe(true);
  expect(existsSync(join(h.drop, 'failed', reportFileName('malo.txt', m.fileId, 'errors.csv')))).toBe(true);
  expect((await h.ledger()).accepted).toBe(before);
});

it('send fails, naming the file, when the file is not there', async () => {
  const r = await h.cli(['send', join(h.dir, 'no-existe.txt')]);
  expect(r.code).not.toBe(0);
  expect(r.stderr).toContain('no-existe.txt');
});
