// `dropline status` and `workers` read the store and nothing else: a configuration whose
// partner SFTP site and bucket are down answers at once, with no SSH login, no S3 call and
// no warning; `status` finds a file by fileId, fileId prefix or file name.

import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

describe('status and workers with sources that are down', () => {
  let h: PipelineHarness;
  let trap: Server;
  let knocks = 0;
  let downConfig = '';
  beforeAll(async () => {
    h = await PipelineHarness.create();
    await h.start();
    await h.dropFile('campana.txt', 'Hola\n3001234567\n');
    const first = await h.waitForState('campana.txt', 'completed');
    // the daily name again, other content: a second file called campana.txt
    await h.dropFile('campana.txt', 'Hola de nuevo\n3001234568\n');
    await waitFor('a second campana.txt, completed', async () => {
      const named = (await h.statusJson()).filter((m) => m.name === 'campana.txt');
      return named.length === 2 && named.every((m) => m.state === 'completed') ? named : undefined;
    });
    expect(first.state).toBe('completed');
    await h.dropFile('aviso.txt', 'Aviso\n3001234569\n');
    await h.waitForState('aviso.txt', 'completed');
    await h.stop();
    // Every connection the command would make to a source lands here and is counted.
    trap = createServer((socket) => {
      knocks++;
      socket.destroy();
    });
    await new Promise<void>((done) => trap.listen(0, '127.0.0.1', done));
    const port = (trap.address() as { port: number }).port;
    // A key made now (test keys are never committed); no login ever uses it.
    const key = join(h.dir, 'partner_key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]);
    const config = structuredClone(h.config) as { sources: unknown[] };
    config.sources.push(
      {
        name: 'partner',
        type: 'sftp',
        host: '127.0.0.1',
        port,
        username: 'dropline',
        privateKeyPath: key,
        hostKeySha256: `SHA256:${Buffer.alloc(32, 7).toString('base64').replace(/=+$/, '')}`,
        path: '/drop',
      },
      {
        name: 'bucket',
        type: 's3',
        bucket: 'drops',
        region: 'us-east-1',
        endpoint: `http://127.0.0.1:${port}`,
        forcePathStyle: true,
      },
    );
    downConfig = join(h.dir, 'down.config.json');
    await writeFile(downConfig, JSON.stringify(config));
  });
  afterAll(async () => {
    trap?.close();
    await h?.close();
  });

  it('status, status <fileId> and workers open no source: no connection, no warning', async () => {
    for (const args of [['status'], ['status', '--json'], ['workers'], ['workers', '--json']]) {
      const r = await h.cli(['--config', downConfig, ...args]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.stderr, args.join(' ')).toBe('');
    }
    const listed = JSON.parse(
      (await h.cli(['--config', downConfig, 'status', '--json'])).stdout,
    ) as Manifest[];
    expect(listed.map((m) => m.name).sort()).toEqual(['aviso.txt', 'campana.txt', 'campana.txt']);
    expect(knocks).toBe(0);
  });

  it('status finds a file by fileId prefix or by name; a name several files share lists them', async () => {
    const files = await h.statusJson();
    const aviso = files.find((m) => m.name === 'aviso.txt')!;
    const byPrefix = await h.cli(['status', aviso.fileId.slice(0, 6), '--json']);
    expect(byPrefix.code, byPrefix.stderr).toBe(0);
    expect((JSON.parse(byPrefix.stdout) as Manifest).fileId).toBe(aviso.fileId);

    const byName = await h.cli(['status', 'aviso.txt']);
    expect(byName.code, byName.stderr).toBe(0);
    expect(byName.stdout).toContain(`fileId ${aviso.fileId}`);

    const both = await h.cli(['status', 'campana.txt', '--json']);
    expect(both.code, both.stderr).toBe(0);
    const named = JSON.parse(both.stdout) as Manifest[];
    expect(named.map((m) => m.name)).toEqual(['campana.txt', 'campana.txt']);
    expect(new Set(named.map((m) => m.fileId)).size).toBe(2);

    const none = await h.cli(['status', 'nada.txt']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/DROPLINE_ERR_UNKNOWN_FILE/);
  });
});
