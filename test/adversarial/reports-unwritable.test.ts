// Issue 32 item 13: a report the source refuses at completion (reports/ not writable) is owed,
// not forgotten: the manifest says "report pending", the write is tried again with back-off
// (report.retryBaseMs, small here) until it goes through, also by a daemon started again
// meanwhile, on every kind of source. The refusals are real ones, made where they happen:
// the local daemon runs as root without CAP_DAC_OVERRIDE (setpriv: root then obeys a
// folder's mode bits), sshd runs as an unprivileged user; S3 has no way to refuse one prefix
// (s3rver keeps no bucket policy), so its server is down when the file completes.
import { execFileSync } from 'node:child_process';
import { chmod, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Manifest, type ReportKind, reportFileName } from '../../src/pipeline/reports.ts';
import { csvRecords, PipelineHarness, personalizedFile, waitFor } from '../helpers/pipeline-harness.ts';
import { S3RVER_CREDENTIALS, type S3rverHandle, startS3rver } from '../helpers/s3rver.ts';
import { type Sshd, sftpSourceConfig, sshdUnavailable, startSshd } from '../helpers/sshd.ts';

/** Root without the capabilities that let it write where a folder's mode forbids it. */
const NO_DAC = ['setpriv', '--bounding-set=-dac_override,-dac_read_search', '--'];
const noSetpriv = (() => {
  try {
    execFileSync('setpriv', ['--bounding-set=-dac_override,-dac_read_search', 'true']);
    return process.getuid?.() === 0 ? null : 'not root';
  } catch {
    return 'setpriv cannot drop capabilities here';
  }
})();
const noSshd = sshdUnavailable();
if (noSetpriv) console.warn(`local report-retry test skipped: ${noSetpriv}`);

/** Owed reports tried again 100 ms, 200 ms, 400 ms … at most 800 ms after a failure. */
const REPORT_RETRY = { report: { retryBaseMs: 100, retryMaxMs: 800 } };

/** The file's manifest from the ops server once its reports are owed after `failures` failures. */
async function owed(h: PipelineHarness, fileId: string, failures: number): Promise<Manifest> {
  return waitFor(`${fileId}: report pending after ${failures} failed writes`, async () => {
    const r = await h.opsGet(`/api/files/${fileId}`);
    const m = r.body as Manifest;
    return (m.reportPending?.failures ?? 0) >= failures && m;
  });
}

/**
 * After the folder is writable again: report.csv and the completed manifest land, and the
 * store owes nothing any more. `read` gives a report's text, or null while it is missing.
 */
async function written(
  h: PipelineHarness,
  m: Manifest,
  read: (kind: ReportKind) => Promise<string | null>,
  valid: number,
): Promise<void> {
  const manifest = await waitFor(`the completed manifest of ${m.name} in reports/`, async () => {
    const text = await read('manifest.json');
    const doc = text === null ? null : (JSON.parse(text) as Manifest);
    return doc?.state === 'completed' && doc;
  });
  expect(manifest.counts.submitted).toBe(valid);
  expect(manifest.reportPending).toBeNull();
  const report = csvRecords((await read('report.csv')) ?? '');
  expect(report.filter((r) => r.outcome === 'sent')).toHaveLength(valid);
  await waitFor('nothing owed any more', async () => {
    const r = await h.opsGet(`/api/files/${m.fileId}`);
    return (r.body as Manifest).reportPending === null;
  });
}

const readIn =
  (folder: string, m: Pick<Manifest, 'name' | 'fileId'>) =>
  (kind: ReportKind): Promise<string | null> =>
    readFile(join(folder, reportFileName(m.name, m.fileId, kind)), 'utf8').catch(() => null);

