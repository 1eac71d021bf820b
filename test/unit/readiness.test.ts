// Readiness (docs/sources.md "When is a file complete?", docs/format.md "Proving a file is complete:
// trailer") on fake time: the tracker sees listings, the test decides what time it is and what the
// probes answer.
import { describe, expect, it } from 'vitest';
import {
  markerMismatch,
  type ReadinessOptions,
  type ReadinessProbes,
  ReadinessTracker,
  tailHasTrailer,
} from '../../src/sources/readiness.ts';
import type { SourceEntry } from '../../src/sources/source.ts';

function entry(name: string, size: number, mtimeMs: number): SourceEntry {
  return { name, path: `inbox/${name}`, size, mtimeMs };
}

const NO_PROBES: ReadinessProbes = {
  hasMarker: async () => {
    throw new Error('hasMarker called');
  },
  hasTrailer: async () => {
    throw new Error('hasTrailer called');
  },
};

function tracker(options: Partial<ReadinessOptions> = {}): ReadinessTracker {
  return new ReadinessTracker({ mode: 'stable', stableMs: 2000, incompleteTimeoutMs: 60_000, ...options });
}

const names = (es: SourceEntry[]): string[] => es.map((e) => e.name);

describe('stable', () => {
  it('a file growing across observations is ready stableMs after it stops', async () => {
    const t = tracker();
    let ready: string[] = [];
    // Grows by 1 KB every 500 ms for 5 s.
    for (let now = 0; now <= 5000; now += 500) {
      const r = await t.observe([entry('a.txt', 1024 * (now / 500 + 1), now)], now, NO_PROBES);
      ready = ready.concat(names(r.ready));
    }
    expect(ready).toEqual([]);
    const final = entry('a.txt', 11 * 1024, 5000);
    expect(names((await t.observe([final], 5500, NO_PROBES)).ready)).toEqual([]);
    expect(names((await t.observe([final], 6500, NO_PROBES)).ready)).toEqual([]);
    // 5000 was the last change; 7000 is 5000 + stableMs.
    expect(names((await t.observe([final], 7000, NO_PROBES)).ready)).toEqual(['a.txt']);
    // Reported once.
    expect(names((await t.observe([final], 9000, NO_PROBES)).ready)).toEqual([]);
  });

  it('a writer pausing for less than stableMs is not ready during the pause', async () => {
    const t = tracker();
    const half = entry('a.txt', 500, 1000);
    expect((await t.observe([half], 1000, NO_PROBES)).ready).toEqual([]);
    expect((await t.observe([half], 2000, NO_PROBES)).ready).toEqual([]);
    expect((await t.observe([half], 2999, NO_PROBES)).ready).toEqual([]);
    // Writing resumes at 2500 and ends at 3000.
    const whole = entry('a.txt', 1000, 3000);
    expect((await t.observe([whole], 3000, NO_PROBES)).ready).toEqual([]);
    expect((await t.observe([whole], 4999, NO_PROBES)).ready).toEqual([]);
    expect(names((await t.observe([whole], 5000, NO_PROBES)).ready)).toEqual(['a.txt']);
  });

  it('an old mtime alone never makes a file ready (a Windows copy keeps the source mtime)', async () => {
    const t = tracker();
    const copied = entry('a.txt', 100, 0); // mtime far in the past
    expect((await t.observe([copied], 1_000_000, NO_PROBES)).ready).toEqual([]);
    expect(names((await t.observe([copied], 1_002_000, NO_PROBES)).ready)).toEqual(['a.txt']);
  });

  it('an mtime-only change restarts the clock', async () => {
    const t = tracker();
    await t.observe([entry('a.txt', 100, 10)], 0, NO_PROBES);
    await t.observe([entry('a.txt', 100, 10)], 1500, NO_PROBES);
    expect((await t.observe([entry('a.txt', 100, 1600)], 2000, NO_PROBES)).ready).toEqual([]);
    expect((await t.observe([entry('a.txt', 100, 1600)], 3999, NO_PROBES)).ready).toEqual([]);
    expect(names((await t.observe([entry('a.txt', 100, 1600)], 4000, NO_PROBES)).ready)).toEqual(['a.txt']);
  });

  it('an etag change restarts the clock (S3 overwrite with the same size)', async () => {
    const t = tracker();
    await t.observe([{ ...entry('a.txt', 100, 10), etag: '"1"' }], 0, NO_PROBES);
    expect((await t.observe([{ ...entry('a.txt', 100, 10), etag: '"2"' }], 2000, NO_PROBES)).ready).toEqual(
      [],
    );
    expect(
      names((await t.observe([{ ...entry('a.txt', 100, 10), etag: '"2"' }], 4000, NO_PROBES)).ready),
    ).toEqual(['a.txt']);
  });

  it('a file that is replaced after being reported is reported again once stable', async () => {
    const t = tracker();
    await t.observe([entry('a.txt', 1, 1)], 0, NO_PROBES);
    expect(names((await t.observe([entry('a.txt', 1, 1)], 2000, NO_PROBES)).ready)).toEqual(['a.txt']);
    expect((await t.observe([entry('a.txt', 2, 3000)], 3000, NO_PROBES)).ready).toEqual([]);
    expect(names((await t.observe([entry('a.txt', 2, 3000)], 5000, NO_PROBES)).ready)).toEqual(['a.txt']);
  });

  it('files are tracked independently and stable mode never times out', async () => {
    const t = tracker({ incompleteTimeoutMs: 1000 });
    await t.observe([entry('a.txt', 1, 1)], 0, NO_PROBES);
    const r = await t.observe([entry('a.txt', 2, 2), entry('b.txt', 1, 1)], 2000, NO_PROBES);
    expect(r).toEqual({ ready: [], timedOut: [] });
    const r2 = await t.observe([entry('a.txt', 2, 2), entry('b.txt', 1, 1)], 4000, NO_PROBES);
    expect(names(r2.ready).sort()).toEqual(['a.txt', 'b.txt']);
    expect(r2.timedOut).toEqual([]);
  });
});

