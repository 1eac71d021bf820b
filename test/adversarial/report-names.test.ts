// Issue 10 item 4: reports are named so that two campaigns never share one. Two files called
// `x.txt` (or `x.txt` and `X.TXT`) each keep their report.csv, manifest and errors.csv; a
// name near the file-system limit still gets its report; a report written at pause or
// cancel is rewritten when the file's rows change afterwards, so none stays stale.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reportFileName } from '../../src/pipeline/reports.ts';
import { csvRecords, PipelineHarness, personalizedFile, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
});

async function reportsDir(harness: PipelineHarness): Promise<string[]> {
  return (await readdir(join(harness.drop, 'reports'))).filter((n) => !n.startsWith('.')).sort();
}

/** `dropline report <fileId>`: the store's report now. */
async function storeReport(harness: PipelineHarness, fileId: string): Promise<string> {
  const r = await harness.cli(['report', fileId]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

describe('report names', () => {
  it('a second x.txt (and an X.TXT) never overwrites the first campaign’s reports', async () => {
    h = await PipelineHarness.create();
    await h.start();
    const first = personalizedFile(40, 31);
    await h.dropFile('x.txt', first.content);
    const one = await h.waitForState('x.txt', 'completed');
    const oneReport = await h.readDrop(`reports/${reportFileName('x.txt', one.fileId, 'report.csv')}`);
    expect(csvRecords(oneReport).filter((r) => r.outcome === 'sent')).toHaveLength(first.valid.length);

    const second = personalizedFile(25, 32);
    await h.dropFile('x.txt', second.content);
    const two = await h.waitForState('x.txt', 'completed', {
      where: (m) => m.name === 'x.txt' && m.fileId !== one.fileId,
    });
    const third = personalizedFile(15, 33);
    await h.dropFile('X.TXT', third.content);
    const three = await h.waitForState('X.TXT', 'completed');

    for (const [m, gen] of [
      [one, first],
      [two, second],
      [three, third],
    ] as const) {
      const report = await h.readDrop(`reports/${reportFileName(m.name, m.fileId, 'report.csv')}`);
      const sent = csvRecords(report).filter((r) => r.outcome === 'sent');
      expect(sent.map((r) => r.number).sort()).toEqual(gen.valid.map((v) => v.to).sort());
      const manifest = JSON.parse(
        await h.readDrop(`reports/${reportFileName(m.name, m.fileId, 'manifest.json')}`),
      ) as { fileId: string; state: string };
      expect(manifest).toMatchObject({ fileId: m.fileId, state: 'completed' });
    }
    // The first campaign's report is byte for byte what it was.
    expect(await h.readDrop(`reports/${reportFileName('x.txt', one.fileId, 'report.csv')}`)).toBe(oneReport);
    expect(await reportsDir(h)).toHaveLength(6);
  });

  it('a completed file’s report.csv is written once: the delivery reports that complete it do not write it again', async () => {
    h = await PipelineHarness.create();
    await h.start();
    await h.dropFile('una-vez.txt', personalizedFile(200, 37).content);
    const m = await h.waitForState('una-vez.txt', 'completed');
    const path = join(h.drop, 'reports', reportFileName('una-vez.txt', m.fileId, 'report.csv'));
    // Every write is a new file renamed into place: a new inode.
    const written = (await stat(path)).ino;
    // Longer than the daemon waits before rewriting a report whose rows changed (2 s) and
    // one progress round: an absence can only be seen by waiting.
    await new Promise((r) => setTimeout(r, 4000));
    expect((await stat(path)).ino).toBe(written);
  });

  it('two rejected files of one name keep one errors.csv each', async () => {
    h = await PipelineHarness.create();
    await h.start();
    await h.dropFile('malo.txt', 'esto no es un archivo\n');
    const one = await h.waitForState('malo.txt', 'rejected');
    await h.dropFile('malo.txt', 'tampoco; este\notra línea mala\n');
    const two = await h.waitForState('malo.txt', 'rejected', {
      where: (m) => m.name === 'malo.txt' && m.fileId !== one.fileId,
    });
    for (const m of [one, two]) {
      const text = await waitFor(`errors.csv of ${m.fileId}`, () =>
        h!.readDrop(`failed/${reportFileName('malo.txt', m.fileId, 'errors.csv')}`),
      );
      expect(text.split('\n')[1]).toContain(m.rejection!.code);
    }
  });

  it('a name near the file-system limit still gets its report, fileId kept', async () => {
    h = await PipelineHarness.create();
    await h.start();
    // 241 bytes of name (`ñ` is two bytes in UTF-8); the file system allows 255.
    const name = `${'campaña-'.repeat(26)}fin.txt`;
    expect(Buffer.byteLength(name)).toBeGreaterThan(225);
    const gen = personalizedFile(20, 34);
    await h.dropFile(name, gen.content);
    const m = await h.waitForState(name, 'completed');
    const files = await reportsDir(h);
    const report = files.find((f) => f.endsWith(`.${m.fileId}.report.csv`));
    expect(report, files.join('\n')).toBeDefined();
    expect(Buffer.byteLength(report!)).toBeLessThanOrEqual(255);
    expect(report!.startsWith('campaña-campaña')).toBe(true);
    expect(files.some((f) => f.endsWith(`.${m.fileId}.manifest.json`))).toBe(true);
    const rows = csvRecords(await h.readDrop(`reports/${report}`));
    expect(rows.filter((r) => r.outcome === 'sent')).toHaveLength(gen.valid.length);

    // A second campaign of that name: its original cannot take the name in done/, and the
    // fileId-prefixed name it gets instead still fits the file system.
    const again = personalizedFile(20, 37);
    await h.dropFile(name, again.content);
    const second = await h.waitForState(name, 'completed', {
      where: (f) => f.name === name && f.fileId !== m.fileId,
    });
    expect(second.path.startsWith(`done/${second.fileId}-`)).toBe(true);
    expect(Buffer.byteLength(second.path.slice('done/'.length))).toBeLessThanOrEqual(255);
    expect(await h.readDrop(second.path)).toBe(again.content);
  });

  it('a report written at pause or cancel is rewritten when the rows change again', async () => {
    // Delivery reports come a while after acceptance: they change the rows after the pause.
    h = await PipelineHarness.create({
      sandbox: { timeScale: 1, deliveryDelayMs: 1500 },
      api: { chunkSize: 50, concurrency: 1, ratePerSecond: 200 },
    });
    await h.start();
    const gen = personalizedFile(600, 35);
    await h.dropFile('pausa.txt', gen.content);
    const sending = await h.waitForState('pausa.txt', 'sending', {
      where: (m) => m.name === 'pausa.txt' && m.counts.chunksAccepted >= 1,
    });
    // The service answers 429 until the command is done: the file cannot finish meanwhile,
    // however long a busy machine takes to start the command.
    await h.faults({ massive: { '429': 1 } });
    const pause = await h.cli(['pause', sending.fileId]);
    expect(pause.code, pause.stderr).toBe(0);
    await h.faults({});
    const path = `reports/${reportFileName('pausa.txt', sending.fileId, 'report.csv')}`;
    // Once every delivery report of what was sent is in, the file on disk is the store's report.
    await h.waitIdle(sending.fileId);
    await waitFor(
      'the paused report to show every delivery',
      async () => {
        const m = await h!.waitIdle(sending.fileId);
        if (m.counts.pendingDelivery > 0) return false;
        return (await h!.readDrop(path)) === (await storeReport(h!, sending.fileId));
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );

    // Resumed: the paused report must not stay behind as the file's account.
    const resume = await h.cli(['resume', sending.fileId]);
    expect(resume.code, resume.stderr).toBe(0);
    const done = await h.waitForFile(sending.fileId, 'completed', { timeoutMs: 60_000 });
    expect(done.counts.submitted).toBe(gen.valid.length);
    expect(await h.readDrop(path)).toBe(await storeReport(h, sending.fileId));

    // Cancelled: delivery reports of the chunks sent before still arrive, and the report follows.
    const other = personalizedFile(600, 36);
    await h.dropFile('cancela.txt', other.content);
    const going = await h.waitForState('cancela.txt', 'sending', {
      where: (m) => m.name === 'cancela.txt' && m.counts.chunksAccepted >= 1,
    });
    await h.faults({ massive: { '429': 1 } });
    const cancel = await h.cli(['cancel', going.fileId]);
    expect(cancel.code, cancel.stderr).toBe(0);
    await h.faults({});
    const cpath = `reports/${reportFileName('cancela.txt', going.fileId, 'report.csv')}`;
    await waitFor(
      'the cancelled report to show every delivery',
      async () => {
        const m = await h!.waitIdle(going.fileId);
        if (m.counts.pendingDelivery > 0 || m.counts.delivered === 0) return false;
        return (await h!.readDrop(cpath)) === (await storeReport(h!, going.fileId));
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
  });
});
