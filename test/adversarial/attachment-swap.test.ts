// Issue 32 item 9: an email file's attachments are read as the files listed in its folder,
// whatever is swapped in while they are read. A partner who swaps `attachments/<name>/<file>`,
// `attachments/<name>` or `attachments` itself for a symbolic link to a folder outside the
// drop folder must never get the outside file's bytes sent to the campaign's recipients (or
// stored with it). Each run swaps at one point drawn by a seeded PRNG among every call the
// pipeline's readAttachments makes into the source (and every chunk it reads), so the runs
// are the same on every machine; a run either reads exactly the listed files or is refused
// NOT_A_REGULAR_FILE / FILE_CHANGED. Local (held descriptor, and the by-path fallback), SFTP
// (a real sshd) and S3 (no links: a key overwritten between listing and read; odd keys).
import { chmod, mkdir, mkdtemp, rename, rm, symlink, unlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAttachments } from '../../src/channels/email/attachments.ts';
import { LocalSource } from '../../src/sources/local-source.ts';
import { S3Source } from '../../src/sources/s3-source.ts';
import type { Source } from '../../src/sources/source.ts';
import { prng } from '../helpers/prng.ts';
import { type S3rverHandle, startS3rver } from '../helpers/s3rver.ts';
import { type Sshd, sftpSourceFor, sshdUnavailable, startSshd } from '../helpers/sshd.ts';

/** Over two 256 KiB chunks: swaps also land between the chunks of one file. */
const SIZE = 600 * 1024;
const NAMES = ['a.pdf', 'b.pdf'] as const;
const inside = (name: string) => Buffer.alloc(SIZE, `inside ${name} `);
/** The outside files: the same names and sizes (and mtimes), other bytes. */
const OUTSIDE = Buffer.alloc(SIZE, 'OUTSIDE-SECRET ');
const REFUSALS = ['NOT_A_REGULAR_FILE', 'FILE_CHANGED'];

type Kind = 'file' | 'folder' | 'above';

/**
 * `source` with `hook` awaited before each call into it and after each chunk it yields, and
 * the same for what its calls resolve to (the held folder). `open` and `read` give their
 * bytes lazily: their hook runs when the bytes are first asked for.
 */
function hooked<T extends object>(target: T, hook: () => Promise<void>, chunks = true): T {
  return new Proxy(target, {
    get(t, prop) {
      const value = Reflect.get(t, prop, t);
      if (typeof value !== 'function') return value;
      if (prop === 'open' || prop === 'read')
        return (...args: unknown[]) => ({
          async *[Symbol.asyncIterator]() {
            await hook();
            for await (const chunk of value.apply(t, args) as AsyncIterable<Uint8Array>) {
              yield chunk;
              if (chunks) await hook();
            }
          },
        });
      return async (...args: unknown[]) => {
        await hook();
        const result = await value.apply(t, args);
        return result && typeof result === 'object' && !Array.isArray(result)
          ? hooked(result, hook, chunks)
          : result;
      };
    },
  });
}

/** A drop folder on a disk (local, or the sshd's) with its outside twin, and the swaps. */
class Tree {
  readonly root: string;
  readonly mtime = new Date('2026-11-01T10:00:00Z');
  constructor(root: string) {
    this.root = root;
  }
  get drop() {
    return join(this.root, 'drop');
  }
  get outside() {
    return join(this.root, 'outside');
  }
  async make(): Promise<void> {
    for (const [base, bytes] of [
      [this.drop, inside],
      [this.outside, () => OUTSIDE],
    ] as const) {
      const folder = join(base, 'attachments', 'camp');
      await mkdir(folder, { recursive: true });
      for (const name of NAMES) {
        await writeFile(join(folder, name), bytes(name));
        await utimes(join(folder, name), this.mtime, this.mtime);
      }
    }
  }
  #undo: (() => Promise<void>) | null = null;
  /** `what` under drop/ set aside and a link to its outside twin put in its place. */
  async swap(kind: Kind, file: string): Promise<void> {
    const rel =
      kind === 'file'
        ? ['attachments', 'camp', file]
        : kind === 'folder'
          ? ['attachments', 'camp']
          : ['attachments'];
    const at = join(this.drop, ...rel);
    const aside = join(this.drop, `.aside-${rel.join('-')}`);
    await rename(at, aside);
    await symlink(join(this.outside, ...rel), at);
    this.#undo = async () => {
      await unlink(at);
      await rename(aside, at);
    };
  }
  async restore(): Promise<void> {
    await this.#undo?.();
    this.#undo = null;
  }
}

