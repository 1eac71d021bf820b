// A `marker` source (docs/sources.md "readiness"): the `.done` marker is consumed with its
// file's claim, so a partner reusing a daily name never has the next upload taken half on
// yesterday's marker; a marker holding `sha256=<hex>` is checked against the claimed bytes
// (MARKER_MISMATCH: nothing sent, the file in failed/ with its errors.csv).
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REASONS } from '../../src/errors.ts';
import { reportFileName } from '../../src/pipeline/reports.ts';
import { csvRecords, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
});

/** `n` recipient lines of one campaign, numbers from `from`. */
function campaign(from: number, n: number): string {
  return Array.from(
    { length: n },
    (_, i) => `57300${String(from + i).padStart(7, '0')};Hola ${i + 1}\n`,
  ).join('');
}

describe('a marker source', () => {
  it('consumes the marker with the claim: a daily name reused is sent once, whole, when its new marker comes', async () => {
    h = await PipelineHarness.create({ source: { readiness: 'marker' } });
    await h.start();
    const inbox = join(h.drop, 'inbox');
    // Day 1: campana.txt and its marker.
    await h.dropFile('campana.txt', campaign(1000, 5));
    await writeFile(join(inbox, 'campana.txt.done'), '');
    const day1 = await h.waitForState('campana.txt', ['submitted', 'completed']);
    expect(day1.counts.records).toBe(5);
    await waitFor('campana.txt out of the inbox', () => !existsSync(join(inbox, 'campana.txt')));

    // Day 2: the partner uploads the next 10-line campaign under the same name, and is half
    // way. A witness file dropped after it, with its marker, is claimed: the half file was
    // observed as long as it needed to be taken, had a marker been there.
    const whole = campaign(2000, 10);
    const half = whole.slice(0, whole.indexOf('Hola 6') - 13);
    await writeFile(join(inbox, 'campana.txt'), half);
    await h.dropFile('testigo.txt', campaign(3000, 1));
    await writeFile(join(inbox, 'testigo.txt.done'), '');
    await h.waitForState('testigo.txt', ['submitted', 'completed']);
    expect((await h.files()).filter((m) => m.name === 'campana.txt')).toHaveLength(1);
    expect(existsSync(join(inbox, 'campana.txt'))).toBe(true);

    // The upload ends, then its marker: one campaign of 10.
    await writeFile(join(inbox, 'campana.txt'), whole);
    await writeFile(join(inbox, 'campana.txt.done'), '');
    const day2 = await h.waitForState('campana.txt', ['submitted', 'completed'], {
      where: (m) => m.name === 'campana.txt' && m.fileId !== day1.fileId,
    });
    expect(day2.counts.records).toBe(10);
    const campaigns = (await h.files()).filter((m) => m.name === 'campana.txt');
    expect(campaigns.map((m) => m.counts.records).sort()).toEqual([10, 5]);
    expect(existsSync(join(inbox, 'campana.txt.done'))).toBe(false);
  });

  it('checks a sha256 in the marker: a mismatch is MARKER_MISMATCH, nothing sent; a match is sent', async () => {
    h = await PipelineHarness.create({ source: { readiness: 'marker' } });
    await h.start();
    const inbox = join(h.drop, 'inbox');
    const good = campaign(4000, 3);
    const bad = campaign(5000, 3);
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');
    await h.dropFile('buena.txt', good);
    await writeFile(join(inbox, 'buena.txt.done'), `sha256=${sha(good).toUpperCase()}\n`);
    await h.dropFile('mala.txt', bad);
    // The marker of another upload (the file was cut, or replaced, after it was hashed).
    await writeFile(join(inbox, 'mala.txt.done'), `sha256=${sha(bad.slice(0, -10))}\n`);

    const ok = await h.waitForState('buena.txt', ['submitted', 'completed']);
    expect(ok.counts.records).toBe(3);
    const m = await h.waitForState('mala.txt', ['rejected', 'submitted', 'completed']);
    expect(m.state).toBe('rejected');
    expect(m.rejection?.code).toBe('MARKER_MISMATCH');
    expect(m.rejection?.message).toContain(sha(bad));
    expect(m.sha256).toBe(sha(bad));
    const errors = csvRecords(
      await waitFor('the errors.csv of mala.txt', () =>
        h!.readDrop(`failed/${reportFileName('mala.txt', m.fileId, 'errors.csv')}`),
      ),
    );
    expect(errors[0]).toMatchObject({ code: 'MARKER_MISMATCH', hint: REASONS.MARKER_MISMATCH.hint });
    expect(existsSync(join(h.drop, 'failed', 'mala.txt'))).toBe(true);
    expect(existsSync(join(inbox, 'mala.txt.done'))).toBe(false);
    expect((await h.ledger(m.fileId)).entries).toEqual([]);
    expect((await h.ledger(ok.fileId)).entries).toHaveLength(3);
  });
});
