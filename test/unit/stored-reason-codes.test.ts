// Issue 34: a file's reason is stored as a code and its parameters where it is made
// (STATE_REASONS, a rejection's code), so the dashboard words it without reading English back.
// Every code the pipeline stores must have its English (the manifest's `reason`) and the
// page's English and Spanish, whose placeholders name only parameters the code is stored with;
// and an older store's English, read back by src/ops/wording.ts, must give the same code.
import { describe, expect, it } from 'vitest';
import {
  type CodedText,
  REASONS,
  rejectionReason,
  STATE_REASONS,
  type StateReasonCode,
  stateReason,
} from '../../src/errors.ts';
import { REASON_CODES, reasonOf, rejectionParams } from '../../src/ops/wording.ts';
import { tooLarge } from '../../src/pipeline/ingest.ts';
import { claimVerdict } from '../../src/store/lifecycle.ts';
import type { FileRecord } from '../../src/store/store.ts';
import { CODES_ES, TEXTS } from '../helpers/dashboard-texts.ts';

const { en, es } = TEXTS as Record<'en' | 'es', Record<string, string>>;

/** Each stored code as the pipeline stores it: the state it comes with, and its parameters. */
const STORED: Record<StateReasonCode, { state: string; reason: { reason: string; reasonCode: CodedText } }> =
  {
    PAUSED_BY_DASHBOARD: { state: 'paused', reason: stateReason('PAUSED_BY_DASHBOARD') },
    PAUSED_BY_USER: { state: 'paused', reason: stateReason('PAUSED_BY_USER') },
    RESUMED_BY_DASHBOARD: { state: 'sending', reason: stateReason('RESUMED_BY_DASHBOARD') },
    RESUMED_BY_USER: { state: 'sending', reason: stateReason('RESUMED_BY_USER') },
    CANCELLED_BY_DASHBOARD: { state: 'cancelled', reason: stateReason('CANCELLED_BY_DASHBOARD') },
    CANCELLED_BY_USER: { state: 'cancelled', reason: stateReason('CANCELLED_BY_USER') },
    SCHEDULED_WINDOW: {
      state: 'scheduled',
      reason: stateReason('SCHEDULED_WINDOW', { at: '2026-12-01 09:00', zone: 'America/Bogota' }),
    },
    SCHEDULED_SEND_AT: {
      state: 'scheduled',
      reason: stateReason('SCHEDULED_SEND_AT', { at: '2026-12-01 09:00', zone: 'Europe/Madrid' }),
    },
    WINDOW_NEVER_OPENS: { state: 'scheduled', reason: stateReason('WINDOW_NEVER_OPENS') },
    PARTIAL: { state: 'partial', reason: stateReason('PARTIAL', { failed: 2, inDoubt: 1 }, 'f-abc') },
    ACCOUNT_REFUSED: {
      state: 'paused',
      reason: stateReason('ACCOUNT_REFUSED', { text: 'invalid credentials (401)' }),
    },
  };

/** The `{name}` placeholders of a text. */
const placeholders = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);

describe('the reason codes the store keeps', () => {
  it('every code of STATE_REASONS is stored by the pipeline with its English', () => {
    expect(Object.keys(STORED).sort()).toEqual(Object.keys(STATE_REASONS).sort());
    for (const { reason } of Object.values(STORED)) expect(reason.reason).not.toBe('');
    expect(STORED.PARTIAL.reason.reason).toBe(
      '2 chunk(s) failed, 1 in doubt: dropline retry f-abc resends them',
    );
    // The command's file id is the English's, not a parameter the page words.
    expect(STORED.PARTIAL.reason.reasonCode).toEqual({ code: 'PARTIAL', params: { failed: 2, inDoubt: 1 } });
  });

  it('every stored code has its English and Spanish text, naming only its parameters', () => {
    for (const [code, { reason }] of Object.entries(STORED)) {
      expect(REASON_CODES).toContain(code);
      for (const language of [en, es]) {
        const text = language[`reason.${code}`];
        expect(text, `reason.${code}`).toBeTruthy();
        expect(
          placeholders(text!).filter((p) => !(p in reason.reasonCode.params)),
          code,
        ).toEqual([]);
      }
    }
  });

  it("an older store's English reads back into the same code and parameters", () => {
    for (const [code, { state, reason }] of Object.entries(STORED))
      expect(reasonOf(state, reason.reason, null), code).toEqual(reason.reasonCode);
  });

  it("a rejection's code is a REASONS code with its Spanish and English, its parameters the page's", () => {
    const rejectionCodes = Object.entries(REASONS)
      .filter(([, info]) => info.scope === 'file')
      .map(([code]) => code);
    for (const code of rejectionCodes) {
      expect(CODES_ES[code]?.message, code).toBeTruthy();
      expect(REASONS[code as keyof typeof REASONS].message, code).toBeTruthy();
    }
    // The parameters the claim stores with DUPLICATE_FILE (the store's own rejection).
    const earlier = { fileId: 'f-1', name: 'aviso.txt', state: 'sending' } as FileRecord;
    const verdict = claimVerdict(earlier);
    const stored = rejectionReason({
      code: verdict.rejectionCode!,
      message: verdict.message!,
      params: JSON.parse(verdict.params!),
    });
    expect(stored.reasonCode).toEqual({
      code: 'DUPLICATE_FILE',
      params: rejectionParams('DUPLICATE_FILE', verdict.message!),
    });
    // …and the ingest with FILE_TOO_LARGE (the reader's own rejections: format-reader.test.ts).
    const big = tooLarge(1000, 2048);
    expect(big.params).toEqual(rejectionParams('FILE_TOO_LARGE', big.message));
    expect(big.params).toEqual({ max: 1000, bytes: 2048 });
    for (const language of [en, es])
      expect(
        placeholders(language['rejection.DUPLICATE_FILE']!).filter((p) => !(p in stored.reasonCode.params)),
      ).toEqual([]);
  });
});
