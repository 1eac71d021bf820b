// Issue 11, with real processes: `send --wait` beside a running daemon (both check the file's
// progress; one completes it and writes its report), and a daemon frozen (SIGSTOP) in the
// middle of a send whose file another daemon takes over: every recipient is sent exactly
// once and the report is exact. The exact points of a stall (a late transition or report
// refused) are in pipeline-lease.test.ts, where the test decides where a worker stalls.
import { type ChildProcess, spawn } from 'node:child_process';
import { watch, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reportFileName } from '../../src/pipeline/reports.ts';
import {
  BIN,
  csvRecords,
  freePort,
  PipelineHarness,
  personalizedFile,
  waitFor,
} from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;
let other: ChildProcess | null = null;
afterEach(async () => {
  if (other && other.exitCode === null && other.signalCode === null) {
    const exited = new Promise((done) => other!.once('exit', done));
    other.kill('SIGKILL');
    await exited;
  }
  other = null;
  if (h?.daemon?.pid) process.kill(h.daemon.pid, 'SIGCONT');
  await h?.close();
  h = null;
});

/** Every valid recipient sent once (the ledger) and delivered (report.csv), row by row. */
async function exact(harness: PipelineHarness, fileId: string, name: string, valid: number): Promise<void> {
  const ledger = await harness.ledger(fileId);
  expect(ledger.entries).toHaveLength(valid);
  expect(new Set(ledger.entries.map((e) => e.to)).size).toBe(valid);
  const rows = csvRecords(await harness.readReport({ name, fileId }));
  expect(rows.filter((r) => r.outcome === 'sent' && r.status === 'DELIVERED_TO_HANDSET')).toHaveLength(valid);
}

describe('send --wait beside a running daemon', () => {
  it('one process completes the file and writes its report once; the report is exact', async () => {
    h = await PipelineHarness.create();
    await h.start();
    const file = personalizedFile(600, 3);
    const path = join(h.dir, 'campaign.txt');
    await writeFile(path, file.content);
    // Every report.csv written lands by a rename into reports/: counted as it happens.
    const renamed: string[] = [];
    const stopWatching = new AbortController();
    const watching = (async () => {
      try {
        for await (const e of watch(join(h!.drop, 'reports'), { signal: stopWatching.signal }))
          if (e.filename?.endsWith('.report.csv') && !e.filename.startsWith('.')) renamed.push(e.filename);
      } catch (err) {
        if ((err as Error).name !== 'AbortError') throw err;
      }
    })();
    const sent = await h.cli(['send', path, '--wait', '--json'], { timeoutMs: 60_000 });
    expect(sent.code, sent.stderr).toBe(0);
    const manifest = JSON.parse(sent.stdout) as { fileId: string; state: string };
    expect(manifest.state).toBe('completed');
    const name = reportFileName('campaign.txt', manifest.fileId, 'report.csv');
    // The daemon's progress loop had its chances meanwhile: whoever completed it wrote it once.
    await new Promise((r) => setTimeout(r, 1500));
    stopWatching.abort();
    await watching;
    expect(renamed.filter((n) => n === name)).toHaveLength(1);
    await exact(h, manifest.fileId, 'campaign.txt', file.valid.length);
  }, 90_000);
});

describe('a daemon frozen in the middle of a send', () => {
  it('loses the file to another daemon and stops working on it when woken; every recipient once', async () => {
    h = await PipelineHarness.create({
      // Notifications to the frozen daemon wait for it instead of timing out.
      sandbox: { notifyTimeoutMs: 120_000 },
      api: { chunkSize: 100, ratePerSecond: 400 },
    });
    await h.start();
    const a = h.daemon!;
    const file = personalizedFile(3000, 4);
    await h.dropFile('campaign.txt', file.content);
    const sending = await h.waitForState('campaign.txt', 'sending');
    const fileId = sending.fileId;

    // A second daemon on the same store and folders, its own ports: it cannot take the file
    // while the first one's lease is live.
    const config = join(h.dir, 'b.config.json');
    await writeFile(
      config,
      JSON.stringify({
        ...h.config,
        notify: { listen: `127.0.0.1:${await freePort()}`, token: 'e2e-notify-token' },
        ops: { listen: `127.0.0.1:${await freePort()}` },
      }),
    );
    let bOutput = '';
    other = spawn(process.execPath, [BIN, '--config', config, 'run'], {
      cwd: h.dir,
      env: { ...process.env, DROPLINE_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    other.stdout!.on('data', (b: Buffer) => {
      bOutput += b;
    });
    other.stderr!.on('data', (b: Buffer) => {
      bOutput += b;
    });
    await waitFor('the second daemon running', () => bOutput.includes('dropline is running'));
    await waitFor('a few chunks accepted', async () => {
      const { chunks } = await h!.stored(fileId);
      return chunks.filter((c) => c.state === 'accepted').length >= 5;
    });
    const takenOver = async () => {
      const { file: stored } = await h!.stored(fileId);
      return stored?.leaseOwner != null && !stored.leaseOwner.includes(`:${a.pid}:`);
    };
    // Frozen in the middle of a SQLite write, the first daemon would hold the database's
    // write lock and nobody could take anything over: then it is woken and frozen again.
    for (let attempt = 1; ; attempt++) {
      a.kill('SIGSTOP');
      const ok = await waitFor('the second daemon taking the file over', takenOver, {
        timeoutMs: 10_000,
      }).catch((err: Error) => {
        if (attempt >= 3) throw new Error(`${err.message}\n${bOutput.slice(-2000)}`);
        return false;
      });
      if (ok) break;
      a.kill('SIGCONT');
      await new Promise((r) => setTimeout(r, 200));
    }
    a.kill('SIGCONT');

    // Woken, the first daemon finds the lease another's (it says so) or the file no longer
    // sending (it stops between chunks); either way it starts no chunk of it any more.
    const done = await h.waitForFile(fileId, 'completed', { timeoutMs: 60_000 });
    expect(done.counts.delivered).toBe(file.valid.length);
    expect(bOutput).toContain('taking over campaign.txt');
    await exact(h, fileId, 'campaign.txt', file.valid.length);
  }, 120_000);
});
