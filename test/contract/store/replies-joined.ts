// The store contract, replies joined to their campaign (issue 35, docs/replies.md): a reply
// from N to short code S is joined, in its own transaction, to the latest recipient sent to N
// from S within the window; otherwise it stays unjoined. Its file lists it and counts it.
import { beforeEach, expect, it } from 'vitest';
import { pruneOld } from '../../../src/store/retention.ts';
import type { Store } from '../../../src/store/store.ts';
import { type ContractContext, event } from './helpers.ts';

export function repliesJoined(t: ContractContext): void {
  let store: Store;
  beforeEach(() => {
    store = t.store;
  });

  /** A file of `n` recipients (573000000001…) sent whole from `shortCode` at the clock's now. */
  const sentFrom = async (fileId: string, shortCode: string | null, n = 4) => {
    await t.sendingFile(fileId, n, 2);
    if (shortCode !== null) await store.updateFile(fileId, { shortCode });
    for (let seq = 1; (seq - 1) * 2 < n; seq++) {
      await store.setChunkState(fileId, seq, 'inflight', ['pending']);
      await store.recordChunkResult(fileId, seq, {
        state: 'accepted',
        attempts: 1,
        transactionNumber: `${fileId}-T${seq}`,
        parts: [
          { messageIds: [], wholeChunk: true, outcome: 'sent', transactionNumber: `${fileId}-T${seq}` },
        ],
      });
    }
  };
  const reply = (from: string, to: string, text: string, at: number, windowMs = 3_600_000) => ({
    receivedAt: t.at(at),
    from,
    to,
    text,
    optOut: false,
    messageId: null,
    joinSince: t.at(at - windowMs),
  });

  it("keeps a file's short code", async () => {
    await sentFrom('a', '890123');
    expect((await store.getFile('a'))?.shortCode).toBe('890123');
    await sentFrom('b', null);
    expect((await store.getFile('b'))?.shortCode).toBeNull();
  });

  it('joins a reply to the latest recipient sent to its number from its short code, within the window', async () => {
    await sentFrom('plain', null);
    await sentFrom('a', '890123');
    t.h.clock.advance(60_000);
    await sentFrom('b', '890123', 2);
    await sentFrom('other', '555');
    // 573000000002 was sent by a (T0) and b (T0 + 1 min) from 890123: b is the latest.
    await store.recordReply(reply('573000000002', '890123', 'SI', 120_000));
    // 573000000003 only by a.
    await store.recordReply(reply('573000000003', '890123', 'Sí, confirmo', 121_000));
    // Another short code, a number nobody sent to, a window that ends before the send: unjoined.
    await store.recordReply(reply('573000000003', '999', 'hola', 122_000));
    await store.recordReply(reply('573009999999', '890123', 'hola', 123_000));
    await store.recordReply(reply('573000000004', '890123', 'tarde', 2 * 3_600_000, 3_600_000));
    // A second reply of the same recipient.
    await store.recordReply(reply('573000000003', '890123', 'gracias', 124_000));

    const all = await store.replies({ limit: 10 });
    expect(all.map((r) => [r.from, r.to, r.fileId])).toEqual([
      ['573000000002', '890123', 'b'],
      ['573000000003', '890123', 'a'],
      ['573000000003', '999', null],
      ['573009999999', '890123', null],
      ['573000000004', '890123', null],
      ['573000000003', '890123', 'a'],
    ]);
    const ofA = await store.fileReplies('a');
    expect(ofA.map((r) => [r.line, r.k, r.text, r.receivedAt])).toEqual([
      [4, 0, 'Sí, confirmo', t.at(121_000)],
      [4, 0, 'gracias', t.at(124_000)],
    ]);
    expect(await store.replyCounts('a')).toEqual({ replies: 2, replied: 1 });
    expect(await store.replyCounts('b')).toEqual({ replies: 1, replied: 1 });
    expect(await store.replyCounts('plain')).toEqual({ replies: 0, replied: 0 });
    expect(await store.fileReplies('plain')).toEqual([]);
  });

  it("an opt-out joined to its campaign: one call keeps it, joins it and changes the number's standing", async () => {
    await sentFrom('a', '890123');
    const optOut = {
      ...reply('573000000002', '890123', 'SALIR', 1000),
      optOut: true,
      intent: 'opt_out' as const,
    };
    expect(await store.recordReply({ ...optOut, keyword: 'SALIR', messageId: 'mo-9' })).toEqual({
      id: expect.any(Number),
      intent: 'opt_out',
      fileId: 'a',
    });
    const standing = await store.standing('573000000002');
    expect(standing.optedOut).not.toBeNull();
    expect(standing.history.map((c) => [c.change, c.source, c.keyword])).toEqual([
      ['opted_out', 'reply', 'SALIR'],
    ]);
    expect((await store.fileReplies('a')).map((r) => [r.text, r.intent, r.keyword, r.line])).toEqual([
      ['SALIR', 'opt_out', 'SALIR', 3],
    ]);
    // Delivered again: kept already, nothing joined or changed twice.
    expect(await store.recordReply({ ...optOut, keyword: 'SALIR', messageId: 'mo-9' })).toBeNull();
    expect((await store.standing('573000000002')).history).toHaveLength(1);
    expect(await store.replyCounts('a')).toEqual({ replies: 1, replied: 1 });
  });

  // docs/replies.md "The join": a chunk in doubt has no reply targets until it is settled as sent.
  it('joins replies to a chunk in doubt once its reports settle it as sent', async () => {
    await t.sendingFile('d', 4, 2);
    await store.updateFile('d', { shortCode: '890123' });
    await store.setChunkState('d', 1, 'inflight', ['pending']);
    await store.setChunkState('d', 2, 'inflight', ['pending']);
    await store.markInflightInDoubt('d');
    // In doubt: its recipients are no target yet.
    await store.recordReply(reply('573000000001', '890123', 'antes', 1000));
    // A report of chunk 1 settles it: both its recipients are sent, and replies find them.
    await store.recordDeliveries([event('d', 'm1', { transactionNumber: 'T1' })]);
    await store.recordDeliveries([event('d', 'm2', { transactionNumber: 'T1' })]);
    await store.recordReply(reply('573000000001', '890123', 'SI', 2000));
    await store.recordReply(reply('573000000002', '890123', 'SI', 3000));
    // Chunk 2 is still in doubt.
    await store.recordReply(reply('573000000003', '890123', 'SI', 4000));
    expect((await store.replies({ limit: 10 })).map((r) => [r.from, r.text, r.fileId])).toEqual([
      ['573000000001', 'antes', null],
      ['573000000001', 'SI', 'd'],
      ['573000000002', 'SI', 'd'],
      ['573000000003', 'SI', null],
    ]);
    expect((await store.fileReplies('d')).map((r) => [r.line, r.text])).toEqual([
      [2, 'SI'],
      [3, 'SI'],
    ]);
  });

  it('joins replies to a chunk found inflight after a crash and accepted by a report it had', async () => {
    await t.sendingFile('c', 2, 2);
    await store.updateFile('c', { shortCode: '890123' });
    await store.setChunkState('c', 1, 'inflight', ['pending']);
    await store.recordDeliveries([event('c', 'm1')]);
    expect(await store.markInflightInDoubt('c')).toBe(1);
    expect((await store.listChunks('c'))[0]?.state).toBe('accepted');
    await store.recordReply(reply('573000000002', '890123', 'SI', 1000));
    expect((await store.fileReplies('c')).map((r) => [r.line, r.text])).toEqual([[3, 'SI']]);
  });

  it('joins only recipients the service took', async () => {
    await t.sendingFile('r', 4, 2);
    await store.updateFile('r', { shortCode: '890123' });
    await store.setChunkState('r', 1, 'inflight', ['pending']);
    await store.recordChunkResult('r', 1, {
      state: 'rejected',
      attempts: 1,
      errorCode: '400',
      errorMessage: 'bad',
      parts: [{ messageIds: [], wholeChunk: true, outcome: 'rejected', code: '400', detail: 'bad' }],
    });
    await store.recordReply(reply('573000000001', '890123', 'SI', 1000));
    expect((await store.replies({ limit: 10 }))[0]?.fileId).toBeNull();
  });

  it('retention removes the reply targets of a pruned file, a few at a time', async () => {
    await sentFrom('old', '890123', 8);
    await store.transition('old', 'completed');
    t.h.clock.advance(1000);
    const totals = await pruneOld(store, { retentionDays: 0, now: new Date(t.at(2000)), maxRows: 3 });
    expect(totals).toMatchObject({ files: 1, recipients: 8 });
    await store.recordReply(reply('573000000001', '890123', 'SI', 3000));
    expect((await store.replies({ limit: 10 }))[0]?.fileId).toBeNull();
  });

  it('retention removes the replies received before its cutoff with their answers, a few at a time; opt-outs and their history stay', async () => {
    const help = { text: 'Ayuda: acme.co', what: 'helpText' as const, confirmation: false };
    const old = [];
    for (let i = 0; i < 4; i++)
      old.push(
        (await store.recordReply({
          ...reply(`57300000000${i}`, '890123', i === 0 ? 'SALIR' : 'AYUDA', 1000 + i),
          optOut: i === 0,
          intent: i === 0 ? 'opt_out' : 'help',
          keyword: i === 0 ? 'SALIR' : 'AYUDA',
          answer: i === 0 ? null : help,
        }))!.id,
      );
    const recent = (await store.recordReply(reply('573000000009', '890123', 'SI', 10_000)))!.id;
    const totals = await pruneOld(store, { retentionDays: 0, now: new Date(t.at(5000)), maxRows: 3 });
    expect(totals).toMatchObject({ replies: 4 });
    expect((await store.replies({ limit: 10 })).map((r) => r.id)).toEqual([recent]);
    for (const id of old) expect(await store.replyAnswer(id)).toBeNull();
    // The opt-out the first one made stands, and its history says so.
    const standing = await store.standing('573000000000');
    expect(standing.optedOut).toMatchObject({ reply: old[0] });
    expect(standing.history.map((c) => [c.change, c.keyword, c.reply])).toEqual([
      ['opted_out', 'SALIR', old[0]],
    ]);
  });

  // docs/opt-outs.md "A reply delivered again": without the SMSC's message id, the same text
  // from the same number to the same short code less than 60 s after one kept is the same
  // reply delivered again; a person's same answer a minute later is a reply of its own.
  it('refuses a reply delivered again without a message id, keeps the same text a minute later', async () => {
    await sentFrom('a', '890123');
    const si = (at: number) => reply('573000000002', '890123', 'SI', at);
    expect(await store.recordReply(si(1000))).toMatchObject({ fileId: 'a' });
    // Delivered again at once, after a reconnection, at the SMSC's next try: refused each time.
    expect(await store.recordReply(si(1000))).toBeNull();
    expect(await store.recordReply(si(2500))).toBeNull();
    expect(await store.recordReply(si(60_999))).toBeNull();
    // A minute after the one kept: a reply of its own; so is another text, number or short code.
    expect(await store.recordReply(si(61_000))).toMatchObject({ fileId: 'a' });
    expect(await store.recordReply(reply('573000000002', '890123', 'Si', 61_500))).not.toBeNull();
    expect(await store.recordReply(reply('573000000003', '890123', 'SI', 61_500))).not.toBeNull();
    expect(await store.recordReply(reply('573000000002', '999', 'SI', 61_500))).not.toBeNull();
    // Two replies the SMSC tells apart by their ids are two, however close.
    expect(await store.recordReply({ ...si(200_000), messageId: 'mo-1' })).not.toBeNull();
    expect(await store.recordReply({ ...si(200_000), messageId: 'mo-2' })).not.toBeNull();
    const kept = await store.replies({ limit: 20 });
    expect(kept.map((r) => [r.from, r.to, r.text, r.receivedAt, r.messageId])).toEqual([
      ['573000000002', '890123', 'SI', t.at(1000), null],
      ['573000000002', '890123', 'SI', t.at(61_000), null],
      ['573000000002', '890123', 'Si', t.at(61_500), null],
      ['573000000003', '890123', 'SI', t.at(61_500), null],
      ['573000000002', '999', 'SI', t.at(61_500), null],
      ['573000000002', '890123', 'SI', t.at(200_000), 'mo-1'],
      ['573000000002', '890123', 'SI', t.at(200_000), 'mo-2'],
    ]);
    expect(await store.replyCounts('a')).toEqual({ replies: 6, replied: 2 });
  });

  it('a reply delivered twice, both recorded at once: kept once', async () => {
    const si = reply('573000000002', '890123', 'SALIR', 5000);
    const both = await Promise.all([
      store.recordReply({ ...si, optOut: true, intent: 'opt_out' }),
      store.recordReply({ ...si, optOut: true, intent: 'opt_out', receivedAt: t.at(5040) }),
    ]);
    expect(both.filter((k) => k !== null)).toHaveLength(1);
    expect(await store.replies({ limit: 10 })).toHaveLength(1);
    expect((await store.standing('573000000002')).history).toHaveLength(1);
  });
}
