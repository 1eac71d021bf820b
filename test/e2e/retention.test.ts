// Issue 10, item 26: retention. Finished files older than retentionDays lose their recipients
// and delivery reports (`dropline prune`, and `dropline run` at start and hourly); their
// manifest stays with its counts, and `report` of a pruned file is DROPLINE_ERR_PRUNED.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { openStore } from '../../src/store/index.ts';
import { bulkFile, PipelineHarness, personalizedFile, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;

beforeAll(async () => {
  // A retention of ~0.1 s: a file finished a moment ago is old enough.
  h = await PipelineHarness.create({ config: { retentionDays: 1e-6 } });
});

afterAll(async () => {
  await h?.close();
});

async function send(name: string, content: string, wait: boolean): Promise<Manifest> {
  const path = join(h.dir, name);
  await writeFile(path, content);
  const r = await h.cli(['send', path, '--json', ...(wait ? ['--wait'] : [])]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Manifest;
}

async function rowsOf(fileId: string): Promise<number> {
  const store = await openStore(`sqlite:${join(h.dir, 'state.db')}`);
  try {
    let n = 0;
    for await (const page of store.reportPages(fileId)) n += page.length;
    return n;
  } finally {
    await store.close();
  }
}

it('prune removes the rows of old finished files only; status still works, report says DROPLINE_ERR_PRUNED', async () => {
  const done = await send('terminado.txt', personalizedFile(300, 51).content, true);
  expect(done.state).toBe('completed');
  // Sent without --wait and nothing listening: submitted, not finished, so kept.
  const open = await send('abierto.txt', bulkFile(200, 10, 52).content, false);
  expect(open.state).toBe('submitted');
  expect(await rowsOf(done.fileId)).toBe(300);

  await new Promise((r) => setTimeout(r, 150)); // past the 0.09 s retention
  const r = await h.cli(['prune', '--json']);
  expect(r.code, r.stderr).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ files: 1, recipients: 300 });

  expect(await rowsOf(done.fileId)).toBe(0);
  expect(await rowsOf(open.fileId)).toBeGreaterThan(0);

  const status = await h.cli(['status', done.fileId, '--json']);
  expect(status.code, status.stderr).toBe(0);
  const m = JSON.parse(status.stdout) as Manifest | Manifest[];
  const pruned = Array.isArray(m) ? m.find((x) => x.fileId === done.fileId)! : m;
  expect(pruned.prunedAt).toEqual(expect.any(String));
  expect(pruned.state).toBe('completed');
  expect(pruned.counts).toEqual(done.counts);
  const text = await h.cli(['status']);
  expect(text.stdout).toContain('rows pruned');

  const report = await h.cli(['report', done.fileId]);
  expect(report.code).not.toBe(0);
  expect(report.stderr).toContain('DROPLINE_ERR_PRUNED');
  const other = await h.cli(['report', open.fileId]);
  expect(other.code, other.stderr).toBe(0);
  expect(other.stdout.split('\n').length).toBeGreaterThan(200);

  // Nothing more to do the second time.
  const again = await h.cli(['prune', '--json']);
  expect(JSON.parse(again.stdout)).toMatchObject({ files: 0, recipients: 0 });
});

it('dropline run prunes at start, beside its receiver', async () => {
  const done = await send('otro.txt', personalizedFile(120, 53).content, true);
  expect(done.state).toBe('completed');
  await new Promise((r) => setTimeout(r, 150));
  await h.start();
  const m = await waitFor('the daemon prunes the finished file', async () => {
    const f = (await h.files()).find((x) => x.fileId === done.fileId);
    return f?.prunedAt ? f : undefined;
  });
  expect(m.counts).toEqual(done.counts);
  expect(await rowsOf(done.fileId)).toBe(0);
});
