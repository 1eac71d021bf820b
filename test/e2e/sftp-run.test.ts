// Issue 5, SFTP end to end through `dropline run` (a child process) whose source is a real
// OpenSSH sshd on 127.0.0.1 (test/helpers/sshd.ts), the sandbox in the test process: upload
// through SFTP → every recipient in the sandbox exactly once, reports/ and done/ on the
// server; a slow upload claimed once and whole; sshd stopped mid-file and started again.
import type SftpClient from 'ssh2-sftp-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Manifest, reportFileName } from '../../src/pipeline/reports.ts';
import {
  csvRecords,
  expectedMessageId,
  type GeneratedFile,
  PipelineHarness,
  personalizedFile,
  waitFor,
} from '../helpers/pipeline-harness.ts';
import { type Sshd, sftpPut, sftpSourceConfig, sshdUnavailable, startSshd } from '../helpers/sshd.ts';

const skip = sshdUnavailable();
if (skip) console.warn(`SFTP dropline run tests skipped: ${skip}`);

describe.skipIf(skip !== null)('SFTP through dropline run', () => {
  let sshd: Sshd;
  let partner: SftpClient;
  let h: PipelineHarness;

  beforeAll(async () => {
    sshd = await startSshd();
    partner = await sshd.partner();
    h = await PipelineHarness.create({
      config: {
        sources: [sftpSourceConfig(sshd, 'drop', { stableMs: 1000, pollMs: 100 })],
      },
    });
    await h.start();
  });

  afterAll(async () => {
    await h?.close();
    await partner?.end().catch(() => {});
    await sshd?.close();
  });

  async function ledgerExactlyOnce(m: Manifest, gen: GeneratedFile): Promise<void> {
    const ledger = await h.ledger(m.fileId);
    const got = ledger.entries.map((e) => `${e.messageId} ${e.to} ${e.count}`).sort();
    expect(got).toEqual(gen.valid.map((r) => `${expectedMessageId(gen, m.fileId, r)} ${r.to} 1`).sort());
  }

  /** An upload the way careful partners do it: a temp name, then a rename. */
  async function upload(name: string, content: string): Promise<void> {
    await sftpPut(partner, `drop/inbox/.${name}.filepart`, content);
    await partner.posixRename(`drop/inbox/.${name}.filepart`, `drop/inbox/${name}`);
  }

  async function remoteText(path: string): Promise<string> {
    return ((await partner.get(`drop/${path}`)) as Buffer).toString('utf8');
  }

  it('a file uploaded through SFTP: every recipient once, reports in reports/, the original in done/', async () => {
    const gen = personalizedFile(1200, 51);
    await upload('clientes.txt', gen.content);
    const m = await h.waitForState('clientes.txt', 'completed');
    expect(m.source).toBe('partner');
    expect(m.counts).toMatchObject({ records: 1200, valid: gen.valid.length, submitted: gen.valid.length });
    await ledgerExactlyOnce(m, gen);
    await waitFor('done/clientes.txt', async () => (await partner.exists('drop/done/clientes.txt')) === '-');
    expect(await partner.exists('drop/inbox/clientes.txt')).toBe(false);
    expect(await partner.exists('drop/processing/clientes.txt')).toBe(false);
    expect(await remoteText('done/clientes.txt')).toBe(gen.content);
    const onServer = await waitFor('reports/clientes.<fileId>.manifest.json completed', async () => {
      const mm = JSON.parse(
        await remoteText(`reports/${reportFileName('clientes.txt', m.fileId, 'manifest.json')}`),
      ) as Manifest;
      return mm.state === 'completed' ? mm : undefined;
    });
    expect(onServer.fileId).toBe(m.fileId);
    const report = csvRecords(
      await remoteText(`reports/${reportFileName('clientes.txt', m.fileId, 'report.csv')}`),
    );
    expect(report.filter((r) => r.outcome === 'sent')).toHaveLength(gen.valid.length);
    // No temp file of dropline's own is left in reports/.
    expect((await partner.list('drop/reports')).map((e) => e.name).sort()).toEqual([
      `clientes.${m.fileId}.manifest.json`,
      `clientes.${m.fileId}.report.csv`,
    ]);
  });

  it('a file uploaded slowly, in pieces over longer than stableMs, is claimed once, whole', async () => {
    const gen = personalizedFile(800, 52);
    const pieces = 8;
    const size = Math.ceil(gen.content.length / pieces);
    const started = Date.now();
    for (let i = 0; i < pieces; i++) {
      const part = Buffer.from(gen.content.slice(i * size, (i + 1) * size));
      if (i === 0) await partner.put(part, 'drop/inbox/lento.txt');
      else await partner.append(part, 'drop/inbox/lento.txt');
      // Each pause is shorter than stableMs (1 s): the file keeps changing until the end.
      if (i < pieces - 1) await new Promise((r) => setTimeout(r, 300));
    }
    expect(Date.now() - started).toBeGreaterThan(2000);
    const m = await h.waitForState('lento.txt', 'completed');
    expect(m.counts.records).toBe(800);
    expect(m.bytes).toBe(Buffer.byteLength(gen.content));
    await ledgerExactlyOnce(m, gen);
    expect((await h.files()).filter((f) => f.name === 'lento.txt')).toHaveLength(1);
  });

  it('sshd stopped mid-file and started again: the file completes, no recipient missing or repeated', async () => {
    const gen = personalizedFile(30_000, 53);
    await upload('grande.txt', gen.content);
    // Claimed (moved to processing/): the daemon reads it now.
    await h.waitForState('grande.txt', ['validating', 'sending'], { timeoutMs: 20_000 });
    await partner.end();
    await sshd.stop();
    await waitFor('/readyz to say the source is down', async () => {
      const r = await fetch(`${h.opsUrl}/readyz`);
      const body = (await r.json()) as { checks: Record<string, string> };
      return r.status === 503 && body.checks['source:partner'] !== 'ok';
    });
    await sshd.start();
    partner = await sshd.partner();
    const m = await h.waitForState('grande.txt', 'completed', { timeoutMs: 45_000 });
    expect(m.counts).toMatchObject({ records: 30_000, valid: gen.valid.length, submitted: gen.valid.length });
    await ledgerExactlyOnce(m, gen);
    expect(h.daemon?.exitCode).toBeNull();
    await waitFor('done/grande.txt', async () => (await partner.exists('drop/done/grande.txt')) === '-');
    expect((await fetch(`${h.opsUrl}/readyz`)).status).toBe(200);
  }, 60_000);
});
