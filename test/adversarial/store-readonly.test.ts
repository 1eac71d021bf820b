// Issue 10 item 11: a store dropline cannot write is not "ready". `/readyz` probes a real
// write (and the free space of the store's file system); a store that is read-only when
// `dropline run` starts stops it at once with DROPLINE_ERR_STORE_READONLY. We run as root,
// so file modes stop nothing: the store sits on its own tmpfs, remounted read-only or filled.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;
let mounted: string | null = null;

function mount(dir: string, size: string): void {
  mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir]);
  mounted = dir;
}

function remount(mode: 'ro' | 'rw'): void {
  execFileSync('mount', ['-o', `remount,${mode}`, mounted!]);
}

/** Whether this test may mount file systems (root in a container that allows it). */
function canMount(): boolean {
  if (process.getuid?.() !== 0) return false;
  const probe = join('/tmp', `dropline-mount-probe-${process.pid}`);
  try {
    mkdirSync(probe, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { stdio: 'ignore' });
    execFileSync('umount', [probe]);
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

afterEach(async () => {
  await h?.close();
  h = null;
  if (mounted) {
    execFileSync('umount', ['-l', mounted]);
    rmSync(mounted, { recursive: true, force: true });
    mounted = null;
  }
});

async function readyz(
  harness: PipelineHarness,
): Promise<{ status: number; body: { checks: Record<string, string> } }> {
  const r = await harness.opsGet('/readyz');
  return r as { status: number; body: { checks: Record<string, string> } };
}

describe.skipIf(!canMount())('a store dropline cannot write', () => {
  it('read-only at start: dropline run exits non-zero at once with DROPLINE_ERR_STORE_READONLY', async () => {
    const store = mkdtempSync(join(tmpdir(), 'dropline-ro-'));
    mount(store, '16m');
    h = await PipelineHarness.create({ config: { store: `sqlite:${join(store, 'state.db')}` } });
    // The store exists and is migrated, then its file system goes read-only.
    const made = await h.cli(['status']);
    expect(made.code, made.stderr).toBe(0);
    remount('ro');
    const r = await h.cli(['run'], { timeoutMs: 20_000 });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('DROPLINE_ERR_STORE_READONLY');
  });

  it('made read-only while running (chattr +i): /readyz answers 503 naming the store, then 200', async () => {
    // On the ext4 temp dir: a remount would be refused while the files are open for writing,
    // and immutable files stop root's writes too.
    h = await PipelineHarness.create();
    await h.start();
    expect((await readyz(h)).status).toBe(200);
    // Not the -shm: SQLite writes it through a shared mapping, and an immutable one is SIGBUS.
    const files = ['state.db', 'state.db-wal'].map((f) => join(h!.dir, f));
    execFileSync('chattr', ['+i', ...files]);
    try {
      const ro = await waitFor('readyz 503 on a read-only store', async () => {
        const r = await readyz(h!);
        return r.status === 503 ? r : undefined;
      });
      expect(ro.body.checks.store).toContain('cannot be written');
    } finally {
      execFileSync('chattr', ['-i', ...files]);
    }
    await waitFor('readyz 200 again', async () => (await readyz(h!)).status === 200);
  });

  it('an immutable state.db at start: dropline run exits non-zero with DROPLINE_ERR_STORE_READONLY', async () => {
    h = await PipelineHarness.create();
    const made = await h.cli(['status']);
    expect(made.code, made.stderr).toBe(0);
    const db = join(h.dir, 'state.db');
    execFileSync('chattr', ['+i', db]);
    try {
      const r = await h.cli(['run'], { timeoutMs: 20_000 });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('DROPLINE_ERR_STORE_READONLY');
    } finally {
      execFileSync('chattr', ['-i', db]);
    }
  });

  it('full while running (a tmpfs filled): /readyz answers 503 naming the space, then 200', async () => {
    const store = mkdtempSync(join(tmpdir(), 'dropline-full-'));
    mount(store, '24m');
    h = await PipelineHarness.create({ config: { store: `sqlite:${join(store, 'state.db')}` } });
    await h.start();
    expect((await readyz(h)).status).toBe(200);
    const filler = join(store, 'filler');
    const fd = openSync(filler, 'w');
    const block = Buffer.alloc(1024 * 1024, 1);
    try {
      for (;;) writeSync(fd, block);
    } catch {
      // ENOSPC: the file system is full.
    } finally {
      closeSync(fd);
    }
    const full = await waitFor('readyz 503 on a full store', async () => {
      const r = await readyz(h!);
      return r.status === 503 ? r : undefined;
    });
    expect(full.body.checks.store).toMatch(/full|space/i);
    rmSync(filler);
    await waitFor('readyz 200 once space is back', async () => (await readyz(h!)).status === 200);
  });
});
