// Issue 4's crash test: a child `dropline run` is killed with SIGKILL at random moments,
// at least 10 times, while it sends a 50,000-recipient file, and restarted each time. At the
// end no recipient is missing from the sandbox's ledger, none was accepted twice except
// those the manifest counts as in-doubt resends, and the manifest agrees with the ledger.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { reportFileName } from '../../src/pipeline/reports.ts';
import { fileIdFor } from '../../src/plan/ids.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/server.ts';
import { type TestStore, testStore } from '../helpers/test-store.ts';

const root = join(import.meta.dirname, '..', '..');
const cli = join(root, 'bin', 'dropline.js');
const RECIPIENTS = 50_000;
const KILLS = 12;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Deterministic pseudo-random in [0, 1): the kill moments differ per run only by seed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('crash safety (issue 4): SIGKILL during a 50,000-recipient file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dropline-crash-'));
  const children = new Set<ChildProcess>();
  let sandbox: Sandbox | null = null;
  let store: TestStore | null = null;

  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await sandbox?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function startDaemon(configPath: string): Promise<ChildProcess> {
    const child = spawn(process.execPath, [cli, '--config', configPath, 'run'], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, DROPLINE_LOG_LEVEL: 'warn' },
    });
    children.add(child);
    child.once('exit', () => children.delete(child));
    child.stderr?.resume();
    return new Promise((resolve, reject) => {
      let out = '';
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('dropline is running')) resolve(child);
      });
      child.once('exit', (code) => reject(new Error(`dropline run exited early (${code}): ${out}`)));
    });
  }

  function manifest(
    configPath: string,
    fileId: string,
  ): Record<string, unknown> & { state: string; counts: Record<string, number> } {
    const r = spawnSync(process.execPath, [cli, '--config', configPath, 'status', fileId, '--json'], {
      cwd: dir,
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`status failed: ${r.stderr}`);
    return JSON.parse(r.stdout);
  }

  it('loses no recipient and sends none twice outside the counted in-doubt resends', {
    timeout: 240_000,
  }, async () => {
    const random = rng(Number(process.env.CRASH_SEED ?? 20261122));
    sandbox = await startSandbox({ timeScale: 0.01, deliveryDelayMs: 20 });
    const [notifyPort, opsPort] = [await freePort(), await freePort()];
    const configPath = join(dir, 'dropline.config.json');
    store = await testStore(dir);
    writeFileSync(
      configPath,
      JSON.stringify({
        api: {
          baseUrl: sandbox.url,
          username: 'demo',
          password: 'demo',
          chunkSize: 500,
          concurrency: 4,
          // Spread the sends over several seconds so the kills land mid-file.
          ratePerSecond: 12_000,
          timeoutMs: 5000,
          inDoubt: 'resend',
          inDoubtGraceMs: 300,
          retry: { baseMs: 20, maxMs: 200, maxAttempts: 8 },
        },
        notify: { listen: `127.0.0.1:${notifyPort}`, token: 'crash-test-token' },
        ops: { listen: `127.0.0.1:${opsPort}` },
        store: store.url,
        leaseMs: 1000,
        deliveryTimeoutMs: 3000,
        sources: [{ name: 'local', type: 'local', path: join(dir, 'drop'), stableMs: 100, pollMs: 100 }],
      }),
    );

    // Distinct numbers in scattered order, one per line (bulk).
    const lines = ['Recordatorio: su factura vence el viernes.'];
    const numbers: string[] = [];
    for (let i = 0; i < RECIPIENTS; i++) {
      const n = `573${String((i * 7919 + 13) % 1e9).padStart(9, '0')}`;
      numbers.push(n);
      lines.push(n);
    }
    const content = `${lines.join('\n')}\n`;
    const sha = createHash('sha256').update(content).digest('hex');
    const fileId = fileIdFor('local', sha);

    // The first daemon creates the folders; the file is then dropped whole (temp name + rename).
    let child = await startDaemon(configPath);
    writeFileSync(join(dir, 'drop', 'inbox', '.crash.txt.part'), content);
    renameSync(join(dir, 'drop', 'inbox', '.crash.txt.part'), join(dir, 'drop', 'inbox', 'crash.bulk.txt'));

    let kills = 0;
    const killedIn: string[] = [];
    while (kills < KILLS) {
      await new Promise((r) => setTimeout(r, 150 + random() * 900));
      const seen = await fetch(`http://127.0.0.1:${opsPort}/api/files/${fileId}`)
        .then(async (r) => (r.ok ? ((await r.json()) as { state: string }).state : 'unclaimed'))
        .catch(() => 'unknown');
      killedIn.push(seen);
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      kills++;
      child = await startDaemon(configPath);
    }

    // Let the last daemon finish: every chunk accepted, the in-doubt ones resent, reports in.
    const deadline = Date.now() + 150_000;
    let m = manifest(configPath, fileId);
    while (m.state !== 'completed' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      m = manifest(configPath, fileId);
    }
    expect(kills).toBeGreaterThanOrEqual(10);
    // The kills landed while the file was being read or sent, not only before or after.
    expect(killedIn.filter((st) => st === 'validating' || st === 'sending').length).toBeGreaterThanOrEqual(5);
    if (process.env.CRASH_DEBUG)
      console.log({
        killedIn,
        counts: m.counts,
        timestamps: m.timestamps,
        now: new Date().toISOString(),
        codes: Object.entries(Object.groupBy(sandbox.notifier.attempts, (a) => String(a.code))).map(
          ([k, v]) => [k, v?.length],
        ),
      });
    expect(m.state).toBe('completed');

    const entries = [...sandbox.ledger.entries({ bulkId: fileId })];
    const byNumber = new Map(entries.map((e) => [e.to, e]));
    const missing = numbers.filter((n) => !byNumber.has(n));
    expect(missing).toEqual([]);
    expect(entries.length).toBe(RECIPIENTS);
    const extra = entries.reduce((sum, e) => sum + (e.count - 1), 0);
    // Every second acceptance is one the manifest counts as a possible duplicate.
    expect(extra).toBeLessThanOrEqual(m.counts.possibleDuplicates!);
    // The manifest agrees with the ledger.
    expect(m.counts.valid).toBe(RECIPIENTS);
    expect(m.counts.submitted).toBe(entries.length);
    expect(m.counts.failed).toBe(0);
    expect(m.counts.rejected).toBe(0);
    expect(m.counts.inDoubt).toBe(0);
    expect(m.counts.delivered! + m.counts.undelivered!).toBe(RECIPIENTS);
    // The report names every recipient once.
    const report = readFileSync(
      join(dir, 'drop', 'reports', reportFileName('crash.bulk.txt', fileId, 'report.csv')),
      'utf8',
    )
      .trim()
      .split('\n');
    expect(report.length).toBe(RECIPIENTS + 1);
    child.kill('SIGTERM');
  });
});
