// validate sniffs a small file on its own thread, over the chunks it parses, and a large one
// on a worker thread that reads it again: both must say the same of every file, the sha256
// included, even when the reader stops before the end of the file.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/format/reader.ts';
import { validateFile } from '../../src/format/validate.ts';

const dir = mkdtempSync(join(tmpdir(), 'dropline-sniff-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** ~3 MB of valid personalized lines: several read chunks. */
const body = Array.from({ length: 120_000 }, (_, i) => `3${String(100_000_000 + i)};hola ${i}\n`).join('');

const files: [name: string, bytes: Buffer, expected: { encoding: string; rejection: string | null }][] = [
  ['plain.txt', Buffer.from(body), { encoding: 'utf-8', rejection: null }],
  // A byte that is not UTF-8 in the last chunk: the guess (UTF-8) was wrong, read again.
  [
    'late-1252.txt',
    Buffer.concat([Buffer.from(body), Buffer.from([0x33, 0x30, 0x30, 0x3b, 0xe9, 0x0a])]),
    { encoding: 'windows-1252', rejection: null },
  ],
  // A NUL byte at the end: binary.
  [
    'late-nul.txt',
    Buffer.concat([Buffer.from(body), Buffer.from([0x33, 0x00, 0x0a])]),
    { encoding: 'utf-8', rejection: 'BINARY_FILE' },
  ],
  [
    'utf16.txt',
    Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('3001234567;hola\n', 'utf16le')]),
    { encoding: 'utf-16le', rejection: null },
  ],
  // Rejected on its first line: the sniff still hashes every byte.
  [
    'rejected-early.txt',
    Buffer.from(`#! nosuch: 1\n${body}`),
    { encoding: 'utf-8', rejection: 'BAD_DIRECTIVE' },
  ],
];

const options = {
  maxInvalidRatio: 1,
  defaultCountry: 'CO',
  maxLineLength: DEFAULTS.maxLineLength,
};

describe('validate: the sniff on this thread and on a worker say the same', () => {
  for (const [name, bytes, expected] of files) {
    it(name, async () => {
      const path = join(dir, name);
      writeFileSync(path, bytes);
      const inline = await validateFile(path, options);
      const worker = await validateFile(path, { ...options, sniffInlineBytes: 0 });
      const sha = createHash('sha256').update(bytes).digest('hex');
      expect(inline.sha256).toBe(sha);
      expect(worker.sha256).toBe(sha);
      expect(inline.encoding).toBe(expected.encoding);
      expect(inline.rejection?.code ?? null).toBe(expected.rejection);
      expect(inline).toEqual(worker);
    });
  }
});
