// Issue 10 item 2: a file changed after its claim (truncated, overwritten, appended in
// processing/) is never sent as if it were the claimed one. The real daemon, the real store
// and the sandbox's ledger: nothing of content that was not claimed reaches the service,
// and the manifest says what happened.
import { createHash } from 'node:crypto';
import { mkdir, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportFileName } from '../../src/pipeline/reports.ts';
import { fileIdFor } from '../../src/plan/ids.ts';
import { openStore } from '../../src/store/index.ts';
import { PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

const sha256 = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

/** A personalized file of `n` recipients whose numbers start at `from` (distinct per file). */
function campaign(from: number, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++)
    s += `57300${String(from + i).padStart(7, '0')};Hola cliente ${from + i}, su pedido va en camino\n`;
  return s;
}

const FINAL = ['rejected', 'submitted', 'completed', 'partial'];

describe('a file changed after its claim', () => {
  let h: PipelineHarness;

  beforeAll(async () => {
    h = await PipelineHarness.create();
    for (const f of ['inbox', 'processing', 'done', 'failed', 'reports'])
      await mkdir(join(h.drop, f), { recursive: true });
  });

  afterAll(async () => {
    await h?.close();
  });

  it('truncated, overwritten or appended in processing/ before it is read: rejected FILE_CHANGED, nothing sent', async () => {
    const N = 1500;
    const files = {
      'cut.txt': { from: 0, change: (c: string) => c.slice(0, Math.floor(c.length / 3)) }, // ends mid-text
      'other.txt': { from: 10_000, change: (c: string) => c.replaceAll(';Hola', ';HOLA') }, // same size
      'more.txt': { from: 20_000, change: (c: string) => c + campaign(90_000, 10) },
      'same.txt': { from: 30_000, change: (c: string) => c }, // the control: sent whole
    };
    // Claimed by an earlier run (the record points at processing/), then changed there
    // before any worker read it.
    const store = await openStore(`sqlite:${join(h.dir, 'state.db')}`);
    await store.migrate();
    const ids: Record<string, string> = {};
    const claimed: Record<string, string> = {};
    try {
      for (const [name, { from, change }] of Object.entries(files)) {
        const content = campaign(from, N);
        claimed[name] = content;
        const [c] = await store.claimFiles(
          'local',
          [{ name, path: `processing/${name}`, sha256: sha256(content), bytes: Buffer.byteLength(content) }],
          { idFor: (sha, g) => fileIdFor('local', sha, g), duplicateSince: new Date().toISOString() },
        );
        ids[name] = c!.file.fileId;
        const changed = change(content);
        expect(changed === content).toBe(name === 'same.txt');
        await writeFile(join(h.drop, 'processing', name), changed);
      }
    } finally {
      await store.close();
    }
    await h.start();

    for (const name of Object.keys(files)) {
      const m = await h.waitForFile(ids[name]!, FINAL);
      const content = claimed[name]!;
      // The manifest keeps what was claimed, and says why nothing was sent.
      expect(m.sha256).toBe(sha256(content));
      expect(m.bytes).toBe(Buffer.byteLength(content));
      const ledger = await h.ledger(ids[name]);
      if (name === 'same.txt') {
        expect(m.state).not.toBe('rejected');
        expect(ledger.entries.length).toBe(N);
        const sent = new Set(ledger.entries.map((e) => `${e.to};${e.text}`));
        expect(sent).toEqual(new Set(content.trimEnd().split('\n')));
        continue;
      }
      expect({ name, state: m.state, code: m.rejection?.code }).toEqual({
        name,
        state: 'rejected',
        code: 'FILE_CHANGED',
      });
      expect(ledger.entries).toEqual([]);
      expect(m.counts).toMatchObject({ records: 0, valid: 0, invalid: 0, duplicates: 0, suppressed: 0 });
      // The original is in failed/ with an errors.csv saying why, and a log line says it too.
      // The state is rejected before the file is moved and its errors.csv written: waited for.
      const errorsCsv = await waitFor(`${name}'s errors.csv`, () =>
        h.readDrop(`failed/${reportFileName(name, ids[name]!, 'errors.csv')}`),
      );
      expect(errorsCsv).toContain('FILE_CHANGED');
      await stat(join(h.drop, 'failed', name));
      expect(h.daemonOutput).toContain(`${name} rejected FILE_CHANGED`);
    }
  }, 90_000);

  it('truncated while it is being read: either every claimed recipient is sent or none, never a part', async () => {
    const N = 150_000;
    const name = 'big.txt';
    const content = campaign(1_000_000, N);
    const fileId = fileIdFor('local', sha256(content));
    await h.dropFile(name, content);
    const inProcessing = join(h.drop, 'processing', name);
    await waitFor(
      'big.txt in processing/',
      async () => (await stat(inProcessing).catch(() => null)) !== null,
      { timeoutMs: 30_000, intervalMs: 2 },
    );
    // Cut inside a text, the way a partner's re-upload or a clean-up script cuts it.
    await truncate(inProcessing, Math.floor(Buffer.byteLength(content) * 0.4) + 7);
    const m = await h.waitForFile(fileId, FINAL, { timeoutMs: 90_000 });
    await h.waitIdle(fileId);
    const ledger = await h.ledger(fileId);
    const claimedLines = new Set(content.trimEnd().split('\n'));
    // Nothing that is not a claimed line was ever sent.
    expect(ledger.entries.filter((e) => !claimedLines.has(`${e.to};${e.text}`))).toEqual([]);
    if (m.state === 'rejected') {
      expect(m.rejection?.code).toBe('FILE_CHANGED');
      expect(ledger.entries).toEqual([]);
    } else {
      // The read was over before the cut: the claimed content, whole.
      expect(ledger.entries.length).toBe(N);
    }
  }, 150_000);
});
