// RepeatGate (src/log.ts): a failure that repeats is one log line a while, with the count of
// the ones held back; a new message is logged at once; the end of a failure can be told.
import { describe, expect, it } from 'vitest';
import { RepeatGate } from '../../src/log.ts';

describe('RepeatGate', () => {
  it('logs the first, holds back repeats for the interval, then logs with the count', () => {
    const gate = new RepeatGate(60_000);
    expect(gate.pass('list:a', 'ENOTDIR', 0)).toEqual({ log: true, repeated: 0 });
    for (let t = 1000; t < 60_000; t += 1000) expect(gate.pass('list:a', 'ENOTDIR', t).log).toBe(false);
    expect(gate.pass('list:a', 'ENOTDIR', 60_000)).toEqual({ log: true, repeated: 59 });
  });

  it('a different message or key is logged at once', () => {
    const gate = new RepeatGate(60_000);
    gate.pass('list:a', 'ENOTDIR', 0);
    expect(gate.pass('list:a', 'ENOENT', 1).log).toBe(true);
    expect(gate.pass('list:b', 'ENOENT', 2).log).toBe(true);
  });

  it('clear says whether a failure was logged, and the next one is logged again', () => {
    const gate = new RepeatGate(60_000);
    expect(gate.clear('list:a')).toBe(false);
    gate.pass('list:a', 'ENOTDIR', 0);
    expect(gate.clear('list:a')).toBe(true);
    expect(gate.pass('list:a', 'ENOTDIR', 1).log).toBe(true);
  });
});
