// A daemon killed between its claim's move of a file to processing/ and the record of that
// path (claim.ts: one store write for the batch, after the moves). The record still says
// inbox/, where the file no longer is. The next start must read the file from processing/ at
// once, send each recipient once and finish the file, not wait for a record that a dead
// claim will never write, nor fail the file for a path that is gone.
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { fileIdFor } from '../../src/plan/ids.ts';
import { PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

const KILL_AT_CLAIM = pathToFileURL(
  join(import.meta.dirname, '..', 'helpers', 'kill-at-claim-moved.ts'),
).href;

let h: PipelineHarness | undefined;
afterAll(async () => {
  await h?.close();
});

it("a daemon killed between the claim's move and its record: the next start reads the moved file and sends it once", async () => {
  h = await PipelineHarness.create({ source: { stableMs: 100, pollMs: 100 } });
  const numbers = Array.from({ length: 40 }, (_, i) => `3${String(100_000_000 + i)}`);
  const content = `${numbers.map((n, i) => `${n};Hola cliente ${i + 1}, su cita es el lunes.`).join('\n')}\n`;

  // The first daemon kills itself once its claim has moved the file, before the record.
  await h.start({ wrap: ['env', `NODE_OPTIONS=--import=${KILL_AT_CLAIM}`] });
  const first = h.daemon!;
  await h.dropFile('citas.txt', content);
  await waitFor('the first daemon killed at its claim', () => first.signalCode === 'SIGKILL', {
    timeoutMs: 30_000,
  });
  h.daemon = null;
  expect(await readdir(join(h.drop, 'processing'))).toEqual(['citas.txt']);
  expect(await readdir(join(h.drop, 'inbox'))).toEqual([]);
  const fileId = fileIdFor('local', createHash('sha256').update(content).digest('hex'));
  const { file: recorded } = await h.stored(fileId);
  expect([recorded?.state, recorded?.path]).toEqual(['validating', 'inbox/citas.txt']);

  // The next start takes the file over, finds it where the claim moved it and sends it.
  await h.start();
  const m = await h.waitForState('citas.txt', 'completed');
  expect(m.fileId).toBe(fileId);
  expect(m.counts.valid).toBe(numbers.length);
  expect(m.counts.submitted).toBe(numbers.length);
  const ledger = await h.ledger(m.fileId);
  expect(ledger.entries.map((e) => e.to).sort()).toEqual(numbers.map((n) => `57${n}`).sort());
  expect(ledger.entries.every((e) => e.count === 1)).toBe(true);
  expect(await readdir(join(h.drop, 'done'))).toEqual(['citas.txt']);
  expect(await readdir(join(h.drop, 'processing'))).toEqual([]);
  // Read at once from where the claim left it: the log says so, and no drive of it failed.
  expect(h.daemonOutput).toContain('found in processing/');
  expect(h.daemonOutput).not.toMatch(/citas\.txt.*ENOENT|ENOENT.*citas\.txt/);
});
