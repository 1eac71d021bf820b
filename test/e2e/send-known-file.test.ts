// `dropline send <file>` copies the file into processing/ before it claims it. When the claim
// gives back a file the store already knows (the same content under the same name, not yet
// finished) or nothing, the copy is no file's: it is removed, and the command says why with
// a stable code (docs/runbook.md "Sending from cron"). Nothing placed by send is left behind
// in processing/ unless a file record tracks it.
import { spawn } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { BIN, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({
    api: { chunkSize: 3, concurrency: 1, retry: { baseMs: 20, maxMs: 50, maxAttempts: 2 } },
  });
});

afterAll(async () => {
  await h?.close();
});

async function sixRecipients(name: string): Promise<string> {
  const path = join(h.dir, name);
  const lines = Array.from({ length: 6 }, (_, i) => `30012347${String(i).padStart(2, '0')};Hola ${name}\n`);
  await writeFile(path, lines.join(''));
  return path;
}

async function processing(): Promise<string[]> {
  return (await readdir(join(h.drop, 'processing'))).filter((n) => !n.startsWith('.')).sort();
}

it('send of a file whose content is already partial under its name removes its copy and fails FILE_STATE', async () => {
  await h.faults({ massive: { '500': 1 } });
  const path = await sixRecipients('conocido.txt');
  const first = await h.cli(['send', path, '--json']);
  const m = JSON.parse(first.stdout) as Manifest;
  expect(m.state).toBe('partial');
  await h.faults({});
  expect(await processing()).toEqual(['conocido.txt']);
  const requests = (await h.ledger()).accepted;

  const again = await h.cli(['send', path, '--json']);
  // The original stays where its record says; the second copy is gone; nothing was sent.
  expect(await processing()).toEqual(['conocido.txt']);
  expect((await h.stored(m.fileId)).file?.path).toBe('processing/conocido.txt');
  expect((await h.ledger()).accepted).toBe(requests);
  expect(again.code, again.stderr).toBe(1);
  expect(again.stderr).toContain('DROPLINE_ERR_FILE_STATE');
  expect(again.stderr).toContain(`conocido.txt is already known as ${m.fileId}, which is partial`);
  expect(again.stdout).toBe('');
});

it('send of a file another process is sending removes its copy and fails FILE_STATE naming that file', async () => {
  // The first send's request is accepted and never answered while the second runs.
  const original = await readFile(h.configPath, 'utf8');
  await writeFile(
    h.configPath,
    JSON.stringify({ ...h.config, api: { ...(h.config.api as object), timeoutMs: 60_000 } }),
  );
  await h.faults({ massive: { timeout: { probability: 1, times: 1 } } });
  const path = await sixRecipients('ocupado.txt');
  const first = spawn(process.execPath, [BIN, '--config', h.configPath, 'send', path], {
    cwd: h.dir,
    stdio: 'ignore',
  });
  try {
    const fileId = await waitFor('ocupado.txt sending', async () => {
      const m = (await h.statusJson()).find((f) => f.name === 'ocupado.txt');
      return m?.state === 'sending' && (await h.stored(m.fileId)).chunks.some((c) => c.state === 'inflight')
        ? m.fileId
        : undefined;
    });
    const again = await h.cli(['send', path]);
    expect(await processing()).toEqual(['conocido.txt', 'ocupado.txt']);
    expect(again.code, again.stderr).toBe(1);
    expect(again.stderr).toContain('DROPLINE_ERR_FILE_STATE');
    expect(again.stderr).toContain(
      `ocupado.txt is already being sent as ${fileId} by another dropline process`,
    );
  } finally {
    first.kill('SIGKILL');
    await writeFile(h.configPath, original);
  }
});
