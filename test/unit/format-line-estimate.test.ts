// validate parses a file while it is sniffed, so the duplicate index is sized from the
// file's first bytes alone (estimateLines). That head may be unlike the rest of the file.
import { describe, expect, it } from 'vitest';
import { estimateLines } from '../../src/format/decode.ts';

const MB = 1024 * 1024;
const head = (line: string, bytes = 256 * 1024): Buffer =>
  Buffer.from(line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes));

describe('estimateLines: the recipients a file likely holds, from its head', () => {
  it('a file like its head: its lines in proportion (a 32 MB file of 32-byte lines: ~1M)', () => {
    const estimate = estimateLines(head('573001234567;Cliente 12;febrero\n'), 32 * MB);
    expect(estimate).toBeGreaterThanOrEqual(1_000_000);
    expect(estimate).toBeLessThan(1_150_000);
  });

  it('lines ending in CR alone (an old Mac export) are lines too', () => {
    const estimate = estimateLines(head('573001234567;Cliente 12;febrero\r'), 32 * MB);
    expect(estimate).toBeGreaterThanOrEqual(1_000_000);
    expect(estimate).toBeLessThan(1_150_000);
  });

  it('a whole file: its own lines, blank lines and comments not counted', () => {
    const whole = Buffer.from('# lista\n\n3001234567\n3001234568\n\r\n573001234569');
    expect(estimateLines(whole, whole.length)).toBe(3);
  });

  it('a head of blank lines and comments says nothing of the rest: no more than a line a few bytes', () => {
    // 256 KB of blank lines, then a 72 MB file: a head extrapolated as it is would size the
    // duplicate index for ~76 million recipients (827 MB of peak RSS for 4 million, measured).
    for (const line of ['\n', '\r\n', '#\n', '# comentario\n']) {
      const estimate = estimateLines(head(line), 72 * MB);
      expect(estimate, JSON.stringify(line)).toBeLessThanOrEqual(Math.ceil((72 * MB) / 8));
    }
    expect(estimateLines(head('\n'), 72 * MB)).toBe(0);
  });

  it('never more than one recipient a number of seven digits and its line break', () => {
    expect(estimateLines(head('3001234\n'), 72 * MB)).toBeLessThanOrEqual(Math.ceil((72 * MB) / 8));
    expect(estimateLines(head('1\n2\n'), 72 * MB)).toBeLessThanOrEqual(Math.ceil((72 * MB) / 8));
  });
});
