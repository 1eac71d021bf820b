// Issue 33: the dashboard words every code the server sends in both languages. Like
// errors-doc.test.ts for docs/errors.md, this fails when a code of src/errors.ts (or a state
// detail, or a reason code of src/ops/wording.ts) has no Spanish or English text.
import { describe, expect, it } from 'vitest';
import { ERRORS, REASONS, STATE_DETAILS } from '../../src/errors.ts';
import { englishTexts, REASON_CODES, reasonOf, rejectionParams } from '../../src/ops/wording.ts';
import { CODES_ES as codesEs, TEXTS as LANGUAGES } from '../helpers/dashboard-texts.ts';

const codes = [...Object.keys(REASONS), ...Object.keys(ERRORS)];
const { en, es } = LANGUAGES as Record<'en' | 'es', Record<string, string>>;
const spanish = codesEs as Record<string, { message?: string; hint?: string }>;

describe('the dashboard’s texts', () => {
  it('every code of src/errors.ts has its meaning and what to do, in Spanish and in English', () => {
    const english = englishTexts();
    expect(codes.filter((c) => !spanish[c]?.message || !spanish[c]?.hint)).toEqual([]);
    expect(codes.filter((c) => !english[c]?.message || !english[c]?.hint)).toEqual([]);
    // No Spanish for a code that is gone (a renamed code would leave its text behind).
    expect(Object.keys(spanish).filter((c) => !codes.includes(c))).toEqual([]);
  });

  it('every state detail and reason code has a text in both languages', () => {
    const keys = [
      ...Object.keys(STATE_DETAILS).map((c) => `detail.${c}`),
      ...REASON_CODES.map((c) => `reason.${c}`),
    ];
    expect(keys.filter((k) => !en[k] || !es[k])).toEqual([]);
  });

  it('Spanish has every text English has', () => {
    expect(Object.keys(en).filter((k) => !es[k])).toEqual([]);
  });

  it('reads the stored reasons back into codes with their parameters', () => {
    expect(reasonOf('paused', 'paused from the dashboard', null)).toEqual({
      code: 'PAUSED_BY_DASHBOARD',
      params: {},
    });
    expect(reasonOf('cancelled', 'cancelled by a user', null)).toEqual({
      code: 'CANCELLED_BY_USER',
      params: {},
    });
    expect(
      reasonOf('partial', '2 chunk(s) failed, 1 in doubt: dropline retry abc resends them', null),
    ).toEqual({ code: 'PARTIAL', params: { failed: 2, inDoubt: 1 } });
    expect(
      reasonOf('scheduled', 'outside the send window: starts 2026-12-01 09:00 (America/Bogota)', null),
    ).toEqual({ code: 'SCHEDULED_WINDOW', params: { at: '2026-12-01 09:00', zone: 'America/Bogota' } });
    const rejection = {
      code: 'TOO_MANY_INVALID',
      message: '3 of 3 recipients are invalid (100.0%, the limit is 20.0%)',
    };
    expect(reasonOf('rejected', rejection.message, rejection)).toEqual({
      code: 'TOO_MANY_INVALID',
      params: { invalid: 3, judged: 3, percent: 100, limit: 20 },
    });
    expect(rejectionParams('BAD_DIRECTIVE', 'line 4: `#! foo:` is unknown')).toEqual({ line: 4 });
  });
});
