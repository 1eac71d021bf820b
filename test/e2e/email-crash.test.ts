// Issue 15, crash safety of email: a child `dropline run` sending an 8,000-recipient email file
// (an email source, an email account, the sandbox's email host) is killed with SIGKILL at
// seeded random moments, at least 8 times, and restarted each time. An email chunk the killed
// process had started (committed inflight) but whose answer it never recorded is in doubt at
// the next start: email has no delivery report to prove it, so with `api.inDoubt: resend` it is
// sent again and its recipients are counted as possible duplicates. At the end no recipient is
// missing from the sandbox's email ledger, none was accepted twice outside those counted
// resends, the manifest is completed with counts that agree with the ledger, and report.csv
// names every recipient once, sent and ACCEPTED.
import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { fileIdFor } from '../../src/plan/ids.ts';
import { completedReport, crashHarness, killWhileSending } from '../helpers/crash-kills.ts';
import { prng } from '../helpers/prng.ts';

const RECIPIENTS = 8000;
const KILLS = 8;
/** The sandbox account behind the key (the email ledger's `account`). */
const ACCOUNT = 'demo';

const address = (i: number): string => `cliente${i}@example.com`;

it('crash with SIGKILLs during an email campaign: no recipient lost, none sent twice outside the counted in-doubt resends', {
  timeout: 180_000,
}, async () => {
  const random = prng(Number(process.env.CRASH_SEED ?? 20261124));
  const h = await crashHarness({
    channel: 'email',
    name: 'mail',
    account: (sandbox) => ({
      channel: 'email',
      baseUrl: sandbox.url,
      apiKey: 'demo-email-key',
      from: 'avisos@empresa.co',
      // 160 chunks of 50 spread over seconds (600 recipients a second): the kills land while
      // it sends. A killed daemon's send permits hold the account's concurrency until their
      // lease ends (2 × timeoutMs + 10 s): room enough that the next daemons still send.
      ratePerSecond: 600,
      concurrency: 24,
    }),
  });
  try {
    const lines = ['#! channel: email', '#! templateId: invoice', 'correo;nombre;mes'];
    for (let i = 1; i <= RECIPIENTS; i++) lines.push(`${address(i)};Cliente ${i};enero`);
    const content = `${lines.join('\n')}\n`;
    const fileId = fileIdFor('local', createHash('sha256').update(content).digest('hex'));

    // The first daemon creates the folders; the file is dropped whole (temp name + rename).
    await h.start();
    await h.dropFile('campana.txt', content);

    const kills = await killWhileSending(h, fileId, {
      kills: KILLS,
      random,
      spreadMs: 800,
      taken: () => h.sandbox.emailLedger.accepted,
    });

    // The last daemon finishes: the in-doubt chunks resent, the file completed, its report written.
    const { m, report } = await completedReport(h, fileId, RECIPIENTS);
    const entries = [...h.sandbox.emailLedger.entries({ account: ACCOUNT })];
    const extra = entries.reduce((sum, e) => sum + (e.count - 1), 0);
    if (process.env.CRASH_DEBUG)
      console.log({
        kills,
        counts: m.counts,
        timestamps: m.timestamps,
        extra,
        accepted: h.sandbox.emailLedger.accepted,
      });

    expect(kills).toHaveLength(KILLS);
    // Every kill landed while the killed daemon was sending the campaign, most of them after it
    // had sent some of it (a restarted daemon sends again: not held up by the killed one's
    // permits), never before the file started or after it was done.
    expect(kills.filter((k) => k.state !== 'sending' || k.takenAt >= RECIPIENTS)).toEqual([]);
    const sendingWhenKilled = kills.filter((k) => k.takenAt > k.takenBefore);
    expect(sendingWhenKilled.length, JSON.stringify(kills)).toBeGreaterThanOrEqual(KILLS / 2);

    // No recipient is missing; each accepted once, but for the in-doubt resends the manifest counts.
    const byAddress = new Map(entries.map((e) => [e.recipient, e]));
    const missing = Array.from({ length: RECIPIENTS }, (_, k) => address(k + 1)).filter(
      (a) => !byAddress.has(a),
    );
    expect(missing).toEqual([]);
    expect(entries).toHaveLength(RECIPIENTS);
    expect(extra).toBeLessThanOrEqual(m.counts.possibleDuplicates);
    // Every chunk a kill left inflight was in doubt and sent again, its 50 recipients counted.
    expect(kills.filter((k, i) => i % 2 === 1 && k.leftInflight === 0)).toEqual([]);
    const leftInflight = kills.reduce((sum, k) => sum + k.leftInflight, 0);
    expect(m.counts.possibleDuplicates).toBeGreaterThanOrEqual(leftInflight * 50);
    // Every acceptance the sandbox made was of this file's recipients.
    expect(h.sandbox.emailLedger.accepted).toBe(RECIPIENTS + extra);

    // The manifest agrees with the ledger.
    expect(m.counts).toMatchObject({
      valid: RECIPIENTS,
      chunks: RECIPIENTS / 50,
      chunksAccepted: RECIPIENTS / 50,
      chunksPending: 0,
      chunksFailed: 0,
      chunksInDoubt: 0,
      submitted: RECIPIENTS,
      accepted: RECIPIENTS,
      failed: 0,
      rejected: 0,
      inDoubt: 0,
      pendingDelivery: 0,
    });

    // report.csv: every recipient once, sent, ACCEPTED, with a message id the service gave it.
    const rows = new Map(report.map((r) => [r.number!, r]));
    expect(rows.size).toBe(RECIPIENTS);
    const notAccepted = report.filter((r) => r.outcome !== 'sent' || r.status !== 'ACCEPTED');
    expect(notAccepted.slice(0, 5)).toEqual([]);
    for (const [recipient, e] of byAddress)
      expect(e.messageIds, recipient).toContain(rows.get(recipient)?.transactionNumber);
  } finally {
    await h.close();
  }
});
