// Issue 35, crash safety of two-way SMS: a child `dropline run` sending a 2,000-recipient twoway
// file (a twoway source and account, the sandbox's POST /momessage) is killed with SIGKILL at
// seeded random moments, 4 times, and restarted each time; every other kill comes while a chunk
// is inflight (its requests out, their answers not recorded). Such a chunk is in doubt at the
// next start: no delivery report can prove it, so with `api.inDoubt: resend` it is sent again
// and its recipients counted as possible duplicates. At the end no recipient is missing from
// the sandbox's two-way ledger, none was taken twice outside those counted resends, and
// report.csv names every recipient once, sent and ACCEPTED with the Id the service gave it.
import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { fileIdFor } from '../../src/plan/ids.ts';
import { completedReport, crashHarness, killWhileSending } from '../helpers/crash-kills.ts';
import { prng } from '../helpers/prng.ts';

const RECIPIENTS = 2000;
const KILLS = 4;

const number = (i: number): string => `3${String(360_000_000 + i)}`;

it('crash with SIGKILLs during a two-way campaign: no recipient lost, none sent twice outside the counted in-doubt resends', {
  timeout: 180_000,
}, async () => {
  const random = prng(Number(process.env.CRASH_SEED ?? 20261128));
  const h = await crashHarness({
    sandbox: { accounts: [{ username: 'demo', password: 'demo', shortCodes: ['890123'] }] },
    channel: 'twoway',
    name: 'citas',
    account: (sandbox) => ({
      channel: 'twoway',
      baseUrl: sandbox.url,
      username: 'demo',
      password: 'demo',
      shortCode: '890123',
      // 200 chunks of 10 over about 5 s: the kills land while it sends. A killed daemon's
      // permits hold the account's concurrency until their lease ends: room for the next.
      ratePerSecond: 400,
      concurrency: 24,
    }),
  });
  try {
    const lines = ['#! channel: twoway'];
    for (let i = 1; i <= RECIPIENTS; i++) lines.push(`${number(i)};Responde SI para confirmar tu cita ${i}`);
    const content = `${lines.join('\n')}\n`;
    const fileId = fileIdFor('local', createHash('sha256').update(content).digest('hex'));
    const taken = () => h.sandbox.moLedger.accepted;

    await h.start();
    await h.dropFile('citas.txt', content);

    const kills = await killWhileSending(h, fileId, { kills: KILLS, random, spreadMs: 500, taken });

    const { m, report } = await completedReport(h, fileId, RECIPIENTS);
    const entries = h.sandbox.moLedger.entries();
    const extra = entries.reduce((sum, e) => sum + (e.count - 1), 0);
    if (process.env.CRASH_DEBUG) console.log({ kills, counts: m.counts, extra, taken: taken() });

    // Every kill landed while the campaign was being sent, before all of it was.
    expect(kills.filter((k) => k.state !== 'sending' || k.takenAt >= RECIPIENTS)).toEqual([]);
    expect(kills.filter((k, i) => i % 2 === 1 && k.leftInflight === 0)).toEqual([]);

    // No recipient missing; each taken once, but for the in-doubt resends the manifest counts.
    const byNumber = new Map(entries.map((e) => [e.phoneNumber, e]));
    const missing = Array.from({ length: RECIPIENTS }, (_, k) => `57${number(k + 1)}`).filter(
      (n) => !byNumber.has(n),
    );
    expect(missing).toEqual([]);
    expect(entries).toHaveLength(RECIPIENTS);
    expect(extra).toBeLessThanOrEqual(m.counts.possibleDuplicates);
    const leftInflight = kills.reduce((sum, k) => sum + k.leftInflight, 0);
    expect(m.counts.possibleDuplicates).toBeGreaterThanOrEqual(leftInflight * 10);
    expect(taken()).toBe(RECIPIENTS + extra);
    expect(m.counts).toMatchObject({
      valid: RECIPIENTS,
      chunks: RECIPIENTS / 10,
      chunksAccepted: RECIPIENTS / 10,
      chunksInDoubt: 0,
      submitted: RECIPIENTS,
      accepted: RECIPIENTS,
      failed: 0,
      rejected: 0,
      inDoubt: 0,
    });

    // report.csv: every recipient once, sent, ACCEPTED; one taken once with the Id it was given.
    const rows = new Map(report.map((r) => [r.number!, r]));
    expect(rows.size).toBe(RECIPIENTS);
    expect(report.filter((r) => r.outcome !== 'sent' || r.status !== 'ACCEPTED').slice(0, 5)).toEqual([]);
    const wrongId = entries.filter(
      (e) => e.count === 1 && rows.get(e.phoneNumber)?.transactionNumber !== e.id,
    );
    expect(wrongId.slice(0, 5)).toEqual([]);
  } finally {
    await h.close();
  }
});
