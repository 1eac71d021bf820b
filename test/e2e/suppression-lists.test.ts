import { appendFile, mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Manifest, reportFileName } from '../../src/pipeline/reports.ts';
import { csvRecords, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';
import { runDaemon } from '../helpers/run-daemon.ts';
import { S3RVER_CREDENTIALS, type S3rverHandle, startS3rver } from '../helpers/s3rver.ts';

const BUCKET = 'optouts';
// A on the global list, B on local's own list, C and D on neither (yet).
const A = '3001110001';
const B = '3002220002';
const C = '3003330003';
const D = '3004440004';
const sent = (n: string) => `57${n}`;

let s3: S3rverHandle;
let h: PipelineHarness;
let other: string;
const saved: Record<string, string | undefined> = {};

function setEnv(vars: Record<string, string | undefined>): void {
  for (const [k, v] of Object.entries(vars)) {
    if (!(k in saved)) saved[k] = process.env[k];
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
}

async function putGlobal(numbers: string[]): Promise<void> {
  await s3.client.send(
    new PutObjectCommand({ Bucket: BUCKET, Key: 'lists/global.txt', Body: `${numbers.join('\n')}\n` }),
  );
}

beforeAll(async () => {
  s3 = await startS3rver([BUCKET]);
  // The daemon (a child of this process) finds the list's endpoint and credentials where it
  // would in production: the SDK's environment variables.
  setEnv({
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    AWS_REGION: 'us-east-1',
  });
  await putGlobal([A]);
  h = await PipelineHarness.create({
    config: {
      suppressionList: `s3://${BUCKET}/lists/global.txt`,
    },
  });
  other = join(h.dir, 'other');
  const sources = [
    {
      name: 'local',
      type: 'local',
      path: h.drop,
      stableMs: 200,
      pollMs: 100,
      suppressionList: 'local:lists/optout.txt',
    },
    { name: 'other', type: 'local', path: other, stableMs: 200, pollMs: 100 },
  ];
  await writeFile(h.configPath, `${JSON.stringify({ ...h.config, sources }, null, 2)}\n`);
  await mkdir(join(h.drop, 'lists'), { recursive: true });
  await writeFile(join(h.drop, 'lists', 'optout.txt'), `# local's own opt-outs\n${B}\n`);
  await h.start();
});

afterAll(async () => {
  await h?.close();
  await s3?.close();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

async function dropInto(root: string, name: string, numbers: string[]): Promise<void> {
  const tmp = join(root, 'inbox', `.${name}.tmp`);
  await writeFile(tmp, `Hola, mensaje de prueba\n${numbers.join('\n')}\n`);
  await rename(tmp, join(root, 'inbox', name));
}

/** The report's rows of a completed file of `root`: number → code ('' when sent). */
async function outcomes(root: string, name: string): Promise<{ m: Manifest; codes: Map<string, string> }> {
  const m = await waitFor(`${name} completed in ${root}/reports`, async () => {
    for (const entry of await readdir(join(root, 'reports'))) {
      if (entry.startsWith('.') || !entry.endsWith('.manifest.json')) continue;
      const got = JSON.parse(await readFile(join(root, 'reports', entry), 'utf8')) as Manifest;
      if (got.name === name && got.state === 'completed') return got;
    }
    return undefined;
  });
  const rows = csvRecords(
    await readFile(join(root, 'reports', reportFileName(m.name, m.fileId, 'report.csv')), 'utf8'),
  );
  return { m, codes: new Map(rows.map((r) => [r.number!, r.code!])) };
}

async function ledgerTo(fileId: string): Promise<string[]> {
  return (await h.ledger(fileId)).entries.map((e) => e.to).sort();
}

describe('opt-out lists through dropline run', () => {
  it("a source's own list and the global one: SUPPRESSED in the report, never sent; the other source gets the global one only", async () => {
    await dropInto(h.drop, 'uno.txt', [A, B, C]);
    const uno = await outcomes(h.drop, 'uno.txt');
    expect(uno.m.source).toBe('local');
    expect(uno.m.counts).toMatchObject({ records: 3, valid: 1, suppressed: 2 });
    expect(uno.codes.get(sent(A))).toBe('SUPPRESSED');
    expect(uno.codes.get(sent(B))).toBe('SUPPRESSED');
    expect(uno.codes.get(sent(C))).toBe('');
    expect(await ledgerTo(uno.m.fileId)).toEqual([sent(C)]);

    await dropInto(other, 'dos.txt', [A, B, C]);
    const dos = await outcomes(other, 'dos.txt');
    expect(dos.m.source).toBe('other');
    expect(dos.m.counts).toMatchObject({ records: 3, valid: 2, suppressed: 1 });
    expect(dos.codes.get(sent(A))).toBe('SUPPRESSED');
    expect(dos.codes.get(sent(B))).toBe('');
    expect(await ledgerTo(dos.m.fileId)).toEqual([sent(B), sent(C)].sort());
  });

  it('lists changed while the daemon runs: the next file sees them at once (checked before it starts)', async () => {
    // local's own list (a local file on the source) gains C; the file is dropped right after.
    await appendFile(join(h.drop, 'lists', 'optout.txt'), `${C}\n`);
    await dropInto(h.drop, 'tres.txt', [A, B, C, D]);
    const tres = await outcomes(h.drop, 'tres.txt');
    expect(tres.m.counts).toMatchObject({ valid: 1, suppressed: 3 });
    expect(tres.codes.get(sent(C))).toBe('SUPPRESSED');
    expect(await ledgerTo(tres.m.fileId)).toEqual([sent(D)]);

    // The global S3 object gains D: every source's next file.
    await putGlobal([A, D]);
    await dropInto(other, 'cuatro.txt', [A, B, C, D]);
    const cuatro = await outcomes(other, 'cuatro.txt');
    expect(cuatro.m.counts).toMatchObject({ valid: 2, suppressed: 2 });
    expect(cuatro.codes.get(sent(D))).toBe('SUPPRESSED');
    expect(cuatro.codes.get(sent(C))).toBe('');
    expect(await ledgerTo(cuatro.m.fileId)).toEqual([sent(B), sent(C)].sort());
    expect(h.daemonOutput).toContain('suppression list changed: read again');
    // The credentials came from the environment and never reach a log line.
    expect(h.daemonOutput).not.toContain(S3RVER_CREDENTIALS.secretAccessKey);
  });

  it('a list replaced by a gzip copy is refused: the file waits, nothing sent, and goes on once it is put right', async () => {
    const path = join(h.drop, 'lists', 'optout.txt');
    const good = await readFile(path);
    await writeFile(path, gzipSync(good));
    // Not tres.txt's content again (a duplicate file is not sent).
    await dropInto(h.drop, 'cinco.txt', [D, C, B, A]);
    // The file was taken and waits: its drive fails on the refusal (said with the code once).
    await waitFor('cinco.txt waiting for the refused list', () =>
      h.daemonOutput
        .split('\n')
        .some((l) => l.includes('cinco.txt (') && l.includes(' failed') && l.includes('refused since'))
        ? true
        : undefined,
    );
    expect(h.daemonOutput).toContain('"code":"DROPLINE_ERR_SUPPRESSION_LIST_REFUSED"');
    // Put right (replaced whole): the file goes on with it, its opted-out numbers held back.
    await writeFile(`${path}.tmp`, good);
    await rename(`${path}.tmp`, path);
    const cinco = await outcomes(h.drop, 'cinco.txt');
    // A and D on the global list (the test above), B and C on local's own: none sent.
    expect(cinco.m.counts).toMatchObject({ records: 4, valid: 0, suppressed: 4 });
    expect(cinco.codes.get(sent(B))).toBe('SUPPRESSED');
    expect(cinco.codes.get(sent(C))).toBe('SUPPRESSED');
    expect(await ledgerTo(cinco.m.fileId)).toEqual([]);
    expect(h.daemonOutput).toContain('taken again after a refusal');
  });

  it('dropline validate --source reads the same lists (global + that source its own)', async () => {
    const file = join(h.dir, 'check.txt');
    await writeFile(file, `Hola\n${[A, B, C, D].join('\n')}\n`);
    const local = await h.cli(['validate', '--json', '--source', 'local', file]);
    expect(local.code, local.stderr).toBe(0);
    expect(JSON.parse(local.stdout)).toMatchObject({ valid: 0, suppressed: 4 });
    const oth = await h.cli(['validate', '--json', '--source', 'other', file]);
    expect(oth.code, oth.stderr).toBe(0);
    expect(JSON.parse(oth.stdout)).toMatchObject({ valid: 2, suppressed: 2 });
    // --suppression-list instead of both, naming a list on a source.
    const flag = await h.cli([
      'validate',
      '--json',
      '--source',
      'other',
      '--suppression-list',
      'local:lists/optout.txt',
      file,
    ]);
    expect(flag.code, flag.stderr).toBe(0);
    expect(JSON.parse(flag.stdout)).toMatchObject({ valid: 2, suppressed: 2 });
  });
});

describe('start-up errors', () => {
  /** `dropline run` with the harness's configuration edited; it must end within 10 s. */
  async function runWith(edit: (c: Record<string, unknown>) => void) {
    const config = JSON.parse(await readFile(h.configPath, 'utf8')) as Record<string, unknown>;
    // Its own store and ports: the daemon of the tests above still runs.
    config.store = `sqlite:${join(h.dir, `startup-${Math.random().toString(36).slice(2)}.db`)}`;
    config.ops = { listen: '127.0.0.1:0' };
    config.notify = { listen: '127.0.0.1:0', token: 'x' };
    edit(config);
    return runDaemon(h.dir, config);
  }

  it('a list on a source that is not configured: DROPLINE_ERR_CONFIG naming the key', async () => {
    const ended = await runWith((c) => {
      c.suppressionList = 'partner:lists/optout.txt';
    });
    expect(ended.hung).toBe(false);
    expect(ended.code).not.toBe(0);
    expect(ended.stderr).toMatch(
      /DROPLINE_ERR_CONFIG: .*suppressionList: "partner:lists\/optout.txt" names no configured source "partner"/,
    );
    expect(ended.stdout).not.toMatch(/dropline is running/);
  });

  it("a source's list that is missing: DROPLINE_ERR_SUPPRESSION_LIST naming the list", async () => {
    const ended = await runWith((c) => {
      (c.sources as Record<string, unknown>[])[1]!.suppressionList = 'other:lists/missing.txt';
    });
    expect(ended.hung).toBe(false);
    expect(ended.code).not.toBe(0);
    expect(ended.stderr).toMatch(
      /DROPLINE_ERR_SUPPRESSION_LIST: .*sources\.other\.suppressionList \(other:lists\/missing.txt\)/,
    );
    expect(ended.stdout).not.toMatch(/dropline is running/);
  });
});
