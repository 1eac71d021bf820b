// The PostgreSQL store's error kinds and its reading of timestamps: pure functions of what pg
// reports, so checked here with pg's error shapes (the store tests meet the real ones).
import { describe, expect, it } from 'vitest';
import { intArray, textArray } from '../../src/store/postgres/arrays.ts';
import { isoFromPg, storeError } from '../../src/store/postgres/connection.ts';

function pgError(code: string, message = `error ${code}`): Error {
  return Object.assign(new Error(message), { code });
}

describe('storeError', () => {
  it.each([
    ['ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'],
    ['ECONNRESET', 'read ECONNRESET'],
    ['57P01', 'terminating connection due to administrator command'],
    ['57P02', 'terminating connection due to crash of another server process'],
    ['57P03', 'the database system is starting up'],
    ['08006', 'connection failure'],
    ['08001', 'could not connect'],
  ])('%s is DROPLINE_ERR_STORE_UNAVAILABLE (retryable)', (code, message) => {
    const e = storeError(pgError(code, message), 'reading f1');
    expect(e.code).toBe('DROPLINE_ERR_STORE_UNAVAILABLE');
    expect(e.retryable).toBe(true);
    expect(e.message).toContain('reading f1');
  });

  it('a connection that ends without a code is unavailable too', () => {
    expect(storeError(new Error('Connection terminated unexpectedly'), 'x').code).toBe(
      'DROPLINE_ERR_STORE_UNAVAILABLE',
    );
  });

  it('a unique violation is DROPLINE_ERR_STORE_CONFLICT (not retryable); anything else DROPLINE_ERR_STORE', () => {
    const conflict = storeError(
      pgError('23505', 'duplicate key value violates unique constraint "files_pkey"'),
      'x',
    );
    expect([conflict.code, conflict.retryable]).toEqual(['DROPLINE_ERR_STORE_CONFLICT', false]);
    expect(storeError(pgError('42P01', 'relation "files" does not exist'), 'x').code).toBe(
      'DROPLINE_ERR_STORE',
    );
  });

  it('never repeats the password of a URL in its message', () => {
    const e = storeError(new Error('cannot reach postgres://app:s3cret@db.example:5432/dropline'), 'x');
    expect(e.message).not.toContain('s3cret');
    expect(e.message).toContain('postgres://app:***@db.example:5432/dropline');
  });
});

describe('isoFromPg', () => {
  it.each([
    ['2026-03-01 12:00:00+00', '2026-03-01T12:00:00.000Z'],
    ['2026-03-01 12:00:00.5+00', '2026-03-01T12:00:00.500Z'],
    ['2026-03-01 12:00:00.123456+00', '2026-03-01T12:00:00.123Z'],
    ['2026-03-01 23:59:59.99+00', '2026-03-01T23:59:59.990Z'],
  ])('%s → %s', (pgText, iso) => {
    expect(isoFromPg(pgText)).toBe(iso);
  });
});

describe('array literals', () => {
  it('quote every text and escape quotes and backslashes; NULL stays NULL', () => {
    expect(textArray(['a', 'say "hi"', 'back\\slash', null, '', 'NULL'])).toBe(
      '{"a","say \\"hi\\"","back\\\\slash",NULL,"","NULL"}',
    );
  });
  it('write integers as they are and refuse anything else', () => {
    expect(intArray([1, null, 4294967296])).toBe('{1,NULL,4294967296}');
    expect(() => intArray([1.5])).toThrow(RangeError);
  });
});
