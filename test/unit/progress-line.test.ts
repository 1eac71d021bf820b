// The progress line of `send` on a terminal (issue 10 item 24): one line that fits 80
// columns whatever the file's name and size, with percentage, rate and ETA while sending
// and while delivery reports arrive.
import { describe, expect, it } from 'vitest';
import { ProgressMeter } from '../../src/cli/commands/progress.ts';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { NOTHING_SENT } from '../../src/store/store.ts';

function manifest(state: string, counts: Partial<Manifest['counts']>, name = 'campaign.txt'): Manifest {
  return {
    name,
    state,
    counts: {
      records: 0,
      valid: 0,
      invalid: 0,
      duplicates: 0,
      suppressed: 0,
      segments: 0,
      ...NOTHING_SENT,
      possibleDuplicates: 0,
      ...counts,
    },
  } as unknown as Manifest;
}

describe('ProgressMeter', () => {
  it('fits 80 columns with a long name and a million recipients', () => {
    const meter = new ProgressMeter();
    const name = `${'campaña-de-fin-de-año-clientes-premium-'.repeat(4)}.txt`;
    const total = 1_234_567;
    for (const [t, done] of [
      [0, 0],
      [1000, 300_000],
      [2000, 600_000],
    ] as const) {
      const line = meter.line(manifest('sending', { valid: total, submitted: done }, name), t);
      expect([...line].length).toBeLessThanOrEqual(79);
    }
    const last = meter.line(manifest('sending', { valid: total, submitted: 900_000 }, name), 3000);
    expect(last).toMatch(/72%/);
    expect(last).toMatch(/300,000\/s/);
    expect(last).toMatch(/ETA 0:02/);
    expect(last).toMatch(/^campa/);
  });

  it('moves while delivery reports arrive', () => {
    const meter = new ProgressMeter();
    const a = meter.line(manifest('submitted', { valid: 10_000, submitted: 10_000, delivered: 1000 }), 0);
    const b = meter.line(
      manifest('submitted', { valid: 10_000, submitted: 10_000, delivered: 5000, undelivered: 1000 }),
      2000,
    );
    expect(a).toMatch(/10%/);
    expect(b).toMatch(/60%/);
    expect(b).toMatch(/2,500\/s/);
    expect(b).toMatch(/ETA 0:02/);
    expect(b).not.toBe(a);
  });

  it('shows records read while validating', () => {
    const meter = new ProgressMeter();
    meter.reading('big.txt', 0, 0);
    const line = meter.reading('big.txt', 250_000, 5000);
    expect(line).toMatch(/validating/);
    expect(line).toMatch(/250,000 records/);
    expect(line).toMatch(/50,000\/s/);
  });

  it('a narrower terminal cuts to its width', () => {
    const meter = new ProgressMeter(40);
    const line = meter.line(manifest('sending', { valid: 1_000_000, submitted: 10 }, 'x'.repeat(60)), 0);
    expect([...line].length).toBeLessThanOrEqual(39);
  });
});
