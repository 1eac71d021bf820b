// Issue 5 "Tests", S3: paginated listing, a key with spaces and accents, objects and reports
// larger than one multipart part, and `dropline run` end to end on an s3rver bucket (the
// daemon a child process with the credentials in its environment, as in production).
import { createHash, randomBytes } from 'node:crypto';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Manifest, reportFileName } from '../../src/pipeline/reports.ts';
import { S3Source } from '../../src/sources/s3-source.ts';
import {
  csvRecords,
  expectedMessageId,
  type GeneratedFile,
  PipelineHarness,
  personalizedFile,
  waitFor,
} from '../helpers/pipeline-harness.ts';
import { S3RVER_CREDENTIALS, type S3rverHandle, startS3rver } from '../helpers/s3rver.ts';

const BUCKET = 'drops';
const MiB = 1024 * 1024;
let s3: S3rverHandle;
let n = 0;

beforeAll(async () => {
  s3 = await startS3rver([BUCKET]);
});

afterAll(async () => {
  await s3?.close();
});

function makeSource(prefix: string, extra: { listPageSize?: number; partSize?: number } = {}): S3Source {
  return new S3Source({
    name: 's3',
    bucket: BUCKET,
    prefix,
    endpoint: s3.endpoint,
    forcePathStyle: true,
    clientConfig: { credentials: S3RVER_CREDENTIALS },
    ...extra,
  });
}

/** Counts the commands a client sends, by name (`ListObjectsV2Command`, `UploadPartCommand`). */
function countCommands(client: S3Client): Map<string, number> {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => (args) => {
      const name = context.commandName ?? '?';
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'countCommands' },
  );
  return counts;
}

async function putAll(prefix: string, names: string[]): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < names.length) {
      const name = names[next++]!;
      await s3.client.send(
        new PutObjectCommand({ Bucket: BUCKET, Key: `${prefix}inbox/${name}`, Body: `${name}\n` }),
      );
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

async function getText(key: string): Promise<string> {
  const res = await s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return res.Body!.transformToString('utf8');
}

async function keysUnder(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.client.send(
      new ListObjectsV2Command({
        Bucket: BUCKET,
        Prefix: prefix,
        ...(token ? { ContinuationToken: token } : {}),
      }),
    );
    for (const o of page.Contents ?? []) keys.push(o.Key!.slice(prefix.length));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys.sort();
}

describe('listing', () => {
  it('reads every page: 10 files in pages of 3 take 4 requests', async () => {
    const prefix = `list${++n}/`;
    const names = Array.from({ length: 10 }, (_, i) => `f${String(i).padStart(2, '0')}.txt`);
    await putAll(prefix, [...names, 'skip.csv', '.hidden.txt']);
    const source = makeSource(prefix, { listPageSize: 3 });
    const counts = countCommands(source.client);
    const listed = await source.list();
    expect(listed.map((e) => e.name).sort()).toEqual(names);
    // 12 keys, 3 a page.
    expect(counts.get('ListObjectsV2Command')).toBe(4);
    await source.close();
  });

  it('more than 1000 objects: two pages of S3 maximum size, all listed', async () => {
    const prefix = `list${++n}/`;
    const names = Array.from({ length: 1005 }, (_, i) => `n${String(i).padStart(4, '0')}.txt`);
    await putAll(prefix, names);
    const source = makeSource(prefix);
    const counts = countCommands(source.client);
    const listed = await source.list();
    expect(listed).toHaveLength(1005);
    expect(new Set(listed.map((e) => e.name)).size).toBe(1005);
    expect(counts.get('ListObjectsV2Command')).toBe(2);
    await source.close();
  });
});

describe('a key with spaces and accents', () => {
  it('is listed, read, probed, moved and reported under its own name', async () => {
    const prefix = `accents${++n}/`;
    const source = makeSource(prefix);
    await source.start();
    const name = 'campaña de prueba.txt';
    const content = '3001234567;Hola, ¿cómo estás?\nEOF;1\n';
    await s3.client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: `${prefix}inbox/${name}`, Body: content }),
    );
    const listed = await source.list();
    expect(listed.map((e) => e.name)).toEqual([name]);
    expect(listed[0]!.path).toBe(`inbox/${name}`);
    expect(listed[0]!.size).toBe(Buffer.byteLength(content));
    expect(await source.readTail(`inbox/${name}`, 6)).toBe('EOF;1\n');
    expect(await source.move(`inbox/${name}`, `processing/${name}`)).toBe(true);
    const parts: Buffer[] = [];
    for await (const c of source.open(`processing/${name}`)) parts.push(Buffer.from(c));
    expect(Buffer.concat(parts).toString('utf8')).toBe(content);
    await source.write('reports/campaña de prueba.report.csv', 'line,number\n');
    expect(await getText(`${prefix}reports/campaña de prueba.report.csv`)).toBe('line,number\n');
    expect(await source.list()).toEqual([]);
    await source.close();
  });
});

