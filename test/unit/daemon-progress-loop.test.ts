// The daemon's progress loop (src/app/progress-loop.ts): sending files checked, and a finished
// file's report.csv written again once its delivery reports settle, at most a minute late.
import { describe, expect, it } from 'vitest';
import { ProgressLoop, REPORT_MAX_WAIT_MS, REPORT_SETTLE_MS } from '../../src/app/progress-loop.ts';
import type { FileRecord } from '../../src/store/store.ts';

function harness(states: Record<string, string>) {
  const clock = { now: 0 };
  const calls: string[] = [];
  const owed: string[] = [];
  const loop = new ProgressLoop({
    store: {
      listFiles: async () =>
        Object.entries(states)
          .filter(([, s]) => s === 'submitted' || s === 'partial')
          .map(([fileId, state]) => ({ fileId, state }) as FileRecord),
      getFile: async (id: string) => (states[id] ? ({ fileId: id, state: states[id] } as FileRecord) : null),
      reportsDue: async () => owed.splice(0),
    } as never,
    work: {
      checkProgress: async (f) => {
        calls.push(`check ${f.fileId}`);
        return null;
      },
      rewriteReports: async (id) => calls.push(`rewrite ${id}`),
      writeOwedReports: async (id) => calls.push(`owed ${id}`),
    },
    now: () => clock.now,
  });
  return { loop, calls, clock, owed };
}

describe('ProgressLoop', () => {
  it('checks the files reports came for, and every sending file on a full round', async () => {
    const h = harness({ a: 'submitted', b: 'partial', c: 'sending' });
    h.loop.delivered(['a']);
    await h.loop.round(false);
    expect(h.calls).toEqual(['check a']);
    await h.loop.round(true);
    expect(h.calls).toEqual(['check a', 'check a', 'check b']);
  });

  it('rewrites a finished file report once its reports settle', async () => {
    const h = harness({ done: 'completed' });
    h.loop.delivered(['done']);
    await h.loop.round(false);
    expect(h.loop.reportsDue().get('done')).toEqual({ first: 0, due: REPORT_SETTLE_MS });
    h.clock.now = REPORT_SETTLE_MS - 1;
    await h.loop.round(false);
    expect(h.calls).toEqual([]);
    h.clock.now = REPORT_SETTLE_MS;
    await h.loop.round(false);
    expect(h.calls).toEqual(['rewrite done']);
    expect(h.loop.reportsDue().size).toBe(0);
  });

  it('a steady stream of reports pushes the rewrite back at most a minute after the first', async () => {
    const h = harness({ done: 'partial' });
    for (let t = 0; t < REPORT_MAX_WAIT_MS; t += 1000) {
      h.clock.now = t;
      h.loop.delivered(['done']);
      await h.loop.round(false);
    }
    expect(h.calls.filter((c) => c.startsWith('rewrite'))).toEqual([]);
    expect(h.loop.reportsDue().get('done')).toEqual({ first: 0, due: REPORT_MAX_WAIT_MS });
    h.clock.now = REPORT_MAX_WAIT_MS;
    await h.loop.round(false);
    expect(h.calls.filter((c) => c.startsWith('rewrite'))).toEqual(['rewrite done']);
  });

  it('writes the reports a source refused when the store says they are due', async () => {
    const h = harness({});
    h.owed.push('x', 'y');
    await h.loop.round(false);
    expect(h.calls).toEqual(['owed x', 'owed y']);
  });
});
