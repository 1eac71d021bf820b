// Opt-out lists from anywhere (docs/configuration.md "Opt-out lists"): a local file,
// s3://bucket/key on a real s3rver (credentials, region and endpoint from the environment, as
// the SDK's default chain reads them), `<source>:<path>` through a local, an S3 and an SFTP
// source (a real sshd on 127.0.0.1). Reloaded when they change (checked before each file and
// every checkEveryMs), per source on top of the global one, the last good copy kept when a
// reload fails, start-up errors that name the list.
import { mkdir, mkdtemp, rm, unlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { pino } from 'pino';
import type SftpClient from 'ssh2-sftp-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DroplineError } from '../../src/errors.ts';
import type { Logger } from '../../src/log.ts';
import { ConsentList } from '../../src/pipeline/consent-list.ts';
import {
  parseListLocation,
  readListsOnce,
  SuppressionLists,
  type SuppressionListsOptions,
} from '../../src/pipeline/suppression-lists.ts';
import { LocalSource } from '../../src/sources/local-source.ts';
import { S3Source } from '../../src/sources/s3-source.ts';
import type { SftpSource } from '../../src/sources/sftp-source.ts';
import type { Source } from '../../src/sources/source.ts';
import { S3RVER_CREDENTIALS, type S3rverHandle, startS3rver } from '../helpers/s3rver.ts';
import { type Sshd, sftpPut, sftpSourceFor, sshdUnavailable, startSshd } from '../helpers/sshd.ts';

const BUCKET = 'optouts';
let dir: string;
let s3: S3rverHandle;
const savedEnv: Record<string, string | undefined> = {};
const ENV = {
  AWS_ENDPOINT_URL_S3: '',
  AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
  // No region anywhere: the lists' client falls back to us-east-1.
  AWS_REGION: undefined,
  AWS_DEFAULT_REGION: undefined,
  AWS_PROFILE: undefined,
  AWS_CONFIG_FILE: '/nonexistent/aws-config',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials',
  AWS_ENDPOINT_URL: undefined,
} as Record<string, string | undefined>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-lists-'));
  s3 = await startS3rver([BUCKET]);
  ENV.AWS_ENDPOINT_URL_S3 = s3.endpoint;
  for (const [k, v] of Object.entries(ENV)) {
    savedEnv[k] = process.env[k];
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

afterAll(async () => {
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A logger whose lines the test reads. */
function capture(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    {
      write(s: string) {
        lines.push(JSON.parse(s) as Record<string, unknown>);
      },
    },
  );
  return { logger, lines };
}

let n = 0;
async function localFile(content: string): Promise<string> {
  const path = join(dir, `list-${++n}.txt`);
  await writeFile(path, content);
  return path;
}

async function putObject(client: S3Client, key: string, body: string): Promise<void> {
  await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
}

function lists(options: Partial<SuppressionListsOptions> & { logger?: Logger }): SuppressionLists {
  return new SuppressionLists({
    global: null,
    sources: new Map(),
    logger: capture().logger,
    ...options,
  });
}

/** The source with its reads (open) and stats counted; everything else passed through. */
function countReads(source: Source): { source: Source; opens: () => number; stats: () => number } {
  let opens = 0;
  let stats = 0;
  const counted = new Proxy(source, {
    get(target, key) {
      if (key === 'open')
        return (path: string) => {
          opens++;
          return target.open(path);
        };
      if (key === 'stat')
        return (path: string) => {
          stats++;
          return target.stat(path);
        };
      const value = Reflect.get(target, key, target) as unknown;
      // Private fields: the source's own methods run on the source itself.
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { source: counted, opens: () => opens, stats: () => stats };
}

/** Counts the commands an S3 client sends, by name. */
function countCommands(client: S3Client): Map<string, number> {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => (args) => {
      const name = context.commandName ?? '?';
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: `countCommands${++n}` },
  );
  return counts;
}

describe('locations: a path, s3://bucket/key, <sourceName>:<path>', () => {
  const names = new Set(['partner', 'bucket.src', 'C']);
  const parse = (v: string) => parseListLocation(v, names, 'suppressionList');
  const refusal = (v: string) => {
    try {
      parse(v);
    } catch (err) {
      expect(err).toBeInstanceOf(DroplineError);
      expect((err as DroplineError).code).toBe('DROPLINE_ERR_CONFIG');
      return (err as DroplineError).message;
    }
    throw new Error(`${v} was accepted`);
  };

  it('tells the three forms apart by the part before the first colon', () => {
    expect(parse('s3://b/lists/optout.txt')).toEqual({ kind: 's3', bucket: 'b', key: 'lists/optout.txt' });
    expect(parse('partner:lists/optout.txt')).toEqual({
      kind: 'source',
      source: 'partner',
      path: 'lists/optout.txt',
    });
    expect(parse('bucket.src:optout.txt')).toEqual({
      kind: 'source',
      source: 'bucket.src',
      path: 'optout.txt',
    });
    expect(parse('C:lists/x.txt')).toEqual({ kind: 'source', source: 'C', path: 'lists/x.txt' });
    expect(parse('/srv/lists/optout.txt')).toEqual({ kind: 'local', path: '/srv/lists/optout.txt' });
    expect(parse('lists/optout.txt')).toEqual({ kind: 'local', path: 'lists/optout.txt' });
    // A colon after a slash: a local file name holding a colon.
    expect(parse('./partner:2026.txt')).toEqual({ kind: 'local', path: './partner:2026.txt' });
    expect(parse('/srv/a:b.txt')).toEqual({ kind: 'local', path: '/srv/a:b.txt' });
  });

  it('refuses an unknown source name, a Windows path, other URLs and odd paths, naming the key', () => {
    const unknown = refusal('nosuch:lists/optout.txt');
    expect(unknown).toContain('suppressionList');
    expect(unknown).toContain('"nosuch"');
    expect(unknown).toContain('sources: partner, bucket.src, C');
    expect(unknown).toContain('./nosuch:lists/optout.txt');
    expect(refusal('C:\\lists\\optout.txt')).toContain('Windows path');
    expect(refusal('D:/lists/optout.txt')).toContain('Windows path');
    expect(refusal('\\\\server\\share\\optout.txt')).toContain('Windows path');
    expect(refusal('https://example.com/optout.txt')).toContain('only s3://');
    expect(refusal('s3://bucket')).toContain('s3://bucket/key');
    expect(refusal('s3://bucket/')).toContain('s3://bucket/key');
    // Credentials in the URL: refused without repeating them.
    const withSecret = refusal('s3://AKIAEXAMPLE:s3cr3t-value@bucket/optout.txt');
    expect(withSecret).toContain('holds no credentials');
    expect(withSecret).not.toContain('s3cr3t-value');
    expect(withSecret).not.toContain('AKIAEXAMPLE');
    expect(refusal('partner:/etc/optout.txt')).toContain('relative');
    expect(refusal('partner:../optout.txt')).toContain('relative');
    expect(refusal('partner:')).toContain('relative');
    expect(refusal('partner:inbox/optout.txt')).toContain('is in inbox/');
  });
});

describe('a local list', () => {
  it('read at start, then a change is seen by the next forSource (a file that starts right after)', async () => {
    const path = await localFile('3001234567\n');
    const { logger, lines } = capture();
    const l = lists({ global: path, logger, checkEveryMs: 3_600_000 });
    await l.start();
    try {
      const first = await l.forSource('any');
      expect(first?.has('573001234567')).toBe(true);
      expect(first?.has('573109876543')).toBe(false);
      const [info] = l.describe();
      expect(info).toMatchObject({
        name: 'suppressionList',
        source: null,
        location: path,
        numbers: 1,
        invalid: 0,
      });
      expect(info?.loadedAt).toBeInstanceOf(Date);
      // Unchanged: the same copy.
      expect(await l.forSource('any')).toBe(first);
      // Appended, and a file starts at once: it sees the new number.
      await writeFile(path, '3001234567\n3109876543\n');
      const second = await l.forSource('any');
      expect(second?.has('573109876543')).toBe(true);
      expect(l.describe()[0]?.numbers).toBe(2);
      // Rewritten at the same size within the same clock tick: still seen (the bytes decide
      // while the mtime is that fresh).
      await writeFile(path, '3001234567\n3209876543\n');
      const third = await l.forSource('any');
      expect(third?.has('573209876543')).toBe(true);
      expect(third?.has('573109876543')).toBe(false);
      expect(lines.filter((x) => x.msg === 'suppression list changed: read again')).toHaveLength(2);
    } finally {
      await l.stop();
    }
  });

  it('the periodic check reloads a changed list without any file', async () => {
    const path = await localFile('3001234567\n');
    const l = lists({ global: path, checkEveryMs: 100 });
    await l.start();
    try {
      const loadedAt = l.describe()[0]?.loadedAt;
      await writeFile(path, '3001234567\n3109876543\n3204445566\n');
      const deadline = Date.now() + 10_000;
      while (l.describe()[0]?.numbers !== 3) {
        if (Date.now() > deadline) throw new Error('not reloaded by the timer');
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(l.describe()[0]?.loadedAt?.getTime()).toBeGreaterThan(loadedAt!.getTime());
    } finally {
      await l.stop();
    }
  });

  it('many files starting at once after a change: one reload, never two at once', async () => {
    const path = await localFile('3001234567\n');
    const { logger, lines } = capture();
    const l = lists({ global: path, logger, checkEveryMs: 3_600_000 });
    await l.start();
    try {
      await writeFile(path, '3001234567\n3109876543\n3151112233\n');
      const got = await Promise.all(Array.from({ length: 25 }, () => l.forSource('any')));
      for (const g of got) expect(g?.has('573151112233')).toBe(true);
      // Every caller got the same copy, read once.
      expect(new Set(got).size).toBe(1);
      expect(lines.filter((x) => x.msg === 'suppression list changed: read again')).toHaveLength(1);
    } finally {
      await l.stop();
    }
  });

  it('a reload that fails keeps the last good copy, warns once, and recovers', async () => {
    const path = await localFile('3001234567\n');
    const { logger, lines } = capture();
    const l = lists({ global: path, logger, checkEveryMs: 3_600_000 });
    await l.start();
    try {
      await unlink(path);
      const kept = await l.forSource('any');
      expect(kept?.has('573001234567')).toBe(true);
      await l.forSource('any');
      await l.checkAll();
      const warnings = lines.filter((x) => x.level === 40);
      expect(warnings).toHaveLength(1);
      expect(String(warnings[0]?.msg)).toContain('stays in use');
      expect(String(warnings[0]?.err)).toContain('ENOENT');
      expect(l.describe()[0]?.lastError).toContain('ENOENT');
      // A folder where the file was: refused the same way.
      await mkdir(path);
      expect((await l.forSource('any'))?.has('573001234567')).toBe(true);
      await rm(path, { recursive: true });
      await writeFile(path, '3109876543\n');
      const back = await l.forSource('any');
      expect(back?.has('573109876543')).toBe(true);
      expect(back?.has('573001234567')).toBe(false);
      expect(l.describe()[0]?.lastError).toBeNull();
      expect(lines.some((x) => String(x.msg).includes('readable again'))).toBe(true);
    } finally {
      await l.stop();
    }
  });
});

describe('per source and global', () => {
  it("a source's list applies to that source only, the global one to all; a list used twice is read once", async () => {
    const global = await localFile('3001234567\n');
    const mine = await localFile('3109876543\n');
    // A source whose national numbers are Mexican: its own list is read that way too.
    const mx = await localFile('55 1234 5678\n');
    const { logger, lines } = capture();
    const l = lists({
      global,
      perSource: [
        { source: 'a', location: mine },
        { source: 'b', location: null },
        { source: 'mx', location: mx, defaultCountry: 'MX' },
        { source: 'same', location: global },
      ],
      logger,
    });
    await l.start();
    try {
      const a = await l.forSource('a');
      expect(a?.has('573001234567')).toBe(true);
      expect(a?.has('573109876543')).toBe(true);
      const b = await l.forSource('b');
      expect(b?.has('573001234567')).toBe(true);
      expect(b?.has('573109876543')).toBe(false);
      expect((await l.forSource('unknown'))?.has('573109876543')).toBe(false);
      const m = await l.forSource('mx');
      expect(m?.has('525512345678')).toBe(true);
      expect(m?.has('573001234567')).toBe(true);
      expect((await l.forSource('same'))?.has('573001234567')).toBe(true);
      expect(lines.filter((x) => x.msg === 'suppression list loaded')).toHaveLength(3);
      expect(l.describe().map((d) => [d.name, d.source, d.numbers])).toEqual([
        ['suppressionList', null, 1],
        ['sources.a.suppressionList', 'a', 1],
        ['sources.mx.suppressionList', 'mx', 1],
        ['sources.same.suppressionList', 'same', 1],
      ]);
      // A change to the source's list: that source's next file sees it, the others do not.
      await writeFile(mine, '3109876543\n3204445566\n');
      expect((await l.forSource('a'))?.has('573204445566')).toBe(true);
      expect((await l.forSource('b'))?.has('573204445566')).toBe(false);
    } finally {
      await l.stop();
    }
  });

  it('no list configured: forSource is null; fromConfig is null', async () => {
    const l = lists({});
    await l.start();
    expect(await l.forSource('x')).toBeNull();
    await l.stop();
    expect(
      SuppressionLists.fromConfig(
        {
          suppressionList: null,
          sources: [{ name: 'x', suppressionList: null }] as never,
        },
        new Map(),
        capture().logger,
      ),
    ).toBeNull();
  });
});

describe('start-up errors', () => {
  it('a missing list: DROPLINE_ERR_SUPPRESSION_LIST naming the list', async () => {
    const missing = join(dir, 'no-such-list.txt');
    const l = lists({ perSource: [{ source: 'partner', location: missing }] });
    const err = await l.start().catch((e: unknown) => e);
    await l.stop();
    expect(err).toBeInstanceOf(DroplineError);
    expect((err as DroplineError).code).toBe('DROPLINE_ERR_SUPPRESSION_LIST');
    expect((err as DroplineError).message).toContain('sources.partner.suppressionList');
    expect((err as DroplineError).message).toContain(missing);
  });

  it('an unknown source name: DROPLINE_ERR_CONFIG before anything is read', () => {
    let err: unknown;
    try {
      lists({ global: 'partner:lists/optout.txt', sourceNames: ['local'] });
    } catch (e) {
      err = e;
    }
    expect((err as DroplineError).code).toBe('DROPLINE_ERR_CONFIG');
    expect((err as DroplineError).message).toContain('no configured source "partner"');
  });

  it('a missing S3 object and refused credentials: named, no secret in the message', async () => {
    const missing = lists({ global: `s3://${BUCKET}/no/such/list.txt` });
    const err = (await missing.start().catch((e: unknown) => e)) as DroplineError;
    await missing.stop();
    expect(err.code).toBe('DROPLINE_ERR_SUPPRESSION_LIST');
    expect(err.message).toContain(`suppressionList (s3://${BUCKET}/no/such/list.txt)`);
    expect(err.message).toMatch(/NotFound|404/);

    await putObject(s3.client, 'secret-test.txt', '3001234567\n');
    const secret = 'wrong-secret-d1e2a3d4';
    const refused = lists({
      global: `s3://${BUCKET}/secret-test.txt`,
      s3ClientConfig: { credentials: { accessKeyId: 'NOTS3RVER', secretAccessKey: secret } },
    });
    const err2 = (await refused.start().catch((e: unknown) => e)) as DroplineError;
    await refused.stop();
    expect(err2.code).toBe('DROPLINE_ERR_SUPPRESSION_LIST');
    expect(err2.message).toContain('s3://');
    expect(err2.message).not.toContain(secret);
  });
});

describe('S3: s3://bucket/key and <s3source>:<path> on s3rver', () => {
  it('s3:// with the endpoint and credentials from the environment; a change is seen by a HEAD', async () => {
    await putObject(s3.client, 'lists/global.txt', '3001234567\n');
    const { logger, lines } = capture();
    const l = lists({ global: `s3://${BUCKET}/lists/global.txt`, logger, checkEveryMs: 3_600_000 });
    await l.start();
    try {
      expect((await l.forSource('x'))?.has('573001234567')).toBe(true);
      const before = l.describe()[0]?.loadedAt;
      await putObject(s3.client, 'lists/global.txt', '3001234567\n3109876543\n');
      const after = await l.forSource('x');
      expect(after?.has('573109876543')).toBe(true);
      expect(l.describe()[0]?.loadedAt?.getTime()).toBeGreaterThanOrEqual(before!.getTime());
      // Gone: the last good copy stays, with a warning.
      await s3.client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: 'lists/global.txt' }));
      expect((await l.forSource('x'))?.has('573109876543')).toBe(true);
      expect(lines.some((x) => x.level === 40 && String(x.err).includes('404'))).toBe(true);
    } finally {
      await l.stop();
    }
  });

  /** An S3 source `bucket` on the test's s3rver, its keys under `partner/`. */
  const partnerSource = () =>
    new S3Source({
      name: 'bucket',
      bucket: BUCKET,
      prefix: 'partner',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      clientConfig: { credentials: S3RVER_CREDENTIALS },
    });

  it("<s3source>:<path>: read through the source's own client; checks are HEADs, not downloads", async () => {
    const source = partnerSource();
    await putObject(s3.client, 'partner/lists/optout.txt', '3001234567\n');
    const counts = countCommands(source.client);
    const l = lists({
      perSource: [{ source: 'bucket', location: 'bucket:lists/optout.txt' }],
      sources: new Map<string, Source>([['bucket', source]]),
    });
    await l.start();
    try {
      for (let i = 0; i < 5; i++) expect((await l.forSource('bucket'))?.has('573001234567')).toBe(true);
      expect(counts.get('GetObjectCommand')).toBe(1);
      expect(counts.get('HeadObjectCommand')).toBe(6);
      await putObject(s3.client, 'partner/lists/optout.txt', '3001234567\n3109876543\n');
      expect((await l.forSource('bucket'))?.has('573109876543')).toBe(true);
      expect(counts.get('GetObjectCommand')).toBe(2);
      // Another source's files: not this list.
      expect(await l.forSource('other')).toBeNull();
    } finally {
      await l.stop();
      await source.close();
    }
  });

  it('a store that stops answering: the file goes on after checkWaitMs with the copy in use', async () => {
    await putObject(s3.client, 'lists/frozen.txt', '3001234567\n');
    const { logger, lines } = capture();
    const l = lists({ global: `s3://${BUCKET}/lists/frozen.txt`, logger, checkWaitMs: 300 });
    await l.start();
    s3.freeze();
    try {
      const got = await l.forSource('x');
      expect(got?.has('573001234567')).toBe(true);
      expect(lines.some((x) => x.level === 40 && String(x.msg).includes('no answer yet'))).toBe(true);
    } finally {
      s3.thaw();
      await l.stop();
    }
  });

  it('the consent list too: a store that stops answering, the file goes on after checkWaitMs with the copy in use', async () => {
    await putObject(s3.client, 'lists/consent.txt', '3001234567;sms\n');
    const { logger, lines } = capture();
    const consent = new ConsentList(`s3://${BUCKET}/lists/consent.txt`, new Map(), [], logger, {
      checkWaitMs: 300,
    });
    await consent.start(3_600_000);
    s3.freeze();
    try {
      const got = await consent.forChannel('sms');
      expect(got.allows('573001234567')).toBe(true);
      expect(lines.some((x) => x.level === 40 && String(x.msg).includes('no answer yet'))).toBe(true);
    } finally {
      s3.thaw();
      consent.stop();
    }
  });

  it('the consent list changed while a check runs: a file that starts then waits for the next check and sees the change', async () => {
    const source = partnerSource();
    await putObject(s3.client, 'partner/lists/consent.txt', '3001234567;sms\n');
    // The timer's check is held after its HEAD answered (the list as it was).
    let hold: Promise<void> | null = null;
    let release = () => {};
    let held = () => {};
    const stat = source.stat.bind(source);
    source.stat = async (path) => {
      const st = await stat(path);
      if (hold) {
        held();
        await hold;
      }
      return st;
    };
    const consent = new ConsentList(
      'bucket:lists/consent.txt',
      new Map([['bucket', source]]),
      ['bucket'],
      capture().logger,
    );
    await consent.start(3_600_000);
    try {
      hold = new Promise((r) => {
        release = r;
      });
      const reached = new Promise<void>((r) => {
        held = r;
      });
      const running = consent.check();
      await reached;
      await putObject(s3.client, 'partner/lists/consent.txt', '3001234567;sms\n3109876543;sms\n');
      const file = consent.forChannel('sms');
      hold = null;
      release();
      await running;
      expect((await file).allows('573109876543')).toBe(true);
    } finally {
      consent.stop();
      await source.close();
    }
  });

  it('the consent list refused at start, its store then silent: a file is failed after checkWaitMs, never held for ever', async () => {
    await putObject(s3.client, 'lists/sheet.txt', 'numero,canales\nfin\n');
    const { logger } = capture();
    const consent = new ConsentList(`s3://${BUCKET}/lists/sheet.txt`, new Map(), [], logger, {
      checkWaitMs: 300,
    });
    await consent.start(3_600_000);
    expect(consent.describe().refused).not.toBeNull();
    s3.freeze();
    try {
      const err = await consent.forChannel('sms').then(
        () => null,
        (e: unknown) => e,
      );
      expect((err as DroplineError).code).toBe('DROPLINE_ERR_CONSENT_LIST');
      expect((err as DroplineError).message).toContain('no answer');
    } finally {
      s3.thaw();
      consent.stop();
    }
  });

  it('<localsource>:<path> and readListsOnce (validate): global + the source list, any form', async () => {
    const root = join(dir, 'local-src');
    await mkdir(join(root, 'lists'), { recursive: true });
    await writeFile(join(root, 'lists', 'optout.txt'), '3204445566\n');
    await putObject(s3.client, 'lists/validate.txt', '3001234567\n');
    const config = {
      suppressionList: `s3://${BUCKET}/lists/validate.txt`,
      sources: [
        {
          name: 'local',
          type: 'local',
          path: root,
          suppressionList: 'local:lists/optout.txt',
          defaultCountry: 'CO',
        },
        { name: 'other', type: 'local', path: root, suppressionList: null, defaultCountry: 'CO' },
      ],
    } as never;
    const forLocal = await readListsOnce({ config, source: 'local' });
    expect(forLocal?.has('573001234567')).toBe(true);
    expect(forLocal?.has('573204445566')).toBe(true);
    const forOther = await readListsOnce({ config, source: 'other' });
    expect(forOther?.has('573001234567')).toBe(true);
    expect(forOther?.has('573204445566')).toBe(false);
    // --suppression-list instead of both, still naming a configured source.
    const only = await readListsOnce({ config, source: 'other', only: 'local:lists/optout.txt' });
    expect(only?.has('573204445566')).toBe(true);
    expect(only?.has('573001234567')).toBe(false);
    // The source was not started: nothing was created on it.
    expect(await new LocalSource({ name: 'local', path: root }).exists('inbox')).toBe(false);
  });
});

const skip = sshdUnavailable();
describe.skipIf(skip !== null)('SFTP: <sftpsource>:<path> on sshd', () => {
  let sshd: Sshd;
  let partner: SftpClient;
  let source: SftpSource;

  beforeAll(async () => {
    sshd = await startSshd();
    partner = await sshd.partner();
    source = await sftpSourceFor(sshd, 'drop');
    await source.start();
  });

  afterAll(async () => {
    await source?.close();
    await partner?.end().catch(() => {});
    await sshd?.close();
  });

  it("read through the source's connection; a change is seen before the next file; a failed reload keeps the copy", async () => {
    await sftpPut(partner, 'drop/lists/optout.txt', '3001234567\n');
    const { logger, lines } = capture();
    const l = lists({
      global: null,
      perSource: [{ source: 'partner', location: 'partner:lists/optout.txt' }],
      sources: new Map<string, Source>([['partner', source]]),
      logger,
      checkEveryMs: 3_600_000,
    });
    await l.start();
    try {
      expect((await l.forSource('partner'))?.has('573001234567')).toBe(true);
      expect(await l.forSource('partner')).toBe(await l.forSource('partner'));
      await sftpPut(partner, 'drop/lists/optout.txt', '3001234567\n3109876543\n');
      expect((await l.forSource('partner'))?.has('573109876543')).toBe(true);
      await partner.delete('drop/lists/optout.txt');
      expect((await l.forSource('partner'))?.has('573109876543')).toBe(true);
      expect(lines.some((x) => x.level === 40)).toBe(true);
      expect(l.describe()[0]?.lastError).toBeTruthy();
      expect(l.describe()[0]?.failures).toBeGreaterThan(0);
    } finally {
      await l.stop();
    }
  });

  it('checks are one stat each: an unchanged list is never downloaded again', async () => {
    const remote = 'drop/lists/steady.txt';
    // Written a minute ago: settled (a fresh mtime is re-hashed, as a same-second rewrite may keep it).
    const age = async (seconds: number) => {
      const t = new Date(Date.now() - seconds * 1000);
      await utimes(join(sshd.home, remote), t, t);
    };
    await sftpPut(partner, remote, '3001234567\n');
    await age(60);
    const counted = countReads(source);
    const l = lists({
      perSource: [{ source: 'partner', location: 'partner:lists/steady.txt' }],
      sources: new Map<string, Source>([['partner', counted.source]]),
      checkEveryMs: 3_600_000,
    });
    await l.start();
    try {
      expect(counted.opens()).toBe(1);
      const before = source.operations;
      for (let i = 0; i < 5; i++) expect((await l.forSource('partner'))?.has('573001234567')).toBe(true);
      await l.checkAll();
      expect(counted.opens()).toBe(1);
      expect(counted.stats()).toBe(1 + 6);
      // One SFTP request a check: the lstat.
      expect(source.operations - before).toBe(6);
      // Changed (same size, older mtime than before: only the stat's version differs): read once.
      await sftpPut(partner, remote, '3109876543\n');
      await age(120);
      const changed = await l.forSource('partner');
      expect(changed?.has('573109876543')).toBe(true);
      expect(changed?.has('573001234567')).toBe(false);
      expect(counted.opens()).toBe(2);
      for (let i = 0; i < 3; i++) expect(await l.forSource('partner')).toBe(changed);
      expect(counted.opens()).toBe(2);
    } finally {
      await l.stop();
    }
  });
});
