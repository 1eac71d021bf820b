// chokidar wakes the pipeline early when the inbox changes (the periodic rescan stays the
// truth). Every wait is for the callback, bounded, never a guessed sleep.
import { mkdtemp, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalSource } from '../../src/sources/local-source.ts';

const WAKE_WITHIN_MS = 5000;

/** Counts wake-ups and lets a test wait for the next one. */
function wakeups() {
  let count = 0;
  let waiters: (() => void)[] = [];
  return {
    onChange: (): void => {
      count++;
      const w = waiters;
      waiters = [];
      for (const f of w) f();
    },
    get count(): number {
      return count;
    },
    next(what: string, withinMs = WAKE_WITHIN_MS): Promise<void> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no wake-up within ${withinMs} ms after ${what}`)),
          withinMs,
        );
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

/**
 * Source.watch has no "ready" signal, and chokidar folds changes made during its initial
 * scan into that scan: prove the watcher live by probe files until one wakes it.
 */
async function untilLive(inbox: string, w: ReturnType<typeof wakeups>): Promise<void> {
  const deadline = Date.now() + WAKE_WITHIN_MS;
  for (let i = 0; Date.now() < deadline; i++) {
    const woke = w.next('probe', 250).then(
      () => true,
      () => false,
    );
    await writeFile(join(inbox, `.probe-${i}`), 'x');
    if (await woke) return;
  }
  throw new Error('watcher never became live');
}

describe('LocalSource.watch', () => {
  let root: string;
  let inbox: string;
  let source: LocalSource;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'dropline-watch-'));
    source = new LocalSource({ name: 'local', path: root });
    await source.start();
    inbox = join(root, 'inbox');
  });

  afterEach(async () => {
    await source.close();
    await rm(root, { recursive: true, force: true });
  });

  it('wakes on add, change, a rename into the inbox, a marker, and unlink', async () => {
    const w = wakeups();
    const stop = source.watch(w.onChange);
    try {
      await untilLive(inbox, w);

      let woke = w.next('add');
      await writeFile(join(inbox, 'a.txt'), '3001234567;hola\n');
      await woke;

      woke = w.next('change');
      await writeFile(join(inbox, 'a.txt'), '3001234567;hola\n3001234568;hola\n');
      await woke;

      // SFTP clients upload to a temporary name and rename it into place.
      await writeFile(join(inbox, 'b.txt.filepart'), 'x');
      woke = w.next('rename');
      await rename(join(inbox, 'b.txt.filepart'), join(inbox, 'b.txt'));
      await woke;

      woke = w.next('marker');
      await writeFile(join(inbox, 'a.txt.done'), '');
      await woke;

      woke = w.next('unlink');
      await unlink(join(inbox, 'a.txt'));
      await woke;
    } finally {
      stop();
    }
  });

  it('coalesces a burst into few wake-ups', async () => {
    const w = wakeups();
    const stop = source.watch(w.onChange);
    try {
      await untilLive(inbox, w);
      const before = w.count;
      const woke = w.next('burst');
      await Promise.all(Array.from({ length: 50 }, (_, i) => writeFile(join(inbox, `f${i}.txt`), 'x')));
      await woke;
      // Wait for the burst's events to drain: one more file, written after, must wake us.
      const last = w.next('after burst');
      await writeFile(join(inbox, 'last.txt'), 'x');
      await last;
      expect(w.count - before).toBeLessThan(50);
    } finally {
      stop();
    }
  });

  it('stops waking after stop()', async () => {
    const w = wakeups();
    const stop = source.watch(w.onChange);
    await untilLive(inbox, w);
    stop();
    const afterStop = w.count;
    // A second watcher is the witness that the event did happen.
    const witness = wakeups();
    const stop2 = source.watch(witness.onChange);
    try {
      await untilLive(inbox, witness);
      const woke = witness.next('add after stop');
      await writeFile(join(inbox, 'late.txt'), 'x');
      await woke;
      expect(w.count).toBe(afterStop);
    } finally {
      stop2();
    }
  });
});
