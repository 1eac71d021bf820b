// The store rules both backends apply, written once (src/store/campaign-rules.ts,
// src/store/retention.ts, src/store/shared-sql.ts): what they ask of a backend and in which
// order, checked on recorded operations; the contract suite checks them on both databases.
import { describe, expect, it } from 'vitest';
import {
  type HoldBackOperations,
  holdBackRule,
  type RefusedContact,
} from '../../src/store/campaign-rules.ts';
import { CHUNK_OUTCOME } from '../../src/store/outcomes.ts';
import { type PruneFile, type PruneOperations, pruneRule } from '../../src/store/retention.ts';
import { chunkOutcomeSql } from '../../src/store/shared-sql.ts';
import { runAsync, runSync } from '../../src/store/steps.ts';

describe('holdBack, written once', () => {
  const refusedRows: RefusedContact[] = [
    { id: 7, rule: 'day', at: '2026-11-28T14:15:02.000Z', channel: 'sms' },
    { id: 9, rule: 'week', at: '2026-11-24T13:00:00.000Z', channel: 'whatsapp' },
  ];
  function recorded(refused: RefusedContact[] = refusedRows, pending = 22) {
    const calls: unknown[][] = [];
    const ops: HoldBackOperations = {
      holdOptOuts: (code, detail) => {
        calls.push(['optOuts', code, detail]);
        return 2;
      },
      takeContacts: (weekly) => {
        calls.push(['take', weekly]);
        return 10;
      },
      pendingCount: () => {
        calls.push(['pending']);
        return pending;
      },
      refused: (weekly) => {
        calls.push(['refused', weekly]);
        return refused;
      },
      holdRefused: (code, details) => {
        calls.push(['limit', code, details]);
        return details.length;
      },
      recordContacts: (taken) => void calls.push(['record', taken]),
    };
    return { calls, ops };
  }
  const limit = { entity: 'acme', channel: 'sms', timezone: 'America/Bogota', perDay: 2, channelsPerWeek: 1 };

  it('opt-outs, contacts taken, then the rest held back with the rule and when, in the texts of errors.ts', () => {
    const { calls, ops } = recorded();
    const held = runSync(holdBackRule({ optOuts: true, contactLimit: limit }), ops);
    expect(held).toEqual({ suppressed: 2, contactLimited: 2 });
    expect(calls).toEqual([
      ['optOuts', 'SUPPRESSED', 'opted out by a reply after the file was read'],
      ['take', true],
      ['pending'],
      ['refused', true],
      [
        'limit',
        'CONTACT_LIMIT',
        [
          {
            id: 7,
            detail: 'already contacted this day: by sms at 2026-11-28 09:15:02 -05:00 (contactLimit 2 a day)',
          },
          {
            id: 9,
            detail:
              'already contacted by another channel this week: by whatsapp at 2026-11-24 08:00:00 -05:00 (contactLimit 1 channel a week)',
          },
        ],
      ],
      // The contacts taken, recorded once the refused rows are no longer pending.
      ['record', 10],
    ]);
  });

  it('without a weekly rule the take says so; every pending row took a contact: nothing looked up again', () => {
    const { calls, ops } = recorded([], 10);
    runSync(
      holdBackRule({ optOuts: false, contactLimit: { ...limit, perDay: 1, channelsPerWeek: null } }),
      ops,
    );
    expect(calls).toEqual([['take', false], ['pending'], ['record', 10]]);
  });

  it('asks nothing without opt-outs nor a contact limit', () => {
    const { calls, ops } = recorded();
    expect(runSync(holdBackRule({ optOuts: false, contactLimit: null }), ops)).toEqual({
      suppressed: 0,
      contactLimited: 0,
    });
    expect(calls).toEqual([]);
  });
});

describe('a prune step, written once', () => {
  const file: PruneFile = { fileId: 'f1', fileNo: 1 };
  function ops(over: Partial<PruneOperations>) {
    const calls: string[] = [];
    const base: PruneOperations = {
      pruningFile: () => null,
      prunableFile: () => null,
      markPruned: () => {},
      pruneOrphans: () => 0,
      pruneReplies: () => 0,
      pruneRecipients: () => ({ deleted: 0, tns: [], left: false }),
      finishFile: () => [],
      pruneEvents: () => 0,
      ...over,
    };
    const logged = Object.fromEntries(
      Object.entries(base).map(([k, fn]) => [
        k,
        (...a: unknown[]) => {
          calls.push(k);
          return (fn as (...x: unknown[]) => unknown)(...a);
        },
      ]),
    ) as PruneOperations;
    return { calls, ops: logged };
  }

  it('a finished file past the cutoff: marked, its rows, then its chunks, its reports by transaction number', async () => {
    const { calls, ops: o } = ops({
      prunableFile: () => file,
      pruneRecipients: () => ({ deleted: 3, tns: ['T1', 'T2'], left: false }),
      finishFile: () => ['T2', 'T3'],
      pruneEvents: (_f, tns) => tns.length,
    });
    const step = await runAsync(pruneRule({ finishedBefore: '2026-01-01T00:00:00.000Z', maxRows: 5 }), {
      pruningFile: async () => o.pruningFile(),
      prunableFile: async (s, b) => o.prunableFile(s, b),
      markPruned: async (f) => o.markPruned(f),
      pruneOrphans: async (b, m) => o.pruneOrphans(b, m),
      pruneReplies: async (b, m) => o.pruneReplies(b, m),
      pruneRecipients: async (f, m) => o.pruneRecipients(f, m),
      finishFile: async (f) => o.finishFile(f),
      pruneEvents: async (f, t) => o.pruneEvents(f, t),
    });
    expect(calls).toEqual([
      'pruningFile',
      'prunableFile',
      'markPruned',
      'pruneRecipients',
      'finishFile',
      'pruneEvents',
    ]);
    expect(step).toEqual({
      fileId: 'f1',
      marked: true,
      fileDone: true,
      recipients: 3,
      events: 3,
      replies: 0,
      idle: false,
    });
  });

  it('a file with rows left stays half pruned; the next step goes on with it', () => {
    const { calls, ops: o } = ops({
      pruningFile: () => file,
      pruneRecipients: () => ({ deleted: 5, tns: [], left: true }),
    });
    const step = runSync(pruneRule({ finishedBefore: '2026-01-01T00:00:00.000Z', maxRows: 5 }), o);
    expect(calls).toEqual(['pruningFile', 'pruneRecipients']);
    expect(step).toMatchObject({ fileId: 'f1', marked: false, fileDone: false, recipients: 5, events: 0 });
  });

  it('no file left: orphan reports and old replies a batch at a time, idle once neither batch is full', () => {
    const step = (orphans: number, replies: number) =>
      runSync(
        pruneRule({ finishedBefore: 'x', maxRows: 2 }),
        ops({ pruneOrphans: () => orphans, pruneReplies: () => replies }).ops,
      );
    expect(step(2, 0)).toMatchObject({ fileId: null, events: 2, replies: 0, idle: false });
    expect(step(1, 2)).toMatchObject({ fileId: null, events: 1, replies: 2, idle: false });
    expect(step(1, 1)).toMatchObject({ fileId: null, events: 1, replies: 1, idle: true });
  });
});

describe('a row follows its chunk, written once', () => {
  it('the SQL of a chunk state gives every outcome of CHUNK_OUTCOME', () => {
    const sql = chunkOutcomeSql('c.state');
    for (const [state, outcome] of Object.entries(CHUNK_OUTCOME))
      expect(sql).toContain(`WHEN '${state}' THEN '${outcome}'`);
  });
});
