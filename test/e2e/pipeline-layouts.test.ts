// Issue 4 "Tests": both layouts end to end through `dropline run` against the sandbox over HTTP.
// Every valid recipient is in the sandbox ledger exactly once with the right text, bulkId and
// messageId, its notification reached the receiver (the notifyUrl with its token); manifest
// counts, report rows and delivered/undelivered agree with the sandbox's notifications.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import {
  bulkFile,
  csvRecords,
  expectedMessageId,
  type GeneratedFile,
  headedFile,
  PipelineHarness,
  personalizedFile,
} from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;
const files: Record<string, GeneratedFile> = {
  'clientes.txt': personalizedFile(2000, 1),
  'factura.txt': bulkFile(3000, 10, 2),
  'pedidos.txt': headedFile(120, 3),
};
const manifests: Record<string, Manifest> = {};

beforeAll(async () => {
  h = await PipelineHarness.create({
    sandbox: { failureRatio: 0.1 },
    api: { chunkSize: 500 },
  });
  await h.start();
  for (const [name, f] of Object.entries(files)) await h.dropFile(name, f.content);
  for (const name of Object.keys(files)) {
    manifests[name] = await h.waitForState(name, 'completed');
    await h.waitForReport(name, 'completed');
  }
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe.each(Object.keys(files))('%s end to end', (name) => {
  const gen = files[name]!;

  it('is in the sandbox ledger exactly once per valid recipient, with its text, bulkId and messageId', async () => {
    const m = manifests[name]!;
    const ledger = await h.ledger(m.fileId);
    expect(ledger.entries.length).toBe(gen.valid.length);
    const byId = new Map(ledger.entries.map((e) => [e.messageId, e]));
    expect(byId.size).toBe(gen.valid.length);
    for (const r of gen.valid) {
      const e = byId.get(expectedMessageId(gen, m.fileId, r));
      expect(e, `line ${r.line} ${r.idSuffix}`).toBeDefined();
      expect(e!.to).toBe(r.to);
      expect(e!.text).toBe(r.text);
      expect(e!.bulkId).toBe(m.fileId);
      expect(e!.count).toBe(1);
    }
  });

  it('has exact manifest counts, and delivered/undelivered match the sandbox notifications', async () => {
    const m = manifests[name]!;
    const chunks = Math.ceil(gen.valid.length / 500);
    expect(m.bulkId).toBe(m.fileId);
    expect(m.layout).toBe(gen.idColumn || name === 'clientes.txt' ? 'personalized' : 'bulk');
    expect(m.path).toBe(`done/${name}`);
    expect(m.counts).toMatchObject({
      records: gen.records,
      valid: gen.valid.length,
      invalid: gen.invalidLines.length,
      duplicates: gen.duplicateLines.length,
      suppressed: 0,
      chunks,
      chunksAccepted: chunks,
      chunksRejected: 0,
      chunksFailed: 0,
      chunksInDoubt: 0,
      chunksPending: 0,
      submitted: gen.valid.length,
      rejected: 0,
      failed: 0,
      inDoubt: 0,
      pendingDelivery: 0,
      unknown: 0,
      possibleDuplicates: 0,
    });
    const { attempts } = await h.notifications();
    const mine = attempts.filter((a) => a.bulkId === m.fileId);
    // One notification per accepted destination, each answered 200 by the daemon's receiver at
    // the notifyUrl dropline sent (its token checked: a wrong one would be 401).
    expect(mine.length).toBe(gen.valid.length);
    for (const a of mine) {
      expect(a.code).toBe(200);
      // The sandbox shows the notifyUrl with its query string (the token) redacted.
      expect(a.url).toBe(`http://127.0.0.1:${h.notifyPort}/notify?<redacted>`);
    }
    const failedReports = mine.filter((a) => a.statusName === 'NO_SUCCESS').length;
    expect(m.counts.delivered).toBe(gen.valid.length - failedReports);
    expect(m.counts.undelivered).toBe(failedReports);
    // failureRatio 0.1: both outcomes occur on files this size
    if (gen.valid.length >= 1000) {
      expect(failedReports).toBeGreaterThan(0);
      expect(m.counts.delivered).toBeGreaterThan(0);
    }
    expect(Object.keys(m.timestamps)).toEqual(
      expect.arrayContaining(['validating', 'sending', 'submitted', 'completed']),
    );
  });

  it('writes reports/<name>.<fileId>.report.csv with one row per recipient record, and the manifest', async () => {
    const m = manifests[name]!;
    const rows = csvRecords(await h.readReport(m));
    const header = (await h.readReport(m)).split('\n')[0];
    expect(header).toBe(
      'line,number,messageId,outcome,code,status,transactionNumber,smsCount,updatedAt,detail',
    );
    expect(rows.length).toBe(gen.valid.length + gen.invalidLines.length + gen.duplicateLines.length);
    const { attempts } = await h.notifications();
    const statusOf = new Map(attempts.filter((a) => a.bulkId === m.fileId).map((a) => [a.messageId, a]));
    const sent = rows.filter((r) => r.outcome === 'sent');
    expect(sent.length).toBe(gen.valid.length);
    const expectedById = new Map(gen.valid.map((r) => [expectedMessageId(gen, m.fileId, r), r]));
    for (const r of sent) {
      const want = expectedById.get(r.messageId!);
      expect(want, r.messageId).toBeDefined();
      expect(r.number).toBe(want!.to);
      expect(Number(r.line)).toBe(want!.line);
      expect(r.code).toBe('');
      const n = statusOf.get(r.messageId!);
      expect(r.status).toBe(n!.statusName);
      expect(r.transactionNumber).toBe(n!.transactionNumber);
    }
    const invalid = rows.filter((r) => r.outcome === 'invalid');
    expect(invalid.map((r) => Number(r.line))).toEqual(gen.invalidLines);
    for (const r of invalid) {
      expect(r.code).toBe('INVALID_NUMBER');
      expect(r.status).toBe('');
    }
    const dups = rows.filter((r) => r.outcome === 'duplicate');
    expect(dups.map((r) => Number(r.line))).toEqual(gen.duplicateLines);
    for (const r of dups) {
      expect(r.code).toBe('DUPLICATE');
      // The detail names the line it repeats: a row sent to the same number.
      const first = Number(/^already on line (\d+)$/.exec(r.detail ?? '')?.[1]);
      expect(
        rows.some((s) => s.outcome === 'sent' && Number(s.line) === first && s.number === r.number),
        r.detail,
      ).toBe(true);
    }
    for (const r of invalid) expect(r.detail).toMatch(/not a valid mobile number/);
    for (const r of sent) expect(r.detail).toBe('');

    const onDisk = JSON.parse(await h.readReport(m, 'manifest.json')) as Manifest;
    expect(onDisk.fileId).toBe(m.fileId);
    expect(onDisk.state).toBe('completed');
    expect(onDisk.counts).toEqual(m.counts);
  });

  it('moves the original to done/', () => {
    expect(existsSync(join(h.drop, 'done', name))).toBe(true);
    expect(existsSync(join(h.drop, 'inbox', name))).toBe(false);
    expect(existsSync(join(h.drop, 'processing', name))).toBe(false);
  });
});

it('dropline status --json agrees with the ops server (newest first)', async () => {
  const list = await h.statusJson();
  expect(list.map((m) => m.state)).toEqual(['completed', 'completed', 'completed']);
  expect(new Set(list.map((m) => m.name))).toEqual(new Set(Object.keys(files)));
  const ops = await h.files();
  expect(ops.map((m) => m.fileId)).toEqual(list.map((m) => m.fileId));
  const one = await h.cli(['status', manifests['factura.txt']!.fileId, '--json']);
  expect(one.code).toBe(0);
  expect((JSON.parse(one.stdout) as Manifest).counts).toEqual(manifests['factura.txt']!.counts);
});
