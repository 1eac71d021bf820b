// The conformance suite every Source passes (src/sources/source.ts): local folder, SFTP,
// S3. A backend's test file calls sourceContract with a factory; `put` drops a file through
// the backend's own protocol, the way a partner would, so the suite never assumes a disk.
import { createHash, randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FOLDERS, MARKER_MAX_BYTES, type Source } from '../../src/sources/source.ts';

export interface SourceHarness {
  /** Not started: the suite calls start(). */
  source: Source;
  /** Writes a file at a source-relative path (`inbox/x.txt`), as a partner's upload would. */
  put(path: string, content: string | Buffer): Promise<void>;
  /**
   * A symbolic link at the source-relative `path` (its folder created) to `target`, as it
   * is written (absolute, or relative to the link's folder). Backends with links only
   * (local, SFTP); S3 has none.
   */
  symlink?(path: string, target: string): Promise<void>;
  /** A FIFO (named pipe) at the source-relative `path`, its folder created. Local and SFTP only. */
  fifo?(path: string): Promise<void>;
  cleanup(): Promise<void>;
}

async function readAll(source: Source, path: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  // Chunks may be views of one reused buffer: copy each before asking for the next.
  for await (const chunk of source.open(path)) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

async function readText(source: Source, path: string): Promise<string> {
  return (await readAll(source, path)).toString('utf8');
}

/** An async iterable that stops before piece `at` until `release()` is called. */
function gatedPieces(pieces: string[], at: number) {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let reached!: () => void;
  const atGate = new Promise<void>((r) => (reached = r));
  async function* gen(): AsyncGenerator<string> {
    for (let i = 0; i < pieces.length; i++) {
      if (i === at) {
        reached();
        await gate;
      }
      yield pieces[i]!;
    }
  }
  return { iterable: gen(), atGate, release };
}

export function sourceContract(name: string, factory: () => Promise<SourceHarness>): void {
  describe(`Source contract: ${name}`, () => {
    let h: SourceHarness;
    let source: Source;

    beforeEach(async () => {
      h = await factory();
      source = h.source;
      await source.start();
    });

    afterEach(async () => {
      await source.close();
      await h.cleanup();
    });

    describe('start and ping', () => {
      it('creates every folder; a second start is harmless; ping answers', async () => {
        await source.start();
        await source.ping();
        for (const folder of FOLDERS) {
          await source.write(`${folder}/.probe`, folder);
          expect(await source.exists(`${folder}/.probe`)).toBe(true);
          expect(await readText(source, `${folder}/.probe`)).toBe(folder);
          await source.remove(`${folder}/.probe`);
        }
        expect(await source.list()).toEqual([]);
      });
    });

    describe('list (docs/format.md "Which files are picked up")', () => {
      it('shows drop-file names only, any case of .txt, with size and mtime', async () => {
        const shown = ['a.txt', 'B.TXT', 'c.Txt', 'with space.txt', 'ñandú.txt'];
        const hidden = [
          '.x.txt',
          '~x.txt',
          'x.txt.part',
          'x.filepart',
          'x.txt.done',
          'x.tmp',
          'x.txt.tmp',
          'x.partial',
          'x.crdownload',
          'x.csv',
          'x.txt.filepart',
        ];
        for (const n of [...shown, ...hidden]) await h.put(`inbox/${n}`, `content of ${n}\n`);
        await h.put('processing/p.txt', 'claimed\n');
        await h.put('done/d.txt', 'done\n');
        const listed = (await source.list()).sort((x, y) => (x.name < y.name ? -1 : 1));
        expect(listed.map((e) => e.name)).toEqual([...shown].sort());
        for (const e of listed) {
          expect(e.path).toBe(`inbox/${e.name}`);
          expect(e.size).toBe(Buffer.byteLength(`content of ${e.name}\n`));
          expect(Number.isFinite(e.mtimeMs)).toBe(true);
          expect(e.mtimeMs).toBeGreaterThan(0);
        }
      });

      it('size follows a file that grows', async () => {
        await h.put('inbox/g.txt', 'a');
        expect((await source.list())[0]?.size).toBe(1);
        await h.put('inbox/g.txt', 'abc');
        expect((await source.list())[0]?.size).toBe(3);
      });
    });

    describe('open', () => {
      it('streams the exact bytes of a 3 MB file, from the start on every call', async () => {
        const bytes = randomBytes(3 * 1024 * 1024 + 17);
        await h.put('inbox/big.txt', bytes);
        const want = createHash('sha256').update(bytes).digest('hex');
        for (let round = 0; round < 2; round++) {
          const hash = createHash('sha256');
          let total = 0;
          for await (const chunk of source.open('inbox/big.txt')) {
            hash.update(chunk);
            total += chunk.byteLength;
          }
          expect(total).toBe(bytes.length);
          expect(hash.digest('hex')).toBe(want);
        }
        expect((await readAll(source, 'inbox/big.txt')).equals(bytes)).toBe(true);
      });

      it('an empty file yields no bytes; a missing file fails', async () => {
        await h.put('inbox/empty.txt', '');
        expect((await readAll(source, 'inbox/empty.txt')).length).toBe(0);
        await expect(readAll(source, 'inbox/missing.txt')).rejects.toThrow();
      });
    });

    describe('readTail', () => {
      it('returns the last bytes, the whole file when shorter, decoded as latin1', async () => {
        await h.put('inbox/t.txt', '3001234567;hola\r\nEOF;1\r\n');
        expect(await source.readTail('inbox/t.txt', 7)).toBe('EOF;1\r\n');
        expect(await source.readTail('inbox/t.txt', 4096)).toBe('3001234567;hola\r\nEOF;1\r\n');
        await h.put('inbox/l.txt', Buffer.from([0x61, 0xe9, 0xff]));
        expect(await source.readTail('inbox/l.txt', 2)).toBe('\u00e9\u00ff');
        await h.put('inbox/e.txt', '');
        expect(await source.readTail('inbox/e.txt', 10)).toBe('');
      });

      it('reads the tail of a file larger than one chunk', async () => {
        const big = Buffer.alloc(1024 * 1024, 0x61);
        big.write('EOF;9\n', big.length - 6, 'latin1');
        await h.put('inbox/big.txt', big);
        expect(await source.readTail('inbox/big.txt', 6)).toBe('EOF;9\n');
      });
    });

    describe('exists', () => {
      it('answers for files, markers beside them, and missing names', async () => {
        await h.put('inbox/a.txt', 'x');
        expect(await source.exists('inbox/a.txt')).toBe(true);
        expect(await source.exists('inbox/a.txt.done')).toBe(false);
        await h.put('inbox/a.txt.done', '');
        expect(await source.exists('inbox/a.txt.done')).toBe(true);
        expect(await source.exists('done/a.txt')).toBe(false);
      });
    });

    describe('stat', () => {
      /** Past the next whole second: SFTP (v3) and S3 mtimes have no finer grain. */
      const nextSecond = () => new Promise((r) => setTimeout(r, 1100 - (Date.now() % 1000)));

      it("gives a file's size and mtime without reading it; both follow a rewrite", async () => {
        const t0 = Date.now();
        await h.put('lists/optout.txt', '3001234567\n');
        const first = await source.stat('lists/optout.txt');
        expect(first).not.toBeNull();
        expect(first!.size).toBe(11);
        // Every backend here runs on this machine's clock; SFTP and S3 round down to the second.
        expect(first!.mtimeMs).toBeGreaterThanOrEqual(Math.floor(t0 / 1000) * 1000 - 2000);
        expect(first!.mtimeMs).toBeLessThanOrEqual(Date.now() + 2000);
        // The same answer again while nothing changes.
        expect(await source.stat('lists/optout.txt')).toEqual(first);
        await nextSecond();
        await h.put('lists/optout.txt', '3001234567\n3109876543\n');
        const second = await source.stat('lists/optout.txt');
        expect(second!.size).toBe(22);
        expect(second!.mtimeMs).toBeGreaterThan(first!.mtimeMs);
        if (first!.etag !== undefined) expect(second!.etag).not.toBe(first!.etag);
        // An empty file is a file.
        await h.put('lists/empty.txt', '');
        expect((await source.stat('lists/empty.txt'))?.size).toBe(0);
      });

      it("agrees with the listing's size and mtime", async () => {
        await h.put('inbox/a.txt', 'payload\n');
        const [listed] = await source.list();
        const st = await source.stat('inbox/a.txt');
        expect(st?.size).toBe(listed?.size);
        // S3's listing may carry milliseconds its HEAD (an HTTP date) does not.
        expect(Math.abs(st!.mtimeMs - listed!.mtimeMs)).toBeLessThan(1000);
      });

      it('is null for a missing file, in a missing folder, or below a file', async () => {
        expect(await source.stat('lists/missing.txt')).toBeNull();
        expect(await source.stat('nofolder/missing.txt')).toBeNull();
        await h.put('lists/a.txt', 'x');
        expect(await source.stat('lists/a.txt/below.txt')).toBeNull();
        await h.put('inbox/gone.txt', 'x');
        expect(await source.move('inbox/gone.txt', 'processing/gone.txt')).toBe(true);
        expect(await source.stat('inbox/gone.txt')).toBeNull();
      });

      it('a folder is NOT_A_REGULAR_FILE (S3 has no folders: nothing is there)', async () => {
        await h.put('lists/a.txt', 'x');
        for (const path of ['inbox', 'lists']) {
          if (source.kind === 's3') expect(await source.stat(path)).toBeNull();
          else await expect(source.stat(path)).rejects.toMatchObject({ reason: 'NOT_A_REGULAR_FILE' });
        }
      });

      // S3 has no links: the case exists where the backend has them.
      if (name !== 's3')
        it('a symbolic link is never followed: NOT_A_REGULAR_FILE, dangling or not', async () => {
          const link = h.symlink;
          if (!link) throw new Error(`the ${name} harness must make symlinks`);
          await h.put('lists/real.txt', '3001234567\n');
          await link('lists/link.txt', 'real.txt');
          await link('lists/dangling.txt', 'no-such-file.txt');
          await link('lists/outside.txt', '/etc/passwd');
          for (const file of ['link.txt', 'dangling.txt', 'outside.txt'])
            await expect(source.stat(`lists/${file}`)).rejects.toMatchObject({
              reason: 'NOT_A_REGULAR_FILE',
              message: expect.stringContaining('symbolic link'),
            });
          expect((await source.stat('lists/real.txt'))?.size).toBe(11);
        });

      it('refuses paths that leave the source root', async () => {
        await expect(source.stat('../x.txt')).rejects.toThrow(/invalid source path/);
        await expect(source.stat('/etc/passwd')).rejects.toThrow(/invalid source path/);
        await expect(source.stat('lists/../../x.txt')).rejects.toThrow(/invalid source path/);
      });
    });

    describe('listFolder', () => {
      it('lists the files directly in a folder, sorted by name, with their sizes', async () => {
        // More files than one listing page of the S3 harness (4 keys).
        const files: Record<string, string | Buffer> = {
          'factura.pdf': randomBytes(70_000),
          'b.txt': 'b\n',
          'Anexo.PDF': 'anexo',
          'ñandú.png': 'ñ',
          'with space.docx': 'w s',
          'empty.csv': '',
          'a.txt.done': '',
        };
        for (const [name, content] of Object.entries(files))
          await h.put(`attachments/facturas/${name}`, content);
        // Beside and below it: not listed.
        await h.put('attachments/facturas-enero/other.pdf', 'other');
        await h.put('attachments/other.pdf', 'other');
        await h.put('attachments/facturas/sub/deep.pdf', 'deep');
        const listed = await source.listFolder('attachments/facturas');
        // Code-unit order: capitals before small letters, ñ after z.
        expect(listed.map((f) => f.name)).toEqual([
          'Anexo.PDF',
          'a.txt.done',
          'b.txt',
          'empty.csv',
          'factura.pdf',
          'with space.docx',
          'ñandú.png',
        ]);
        for (const f of listed)
          expect(f).toEqual({ name: f.name, size: Buffer.byteLength(files[f.name]!), kind: 'file' });
        expect(await source.listFolder('attachments/facturas/sub')).toEqual([
          { name: 'deep.pdf', size: 4, kind: 'file' },
        ]);
        expect(await source.listFolder('attachments')).toEqual([
          { name: 'other.pdf', size: 5, kind: 'file' },
        ]);
      });

      it('a folder that does not exist (or is empty, or is a file) is []', async () => {
        expect(await source.listFolder('attachments/missing')).toEqual([]);
        expect(await source.listFolder('nofolder/missing')).toEqual([]);
        // A file where the folder would be, or above it: no folder there.
        await h.put('attachments/facturas', 'a file');
        expect(await source.listFolder('attachments/facturas')).toEqual([]);
        expect(await source.listFolder('attachments/facturas/below')).toEqual([]);
        // Emptied (a folder on disk and on SFTP, nothing on S3).
        await h.put('attachments/emptied/x.pdf', 'x');
        await source.remove('attachments/emptied/x.pdf');
        expect(await source.listFolder('attachments/emptied')).toEqual([]);
        // The inbox's own folder markers (S3 start) are not files.
        expect(await source.listFolder('inbox')).toEqual([]);
      });

      it('leaves out sub-folders, hidden names and upload temporaries', async () => {
        const left = [
          '.hidden.pdf',
          '~$factura.docx',
          'x.pdf.part',
          'X.PDF.PART',
          'x.tmp',
          'x.pdf.filepart',
          'x.partial',
          'x.pdf.crdownload',
        ];
        for (const name of left) await h.put(`attachments/f/${name}`, 'x');
        await h.put('attachments/f/sub/inner.pdf', 'x');
        await h.put('attachments/f/folder.pdf/inner.pdf', 'x');
        await h.put('attachments/f/keep.pdf', 'keep');
        expect(await source.listFolder('attachments/f')).toEqual([
          { name: 'keep.pdf', size: 4, kind: 'file' },
        ]);
      });

      // S3 has no links or FIFOs: the cases exist where the backend has them.
      if (name !== 's3') {
        it('names symbolic links (to files, folders, outside the root, dangling) and FIFOs as such, never followed', async () => {
          const link = h.symlink;
          const fifo = h.fifo;
          if (!link || !fifo) throw new Error(`the ${name} harness must make symlinks and FIFOs`);
          await h.put('attachments/f/real.pdf', 'real');
          await h.put('attachments/g/elsewhere.pdf', 'elsewhere');
          await link('attachments/f/link.pdf', 'real.pdf');
          await link('attachments/f/dangling.pdf', 'no-such-file.pdf');
          await link('attachments/f/outside.pdf', '/etc/passwd');
          await link('attachments/f/folder-link', '../g');
          await fifo('attachments/f/pipe.pdf');
          // Named for what they are, never followed (folder-link, a link to a folder, too).
          expect(await source.listFolder('attachments/f')).toEqual([
            { name: 'dangling.pdf', size: 0, kind: 'link' },
            { name: 'folder-link', size: 0, kind: 'link' },
            { name: 'link.pdf', size: 0, kind: 'link' },
            { name: 'outside.pdf', size: 0, kind: 'link' },
            { name: 'pipe.pdf', size: 0, kind: 'other' },
            { name: 'real.pdf', size: 4, kind: 'file' },
          ]);
        });

        it('never follows a symbolic link at the folder itself: NOT_A_REGULAR_FILE', async () => {
          const link = h.symlink;
          if (!link) throw new Error(`the ${name} harness must make symlinks`);
          await h.put('attachments/g/elsewhere.pdf', 'elsewhere');
          await link('attachments/inside', 'g');
          await link('attachments/outside', '/etc');
          await link('attachments/dangling', 'no-such-folder');
          for (const folder of ['inside', 'outside', 'dangling'])
            await expect(source.listFolder(`attachments/${folder}`)).rejects.toMatchObject({
              reason: 'NOT_A_REGULAR_FILE',
              message: expect.stringContaining('symbolic link'),
            });
          expect(await source.listFolder('attachments/g')).toEqual([
            { name: 'elsewhere.pdf', size: 9, kind: 'file' },
          ]);
        });

        it('never follows a symbolic link on the way to the folder either (attachments itself a link)', async () => {
          const link = h.symlink;
          if (!link) throw new Error(`the ${name} harness must make symlinks`);
          await h.put('elsewhere/x/secret.pdf', 'secret');
          await link('attachments', 'elsewhere');
          await expect(source.listFolder('attachments/x')).rejects.toMatchObject({
            reason: 'NOT_A_REGULAR_FILE',
            message: expect.stringContaining('attachments is a symbolic link'),
          });
        });
      }

      it('refuses paths that leave the source root', async () => {
        for (const path of [
          '..',
          '../x',
          '/etc',
          'attachments/../../x',
          'attachments/..',
          './attachments',
          '',
        ])
          await expect(source.listFolder(path)).rejects.toThrow(/invalid source path/);
      });
    });

    describe('openFolder', () => {
      it("lists as listFolder does and reads each listed file's bytes; a name not listed is refused", async () => {
        const big = randomBytes(700 * 1024);
        await h.put('attachments/f/big.bin', big);
        await h.put('attachments/f/small.pdf', 'small');
        await h.put('attachments/f/sub/deeper.pdf', 'deeper');
        const held = await source.openFolder('attachments/f');
        try {
          expect(held.files).toEqual(await source.listFolder('attachments/f'));
          const parts: Buffer[] = [];
          for await (const chunk of held.read('big.bin')) parts.push(Buffer.from(chunk));
          expect(Buffer.concat(parts).equals(big)).toBe(true);
          for (const name of ['sub', 'sub/deeper.pdf', '..', '.', '', 'missing.pdf'])
            await expect(held.read(name)[Symbol.asyncIterator]().next(), name).rejects.toThrow(
              /not a file listed/,
            );
        } finally {
          await held.close();
        }
        const none = await source.openFolder('attachments/missing');
        expect(none.files).toEqual([]);
        await none.close();
      });
    });

    describe('move', () => {
      it('moves a file between folders, keeping its bytes', async () => {
        await h.put('inbox/a.txt', 'payload\n');
        expect(await source.move('inbox/a.txt', 'processing/a.txt')).toBe(true);
        expect(await source.exists('inbox/a.txt')).toBe(false);
        expect(await readText(source, 'processing/a.txt')).toBe('payload\n');
        expect(await source.list()).toEqual([]);
        expect(await source.move('processing/a.txt', 'done/a.txt')).toBe(true);
        expect(await readText(source, 'done/a.txt')).toBe('payload\n');
      });

      it('resolves false when the source is gone', async () => {
        expect(await source.move('inbox/never.txt', 'processing/never.txt')).toBe(false);
        await h.put('inbox/a.txt', 'x');
        expect(await source.move('inbox/a.txt', 'processing/a.txt')).toBe(true);
        expect(await source.move('inbox/a.txt', 'processing/a.txt')).toBe(false);
      });

      it('fails when the target exists, and leaves both files as they were', async () => {
        await h.put('inbox/a.txt', 'new\n');
        await h.put('done/a.txt', 'old\n');
        await expect(source.move('inbox/a.txt', 'done/a.txt')).rejects.toThrow();
        expect(await readText(source, 'inbox/a.txt')).toBe('new\n');
        expect(await readText(source, 'done/a.txt')).toBe('old\n');
      });

      it('callers moving the same file at once: exactly one wins', async () => {
        for (let i = 0; i < 30; i++) {
          await h.put(`inbox/c${i}.txt`, `race ${i}\n`);
          const results = await Promise.all(
            [1, 2, 3, 4].map(() => source.move(`inbox/c${i}.txt`, `processing/c${i}.txt`)),
          );
          expect(results.filter(Boolean)).toHaveLength(1);
          expect(await source.exists(`inbox/c${i}.txt`)).toBe(false);
          expect(await readText(source, `processing/c${i}.txt`)).toBe(`race ${i}\n`);
        }
      });

      it('two callers moving the same file to different folders: exactly one wins, one copy remains', async () => {
        for (let i = 0; i < 10; i++) {
          await h.put(`inbox/d${i}.txt`, `race ${i}\n`);
          const results = await Promise.all([
            source.move(`inbox/d${i}.txt`, `processing/d${i}.txt`),
            source.move(`inbox/d${i}.txt`, `failed/d${i}.txt`),
          ]);
          expect(results.filter(Boolean)).toHaveLength(1);
          const winner = results[0] ? `processing/d${i}.txt` : `failed/d${i}.txt`;
          const loser = results[0] ? `failed/d${i}.txt` : `processing/d${i}.txt`;
          expect(await source.exists(`inbox/d${i}.txt`)).toBe(false);
          expect(await readText(source, winner)).toBe(`race ${i}\n`);
          expect(await source.exists(loser)).toBe(false);
        }
      });
    });

    describe('takeMarker (docs/sources.md "Markers")', () => {
      it('takes a marker out of the inbox and gives its content; the file beside it stays; none there: null', async () => {
        await h.put('inbox/a.txt', '3001234567;hola\n');
        await h.put('inbox/a.txt.done', 'sha256=ABC\r\n');
        await h.put('inbox/b.txt.done', '');
        expect(await source.takeMarker('inbox/a.txt.done')).toBe('sha256=ABC\r\n');
        expect(await source.exists('inbox/a.txt.done')).toBe(false);
        expect(await readText(source, 'inbox/a.txt')).toBe('3001234567;hola\n');
        expect(await source.takeMarker('inbox/a.txt.done')).toBeNull();
        expect(await source.takeMarker('inbox/b.txt.done')).toBe('');
        expect(await source.exists('inbox/b.txt.done')).toBe(false);
        expect(await source.takeMarker('inbox/never.txt.done')).toBeNull();
        // Nothing of the takes is left where a listing looks.
        expect((await source.list()).map((e) => e.name)).toEqual(['a.txt']);
        expect(await source.listFolder('processing')).toEqual([]);
      });

      it('reads at most MARKER_MAX_BYTES of a marker, and takes it all the same', async () => {
        await h.put('inbox/big.txt.done', `sha256=${'a'.repeat(64)}\n${'x'.repeat(MARKER_MAX_BYTES * 3)}`);
        const content = await source.takeMarker('inbox/big.txt.done');
        expect(content).toHaveLength(MARKER_MAX_BYTES);
        expect(content?.startsWith(`sha256=${'a'.repeat(64)}\n`)).toBe(true);
        expect(await source.exists('inbox/big.txt.done')).toBe(false);
      });

      it('a marker written after the take stays: it belongs to the next file', async () => {
        await h.put('inbox/c.txt.done', 'first');
        expect(await source.takeMarker('inbox/c.txt.done')).toBe('first');
        await h.put('inbox/c.txt.done', 'next');
        expect(await source.exists('inbox/c.txt.done')).toBe(true);
        expect(await source.takeMarker('inbox/c.txt.done')).toBe('next');
      });

      // S3 has no links: the case exists where the backend has them.
      if (name !== 's3')
        it('a marker that is a symbolic link is taken, never followed: no content', async () => {
          const link = h.symlink;
          if (!link) throw new Error(`the ${name} harness must make symlinks`);
          await h.put('lists/secret.txt', 'sha256=not-the-partners\n');
          await link('inbox/l.txt.done', '../lists/secret.txt');
          expect(await source.takeMarker('inbox/l.txt.done')).toBe('');
          expect(await source.exists('inbox/l.txt.done')).toBe(false);
          expect(await readText(source, 'lists/secret.txt')).toBe('sha256=not-the-partners\n');
        });

      it('takers of one marker at once: exactly one gets it', async () => {
        for (let i = 0; i < 5; i++) {
          await h.put(`inbox/r${i}.txt.done`, `marker ${i}`);
          const got = await Promise.all([1, 2, 3].map(() => source.takeMarker(`inbox/r${i}.txt.done`)));
          expect(got.filter((g) => g !== null)).toEqual([`marker ${i}`]);
        }
      });
    });

    describe('write', () => {
      it('writes a string and replaces it with a streamed async iterable', async () => {
        await source.write('reports/a.report.csv', 'line;status\n');
        expect(await readText(source, 'reports/a.report.csv')).toBe('line;status\n');
        const pieces: string[] = ['line;status\n'];
        for (let i = 1; i <= 20_000; i++) pieces.push(`${i};DELIVERED ñ€\n`);
        async function* gen(): AsyncGenerator<string> {
          yield* pieces;
        }
        await source.write('reports/a.report.csv', gen());
        expect(await readText(source, 'reports/a.report.csv')).toBe(pieces.join(''));
      });

      it('a reader sees the old file or the whole new one, never a part', async () => {
        await source.write('reports/a.report.csv', 'old\n');
        const pieces = Array.from({ length: 100 }, (_, i) => `${i};${'x'.repeat(2000)}\n`);
        const g = gatedPieces(pieces, 50);
        const writing = source.write('reports/a.report.csv', g.iterable);
        await g.atGate;
        expect(await readText(source, 'reports/a.report.csv')).toBe('old\n');
        g.release();
        await writing;
        expect(await readText(source, 'reports/a.report.csv')).toBe(pieces.join(''));
      });

      it('a half-written file in the inbox is never listed', async () => {
        const g = gatedPieces(['3001234567;hola\n', '3001234568;hola\n'], 1);
        const writing = source.write('inbox/w.txt', g.iterable);
        await g.atGate;
        expect(await source.list()).toEqual([]);
        g.release();
        await writing;
        expect((await source.list()).map((e) => e.name)).toEqual(['w.txt']);
      });

      it('a failing iterable leaves the old file untouched', async () => {
        await source.write('reports/a.report.csv', 'old\n');
        async function* broken(): AsyncGenerator<string> {
          yield 'new\n';
          throw new Error('store went away');
        }
        await expect(source.write('reports/a.report.csv', broken())).rejects.toThrow('store went away');
        expect(await readText(source, 'reports/a.report.csv')).toBe('old\n');
      });
    });

    describe('remove', () => {
      it('removes a file; removing a missing one is not an error', async () => {
        await h.put('inbox/a.txt.done', '');
        await source.remove('inbox/a.txt.done');
        expect(await source.exists('inbox/a.txt.done')).toBe(false);
        await source.remove('inbox/a.txt.done');
      });
    });
  });
}
