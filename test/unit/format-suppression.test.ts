import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DroplineError } from '../../src/errors.ts';
import { makeNumberRules } from '../../src/format/numbers.ts';
import { loadSuppressionList, readSuppressionList } from '../../src/format/suppression.ts';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-suppression-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function listFrom(name: string, content: string | Buffer, rules = makeNumberRules()) {
  const path = join(dir, name);
  await writeFile(path, content);
  return loadSuppressionList(path, rules);
}

describe('FORMAT 5 suppression list (SUPPRESSED): one number per line, same normalisation', () => {
  it('mixed formats, comments, blank lines, CRLF, a BOM and an invalid line', async () => {
    const content =
      '\ufeff# opt-outs exported 2026-11-01\r\n' +
      '3001234567\r\n' +
      '\r\n' +
      '  +57 310 987 6543  \r\n' +
      '(315) 111-2233 # asked by phone\r\n' +
      '0057 320 444 5566\r\n' +
      '   # indented comment\r\n' +
      '+52 55 1234 5678\r\n' +
      'not a number\r\n' +
      '6012345678\r\n' +
      '573001234567\r\n' + // the same as line 2
      '5215512345678'; // no final line break
    const list = await listFrom('mixed.txt', content);
    expect(list.size).toBe(6);
    expect(list.invalid).toBe(2); // letters, and a landline
    for (const n of [
      '573001234567',
      '573109876543',
      '573151112233',
      '573204445566',
      '525512345678',
      '5215512345678',
    ]) {
      expect(list.has(n), n).toBe(true);
    }
    expect(list.has('573001234568')).toBe(false);
    expect(list.has('576012345678')).toBe(false);
  });

  it('has() takes the sent form only', async () => {
    const list = await listFrom('sent.txt', '3001234567\n');
    expect(list.has('573001234567')).toBe(true);
    expect(list.has('3001234567')).toBe(false);
    expect(list.has('+573001234567')).toBe(false);
    expect(list.has('')).toBe(false);
    expect(list.has('5730012345670000')).toBe(false);
    expect(list.has('57300123456x')).toBe(false);
  });

  it('ignores allowedCountries: a suppressed number is suppressed whatever its country', async () => {
    const list = await listFrom(
      'countries.txt',
      '+447400123456\n3001234567\n',
      makeNumberRules('CO', ['CO']),
    );
    expect(list.size).toBe(2);
    expect(list.invalid).toBe(0);
    expect(list.has('447400123456')).toBe(true);
  });

  it('uses the default country of the rules', async () => {
    const list = await listFrom('mx.txt', '55 1234 5678\n', makeNumberRules('MX'));
    expect(list.has('525512345678')).toBe(true);
  });

  it('LF, CR and CRLF line breaks, and a CRLF split across read chunks', async () => {
    const line = '3001234567';
    // 256 KiB chunks: place a CRLF on the boundary
    const pad = '#'.repeat(256 * 1024 - line.length - 2) + '\n';
    const content = pad + line + '\r\n3109876543\r3204445566\n3151112233';
    expect(Buffer.byteLength(pad + line + '\r')).toBe(256 * 1024);
    const list = await listFrom('breaks.txt', content);
    expect(list.size).toBe(4);
    expect(list.invalid).toBe(0);
  });

  it('UTF-16LE with BOM (a spreadsheet "Unicode text" export)', async () => {
    const body = Buffer.from('3001234567\r\n+57 310 987 6543\r\n', 'utf16le');
    const list = await listFrom('utf16.txt', Buffer.concat([Buffer.from([0xff, 0xfe]), body]));
    expect(list.size).toBe(2);
    expect(list.has('573109876543')).toBe(true);
  });

  it('an overlong line is counted invalid, not fatal', async () => {
    const list = await listFrom('long.txt', '3001234567\n' + '9'.repeat(2_000_000) + '\n3109876543\n');
    expect(list.size).toBe(2);
    expect(list.invalid).toBe(1);
  });

  it('an empty file is an empty list', async () => {
    const list = await listFrom('empty.txt', '');
    expect(list.size).toBe(0);
    expect(list.invalid).toBe(0);
    expect(list.has('573001234567')).toBe(false);
  });

  it('a large list: every number found, others not', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 50_000; i++) lines.push(String(3000000000 + i * 7));
    const list = await listFrom('large.txt', lines.join('\n'));
    expect(list.size).toBe(50_000);
    for (let i = 0; i < 50_000; i += 997) {
      expect(list.has('57' + String(3000000000 + i * 7))).toBe(true);
      expect(list.has('57' + String(3000000000 + i * 7 + 1))).toBe(false);
    }
  });

  it('an unreadable path → DroplineError DROPLINE_ERR_SUPPRESSION_LIST naming the path', async () => {
    const missing = join(dir, 'nope.txt');
    const err = await loadSuppressionList(missing, makeNumberRules()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DroplineError);
    expect((err as DroplineError).code).toBe('DROPLINE_ERR_SUPPRESSION_LIST');
    expect((err as DroplineError).message).toContain(missing);
    expect((err as DroplineError).message).toContain('ENOENT');

    const isDir = await loadSuppressionList(dir, makeNumberRules()).catch((e: unknown) => e);
    expect((isDir as DroplineError).code).toBe('DROPLINE_ERR_SUPPRESSION_LIST');
  });
});

