// Issue 32: `send --wait` and `retry --wait` with no daemon keep receiving until every accepted
// recipient has a final status (or the delivery deadline passes), whatever the file's state:
// a report the service posts to a closed port is recorded as code 0 and never retried.
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { BIN, freePort, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({
    // Reports come 0.5 s after acceptance (timeScale 0.01): after the last chunk's answer.
    sandbox: { deliveryDelayMs: 50_000 },
    api: { chunkSize: 3, concurrency: 1, retry: { baseMs: 100, maxMs: 200, maxAttempts: 3 } },
  });
});

afterAll(async () => {
  await h?.close();
});

/** Six recipients: two chunks of three (the text names the file: no two files are duplicates). */
async function sixRecipients(name: string): Promise<string> {
  const path = join(h.dir, name);
  const lines = Array.from({ length: 6 }, (_, i) => `30012345${String(i).padStart(2, '0')};Hola ${name}\n`);
  await writeFile(path, lines.join(''));
  return path;
}

/** Nine recipients: three chunks of three. */
async function nineRecipients(name: string): Promise<string> {
  const path = join(h.dir, name);
  const lines = Array.from({ length: 9 }, (_, i) => `30012346${String(i).padStart(2, '0')};Hola ${name}\n`);
  await writeFile(path, lines.join(''));
  return path;
}

/** Every delivery attempt the sandbox made for the file, once it has none left to make. */
async function attemptsOf(fileId: string): Promise<{ code: number; to: string }[]> {
  const { attempts } = await waitFor('the sandbox’s last report', async () => {
    const n = await h.notifications();
    return n.pending === 0 && n;
  });
  return attempts.filter((a) => a.bulkId === fileId).map((a) => ({ code: a.code, to: a.to }));
}

it('send --wait on a file that ends partial receives the accepted chunk’s reports before it exits 1', async () => {
  // The first chunk fails for good (three 500s), the second is accepted.
  await h.faults({ massive: { '500': { probability: 1, times: 3 } } });
  const r = await h.cli(['send', await sixRecipients('parcial.txt'), '--wait', '--json']);
  expect(r.code, r.stderr).toBe(1);
  const m = JSON.parse(r.stdout) as Manifest;
  expect(m.state).toBe('partial');
  const attempts = await attemptsOf(m.fileId);
  expect(attempts.length).toBe(3);
  expect(attempts.every((a) => a.code === 200)).toBe(true);
  expect(m.counts).toMatchObject({ chunksFailed: 1, chunksAccepted: 1, submitted: 3, pendingDelivery: 0 });
});

it('send --wait on a chunk left in doubt receives its reports, which settle the file', async () => {
  // The first chunk is accepted by the service, its answer lost (reset): in doubt.
  await h.faults({ massive: { reset: { probability: 1, times: 1 } } });
  const r = await h.cli(['send', await sixRecipients('en-duda.txt'), '--wait', '--json']);
  const m = JSON.parse(r.stdout) as Manifest;
  expect(r.code, r.stderr).toBe(0);
  expect(m.state).toBe('completed');
  expect(m.counts).toMatchObject({ submitted: 6, pendingDelivery: 0, unknown: 0 });
  const attempts = await attemptsOf(m.fileId);
  expect(attempts.length).toBe(6);
  expect(attempts.every((a) => a.code === 200)).toBe(true);
});

it('retry --wait resends the failed chunk and receives its reports', async () => {
  await h.faults({ massive: { '500': { probability: 1, times: 3 } } });
  const sent = await h.cli(['send', await sixRecipients('reintento.txt'), '--wait', '--json']);
  const first = JSON.parse(sent.stdout) as Manifest;
  expect(first.state).toBe('partial');
  await h.faults({});
  const r = await h.cli(['retry', first.fileId, '--wait', '--json']);
  expect(r.code, r.stderr).toBe(0);
  const m = JSON.parse(r.stdout) as Manifest;
  expect(m.state).toBe('completed');
  expect(m.counts).toMatchObject({ submitted: 6, pendingDelivery: 0, unknown: 0 });
  const attempts = await attemptsOf(m.fileId);
  expect(attempts.length).toBe(6);
  expect(attempts.every((a) => a.code === 200)).toBe(true);
});

