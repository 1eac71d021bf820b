// Issue 10 item 1, end to end: the daemon's store on a small tmpfs that fills while a file is
// being read, then is freed; three more files follow. Every file's report lists exactly its
// own recipients, and the service's ledger shows each of them sent once, none of another's.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  csvRecords,
  type GeneratedFile,
  PipelineHarness,
  personalizedFile,
  waitFor,
} from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;
let mnt = '';
let mounted = false;

beforeAll(() => {
  mnt = mkdtempSync(join(tmpdir(), 'dropline-store-tmpfs-'));
  // Fails loudly when the mount is impossible: this test is not skipped. Room enough, once
  // the filler is gone, for the store and a WAL that may grow to twice its size while
  // readers hold back checkpoints (48 MiB filled up again on a slower CI machine).
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=128m', 'tmpfs', mnt]);
  mounted = true;
});

afterAll(async () => {
  await h?.close();
  if (mounted) execFileSync('umount', ['-l', mnt]);
  rmSync(mnt, { recursive: true, force: true });
});

describe('the daemon’s store fills up mid-ingest', () => {
  it('after space is back, every file is sent whole, once, and reports only its own recipients', async () => {
    h = await PipelineHarness.create({
      api: { chunkSize: 200 },
      config: { store: `sqlite:${join(mnt, 'state.db')}` },
    });
    await h.start();
    const filler = join(mnt, 'filler');
    const gens: Record<string, GeneratedFile> = {};

    // The disk is full when the first file's recipients are written: 1 MiB is left, enough to
    // claim it, not for its 30,000 recipients.
    execFileSync('sh', [
      '-c',
      `dd if=/dev/zero of="${filler}" bs=64k 2>/dev/null; truncate -s -1M "${filler}"`,
    ]);
    gens['lleno.txt'] = personalizedFile(30_000, 51);
    await h.dropFile('lleno.txt', gens['lleno.txt'].content);
    await waitFor(
      'the store to be full while recording recipients',
      () => /disk is full.*insertRecipients/.test(h!.daemonOutput),
      {
        timeoutMs: 30_000,
      },
    );
    rmSync(filler);

    for (const [i, name] of ['dos.txt', 'tres.txt', 'cuatro.txt'].entries()) {
      gens[name] = personalizedFile(3000, 52 + i);
      await h.dropFile(name, gens[name].content);
    }
    for (const [name, gen] of Object.entries(gens)) {
      const m = await h.waitForState(name, 'completed', { timeoutMs: 90_000 });
      const sent = csvRecords(await h.readReport(m)).filter((r) => r.outcome === 'sent');
      expect(sent.map((r) => r.number).sort(), name).toEqual(gen.valid.map((v) => v.to).sort());
      const ledger = await h.ledger(m.fileId);
      expect(ledger.entries.map((e) => e.to).sort(), name).toEqual(gen.valid.map((v) => v.to).sort());
      expect(
        ledger.entries.every((e) => e.count === 1),
        `${name} sent once`,
      ).toBe(true);
    }
    // Nothing was sent twice, and nothing but these files was sent.
    const all = await h.ledger();
    expect(all.duplicates).toBe(0);
    expect(all.entries.length).toBe(Object.values(gens).reduce((n, g) => n + g.valid.length, 0));
  }, 180_000);
});