describe('multipart sizes', () => {
  it('an object uploaded in several parts streams through open() exactly, in pieces', async () => {
    const prefix = `big${++n}/`;
    const bytes = randomBytes(12 * MiB + 333);
    const uploader = new S3Client(s3.clientConfig);
    const uploaded = countCommands(uploader);
    await new Upload({
      client: uploader,
      params: { Bucket: BUCKET, Key: `${prefix}inbox/big.txt`, Body: bytes },
      partSize: 5 * MiB,
    }).done();
    const source = makeSource(prefix);
    const [entry] = await source.list();
    expect(entry?.size).toBe(bytes.length);
    expect(uploaded.get('UploadPartCommand')).toBe(3);
    uploader.destroy();
    const hash = createHash('sha256');
    let total = 0;
    let largest = 0;
    for await (const chunk of source.open('inbox/big.txt')) {
      hash.update(chunk);
      total += chunk.byteLength;
      largest = Math.max(largest, chunk.byteLength);
    }
    expect(total).toBe(bytes.length);
    expect(hash.digest('hex')).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(largest).toBeLessThan(MiB); // streamed, never the whole object at once
    await source.close();
  });

  it('a report larger than one part is written by a multipart upload, exactly', async () => {
    const prefix = `report${++n}/`;
    const source = makeSource(prefix, { partSize: 5 * MiB });
    const counts = countCommands(source.client);
    const rows = 160_000; // ~12 MiB of report lines
    const hash = createHash('sha256');
    let bytes = 0;
    async function* report(): AsyncGenerator<string> {
      for (let i = 0; i < rows; i++) {
        const line = `${i},57300${String(i).padStart(7, '0')},msg-${i},sent,,DELIVERED_TO_HANDSET,${'9'.repeat(28)},1,2026-11-01T10:00:00.000Z\n`;
        hash.update(line);
        bytes += Buffer.byteLength(line);
        yield line;
      }
    }
    await source.write('reports/grande.report.csv', report());
    expect(bytes).toBeGreaterThan(10 * MiB);
    expect(counts.get('CreateMultipartUploadCommand')).toBe(1);
    expect(counts.get('UploadPartCommand')).toBeGreaterThanOrEqual(3);
    expect(counts.get('CompleteMultipartUploadCommand')).toBe(1);
    const got = createHash('sha256');
    let gotBytes = 0;
    for await (const c of source.open('reports/grande.report.csv')) {
      got.update(c);
      gotBytes += c.byteLength;
    }
    expect(gotBytes).toBe(bytes);
    expect(got.digest('hex')).toBe(hash.digest('hex'));
    await source.close();
  });
});