describe.skipIf(noSetpriv !== null)('a local reports/ the daemon may not write', () => {
  let h: PipelineHarness;
  beforeAll(async () => {
    h = await PipelineHarness.create({ config: REPORT_RETRY });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('completes, says report pending, keeps trying across a restart, and writes it once it may', async () => {
    await h.start({ wrap: NO_DAC });
    const reports = join(h.drop, 'reports');
    await chmod(reports, 0o555);
    const gen = personalizedFile(30, 91);
    await h.dropFile('cierre.txt', gen.content);
    const done = await h.waitForState('cierre.txt', 'completed');
    const before = await owed(h, done.fileId, 2);
    expect(before.reportPending?.since).toBeTruthy();
    const status = await h.cli(['status', done.fileId]);
    expect(status.stdout).toContain('report pending');
    expect(await readIn(reports, done)('report.csv')).toBeNull();

    // The store keeps what is owed: a daemon started again goes on trying.
    await h.stop();
    await h.start({ wrap: NO_DAC });
    await owed(h, done.fileId, (before.reportPending?.failures ?? 0) + 1);
    await chmod(reports, 0o755);
    await written(h, done, readIn(reports, done), gen.valid.length);
  });
});

describe.skipIf(noSshd !== null)('an SFTP reports/ the login may not write', () => {
  let sshd: Sshd;
  let h: PipelineHarness;
  beforeAll(async () => {
    sshd = await startSshd();
    h = await PipelineHarness.create({
      config: {
        ...REPORT_RETRY,
        sources: [sftpSourceConfig(sshd, 'drop', { stableMs: 200, pollMs: 100 })],
      },
    });
  });
  afterAll(async () => {
    await h?.close();
    await sshd?.close();
  });

  it('completes, says report pending, and writes it once the server lets it', async () => {
    await h.start();
    const drop = join(sshd.home, 'drop');
    const reports = join(drop, 'reports');
    await waitFor('reports/ on the server', async () => (await stat(reports).catch(() => null)) !== null);
    // The folder is the login's: made read-only, the server refuses its writes.
    await chmod(reports, 0o555);
    const gen = personalizedFile(30, 92);
    await writeFile(join(drop, 'inbox', '.cierre.tmp'), gen.content);
    await rename(join(drop, 'inbox', '.cierre.tmp'), join(drop, 'inbox', 'cierre.txt'));
    const done = await h.waitForState('cierre.txt', 'completed');
    await owed(h, done.fileId, 2);
    expect(await readIn(reports, done)('report.csv')).toBeNull();
    await chmod(reports, 0o755);
    await written(h, done, readIn(reports, done), gen.valid.length);
  });
});

describe('an S3 source whose server is down when the file completes', () => {
  const BUCKET = 'drops';
  let s3: S3rverHandle;
  let h: PipelineHarness;
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
  beforeAll(async () => {
    // The daemon finds its credentials in the environment (the SDK's chain).
    process.env.AWS_ACCESS_KEY_ID = S3RVER_CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = S3RVER_CREDENTIALS.secretAccessKey;
    s3 = await startS3rver([BUCKET]);
    h = await PipelineHarness.create({
      // The sandbox sends no delivery report in the test's time: the test sends them, once
      // the server is down, so the file completes then.
      sandbox: { deliveryDelayMs: 1e9 },
      config: {
        ...REPORT_RETRY,
        sources: [
          {
            name: 'bucket',
            type: 's3',
            bucket: BUCKET,
            prefix: 'drop/',
            region: 'us-east-1',
            endpoint: s3.endpoint,
            forcePathStyle: true,
            pollMs: 100,
          },
        ],
      },
    });
  });
  afterAll(async () => {
    await h?.close();
    await s3?.close();
    if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
    else process.env.AWS_ACCESS_KEY_ID = saved.id;
    if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
    else process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
  });

  it('completes, says report pending, and writes it once the server is back', async () => {
    await h.start();
    const gen = personalizedFile(30, 93);
    await s3.client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: 'drop/inbox/cierre.txt', Body: gen.content }),
    );
    const submitted = await h.waitForState('cierre.txt', 'submitted');
    // S3 gives no way to refuse one prefix's writes (s3rver has no bucket policies): the
    // server is down instead, a refusal every source may meet.
    await s3.stop();
    // Every recipient's delivery report, as the service would post them.
    const notify = `http://127.0.0.1:${h.notifyPort}/notify?token=${h.notifyToken}`;
    for (const e of (await h.ledger(submitted.fileId)).entries) {
      const res = await fetch(notify, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          results: [
            {
              bulkId: e.bulkId,
              messageId: e.messageId,
              to: e.to,
              transactionNumber: e.transactionNumber,
              smsCount: 1,
              status: { name: 'DELIVERED_TO_HANDSET' },
            },
          ],
        }),
      });
      expect(res.status).toBe(200);
    }
    const done = await h.waitForFile(submitted.fileId, 'completed');
    await owed(h, done.fileId, 2);
    await s3.start();
    const read = async (kind: ReportKind): Promise<string | null> => {
      try {
        const key = `drop/reports/${reportFileName(done.name, done.fileId, kind)}`;
        const got = await s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
        return (await got.Body?.transformToString('utf8')) ?? null;
      } catch {
        return null;
      }
    };
    await written(h, done, read, gen.valid.length);
  });
});
