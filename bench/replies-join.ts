// The reply join of docs/replies.md on a million recipient rows: `node bench/replies-join.ts
// sqlite|postgres`. One file of 1,000,000 recipients sent from a short code (1,000 chunks
// of 1,000 accepted: their reply targets written with each chunk's result) beside one of
// 1,000,000 sent without; then 2,000 replies, half from numbers the first file sent to (joined),
// half from numbers it did not (unjoined). Prints the chunk results' time with and without a
// short code, each reply's recordReply time (median, p99), and the join's plan.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openStore } from '../src/store/index.ts';
import type { RecipientInsert, Store } from '../src/store/store.ts';
import { startCluster } from './postgres-cluster.ts';

const N = 1_000_000;
const CHUNK = 1000;
const REPLIES = 2000;
const SHORT_CODE = '890123';
const kind = process.argv[2] === 'postgres' ? 'postgres' : 'sqlite';

const numberOf = (i: number) => String(573_000_000_000 + i);

async function sentFile(store: Store, fileId: string, shortCode: string | null): Promise<number> {
  await store.registerFile({
    fileId,
    source: 'local',
    name: `${fileId}.txt`,
    path: `inbox/${fileId}.txt`,
    sha256: `sha-${fileId}`,
    bytes: 1,
    state: 'validating',
  });
  await store.transition(fileId, 'sending', { patch: { shortCode } });
  for (let first = 1; first <= N; first += 10 * CHUNK) {
    const rows: RecipientInsert[] = [];
    for (let idx = first; idx < first + 10 * CHUNK; idx++)
      rows.push({
        idx,
        line: idx,
        k: 0,
        number: numberOf(idx),
        value: null,
        messageId: null,
        generatedMessageId: true,
        text: 'Responde SI para confirmar',
        chunkSeq: Math.floor((idx - 1) / CHUNK) + 1,
        outcome: 'pending',
        code: null,
        detail: null,
        smsCount: 1,
      });
    await store.insertRecipients(fileId, rows);
  }
  await store.insertChunks(
    fileId,
    Array.from({ length: N / CHUNK }, (_, i) => ({ seq: i + 1, size: CHUNK })),
  );
  const started = performance.now();
  for (let seq = 1; seq <= N / CHUNK; seq++) {
    await store.setChunkState(fileId, seq, 'inflight', ['pending']);
    await store.recordChunkResult(fileId, seq, {
      state: 'accepted',
      attempts: 1,
      transactionNumber: `T${seq}`,
      parts: [{ messageIds: [], wholeChunk: true, outcome: 'sent', transactionNumber: `T${seq}` }],
    });
  }
  return performance.now() - started;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'dropline-replies-join-'));
  const cluster = kind === 'postgres' ? await startCluster() : null;
  const url = cluster ? `${cluster.url}?schema=bench` : `sqlite:${join(dir, 'state.db')}`;
  const store = await openStore(url);
  try {
    await store.migrate();
    const plainMs = await sentFile(store, 'plain', null);
    const coded = await sentFile(store, 'coded', SHORT_CODE);
    const times: number[] = [];
    const since = new Date(Date.now() - 72 * 3_600_000).toISOString();
    let joined = 0;
    for (let i = 0; i < REPLIES; i++) {
      // Even: a number the coded file sent to; odd: one nobody did.
      const from = i % 2 === 0 ? numberOf(1 + ((i * 7919) % N)) : numberOf(N + 1 + i);
      const t = performance.now();
      const kept = await store.recordReply({
        receivedAt: new Date().toISOString(),
        from,
        to: SHORT_CODE,
        text: 'SI',
        optOut: false,
        messageId: null,
        joinSince: since,
      });
      times.push(performance.now() - t);
      if (kept?.fileId === 'coded') joined++;
    }
    times.sort((a, b) => a - b);
    const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(3);
    console.log(
      JSON.stringify({
        store: kind,
        recipients: 2 * N,
        chunkResultsMs: { withoutShortCode: Math.round(plainMs), withShortCode: Math.round(coded) },
        replies: REPLIES,
        joined,
        recordReplyMs: { median: at(0.5), p99: at(0.99), max: at(1) },
      }),
    );
    console.log(await plan(kind, url, dir));
  } finally {
    await store.close();
    await cluster?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The join's query plan: a lookup of reply_targets' primary key, no scan. */
async function plan(kind: string, url: string, dir: string): Promise<string> {
  const q = `SELECT recipient FROM reply_targets WHERE short_code = '${SHORT_CODE}' AND number = '${numberOf(5)}'
    AND sent_at >= '2020-01-01T00:00:00.000Z' ORDER BY sent_at DESC, recipient DESC LIMIT 1`;
  if (kind === 'sqlite') {
    const { DatabaseSync } = await import('node:sqlite');
    const db = new DatabaseSync(join(dir, 'state.db'));
    const rows = db.prepare(`EXPLAIN QUERY PLAN ${q}`).all();
    db.close();
    return rows.map((r) => String(r.detail)).join('\n');
  }
  const client = new pg.Client({ connectionString: url.replace('?schema=bench', '') });
  await client.connect();
  await client.query('SET search_path TO bench');
  const r = await client.query(`EXPLAIN ANALYZE ${q}`);
  await client.end();
  return r.rows.map((x) => x['QUERY PLAN']).join('\n');
}

await main();
