// Issue 4 "Tests", what happens to a dropped file before and instead of sending: a file written
// slowly is claimed once, whole; rejected files land in failed/ with their errors.csv and a
// `rejected` manifest, and nothing reaches the service; the same content dropped again is refused
// (DUPLICATE_FILE) and `send --force` sends it again under a new fileId. Plus the ops server.
import { existsSync } from 'node:fs';
import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REASONS } from '../../src/errors.ts';
import type { Manifest } from '../../src/pipeline/reports.ts';
import {
  csvRecords,
  expectedMessageId,
  PipelineHarness,
  personalizedFile,
  waitFor,
} from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;

beforeAll(async () => {
  // stableMs well above the writer's pauses, so a busy machine does not claim early by accident.
  h = await PipelineHarness.create({ source: { stableMs: 600, pollMs: 100 }, api: { chunkSize: 200 } });
  await h.start();
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('a file written slowly in pieces', () => {
  it('is claimed once, whole, after the writer stops', async () => {
    const gen = personalizedFile(600, 21);
    const lines = gen.content.split(/(?<=\n)/);
    const path = join(h.drop, 'inbox', 'lento.txt');
    // 20 pieces, 100 ms apart (shorter than stableMs, longer than pollMs): ~2 s in all.
    const pieces = 20;
    const per = Math.ceil(lines.length / pieces);
    await writeFile(path, '');
    for (let i = 0; i < pieces; i++) {
      await appendFile(path, lines.slice(i * per, (i + 1) * per).join(''));
      const seen = (await h.files()).filter((m) => m.name === 'lento.txt');
      // Never claimed while the writer is still at it.
      if (i < pieces - 1) expect(seen).toEqual([]);
      await new Promise((r) => setTimeout(r, 100));
    }
    const m = await h.waitForState('lento.txt', 'completed');
    expect((await h.files()).filter((f) => f.name === 'lento.txt').length).toBe(1);
    expect(m.counts.records).toBe(gen.records);
    expect(m.counts.valid).toBe(gen.valid.length);
    expect(m.counts.submitted).toBe(gen.valid.length);
    const ledger = await h.ledger(m.fileId);
    const got = ledger.entries.map((e) => `${e.messageId} ${e.count}`).sort();
    expect(got).toEqual(gen.valid.map((r) => `${expectedMessageId(gen, m.fileId, r)} 1`).sort());
  });
});

describe('rejected files', () => {
  const tooManyInvalid = `${Array.from({ length: 10 }, (_, i) => `${i % 2 ? '12345' : `31000000${10 + i}`};Hola`).join('\n')}\n`;
  const cases: [string, string | Buffer, string][] = [
    ['invalidos.txt', tooManyInvalid, 'TOO_MANY_INVALID'],
    ['binario.txt', Buffer.from('573001234567;Hola\u0000mundo\n', 'utf8'), 'BINARY_FILE'],
    ['vacio.txt', '# solo un comentario\n\n   \n', 'EMPTY_FILE'],
  ];
  let rejected: Record<string, Manifest> = {};

  beforeAll(async () => {
    const before = (await h.ledger()).accepted;
    for (const [name, content] of cases) await h.dropFile(name, content);
    rejected = {};
    for (const [name] of cases) {
      await h.waitForState(name, 'rejected');
      rejected[name] = await h.waitForReport(name, 'rejected');
    }
    expect((await h.ledger()).accepted).toBe(before);
  });

  it.each(cases)('%s lands in failed/ with its errors.csv', async (name, _content, code) => {
    const m = rejected[name]!;
    expect(m.state).toBe('rejected');
    expect(m.rejection?.code).toBe(code);
    expect(m.path).toBe(`failed/${name}`);
    expect(existsSync(join(h.drop, 'failed', name))).toBe(true);
    expect(existsSync(join(h.drop, 'inbox', name))).toBe(false);
    const text = await h.readReport(m, 'errors.csv');
    expect(text.split('\n')[0]).toBe('line,code,message,value,hint');
    const rows = csvRecords(text);
    // Every row says what to do about it (the hint of its code, as docs/errors.md has it).
    expect(rows[0]).toMatchObject({ line: '0', code, hint: REASONS[code as keyof typeof REASONS].hint });
    for (const r of rows.slice(1)) expect(r.hint).toBe(REASONS[r.code as keyof typeof REASONS].hint);
    expect(rows[0]!.message).toBe(m.rejection!.message);
    if (code === 'TOO_MANY_INVALID') {
      expect(rows.slice(1).map((r) => [r.line, r.code, r.value])).toEqual(
        [2, 4, 6, 8, 10].map((l) => [String(l), 'INVALID_NUMBER', '12345']),
      );
    } else expect(rows.length).toBe(1);
    const manifest = JSON.parse(await h.readReport(m, 'manifest.json')) as Manifest;
    expect(manifest.state).toBe('rejected');
    expect(manifest.rejection?.code).toBe(code);
    expect(manifest.counts.submitted).toBe(0);
    const ledger = await h.ledger(m.fileId);
    expect(ledger.entries).toEqual([]);
  });
});

describe('the same content dropped again', () => {
  it('is refused as DUPLICATE_FILE; send --force sends it again under a new fileId', async () => {
    const gen = personalizedFile(300, 22);
    await h.dropFile('repetido.txt', gen.content);
    const first = await h.waitForState('repetido.txt', 'completed');

    await h.dropFile('repetido-otra-vez.txt', gen.content);
    await h.waitForState('repetido-otra-vez.txt', 'duplicate');
    const dup = await h.waitForReport('repetido-otra-vez.txt', 'duplicate');
    expect(dup.rejection?.code).toBe('DUPLICATE_FILE');
    expect(dup.rejection?.message).toContain(first.fileId);
    expect(dup.fileId).not.toBe(first.fileId);
    expect(dup.counts.submitted).toBe(0);
    expect(existsSync(join(h.drop, 'failed', 'repetido-otra-vez.txt'))).toBe(true);
    const errors = csvRecords(await h.readReport(dup, 'errors.csv'));
    expect(errors[0]).toMatchObject({ line: '0', code: 'DUPLICATE_FILE' });
    expect((await h.ledger(dup.fileId)).entries).toEqual([]);

    const copy = join(h.dir, 'repetido.txt');
    await writeFile(copy, gen.content);
    const refused = await h.cli(['send', copy, '--json']);
    expect(refused.code).toBe(1);
    expect((JSON.parse(refused.stdout) as Manifest).rejection?.code).toBe('DUPLICATE_FILE');

    const forced = await h.cli(['send', copy, '--force', '--json']);
    expect(forced.code, forced.stderr).toBe(0);
    const sent = JSON.parse(forced.stdout) as Manifest;
    expect(sent.forced).toBe(true);
    expect(sent.fileId).toMatch(new RegExp(`^${first.fileId}-r\\d+$`));
    expect(sent.bulkId).toBe(sent.fileId);
    const done = await h.waitForFile(sent.fileId, 'completed');
    expect(done.counts.submitted).toBe(gen.valid.length);

    // The ledger has every recipient twice: once per fileId, never twice under one.
    for (const fileId of [first.fileId, sent.fileId]) {
      const ledger = await h.ledger(fileId);
      const got = ledger.entries.map((e) => `${e.messageId} ${e.to} ${e.count}`).sort();
      expect(got).toEqual(gen.valid.map((r) => `${expectedMessageId(gen, fileId, r)} ${r.to} 1`).sort());
    }
  });
});

describe('the ops server', () => {
  it('answers /healthz, /readyz, /api/files (newest first), /api/files/<id> and 404', async () => {
    const health = await h.opsGet('/healthz');
    expect(health.status).toBe(200);
    const ready = await h.opsGet('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ ready: true, checks: { store: 'ok', 'source:local': 'ok' } });

    await h.dropFile('ops-uno.txt', personalizedFile(20, 23).content);
    const one = await h.waitForState('ops-uno.txt', 'completed');
    await h.dropFile('ops-dos.txt', personalizedFile(20, 24).content);
    const two = await h.waitForState('ops-dos.txt', 'completed');

    const list = await h.opsGet('/api/files');
    expect(list.status).toBe(200);
    const files = list.body as Manifest[];
    expect(files[0]!.fileId).toBe(two.fileId);
    expect(files[1]!.fileId).toBe(one.fileId);
    // newest first: by the first state each file entered
    const created = files.map((m) => Object.values(m.timestamps).sort()[0] ?? '');
    expect(created).not.toContain('');
    expect([...created].sort().reverse()).toEqual(created);
    expect(files.map((m) => m.fileId)).toEqual((await h.statusJson()).map((m) => m.fileId));

    const single = await h.opsGet(`/api/files/${one.fileId}`);
    expect(single.status).toBe(200);
    expect((single.body as Manifest).name).toBe('ops-uno.txt');
    expect((single.body as Manifest).counts.submitted).toBe(20);
    const missing = await h.opsGet('/api/files/no-such-file');
    expect(missing.status).toBe(404);
    expect((await h.opsGet('/nothing-here')).status).toBe(404);
  });

  it('stops on SIGTERM with exit code 0', async () => {
    expect(await h.stop()).toBe(0);
    await waitFor('the ops port closed', async () => {
      try {
        await fetch(`${h.opsUrl}/healthz`);
        return false;
      } catch {
        return true;
      }
    });
  });
});
