// A `marker` source whose marker never comes: after incompleteTimeoutMs the file is rejected
// MISSING_TRAILER (the reading docs/contract.md takes), read as a claim reads it: hashed,
// nothing sent, the original in failed/ with its errors.csv.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REASONS } from '../../src/errors.ts';
import { reportFileName } from '../../src/pipeline/reports.ts';
import { csvRecords, PipelineHarness, personalizedFile, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;

afterAll(async () => {
  await h?.close();
});

describe('a marker that never comes', () => {
  it('rejects the file MISSING_TRAILER after incompleteTimeoutMs, nothing sent', async () => {
    h = await PipelineHarness.create({ source: { readiness: 'marker', incompleteTimeoutMs: 1500 } });
    await h.start();
    const gen = personalizedFile(30, 41);
    await h.dropFile('sin-marca.txt', gen.content);
    const m = await h.waitForState('sin-marca.txt', 'rejected', { timeoutMs: 30_000 });
    expect(m.rejection?.code).toBe('MISSING_TRAILER');
    expect(m.rejection?.message).toMatch(/marker sin-marca\.txt\.done/);
    expect(m.bytes).toBe(Buffer.byteLength(gen.content));
    // The state is rejected before the file is moved and its errors.csv written: waited for.
    const errors = csvRecords(
      await waitFor('the errors.csv of sin-marca.txt', () =>
        h!.readDrop(`failed/${reportFileName('sin-marca.txt', m.fileId, 'errors.csv')}`),
      ),
    );
    expect(existsSync(join(h.drop, 'failed', 'sin-marca.txt'))).toBe(true);
    expect(errors[0]).toMatchObject({
      line: '0',
      code: 'MISSING_TRAILER',
      hint: REASONS.MISSING_TRAILER.hint,
    });
    expect((await h.ledger(m.fileId)).entries).toEqual([]);
  });
});
