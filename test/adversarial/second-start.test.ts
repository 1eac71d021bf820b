// A second `dropline run` on the same store while one runs (a supervisor restarting too
// early, an operator typing it twice) fails on the ports the first holds. Nothing it
// writes on the way may change what the healthy daemon advertises: `send` must keep
// using the daemon's sandbox, whose delivery reports reach the daemon.
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, freePort, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

const BULK = 'Hola, su pedido está listo\n3001234567\n3001234568\n3001234569\n';

describe('a failed second start', () => {
  let h: PipelineHarness | null = null;
  afterEach(async () => {
    await h?.close();
    h = null;
  });

  it('exits non-zero at once and leaves the running daemon and its sandbox.url alone', async () => {
    h = await PipelineHarness.create({ api: { baseUrl: 'sandbox' } });
    await h.start();
    const advertised = join(h.dir, 'sandbox.url');
    const before = await waitFor('sandbox.url', () => readFile(advertised, 'utf8').catch(() => undefined));

    // Same config: notify.listen and ops.listen are the first daemon's. The harness kills the
    // process and fails when it does not end within the bound.
    const second = await h.cli(['run'], { timeoutMs: 10_000 }).catch((err: Error) => err);
    expect.soft(second).not.toBeInstanceOf(Error);
    if (!(second instanceof Error)) {
      expect.soft(second.code).not.toBe(0);
      expect.soft(second.stderr).toMatch(/DROPLINE_ERR_NOTIFY_LISTEN/);
    }
    expect(await readFile(advertised, 'utf8')).toBe(before);

    // `send` uses the daemon's sandbox: its reports reach the daemon and the file completes.
    await writeFile(join(h.dir, 'campaign.txt'), BULK);
    const sent = await h.cli(['send', join(h.dir, 'campaign.txt'), '--json']);
    expect(sent.code, sent.stderr).toBe(0);
    const fileId = (JSON.parse(sent.stdout) as { fileId: string }).fileId;
    const done = await h.waitForFile(fileId, 'completed', { timeoutMs: 20_000 });
    expect(done.counts.delivered).toBe(3);
  });

  it('a second daemon on the same store that stops leaves the first one advertised', async () => {
    h = await PipelineHarness.create({ api: { baseUrl: 'sandbox' } });
    await h.start();
    const advertised = join(h.dir, 'sandbox.url');
    const before = await waitFor('sandbox.url', () => readFile(advertised, 'utf8').catch(() => undefined));
    const other = join(h.dir, 'other.config.json');
    await writeFile(
      other,
      JSON.stringify({
        ...h.config,
        notify: { listen: `127.0.0.1:${await freePort()}`, token: 'another-notify-token' },
        ops: { listen: `127.0.0.1:${await freePort()}` },
      }),
    );
    const child = spawn(process.execPath, [BIN, '--config', other, 'run'], {
      cwd: h.dir,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b;
    });
    await waitFor('the second daemon running', () => out.includes('dropline is running'), {
      timeoutMs: 20_000,
    });
    expect(await readFile(advertised, 'utf8')).toBe(before);
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGTERM');
    await exited;
    expect(await readFile(advertised, 'utf8')).toBe(before);
  });

  it('send ignores a sandbox.url left by a dead daemon whose port is now something else', async () => {
    h = await PipelineHarness.create({ api: { baseUrl: 'sandbox' } });
    // Something that accepts connections but is no sandbox, and the pid of a process that ended.
    const impostor = createServer((socket) => socket.destroy());
    await new Promise<void>((r) => impostor.listen(0, '127.0.0.1', r));
    try {
      const dead = spawn(process.execPath, ['-e', '']);
      const pid = dead.pid;
      await new Promise((done) => dead.once('exit', done));
      const port = (impostor.address() as { port: number }).port;
      await writeFile(join(h.dir, 'sandbox.url'), `http://127.0.0.1:${port}\n${pid}\n`);
      await writeFile(join(h.dir, 'campaign.txt'), BULK);
      const sent = await h.cli(['send', '--wait', '--json', join(h.dir, 'campaign.txt')]);
      expect(sent.code, sent.stderr).toBe(0);
      expect((JSON.parse(sent.stdout) as { state: string }).state).toBe('completed');
    } finally {
      impostor.close();
    }
  });
});