describe('marker', () => {
  it('ready when <name>.done exists and the file was unchanged across two observations', async () => {
    const t = tracker({ mode: 'marker' });
    const markers = new Set<string>();
    const probes: ReadinessProbes = {
      hasMarker: async (e) => markers.has(`${e.path}.done`),
      hasTrailer: NO_PROBES.hasTrailer,
    };
    const a = entry('a.txt', 100, 5);
    expect((await t.observe([a], 0, probes)).ready).toEqual([]);
    expect((await t.observe([a], 100, probes)).ready).toEqual([]); // stable, no marker
    markers.add('inbox/a.txt.done');
    expect(names((await t.observe([a], 200, probes)).ready)).toEqual(['a.txt']);
    expect((await t.observe([a], 300, probes)).ready).toEqual([]);
  });

  it('a marker present at first sight still waits for a second unchanged observation', async () => {
    const t = tracker({ mode: 'marker', stableMs: 60_000 });
    const probes: ReadinessProbes = { hasMarker: async () => true, hasTrailer: NO_PROBES.hasTrailer };
    expect((await t.observe([entry('a.txt', 100, 5)], 0, probes)).ready).toEqual([]);
    // Changed since: still not ready.
    expect((await t.observe([entry('a.txt', 200, 6)], 10, probes)).ready).toEqual([]);
    // stableMs does not apply to markers: two equal observations suffice.
    expect(names((await t.observe([entry('a.txt', 200, 6)], 20, probes)).ready)).toEqual(['a.txt']);
  });

  it('a growing file is never probed', async () => {
    const t = tracker({ mode: 'marker' });
    for (let i = 1; i <= 5; i++) await t.observe([entry('a.txt', i, i)], i * 100, NO_PROBES);
  });

  it('times out once when no marker comes', async () => {
    const t = tracker({ mode: 'marker', incompleteTimeoutMs: 1000 });
    const probes: ReadinessProbes = { hasMarker: async () => false, hasTrailer: NO_PROBES.hasTrailer };
    const a = entry('a.txt', 1, 1);
    expect((await t.observe([a], 0, probes)).timedOut).toEqual([]);
    expect((await t.observe([a], 999, probes)).timedOut).toEqual([]);
    expect(names((await t.observe([a], 1000, probes)).timedOut)).toEqual(['a.txt']);
    expect((await t.observe([a], 5000, probes)).timedOut).toEqual([]);
  });

  it('a probe that throws counts as not yet, and is asked again', async () => {
    const t = tracker({ mode: 'marker' });
    let fail = true;
    const probes: ReadinessProbes = {
      hasMarker: async () => {
        if (fail) throw new Error('connection reset');
        return true;
      },
      hasTrailer: NO_PROBES.hasTrailer,
    };
    const a = entry('a.txt', 1, 1);
    await t.observe([a], 0, probes);
    expect((await t.observe([a], 1, probes)).ready).toEqual([]);
    fail = false;
    expect(names((await t.observe([a], 2, probes)).ready)).toEqual(['a.txt']);
  });
});

