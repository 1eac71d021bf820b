// Issue 32 item 8: the notify port's connection cap within the process's open-files limit.
import { describe, expect, it } from 'vitest';
import { connectionCap, openFilesLimit, othersShare } from '../../src/notify/fd-budget.ts';

const DEFAULT = { maxConnections: 512, reserve: 64 };

describe('connectionCap', () => {
  it('keeps the configured cap where the limit has room for it and for the rest', () => {
    expect(connectionCap(1024, DEFAULT)).toEqual(DEFAULT);
    expect(connectionCap(65_536, DEFAULT)).toEqual(DEFAULT);
    expect(connectionCap(null, DEFAULT)).toEqual(DEFAULT);
    expect(connectionCap(400, { maxConnections: 4, reserve: 2 })).toEqual({ maxConnections: 4, reserve: 2 });
  });

  it('under a low limit, cap and reserve share what the store, sources and ops server leave', () => {
    for (const limit of [256, 400, 512, 700]) {
      const cap = connectionCap(limit, DEFAULT);
      expect(cap.maxConnections + cap.reserve + othersShare(limit)).toBeLessThanOrEqual(limit);
      expect(cap.reserve).toBeGreaterThan(0);
      expect(cap.maxConnections).toBeGreaterThan(cap.reserve);
    }
    expect(connectionCap(400, DEFAULT)).toEqual({ maxConnections: 242, reserve: 30 });
  });

  it('never goes below a few connections, whatever the limit', () => {
    expect(connectionCap(64, DEFAULT).maxConnections).toBe(8);
  });
});

describe('openFilesLimit', () => {
  const limits = (soft: string, hard: string) =>
    `Limit                     Soft Limit           Hard Limit           Units     \nMax processes             63494                63494                processes \nMax open files            ${soft.padEnd(21)}${hard.padEnd(21)}files     \n`;

  it('reads the soft limit of /proc/self/limits', () => {
    expect(openFilesLimit(() => limits('400', '4096'))).toBe(400);
    expect(openFilesLimit(() => limits('unlimited', 'unlimited'))).toBeNull();
  });

  it('is null where there is no /proc (the configured cap stands)', () => {
    expect(
      openFilesLimit(() => {
        throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
      }),
    ).toBeNull();
    expect(openFilesLimit(() => '')).toBeNull();
  });

  it('reads this process’s own limit on Linux', () => {
    if (process.platform === 'linux') expect(openFilesLimit()).toBeGreaterThan(0);
  });
});
