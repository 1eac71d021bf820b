// The store rules both backends apply, written once (src/store/campaign-rules.ts,
// src/store/retention.ts, src/store/shared-sql.ts): what they ask of a backend and in which
// order, checked on recorded operations; the contract suite checks them on both databases.
import { describe, expect, it } from 'vitest';
import { type HoldBackOperations, holdBackRule } from '../../src/store/campaign-rules.ts';
import { CHUNK_OUTCOME } from '../../src/store/outcomes.ts';
import { type PruneFile, type PruneOperations, pruneRule } from '../../src/store/retention.ts';
import { chunkOutcomeSql } from '../../src/store/shared-sql.ts';
import { runAsync, runSync } from '../../src/store/steps.ts';

describe('holdBack, written once', () => {
  function recorded() {
    const calls: unknown[][] = [];
    const ops: HoldBackOperations = {
      holdOptOuts: (code, detail) => {
        calls.push(['optOuts', code, detail]);
        return 2;
      },
      takeSlots: (slot) => void calls.push(['slot', slot]),
      holdUnslotted: (code, detail) => {
        calls.push(['limit', code, detail]);
        return 3;
      },
    };
    return { calls, ops };
  }

  it('opt-outs first, then a slot round per contact a day, then the rest held back, with the texts of errors.ts', () => {
    const { calls, ops } = recorded();
    const held = runSync(
      holdBackRule({ optOuts: true, contactLimit: { account: 'a', timezone: 'America/Bogota', perDay: 2 } }),
      ops,
    );
    expect(held).toEqual({ suppressed: 2, contactLimited: 3 });
    expect(calls).toEqual([
      ['optOuts', 'SUPPRESSED', 'opted out by a reply after the file was read'],
      ['slot', 1],
      ['slot', 2],
      ['limit', 'CONTACT_LIMIT', 'already sent a message this day by the account (contactLimit 2 a day)'],
    ]);
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

  it('no file left: orphan reports a batch at a time, idle once a batch is not full', () => {
    const full = runSync(pruneRule({ finishedBefore: 'x', maxRows: 2 }), ops({ pruneOrphans: () => 2 }).ops);
    const last = runSync(pruneRule({ finishedBefore: 'x', maxRows: 2 }), ops({ pruneOrphans: () => 1 }).ops);
    expect(full).toMatchObject({ fileId: null, events: 2, idle: false });
    expect(last).toMatchObject({ fileId: null, events: 1, idle: true });
  });
});

describe('a row follows its chunk, written once', () => {
  it('the SQL of a chunk state gives every outcome of CHUNK_OUTCOME', () => {
    const sql = chunkOutcomeSql('c.state');
    for (const [state, outcome] of Object.entries(CHUNK_OUTCOME))
      expect(sql).toContain(`WHEN '${state}' THEN '${outcome}'`);
  });
});