/** `bytes` handed over in pieces of `size` bytes (a network stream's chunks fall anywhere). */
async function* pieces(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield new Uint8Array(bytes.subarray(i, i + size));
}

describe('readSuppressionList: any byte stream (an S3 object, a file on a source)', () => {
  const text =
    '\ufeff# lista de exclusión — ñandú\r\n3001234567\r\n+57 310 987 6543\r(315) 111-2233\n\r\n0057 320 444 5566';
  const expected = ['573001234567', '573109876543', '573151112233', '573204445566'];

  it.each([1, 2, 3, 5, 7, 64, 100_000])('UTF-8 with BOM in %i-byte chunks: the same list', async (size) => {
    const list = await readSuppressionList(pieces(Buffer.from(text, 'utf8'), size), makeNumberRules());
    expect(list.size).toBe(4);
    expect(list.invalid).toBe(0);
    for (const n of expected) expect(list.has(n), n).toBe(true);
  });

  it.each([
    ['utf-16le', 1],
    ['utf-16le', 3],
    ['utf-16be', 1],
    ['utf-16be', 5],
  ] as const)('%s with BOM in %i-byte chunks', async (encoding, size) => {
    const le = Buffer.from(text.replace(/^\ufeff/, ''), 'utf16le');
    const body = encoding === 'utf-16le' ? le : Buffer.from(le).swap16();
    const bom = encoding === 'utf-16le' ? [0xff, 0xfe] : [0xfe, 0xff];
    const list = await readSuppressionList(pieces(Buffer.concat([Buffer.from(bom), body]), size));
    expect(list.size).toBe(4);
    for (const n of expected) expect(list.has(n), n).toBe(true);
  });

  it('an empty stream, and one byte: an empty list', async () => {
    expect((await readSuppressionList(pieces(Buffer.alloc(0), 1))).size).toBe(0);
    const one = await readSuppressionList(pieces(Buffer.from('3'), 1));
    expect(one.size).toBe(0);
    expect(one.invalid).toBe(1);
  });

  it('a stream that fails: DROPLINE_ERR_SUPPRESSION_LIST, its message starting with the given name', async () => {
    async function* broken(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('3001234567\n');
      throw new Error('connection reset');
    }
    const err = await readSuppressionList(broken(), makeNumberRules(), 'partner:lists/optout.txt').catch(
      (e: unknown) => e,
    );
    expect((err as DroplineError).code).toBe('DROPLINE_ERR_SUPPRESSION_LIST');
    expect((err as DroplineError).message).toContain('partner:lists/optout.txt: connection reset');
  });
});