it('with notify.publicUrl reaching no receiver: send and retry warn; send --wait says what it waits for, and when the deadline ends the wait', async () => {
  const original = await readFile(h.configPath, 'utf8');
  const away = `http://127.0.0.1:${await freePort()}/notify`;
  await writeFile(
    h.configPath,
    JSON.stringify({
      ...h.config,
      notify: { ...(h.config.notify as object), publicUrl: away },
      deliveryTimeoutMs: 500,
    }),
  );
  try {
    await h.faults({ massive: { '500': { probability: 1, times: 3 } } });
    const sent = await h.cli(['send', await sixRecipients('sin-receptor.txt'), '--json']);
    expect(sent.stderr).toContain(`no dropline receiver answers at notify.publicUrl (${away})`);
    expect(sent.stderr).toContain('will be lost');
    const m = JSON.parse(sent.stdout) as Manifest;
    await h.faults({});
    const retried = await h.cli(['retry', m.fileId, '--json']);
    expect(retried.stderr).toContain(`no dropline receiver answers at notify.publicUrl (${away})`);

    // The reports go where nothing answers: --wait waits for them until the deadline and says
    // they did not come.
    await h.faults({ massive: { '500': { probability: 1, times: 3 } } });
    const waited = await h.cli(['send', await sixRecipients('sin-receptor-espera.txt'), '--wait', '--json']);
    expect(waited.code).toBe(1);
    expect(waited.stderr).toContain(`no dropline receiver answers at notify.publicUrl (${away})`);
    expect(waited.stderr).toMatch(
      /sin-receptor-espera\.txt is partial: the delivery reports of 3 accepted recipient\(s\) did not come by \d{4}-\d\d-\d\dT/,
    );
    const late = JSON.parse(waited.stdout) as Manifest;
    expect(late.state).toBe('partial');
    expect(late.counts.pendingDelivery).toBe(3);

    // With the default deadline (72 h) it says what it waits for, and goes on waiting.
    await writeFile(
      h.configPath,
      JSON.stringify({ ...h.config, notify: { ...(h.config.notify as object), publicUrl: away } }),
    );
    await h.faults({ massive: { '500': { probability: 1, times: 3 } } });
    const file = await sixRecipients('sin-receptor-larga.txt');
    const child = spawn(process.execPath, [BIN, '--config', h.configPath, 'send', file, '--wait'], {
      cwd: h.dir,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => {
      stderr += b;
    });
    try {
      await waitFor(
        () => `the waiting line; stderr so far:\n${stderr}`,
        () =>
          /sin-receptor-larga\.txt is partial: waiting for the delivery reports of 3 accepted recipient\(s\) until \d{4}-\d\d-\d\dT.*deliveryTimeoutMs after its last chunk's answer/.test(
            stderr,
          ),
      );
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill('SIGKILL');
    }
  } finally {
    await writeFile(h.configPath, original);
  }
});

it('send --wait follows the deadline of the newest answered chunk: a retry while it waits moves it later', async () => {
  // Reports held until the first chunk's deadline has passed: the wait that computed it once
  // would stop there and say they did not come, though the retried chunk's deadline is later.
  const timeoutMs = 6000;
  const original = await readFile(h.configPath, 'utf8');
  await writeFile(h.configPath, JSON.stringify({ ...h.config, deliveryTimeoutMs: timeoutMs }));
  h.sandbox.notifier.hold();
  // Chunks one and two fail for good (three 500s each), the third is accepted: partial.
  await h.faults({ massive: { '500': { probability: 1, times: 6 } } });
  const child = spawn(
    process.execPath,
    [BIN, '--config', h.configPath, 'send', await nineRecipients('plazo-nuevo.txt'), '--wait', '--json'],
    { cwd: h.dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => {
    stdout += b;
  });
  child.stderr.on('data', (b: Buffer) => {
    stderr += b;
  });
  const exited = new Promise<number | null>((done) => child.once('close', (code) => done(code)));
  try {
    await waitFor(
      () => `the first waiting line; stderr so far:\n${stderr}`,
      () => /plazo-nuevo\.txt is partial: waiting for the delivery reports of 3 accepted/.test(stderr),
    );
    const fileId = (await h.statusJson()).find((m) => m.name === 'plazo-nuevo.txt')!.fileId;
    const answeredAt = async () => {
      const { chunks } = await h.stored(fileId);
      return Math.max(...chunks.filter((c) => c.state === 'accepted').map((c) => Date.parse(c.updatedAt)));
    };
    const firstDeadline = (await answeredAt()) + timeoutMs;
    // Half the first deadline gone, a retry: chunk one fails again, chunk two is accepted.
    await waitFor('half the first deadline', () => Date.now() >= firstDeadline - timeoutMs / 2, {
      timeoutMs: timeoutMs * 2,
    });
    await h.faults({ massive: { '500': { probability: 1, times: 3 } } });
    const retried = await h.cli(['retry', fileId, '--json']);
    expect(retried.code, retried.stderr).toBe(1);
    expect((JSON.parse(retried.stdout) as Manifest).counts).toMatchObject({
      chunksAccepted: 2,
      chunksFailed: 1,
    });
    expect(await answeredAt()).toBeGreaterThanOrEqual(firstDeadline - timeoutMs / 2);
    // The first deadline passes (and one look of the waiting command after it) with every
    // report still held.
    await waitFor('the first deadline', () => Date.now() >= firstDeadline + 500, {
      timeoutMs: timeoutMs * 2,
    });
    h.sandbox.notifier.release();
    expect(await exited, stderr).toBe(1);
    expect(stderr).not.toContain('did not come');
    const m = JSON.parse(stdout) as Manifest;
    expect(m.state).toBe('partial');
    expect(m.counts).toMatchObject({ chunksAccepted: 2, chunksFailed: 1, submitted: 6, pendingDelivery: 0 });
  } finally {
    h.sandbox.notifier.release();
    child.kill('SIGKILL');
    await writeFile(h.configPath, original);
  }
});