describe('trailer', () => {
  function tailProbes(tails: Map<string, string>, reads: string[] = []): ReadinessProbes {
    return {
      hasMarker: NO_PROBES.hasMarker,
      hasTrailer: async (e) => {
        reads.push(e.path);
        const tail = tails.get(e.path) ?? '';
        return tailHasTrailer(tail, 1024);
      },
    };
  }

  it('ready when the file ends with a trailer and was unchanged across two observations', async () => {
    const t = tracker({ mode: 'trailer' });
    const tails = new Map([['inbox/a.txt', '3001234567;hola\r\nEOF;1\r\n']]);
    const a = entry('a.txt', 30, 1);
    expect((await t.observe([a], 0, tailProbes(tails))).ready).toEqual([]);
    expect(names((await t.observe([a], 100, tailProbes(tails))).ready)).toEqual(['a.txt']);
  });

  it('an unchanged file without trailer is read once, then again only after it changes', async () => {
    const t = tracker({ mode: 'trailer' });
    const tails = new Map([['inbox/a.txt', '3001234567;hola\n']]);
    const reads: string[] = [];
    const p = tailProbes(tails, reads);
    await t.observe([entry('a.txt', 16, 1)], 0, p);
    await t.observe([entry('a.txt', 16, 1)], 100, p);
    await t.observe([entry('a.txt', 16, 1)], 200, p);
    expect(reads).toEqual(['inbox/a.txt']);
    tails.set('inbox/a.txt', '3001234567;hola\nEOF\n');
    await t.observe([entry('a.txt', 20, 2)], 300, p);
    expect(names((await t.observe([entry('a.txt', 20, 2)], 400, p)).ready)).toEqual(['a.txt']);
    expect(reads).toEqual(['inbox/a.txt', 'inbox/a.txt']);
  });

  it('times out once after incompleteTimeoutMs from first sight, even while it changes', async () => {
    const t = tracker({ mode: 'trailer', incompleteTimeoutMs: 10_000 });
    const p = tailProbes(new Map());
    const out: string[][] = [];
    for (let now = 0; now <= 20_000; now += 1000) {
      const size = now < 5000 ? now + 1 : 5001;
      out.push(names((await t.observe([entry('a.txt', size, size)], now, p)).timedOut));
    }
    expect(out.flat()).toEqual(['a.txt']);
    expect(out[10]).toEqual(['a.txt']);
  });

  it('a file ready at the time-out is ready, not timed out', async () => {
    const t = tracker({ mode: 'trailer', incompleteTimeoutMs: 100 });
    const p = tailProbes(new Map([['inbox/a.txt', 'EOF']]));
    await t.observe([entry('a.txt', 3, 1)], 0, p);
    expect(await t.observe([entry('a.txt', 3, 1)], 100, p)).toEqual({
      ready: [entry('a.txt', 3, 1)],
      timedOut: [],
    });
  });
});