interface Tally {
  read: number;
  /** Read with no attachments: the folder was not there when listed (the free-running flips). */
  none: number;
  refused: Record<string, number>;
}

/** One run of readAttachments with a swap at hook `at`; what it gave, checked. */
async function runOnce(
  source: Source,
  swap: () => Promise<void>,
  at: number,
  tally: Tally,
  chunks = true,
): Promise<number> {
  let n = 0;
  const hook = async () => {
    if (n++ === at) await swap();
  };
  const got = await readAttachments(hooked(source, hook, chunks), 'camp.txt');
  if (got.ok && got.attachments.length === 0) tally.none++;
  else if (got.ok) {
    // Exactly the listed files' bytes: never the outside file's, never a mix.
    expect(got.attachments.map((a) => a.name)).toEqual([...NAMES]);
    for (const a of got.attachments) {
      const bytes = Buffer.from(a.content, 'base64');
      expect(bytes.includes('OUTSIDE'), `${a.name}: outside bytes read (swap at hook ${at})`).toBe(false);
      expect(bytes.equals(inside(a.name)), `${a.name}: not the listed bytes`).toBe(true);
    }
    tally.read++;
  } else {
    expect(REFUSALS, `${got.reason}: ${got.message}`).toContain(got.reason);
    tally.refused[got.reason] = (tally.refused[got.reason] ?? 0) + 1;
  }
  return n;
}

const RUNS = 40;

async function swapRuns(source: Source, tree: Tree, seed: number): Promise<Tally> {
  const random = prng(seed);
  const tally: Tally = { read: 0, none: 0, refused: {} };
  // The points of one read without a swap (its calls, and each chunk: the backend's chunk
  // size decides how many); a draw past them swaps after the read.
  const hooks = await runOnce(source, async () => {}, -1, tally);
  expect(tally.read).toBe(1);
  const kinds: Kind[] = ['file', 'folder', 'above'];
  for (let i = 0; i < RUNS; i++) {
    const kind = kinds[Math.floor(random() * kinds.length)]!;
    const file = NAMES[Math.floor(random() * NAMES.length)]!;
    const at = Math.floor(random() * (hooks + 2));
    try {
      await runOnce(source, () => tree.swap(kind, file), at, tally);
    } finally {
      await tree.restore();
    }
  }
  // A swap is a rename and a link made at once, as far as the reads see: never no folder.
  expect(tally.none).toBe(0);
  return tally;
}