describe('dropline run on an S3 source', () => {
  let h: PipelineHarness;
  const prefix = 'partner/drop/';
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };

  beforeAll(async () => {
    // The daemon finds its credentials the way it would in production: the SDK's chain (env).
    process.env.AWS_ACCESS_KEY_ID = S3RVER_CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = S3RVER_CREDENTIALS.secretAccessKey;
    h = await PipelineHarness.create({
      api: { chunkSize: 250 },
      config: {
        sources: [
          {
            name: 'bucket',
            type: 's3',
            bucket: BUCKET,
            prefix: 'partner/drop', // normalised to "partner/drop/"
            region: 'us-east-1',
            endpoint: s3.endpoint,
            forcePathStyle: true,
            pollMs: 100,
          },
        ],
      },
    });
    await h.start();
  });

  afterAll(async () => {
    await h?.close();
    if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
    else process.env.AWS_ACCESS_KEY_ID = saved.id;
    if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
    else process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
  });

  async function ledgerExactlyOnce(m: Manifest, gen: GeneratedFile): Promise<void> {
    const ledger = await h.ledger(m.fileId);
    const got = ledger.entries.map((e) => `${e.messageId} ${e.to} ${e.count}`).sort();
    expect(got).toEqual(gen.valid.map((r) => `${expectedMessageId(gen, m.fileId, r)} ${r.to} 1`).sort());
  }

  it('a PutObject into inbox/: every recipient once, original in done/, reports in reports/', async () => {
    const name = 'campaña noviembre.txt';
    const gen = personalizedFile(1200, 51);
    const uploadedAt = Date.now();
    await s3.client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: `${prefix}inbox/${name}`, Body: gen.content }),
    );
    const m = await h.waitForState(name, 'completed');
    // Readiness is immediate on S3 by default (no stableMs configured): claimed on the next
    // poll, not after the 15 s a remote source waits otherwise.
    expect(Date.parse(m.timestamps.validating!) - uploadedAt).toBeLessThan(10_000);
    expect(m.counts).toMatchObject({
      records: gen.records,
      valid: gen.valid.length,
      invalid: gen.invalidLines.length,
      duplicates: gen.duplicateLines.length,
      submitted: gen.valid.length,
    });
    await ledgerExactlyOnce(m, gen);
    const manifest = await waitFor('the completed manifest in reports/', async () => {
      const doc = JSON.parse(
        await getText(`${prefix}reports/${reportFileName(name, m.fileId, 'manifest.json')}`),
      ) as Manifest;
      return doc.state === 'completed' ? doc : undefined;
    });
    expect(manifest.fileId).toBe(m.fileId);
    expect(await getText(`${prefix}done/${name}`)).toBe(gen.content);
    const report = csvRecords(
      await getText(`${prefix}reports/${reportFileName(name, m.fileId, 'report.csv')}`),
    );
    expect(report.filter((r) => r.outcome === 'sent')).toHaveLength(gen.valid.length);
    const keys = await keysUnder(prefix);
    expect(keys.filter((k) => k.startsWith('inbox/') && k !== 'inbox/')).toEqual([]);
    expect(keys.filter((k) => k.startsWith('processing/') && k !== 'processing/')).toEqual([]);
    // The credentials came from the environment and never reach a log line.
    expect(h.daemonOutput).not.toContain(S3RVER_CREDENTIALS.secretAccessKey);
  });

  it('new content re-uploaded under the same key is a new file (new sha256), sent once too', async () => {
    const name = 'campaña noviembre.txt';
    const first = await h.fileNamed(name);
    const gen = personalizedFile(300, 52);
    await s3.client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: `${prefix}inbox/${name}`, Body: gen.content }),
    );
    const m = await h.waitForState(name, 'completed', {
      where: (f) => f.name === name && f.fileId !== first?.fileId,
    });
    expect(m.fileId).not.toBe(first?.fileId);
    expect(m.sha256).not.toBe(first?.sha256);
    await ledgerExactlyOnce(m, gen);
    // done/ already holds the first original under this name: the second goes beside it.
    await waitFor('the second original in done/', async () =>
      (await keysUnder(`${prefix}done/`)).includes(`${m.fileId}-${name}`),
    );
    expect(await getText(`${prefix}done/${m.fileId}-${name}`)).toBe(gen.content);
    // and the first run's recipients were not sent again
    const ledger = await h.ledger();
    expect(ledger.duplicates).toBe(0);
  });
});