describe('tailHasTrailer (docs/format.md "Proving a file is complete: trailer")', () => {
  it.each([
    'a;b\nEOF',
    'a;b\nEOF\n',
    'a;b\r\nEOF;3\r\n',
    'a;b\r\nEOF;3\r\n\r\n',
    'a;b\r\nEOF;3\r\n  \r\n\t\n',
    'a;b\neof\n',
    'a;b\nEoF;12\n',
    'a|b\nEOF|2\n',
    'a,b\nEOF,2',
    'a\tb\nEOF\t2\n',
    'a;b\rEOF;2\r',
    ' EOF ; 2 \n',
    'EOF',
  ])('%j has a trailer', (tail) => {
    expect(tailHasTrailer(tail, 1024)).toBe(true);
  });

  it.each([
    '',
    '\n\n',
    'a;b\n',
    'a;b\nEOF;x\n',
    'a;b\nEOF;3\nmore\n',
    'a;b\nEOF:3\n',
    'a;b\nEOFX\n',
    'a;b\n3001234567;EOF\n',
    'a;b\n# EOF\n',
  ])('%j has none', (tail) => {
    expect(tailHasTrailer(tail, 1024)).toBe(false);
  });

  it('UTF-16 files: the trailer read as latin1 has NULs between its letters', () => {
    const le = Buffer.from('\ufeffa;b\r\nEOF;1\r\n', 'utf16le').toString('latin1');
    expect(tailHasTrailer(le, 1024)).toBe(true);
    const be = Buffer.from('\ufeffa;b\r\nEOF;1\r\n', 'utf16le').swap16().toString('latin1');
    expect(tailHasTrailer(be, 1024)).toBe(true);
  });

  it('a cut first line of a full tail is not trusted (…xEOF is not EOF)', () => {
    expect(tailHasTrailer('EOF\n', 4)).toBe(false);
    expect(tailHasTrailer('EOF\n', 5)).toBe(true);
    expect(tailHasTrailer('x\nEOF\n', 6)).toBe(true);
  });
});

describe('forget and disappearing files', () => {
  it('forget makes a reported file count afresh', async () => {
    const t = tracker();
    const a = entry('a.txt', 1, 1);
    await t.observe([a], 0, NO_PROBES);
    expect(names((await t.observe([a], 2000, NO_PROBES)).ready)).toEqual(['a.txt']);
    t.forget('inbox/a.txt');
    expect((await t.observe([a], 3000, NO_PROBES)).ready).toEqual([]);
    expect(names((await t.observe([a], 5000, NO_PROBES)).ready)).toEqual(['a.txt']);
  });

  it('a file that leaves the listing is forgotten; coming back restarts its clock', async () => {
    const t = tracker();
    const a = entry('a.txt', 1, 1);
    await t.observe([a], 0, NO_PROBES);
    await t.observe([], 1000, NO_PROBES);
    expect((await t.observe([a], 2000, NO_PROBES)).ready).toEqual([]);
    expect(names((await t.observe([a], 4000, NO_PROBES)).ready)).toEqual(['a.txt']);
  });

  it('forgetting while probes run drops the result', async () => {
    const t = tracker({ mode: 'marker' });
    const a = entry('a.txt', 1, 1);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let asked!: () => void;
    const askedP = new Promise<void>((r) => (asked = r));
    const probes: ReadinessProbes = {
      hasMarker: async () => {
        asked();
        await gate;
        return true;
      },
      hasTrailer: NO_PROBES.hasTrailer,
    };
    await t.observe([a], 0, { hasMarker: async () => false, hasTrailer: NO_PROBES.hasTrailer });
    const pending = t.observe([a], 1, probes);
    await askedP;
    t.forget('inbox/a.txt');
    release();
    expect((await pending).ready).toEqual([]);
  });
});

describe('markerMismatch (a `.done` marker holding sha256=<hex>)', () => {
  const sha = 'ab'.repeat(32);

  it('a marker that declares nothing, or the same sha256 in any case and spacing, agrees', () => {
    for (const content of ['', 'ok\n', '2026-11-28T10:00:00Z', 'lines=10\n'])
      expect(markerMismatch(content, sha)).toBeNull();
    for (const content of [
      `sha256=${sha}`,
      `SHA256 = ${sha.toUpperCase()}\r\n`,
      `\uFEFFsha256=${sha}\n`,
      `lines=10\nsha256=${sha}\n`,
    ])
      expect(markerMismatch(content, sha)).toBeNull();
  });

  it('another sha256 or one that is not 64 hex digits is a mismatch, said with both values', () => {
    const other = 'cd'.repeat(32);
    expect(markerMismatch(`sha256=${other}\n`, sha)).toBe(
      `the marker says sha256=${other}, the file claimed has sha256=${sha}`,
    );
    expect(markerMismatch('sha256=\n', sha)).toMatch(/not 64 hexadecimal digits/);
    expect(markerMismatch(`sha256=${sha}0`, sha)).toMatch(/not 64 hexadecimal digits/);
    // The first sha256 line counts.
    expect(markerMismatch(`sha256=${other}\nsha256=${sha}\n`, sha)).not.toBeNull();
  });
});