describe('local source', () => {
  let tree: Tree;
  beforeAll(async () => {
    tree = new Tree(await mkdtemp(join(tmpdir(), 'dropline-attachment-swap-')));
    await tree.make();
  });
  afterAll(async () => {
    await rm(tree.root, { recursive: true, force: true });
  });

  for (const heldFolders of ['fd', 'paths'] as const)
    it(`a link swapped in at any point never reads outside bytes (${heldFolders})`, async () => {
      const source = new LocalSource({ name: 'local', path: tree.drop, heldFolders });
      const tally = await swapRuns(source, tree, 32);
      // Swaps before the listing or at a file are refused; those after the listing of a
      // folder above are not seen at all (the folder listed is read) or refused.
      expect(tally.read).toBeGreaterThan(0);
      expect(tally.refused.NOT_A_REGULAR_FILE ?? 0).toBeGreaterThan(0);
    });

  it('a partner flipping the folder for a link while it is read, freely: never outside bytes', async () => {
    const source = new LocalSource({ name: 'local', path: tree.drop, heldFolders: 'fd' });
    let flipping = true;
    const flipper = (async () => {
      while (flipping) {
        await tree.swap('folder', 'a.pdf');
        await tree.restore();
        // A moment with the folder in place, so that reads also start (and list) in it.
        await new Promise((r) => setTimeout(r, 1));
      }
    })();
    const tally: Tally = { read: 0, none: 0, refused: {} };
    try {
      for (let i = 0; i < 60; i++) await runOnce(source, async () => {}, -1, tally);
    } finally {
      flipping = false;
      await flipper;
    }
    expect(tally.read + tally.none + Object.values(tally.refused).reduce((a, b) => a + b, 0)).toBe(60);
  });
});

const noSshd = sshdUnavailable();
describe.skipIf(noSshd !== null)('SFTP source', () => {
  let sshd: Sshd;
  let tree: Tree;
  beforeAll(async () => {
    sshd = await startSshd();
    tree = new Tree(join(sshd.home, 'swap'));
    await tree.make();
    // The login makes inbox/ and the other folders at start.
    await chmod(tree.drop, 0o777);
  });
  afterAll(async () => {
    await sshd?.close();
  });

  it('a link swapped in at any point never reads outside bytes (same size and mtime outside)', async () => {
    const source = await sftpSourceFor(sshd, 'swap/drop');
    await source.start();
    try {
      const tally = await swapRuns(source, tree, 32);
      expect(tally.read).toBeGreaterThan(0);
      expect(tally.refused.NOT_A_REGULAR_FILE ?? 0).toBeGreaterThan(0);
    } finally {
      await source.close();
    }
  });
});

describe('S3 source (no links)', () => {
  let s3: S3rverHandle;
  let source: S3Source;
  const put = (key: string, body: Buffer) =>
    s3.client.send(new PutObjectCommand({ Bucket: 'swap', Key: key, Body: body }));
  beforeAll(async () => {
    s3 = await startS3rver(['swap']);
    source = new S3Source({
      name: 's3',
      bucket: 'swap',
      prefix: 'drop/',
      region: 'us-east-1',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      clientConfig: { credentials: s3.clientConfig.credentials! },
    });
    await source.start();
  });
  afterAll(async () => {
    await source?.close();
    await s3?.close();
  });

  it('an object overwritten between the listing and its read is FILE_CHANGED, never its new bytes', async () => {
    const random = prng(32);
    const tally: Tally = { read: 0, none: 0, refused: {} };
    for (let i = 0; i < 12; i++) {
      for (const name of NAMES) await put(`drop/attachments/camp/${name}`, inside(name));
      const file = NAMES[Math.floor(random() * NAMES.length)]!;
      await runOnce(
        source,
        () => put(`drop/attachments/camp/${file}`, OUTSIDE).then(() => {}),
        // After the listing (an object overwritten before it is simply the one listed), and
        // between the calls only (each read's start, the close): s3rver aborts a read whose
        // object is overwritten under it (DROPLINE_ERR_S3, read again later), where S3 itself
        // finishes the version it began.
        1 + Math.floor(random() * 3),
        tally,
        false,
      );
    }
    expect(tally.read).toBeGreaterThan(0);
    expect(tally.refused.FILE_CHANGED ?? 0).toBeGreaterThan(0);
  });

  it('a key is read by its exact name: none outside the folder is read, nor one that is not listed', async () => {
    await put('drop/outside.pdf', OUTSIDE);
    const held = await source.openFolder('attachments/camp');
    for (const name of ['..', '../../outside.pdf', '.', '', 'missing.pdf'])
      await expect(held.read(name)[Symbol.asyncIterator]().next()).rejects.toThrow(/not a file listed/);
  });
});
