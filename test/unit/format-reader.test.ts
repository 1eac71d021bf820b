// The rules of docs/format.md as the streaming reader decides them, fed from memory (the number
// rules alone: format-numbers.test.ts).
import { CHANNELS } from '../../src/channels/names.ts';
// Every read goes through `read()`, which also feeds the same bytes in 1-byte and 7-byte
// chunks and expects the very same items and summary: every test is a chunk-boundary test
// too (CRLF, multi-byte UTF-8 and BOMs split across chunks).

import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REASONS, type ReasonCode } from '../../src/errors.ts';
import { parseConsentList } from '../../src/format/consent.ts';
import { makeNumberRules } from '../../src/format/numbers.ts';
import {
  type ReadBatch,
  type ReadItem,
  type ReadOptions,
  type ReadSummary,
  type RecipientItem,
  readDropFile,
  type SkippedItem,
  type WarningItem,
} from '../../src/format/reader.ts';
import { loadSuppressionList, type SuppressionList } from '../../src/format/suppression.ts';
import { rejectionParams } from '../../src/ops/wording.ts';

const CO = makeNumberRules();
const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'format');

/** 'whole': one chunk; n: chunks of n bytes; [a, b, …]: chunks of those sizes, cycled. */
type Chunking = 'whole' | number | readonly number[];

function split(bytes: Uint8Array, chunking: Chunking): Uint8Array[] {
  if (chunking === 'whole') return [bytes];
  const sizes = typeof chunking === 'number' ? [chunking] : chunking;
  const out: Uint8Array[] = [];
  let i = 0;
  let k = 0;
  while (i < bytes.length) {
    const n = Math.max(1, sizes[k++ % sizes.length]!);
    out.push(bytes.subarray(i, i + n));
    i += n;
  }
  return out;
}

const opener = (bytes: Uint8Array, chunking: Chunking) => () =>
  (async function* () {
    for (const c of split(bytes, chunking)) yield c;
  })();

type Options = Partial<ReadOptions>;

interface Read {
  items: ReadItem[];
  summary: ReadSummary;
  recipients: RecipientItem[];
  skipped: SkippedItem[];
  warnings: WarningItem[];
}

const bytesOf = (input: string | Uint8Array): Uint8Array =>
  typeof input === 'string' ? new TextEncoder().encode(input) : input;

/** One read; checks that the last batch, and only it, is `[summary]`. */
async function readOnce(bytes: Uint8Array, options: Options, chunking: Chunking): Promise<Read> {
  const batches: ReadBatch[] = [];
  for await (const batch of readDropFile(opener(bytes, chunking), {
    name: 'drop.txt',
    numberRules: CO,
    ...options,
  })) {
    batches.push(batch);
  }
  const last = batches.at(-1);
  expect(last).toHaveLength(1);
  const summary = last![0] as ReadSummary;
  expect(summary.kind).toBe('summary');
  const items = batches.slice(0, -1).flat() as (ReadItem | ReadSummary)[];
  expect(items.some((i) => i.kind === 'summary')).toBe(false);
  const plain = items as ReadItem[];
  return {
    items: plain,
    summary,
    recipients: plain.filter((i): i is RecipientItem => i.kind === 'recipient'),
    skipped: plain.filter((i): i is SkippedItem => i.kind !== 'recipient' && i.kind !== 'warning'),
    warnings: plain.filter((i): i is WarningItem => i.kind === 'warning'),
  };
}

/** Reads whole, then in other chunkings, and expects the same items and summary. */
async function read(
  input: string | Uint8Array,
  options: Options = {},
  chunkings: readonly Chunking[] = [1, 7],
): Promise<Read> {
  const bytes = bytesOf(input);
  const whole = await readOnce(bytes, options, 'whole');
  for (const chunking of chunkings) {
    const other = await readOnce(bytes, options, chunking);
    expect(other.items, `items with chunking ${String(chunking)}`).toEqual(whole.items);
    if (whole.summary.rejection?.code === 'FILE_TOO_LARGE') {
      // The sniff stops at the chunk that went over the limit: `bytes` is where it stopped.
      expect(other.summary.bytes).toBeGreaterThan(options.maxFileBytes ?? 0);
      other.summary.bytes = whole.summary.bytes;
    }
    expect(other.summary, `summary with chunking ${String(chunking)}`).toEqual(whole.summary);
  }
  // A rejection's parameters are what its message says: the file keeps them with its reason,
  // and the dashboard's reading of an older store's message finds the same (src/ops/wording.ts).
  const rejected = whole.summary.rejection;
  if (rejected) expect(rejected.params).toEqual(rejectionParams(rejected.code, rejected.message));
  return whole;
}

/** [line, code] of every record or number not sent. */
const problems = (r: Read) => r.skipped.map((s) => [s.line, s.code]);
/** [line, sent number, text] of every recipient. */
const sent = (r: Read) => r.recipients.map((s) => [s.line, s.number, s.text]);
const counts = (s: ReadSummary) => ({
  records: s.records,
  valid: s.valid,
  invalid: s.invalid,
  duplicates: s.duplicates,
  suppressed: s.suppressed,
});

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-reader-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function suppressionOf(lines: string): Promise<SuppressionList> {
  const path = join(dir, `suppression-${Math.random().toString(36).slice(2)}.txt`);
  await writeFile(path, lines);
  return loadSuppressionList(path, CO);
}

describe('docs/format.md "Which files are picked up": the file name (the watcher decides; the reader uses the name for the layout only)', () => {
  it('an upper-case .TXT name is read by content like any other', async () => {
    const r = await read('3001234567;Hola\n', { name: 'CAMPAÑA.TXT' });
    expect(r.summary.layout).toBe('personalized');
    expect(sent(r)).toEqual([[1, '573001234567', 'Hola']]);
  });

  it('.BULK.TXT and .Personalized.Txt decide the layout in any case', async () => {
    const bulk = await read('3001234567;Hola\n3109876543\n', { name: 'X.BULK.TXT' });
    expect(bulk.summary.layout).toBe('bulk');
    expect(bulk.summary.message).toBe('3001234567;Hola');
    expect(sent(bulk)).toEqual([[2, '573109876543', '3001234567;Hola']]);
    const pers = await read('Hola a todos\n3001234567;Hola\n', { name: 'x.Personalized.Txt' });
    expect(pers.summary.layout).toBe('personalized');
    expect(problems(pers)).toEqual([[1, 'INVALID_NUMBER']]);
  });
});

describe('docs/format.md "Encoding and lines": encodings (UTF-8 with or without BOM, UTF-16 with BOM, Windows-1252 fallback)', () => {
  it('UTF-8 without BOM', async () => {
    const r = await read('3001234567;Hola, mañana ☺\n');
    expect(r.summary.encoding).toBe('utf-8');
    expect(r.recipients[0]?.text).toBe('Hola, mañana ☺');
  });

  it('UTF-8 with BOM: the BOM is not part of the first field (the header is still recognised)', async () => {
    const r = await read('\ufeffNúmero;Mensaje\n3001234567;Hola\n');
    expect(r.summary.encoding).toBe('utf-8');
    expect(r.summary.header).toBe(true);
    expect(r.summary.columns).toEqual(['Número', 'Mensaje']);
    expect(sent(r)).toEqual([[2, '573001234567', 'Hola']]);
  });

  it('UTF-16LE and UTF-16BE with BOM, the BOM split across chunks', async () => {
    const text = '3001234567;Hola Sofía\r\n3109876543;Adiós 😀\r\n';
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const be = Buffer.from(le);
    for (let i = 0; i + 1 < be.length; i += 2) [be[i], be[i + 1]] = [be[i + 1]!, be[i]!];
    for (const [bytes, encoding] of [
      [le, 'utf-16le'],
      [be, 'utf-16be'],
    ] as const) {
      const r = await read(bytes, {}, [1, 3, [1, 2, 5]]);
      expect(r.summary.encoding).toBe(encoding);
      expect(sent(r)).toEqual([
        [1, '573001234567', 'Hola Sofía'],
        [2, '573109876543', 'Adiós 😀'],
      ]);
    }
  });

  it('one byte that is not UTF-8, even the last one, makes the whole file Windows-1252', async () => {
    // Line 1 is UTF-8 (ñ = C3 B1); line 2 has é as the single byte E9 (Windows-1252).
    const bytes = Buffer.concat([Buffer.from('3001234567;mañana\n3109876543;Caf'), Buffer.from([0xe9])]);
    const r = await read(bytes);
    expect(r.summary.encoding).toBe('windows-1252');
    expect(sent(r)).toEqual([
      [1, '573001234567', 'maÃ±ana'],
      [2, '573109876543', 'Café'],
    ]);
  });

  it('Windows-1252 bytes: á is 0xE1, € is 0x80, ñ is 0xF1', async () => {
    const bytes = Buffer.from([
      ...Buffer.from('3001234567;est'),
      0xe1,
      ...Buffer.from(' en 50'),
      0x80,
      ...Buffer.from(' se'),
      0xf1,
      ...Buffer.from('or\n'),
    ]);
    const r = await read(bytes);
    expect(r.summary.encoding).toBe('windows-1252');
    expect(r.recipients[0]?.text).toBe('está en 50€ señor');
  });

  it('a UTF-8 BOM on a file read as Windows-1252 is dropped, not read as ï»¿ (docs/format.md)', async () => {
    const bytes = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('3001234567;Hola\n3109876543;Caf'),
      Buffer.from([0xe9, 0x0a]),
    ]);
    const r = await read(bytes);
    expect(r.summary).toMatchObject({ encoding: 'windows-1252', layout: 'personalized' });
    expect(sent(r)).toEqual([
      [1, '573001234567', 'Hola'],
      [2, '573109876543', 'Café'],
    ]);
    // Windows-1252 text that merely starts with ï is kept.
    const text = await read(
      Buffer.from([0xef, 0x41, 0x0a, 0x33, 0x30, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37]),
    );
    expect(text.summary.message).toBe('ïA');
  });

  it('a multi-byte UTF-8 character split across chunks stays UTF-8', async () => {
    const bytes = bytesOf('3001234567;😀 á € ñ\n');
    for (const sizes of [[12], [13], [14], [1, 2, 3]] as const) {
      const r = await readOnce(bytes, {}, sizes);
      expect(r.summary.encoding).toBe('utf-8');
      expect(r.recipients[0]?.text).toBe('😀 á € ñ');
    }
  });

  it('a file that ends inside a UTF-8 sequence is Windows-1252', async () => {
    const r = await read(Buffer.concat([Buffer.from('3001234567;Hola '), Buffer.from([0xc3])]));
    expect(r.summary.encoding).toBe('windows-1252');
    expect(r.recipients[0]?.text).toBe('Hola Ã');
  });
});

describe('docs/format.md "Encoding and lines": NUL bytes (BINARY_FILE)', () => {
  it('a NUL byte in a file without a UTF-16 BOM rejects the whole file, nothing yielded', async () => {
    const r = await read(Buffer.from('3001234567;Hola\n3109876543;Ho\0la\n'));
    expect(r.items).toEqual([]);
    expect(r.summary.accepted).toBe(false);
    expect(r.summary.rejection?.code).toBe('BINARY_FILE');
    expect(r.summary.encoding).toBe('utf-8');
    expect(r.summary.records).toBe(0);
  });

  it('UTF-16 without a BOM has NUL bytes: BINARY_FILE', async () => {
    const r = await read(Buffer.from('3001234567;Hola\n', 'utf16le'));
    expect(r.summary.rejection?.code).toBe('BINARY_FILE');
  });

  it('NUL bytes inside a UTF-16 file with BOM are just the encoding', async () => {
    const r = await read(
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('3001234567;Hola\n', 'utf16le')]),
    );
    expect(r.summary.accepted).toBe(true);
    expect(r.summary.valid).toBe(1);
  });
});

describe('docs/format.md "Encoding and lines": line breaks LF, CRLF, lone CR', () => {
  const lines = ['3001234567;Uno', '3109876543;Dos', '3151112233;Tres'];
  const expected = [
    [1, '573001234567', 'Uno'],
    [2, '573109876543', 'Dos'],
    [3, '573151112233', 'Tres'],
  ];

  it.each([
    ['LF', '\n'],
    ['CRLF', '\r\n'],
    ['CR', '\r'],
  ])('%s', async (_name, br) => {
    expect(sent(await read(lines.join(br) + br))).toEqual(expected);
    expect(sent(await read(lines.join(br)))).toEqual(expected); // no final break
  });

  it('mixed in one file, CRLF split across chunks at every position', async () => {
    const text = `${lines[0]}\r\n${lines[1]}\r${lines[2]}\n`;
    const bytes = bytesOf(text);
    const cr = text.indexOf('\r');
    // a chunk that ends exactly with the CR, the LF starting the next one
    const r = await readOnce(bytes, {}, [cr + 1, 1, 100]);
    expect(sent(r)).toEqual(expected);
    expect(sent(await read(text, {}, [1, 2, 3, 5, [4, 1, 9]]))).toEqual(expected);
  });

  it('CR CR LF is two breaks (a blank line between), LF CR too', async () => {
    const r = await read('3001234567;Uno\r\r\n3109876543;Dos\n\r3151112233;Tres');
    expect(sent(r).map((s) => s[0])).toEqual([1, 3, 5]);
  });
});

describe('docs/format.md "Encoding and lines": blank lines and comments', () => {
  it('blank lines (spaces, tabs, NBSP) are skipped but still count as physical lines', async () => {
    const r = await read('\n   \n\t\n\u00a0\n3001234567;Hola\n \t \n3109876543;Chao\n\n');
    expect(sent(r)).toEqual([
      [5, '573001234567', 'Hola'],
      [7, '573109876543', 'Chao'],
    ]);
    expect(r.summary.records).toBe(2);
  });

  it('a line whose first character is # is a comment; an indented # is data', async () => {
    const r = await read('# campaña\n3001234567;Hola\n#3109876543;no\n  # not a comment\n');
    expect(sent(r)).toEqual([[2, '573001234567', 'Hola']]);
    expect(problems(r)).toEqual([[4, 'INVALID_NUMBER']]);
    expect(r.summary.records).toBe(2);
  });

  it('a message that starts with # is written quoted (in bulk) or after the number', async () => {
    const bulk = await read('"#Promo: 2x1 hoy"\n3001234567\n');
    expect(bulk.summary.layout).toBe('bulk');
    expect(bulk.summary.message).toBe('#Promo: 2x1 hoy');
    const pers = await read('3001234567;"#Promo"\n3109876543;#Promo\n');
    expect(sent(pers)).toEqual([
      [1, '573001234567', '#Promo'],
      [2, '573109876543', '#Promo'],
    ]);
  });

  it('a comment before the header and the bulk message does not decide anything', async () => {
    const headed = await read('# export\nNúmero;Mensaje\n# sep\n3001234567;Hola\n');
    expect(headed.summary.header).toBe(true);
    expect(sent(headed)).toEqual([[4, '573001234567', 'Hola']]);
    const bulk = await read('# 3001234567;x\nHola a todos\n3001234567\n');
    expect(bulk.summary.layout).toBe('bulk');
    expect(bulk.summary.message).toBe('Hola a todos');
  });
});

describe('docs/format.md "Directives": directives before the first data record', () => {
  const rejection = (r: Read) =>
    r.summary.rejection && [r.summary.rejection.code, r.summary.rejection.message];

  it('`#! priority:` is read (name in any case, value trimmed), and is no record', async () => {
    const r = await read('#! Priority:  HIGH \n# a comment\n3001234567;Hola\n');
    expect(r.summary.accepted).toBe(true);
    expect(r.summary.directives.priority).toBe('high');
    expect(sent(r)).toEqual([[3, '573001234567', 'Hola']]);
    expect(r.summary.records).toBe(1);
    const none = await read('3001234567;Hola\n');
    expect(none.summary.directives.priority).toBeNull();
    // A spreadsheet's padding, a BOM and CRLF change nothing.
    const padded = await read('\ufeff#! priority: low;;\r\n#! expect: 1,,\r\n3001234567;Hola\r\n');
    expect(padded.summary.accepted).toBe(true);
    expect(padded.summary.directives).toEqual({
      priority: 'low',
      expect: { line: 2, count: 1 },
      sendAt: null,
      message: null,
      channel: null,
      flash: null,
      subject: null,
      templateId: null,
    });
  });

  it('before a header and before a bulk message; after the first data line `#!` is a comment', async () => {
    const headed = await read('#! priority: low\nNúmero;Mensaje\n#! priority: nonsense\n3001234567;Hola\n');
    expect(headed.summary.accepted).toBe(true);
    expect(headed.summary.header).toBe(true);
    expect(headed.summary.directives.priority).toBe('low');
    const bulk = await read('#! priority: high\nHola a todos\n#! typo: x\n3001234567\n');
    expect(bulk.summary.accepted).toBe(true);
    expect(bulk.summary.message).toBe('Hola a todos');
    expect(bulk.summary.directives.priority).toBe('high');
  });

  it('a typo, a bad value, a name given twice or no colon: BAD_DIRECTIVE with the line', async () => {
    const cases: [string, RegExp][] = [
      ['# campaña\n#! prority: high\n3001234567;Hola\n', /^line 2: unknown directive `prority`/],
      ['#! priority: urgent\n3001234567;Hola\n', /^line 1: priority must be high, normal or low/],
      ['#! priority: low\n#! PRIORITY: high\n3001234567;Hola\n', /^line 2: `priority` is given twice/],
      ['#! priority high\n3001234567;Hola\n', /^line 1: a directive is written `#! name: value`/],
      ['#! expect: many\n3001234567;Hola\n', /^line 1: expect must be a number of records/],
    ];
    for (const [text, message] of cases) {
      const r = await read(text);
      expect(r.summary.accepted, text).toBe(false);
      expect(r.summary.rejection?.code, text).toBe('BAD_DIRECTIVE');
      expect(r.summary.rejection?.message, text).toMatch(message);
      // The rest of the file is still read, so validate shows every other problem at once.
      expect(r.summary.records, text).toBe(1);
    }
  });

  it('`#! channel: rcs` and `#! flash:` are read (test/unit/rcs-files.test.ts); a directive of another channel is refused', async () => {
    const rcs = await read('#! channel: rcs\n3001234567;Hola\n');
    expect(rcs.summary.accepted).toBe(true);
    expect(rcs.summary.channel).toBe('rcs');
    const flash = await read('#! flash: true\n3001234567;Hola\n');
    expect(flash.summary.accepted).toBe(true);
    expect(flash.summary.directives.flash).toEqual({ line: 1, flash: true });
    // WhatsApp is read (test/unit/whatsapp-files.test.ts); its sending number is not for sms.
    const source = await read('#! source: 573001234567\n3001234567;Hola\n');
    expect(source.summary.rejection?.code).toBe('BAD_DIRECTIVE');
    expect(source.summary.rejection?.message).toBe(
      'line 1: `#! source:` is for whatsapp files (`#! channel: whatsapp`); this file is for sms',
    );
    // An sms file may say so, and that it is no flash.
    const same = await read('#! channel: SMS\n#! flash: false\n3001234567;Hola\n');
    expect(same.summary.accepted).toBe(true);
  });

  it("`#! sendAt:` with an offset, or local time in the window's zone; a bad one is BAD_DIRECTIVE", async () => {
    const at = async (value: string, options: Partial<Options> = {}) =>
      (await read(`#! sendAt: ${value}\n3001234567;Hola\n`, options)).summary.directives.sendAt?.at;
    expect(await at('2026-12-01T09:00:00-05:00')).toBe('2026-12-01T14:00:00.000Z');
    expect(await at('2026-12-01T14:00Z')).toBe('2026-12-01T14:00:00.000Z');
    expect(await at('2026-12-01 09:30:15.250+0100')).toBe('2026-12-01T08:30:15.250Z');
    // Without an offset: the window's zone, Bogotá (UTC−5) by default, whatever the host's.
    expect(await at('2026-12-01 09:00')).toBe('2026-12-01T14:00:00.000Z');
    expect(await at('2026-12-01 09:00', { sendAtTimeZone: 'Europe/Madrid' })).toBe(
      '2026-12-01T08:00:00.000Z',
    );
    for (const bad of [
      'mañana',
      '2026-02-30 09:00',
      '2026-12-01 24:00',
      '2026-12-01 09:00:00',
      '01/12/2026 09:00',
      '2026-12-01T09:00+15:00',
    ]) {
      const r = await read(`#! sendAt: ${bad}\n3001234567;Hola\n`);
      expect(r.summary.rejection?.code, bad).toBe('BAD_DIRECTIVE');
      expect(r.summary.rejection?.message, bad).toMatch(/^line 1: sendAt is ISO-8601 with an offset/);
    }
  });

  it('`#! sendAt:` before the year 2000 is BAD_DIRECTIVE, never another year (issue 32)', async () => {
    // Date.UTC maps the years 0-99 to 1900-1999: `0000-…` was stored as 1900.
    for (const bad of [
      '0000-01-01T00:00Z',
      '0099-12-31 09:00',
      '1999-12-31T23:59:59Z',
      '0001-06-01T09:00-05:00',
    ]) {
      const r = await read(`#! sendAt: ${bad}\n3001234567;Hola\n`);
      expect(r.summary.directives.sendAt, bad).toBeNull();
      expect(r.summary.rejection?.code, bad).toBe('BAD_DIRECTIVE');
      expect(r.summary.rejection?.message, bad).toMatch(/^line 1: sendAt .*the year 2000 or later/);
    }
    expect(
      (await read('#! sendAt: 2000-01-01T00:00Z\n3001234567;Hola\n')).summary.directives.sendAt?.at,
    ).toBe('2000-01-01T00:00:00.000Z');
  });

  it('`allowDirectives`: false refuses any directive, a list refuses the others', async () => {
    const text = '#! priority: high\n3001234567;Hola\n';
    expect(rejection(await read(text, { allowDirectives: false }))).toEqual([
      'BAD_DIRECTIVE',
      'line 1: this source does not allow the `priority` directive',
    ]);
    expect((await read(text, { allowDirectives: ['expect'] })).summary.rejection?.code).toBe('BAD_DIRECTIVE');
    expect((await read(text, { allowDirectives: ['priority'] })).summary.accepted).toBe(true);
    // A file without directives is not affected.
    expect((await read('3001234567;Hola\n', { allowDirectives: false })).summary.accepted).toBe(true);
  });

  it('`#! expect:` is checked like a trailer count', async () => {
    const ok = await read('#! expect: 2\n3001234567;Uno\n3109876543;Dos\n');
    expect(ok.summary.accepted).toBe(true);
    expect(rejection(await read('#! expect: 3\n3001234567;Uno\n3109876543;Dos\n'))).toEqual([
      'TRAILER_MISMATCH',
      'the `#! expect:` directive on line 1 says 3 records, the file has 2',
    ]);
  });

  it('a too-long directive is BAD_DIRECTIVE (a too-long comment is not)', async () => {
    const r = await read(`#! priority: ${'x'.repeat(200)}\n3001234567;Hola\n`, { maxLineLength: 100 });
    expect(rejection(r)).toEqual(['BAD_DIRECTIVE', 'line 1: the directive is longer than 100 characters']);
  });
});

describe('docs/format.md "Encoding and lines": LINE_TOO_LONG, processing continues with the next line', () => {
  it('a line over the limit is an error for its record; exactly the limit is fine', async () => {
    const ok = `3001234567;${'a'.repeat(39)}`; // 50 characters
    const long = `3109876543;${'b'.repeat(40)}`; // 51
    const r = await read(`${ok}\n${long}\n3151112233;Tres\n`, { maxLineLength: 50 });
    expect(sent(r).map((s) => s[0])).toEqual([1, 3]);
    expect(problems(r)).toEqual([[2, 'LINE_TOO_LONG']]);
    expect(r.summary.errors[0]).toMatchObject({ line: 2, code: 'LINE_TOO_LONG' });
    expect(r.summary.errors[0]?.message).toContain('50');
    expect(counts(r.summary)).toEqual({ records: 3, valid: 2, invalid: 1, duplicates: 0, suppressed: 0 });
  });

  it('a 1 MB line with a small limit, in 64 KiB chunks: not kept, the next line still parses', async () => {
    const big = `3001234567;${'x'.repeat(1024 * 1024)}`;
    const text = `${big}\r\n3109876543;Dos\r\n${big}`;
    const r = await read(text, { maxLineLength: 1000 }, [64 * 1024, [65_521, 1, 3]]);
    expect(sent(r)).toEqual([[2, '573109876543', 'Dos']]);
    expect(problems(r)).toEqual([
      [1, 'LINE_TOO_LONG'],
      [3, 'LINE_TOO_LONG'],
    ]);
    // What is shown of the line is a short prefix, not the megabyte.
    for (const e of r.summary.errors) expect(e.value?.length).toBeLessThanOrEqual(100);
  });

  it('the default limit is 64 KiB (65,536 characters)', async () => {
    const prefix = '3001234567;';
    const fits = prefix + 'a'.repeat(65_536 - prefix.length);
    const over = `3109876543;${'a'.repeat(65_537 - prefix.length)}`;
    const r = await read(`${fits}\n${over}\n`, {}, [4096]);
    expect(r.recipients.map((x) => x.line)).toEqual([1]);
    expect(problems(r)).toEqual([[2, 'LINE_TOO_LONG']]);
  });

  it('is counted in characters, not bytes', async () => {
    const r = await read(`3001234567;${'ñ'.repeat(9)}\n`, { maxLineLength: 20 });
    expect(r.summary.valid).toBe(1); // 20 characters, 29 bytes
  });

  it('a too-long comment is still a comment (docs/format.md interpretation)', async () => {
    const r = await read(`#${'x'.repeat(500)}\n3001234567;Hola\n`, { maxLineLength: 100 });
    expect(r.summary.layout).toBe('personalized');
    expect(sent(r)).toEqual([[2, '573001234567', 'Hola']]);
    expect(r.summary.invalid).toBe(0);
  });

  it('a too-long line inside an open quote: the quote is reported, the long line too', async () => {
    const r = await read(`3001234567;"never closed\n${'y'.repeat(300)}\n3151112233;Tres\n`, {
      maxLineLength: 100,
    });
    expect(problems(r)).toEqual([
      [1, 'MALFORMED_QUOTE'],
      [2, 'LINE_TOO_LONG'],
    ]);
    expect(sent(r)).toEqual([[3, '573151112233', 'Tres']]);
  });

  it('a quote closed only past the line-length limit: MALFORMED_QUOTE says so, not "never closed"', async () => {
    const long = Array.from({ length: 5 }, () => 'b'.repeat(40)).join('\n');
    const r = await read(`3001234567;"${long}"\n3151112233;Tres\n`, { maxLineLength: 100 });
    const quote = r.summary.errors.find((e) => e.code === 'MALFORMED_QUOTE');
    expect(quote?.line).toBe(1);
    expect(quote?.message).toMatch(/not closed within 100 characters/);
    expect(sent(r).at(-1)).toEqual([6, '573151112233', 'Tres']);
  });
});

describe('docs/format.md "Encoding and lines": line numbers are the 1-based physical line where the record starts', () => {
  it('after multi-line quoted records, blank lines, comments and CRLF', async () => {
    const text =
      'Número;Mensaje\r\n' +
      '3001234567;"Hola\r\nsegunda\r\n\r\ncuarta"\r\n' + // lines 2-5
      '# comentario\r\n' + // 6
      '\r\n' + // 7
      '3109876543;"uno\rdos"\r\n' + // 8-9 (a lone CR inside quotes)
      '12;mal\r\n' + // 10
      '3151112233;fin'; // 11
    const r = await read(text);
    expect(sent(r)).toEqual([
      [2, '573001234567', 'Hola\nsegunda\n\ncuarta'],
      [8, '573109876543', 'uno\ndos'],
      [11, '573151112233', 'fin'],
    ]);
    expect(problems(r)).toEqual([[10, 'INVALID_NUMBER']]);
    expect(r.summary.errors.map((e) => e.line)).toEqual([10]);
  });
});

describe('docs/format.md "Encoding and lines": recipient records (what `records` counts)', () => {
  it('personalized with a header: the header is not a record', async () => {
    const r = await read('numero;mensaje\n3001234567;a\n12;b\n');
    expect(counts(r.summary)).toEqual({ records: 2, valid: 1, invalid: 1, duplicates: 0, suppressed: 0 });
  });

  it('bulk: the message is not a record; records are lines, valid/invalid count numbers', async () => {
    const r = await read('Hola a todos\n3001234567;3109876543;12\n3151112233\n');
    expect(counts(r.summary)).toEqual({ records: 2, valid: 3, invalid: 1, duplicates: 0, suppressed: 0 });
  });
});

describe('docs/format.md "Separator and quotes": separator is the first of ; TAB | , on the first data record', () => {
  it.each([
    [';', '3001234567;Hola, Ana|x'],
    ['\t', '3001234567\tHola; Ana'],
    ['|', '3001234567|Hola, Ana; x'],
    [',', '3001234567,Hola; Ana|x'],
  ])('%j', async (sep, line) => {
    const r = await read(`${line}\n3109876543${sep}Dos\n`);
    expect(r.summary.separator).toBe(sep);
    expect(sent(r)).toEqual([
      [1, '573001234567', line.slice(11).replaceAll('\t', '')],
      [2, '573109876543', 'Dos'],
    ]);
  });

  it('the first met from the left decides; later lines use it', async () => {
    const r = await read('3001234567,Hola; Ana\n3109876543;Dos\n');
    expect(r.summary.separator).toBe(',');
    // line 2 has no ',' : the whole line is the number field, which is not a number
    expect(problems(r)).toEqual([[2, 'INVALID_NUMBER']]);
  });

  it('bulk: the first numbers record decides, not the message', async () => {
    const r = await read('Hola, amigos; hoy\n3001234567|3109876543\n3151112233,3204445566\n');
    expect(r.summary.separator).toBe('|');
    expect(r.summary.valid).toBe(4); // numbers may be separated by any of the four
  });
});

describe('docs/format.md "Separator and quotes": quoting', () => {
  it('"" is one quote; SEP and line breaks are literal inside quotes', async () => {
    const r = await read('3001234567;"Dijo ""sí""; luego\nse fue"\n');
    expect(sent(r)).toEqual([[1, '573001234567', 'Dijo "sí"; luego\nse fue']]);
  });

  it('a quote anywhere but at the start of a field is an ordinary character', async () => {
    const r = await read('3001234567;Dijo "hola" y 5"\n');
    expect(r.recipients[0]?.text).toBe('Dijo "hola" y 5"');
  });

  it('a quoted number field', async () => {
    const r = await read('"3001234567";Hola\n"310 987 6543";"Chao"\n', { layout: 'personalized' });
    expect(sent(r)).toEqual([
      [1, '573001234567', 'Hola'],
      [2, '573109876543', 'Chao'],
    ]);
  });

  it('a quoted message is kept exactly (spaces), an unquoted one trimmed (docs/format.md)', async () => {
    const r = await read('3001234567;  Hola  \n3109876543;"  Hola  "\n');
    expect(r.recipients.map((x) => x.text)).toEqual(['Hola', '  Hola  ']);
  });
});

describe('docs/format.md "Separator and quotes": MALFORMED_QUOTE resynchronises at the next line', () => {
  it('a quote never closed: an error for its record, the next lines are read', async () => {
    const r = await read('3001234567;Uno\n3109876543;"nunca se cierra\n3151112233;Tres\n3204445566;Cuatro\n');
    expect(problems(r)).toEqual([[2, 'MALFORMED_QUOTE']]);
    expect(sent(r).map((s) => s[0])).toEqual([1, 3, 4]);
    expect(r.summary.errors[0]).toMatchObject({ line: 2, code: 'MALFORMED_QUOTE' });
    expect(r.summary.errors[0]?.value).toContain('nunca');
  });

  it('the never-closed quote meets the next record’s quote: that record is still read', async () => {
    const r = await read('3001234567;"nunca\n3109876543;"Dos"\n3151112233;Tres\n');
    expect(problems(r)).toEqual([[1, 'MALFORMED_QUOTE']]);
    expect(sent(r)).toEqual([
      [2, '573109876543', 'Dos'],
      [3, '573151112233', 'Tres'],
    ]);
  });

  it('on the last line, and with a too-long record behind it', async () => {
    const r = await read('3001234567;Uno\n3109876543;"nunca');
    expect(problems(r)).toEqual([[2, 'MALFORMED_QUOTE']]);
    expect(r.summary.records).toBe(2);
  });

  it('text after the closing quote', async () => {
    const r = await read('3001234567;"Hola" mundo\n3109876543;Dos\n');
    expect(problems(r)).toEqual([[1, 'MALFORMED_QUOTE']]);
    expect(sent(r).map((s) => s[0])).toEqual([2]);
  });

  it('in a headed file', async () => {
    const r = await read('numero;mensaje;id\n3001234567;"nunca;A1\n3109876543;Dos;A2\n');
    expect(problems(r)).toEqual([[2, 'MALFORMED_QUOTE']]);
    expect(r.recipients.map((x) => [x.line, x.messageId])).toEqual([[3, 'A2']]);
  });

  it('a bulk message whose quote never closes: NO_MESSAGE', async () => {
    const r = await read('"Hola a todos\n3001234567\n');
    expect(r.summary.rejection?.code).toBe('NO_MESSAGE');
    expect(problems(r)[0]).toEqual([1, 'MALFORMED_QUOTE']);
  });

  it('a bulk message whose quote outgrows the line-length limit: NO_MESSAGE says so', async () => {
    const long = Array.from({ length: 4 }, () => 'a'.repeat(40)).join('\n');
    const r = await read(`"${long}"\n3001234567\n`, { maxLineLength: 100 });
    expect(r.summary.rejection?.code).toBe('NO_MESSAGE');
    expect(r.summary.rejection?.message).toMatch(/quoted message is not closed within 100 characters/);
  });
});

describe('docs/format.md "Personalized layout": personalized without a header', () => {
  it('the message is everything after the first SEP', async () => {
    const r = await read('3001234567;Hola; Ana, llega hoy; 10:00\n');
    expect(r.recipients[0]?.text).toBe('Hola; Ana, llega hoy; 10:00');
  });

  it('one trailing SEP at the end of the line is dropped, only one', async () => {
    const r = await read('3001234567;Hola;\n3109876543;Hola;;\n3151112233;"Hola";\n');
    expect(r.recipients.map((x) => x.text)).toEqual(['Hola', 'Hola;', 'Hola']);
  });

  it('a quoted message is unquoted and may span lines', async () => {
    const r = await read('3001234567;"Pedido #123; llega hoy"\n3109876543;"línea 1\nlínea 2"\n');
    expect(r.recipients.map((x) => x.text)).toEqual(['Pedido #123; llega hoy', 'línea 1\nlínea 2']);
  });

  it('formatting inside the number is removed', async () => {
    const r = await read('+57 (300) 123-4567;Hola\n310.987.6543;Chao\n');
    expect(r.recipients.map((x) => x.number)).toEqual(['573001234567', '573109876543']);
  });
});

describe('docs/format.md "With a header line": personalized with a header', () => {
  it.each([
    'number',
    'Numero',
    'NÚMERO',
    ' Número ',
    'celular',
    'Teléfono',
    'MÓVIL',
    'phone',
    'msisdn',
    'to',
    'Destination',
    '"Número"',
  ])('number column %j', async (name) => {
    const r = await read(`${name};Mensaje\n3001234567;Hola\n`);
    expect(r.summary.header).toBe(true);
    expect(r.summary.layout).toBe('personalized');
    expect(sent(r)).toEqual([[2, '573001234567', 'Hola']]);
  });

  it.each(['message', 'Mensaje', 'TEXT', 'texto', 'sms'])('message column %j', async (name) => {
    const r = await read(`numero;otro;${name}\n3001234567;x;Hola\n`);
    expect(r.recipients[0]?.text).toBe('Hola');
    expect(r.summary.columns).toEqual(['numero', 'otro', name]);
  });

  it.each(['messageId', 'message_id', 'ID', 'referencia', 'Reference'])(
    'messageId column %j',
    async (name) => {
      const r = await read(`numero;mensaje;${name}\n3001234567;Hola; CRM-1 \n3109876543;Chao;\n`);
      expect(r.recipients.map((x) => x.messageId)).toEqual(['CRM-1', null]);
    },
  );

  it('strict CSV: an unquoted SEP in the message is TOO_MANY_FIELDS, with the hint to quote it', async () => {
    const r = await read('numero;mensaje\n3001234567;Hola; Ana\n3109876543;"Hola; Ana"\n');
    expect(problems(r)).toEqual([[2, 'TOO_MANY_FIELDS']]);
    expect(r.summary.errors[0]?.hint).toBe(REASONS.TOO_MANY_FIELDS.hint);
    expect(r.summary.errors[0]?.hint).toContain('quote the message');
    expect(sent(r)).toEqual([[3, '573109876543', 'Hola; Ana']]);
  });

  it('one trailing SEP after the last column is ignored; extra columns are kept', async () => {
    const r = await read('numero;mensaje;ciudad\n3001234567;Hola;Cali;\n3109876543;Chao;Bogotá\n');
    expect(r.summary.columns).toEqual(['numero', 'mensaje', 'ciudad']);
    expect(r.summary.invalid).toBe(0);
    expect(r.summary.valid).toBe(2);
  });

  it('unquoted fields are trimmed, a quoted message is kept exactly (docs/format.md)', async () => {
    const r = await read('numero;mensaje\n 3001234567 ;  Hola  \n3109876543;"  Hola\nAna  "\n');
    expect(r.recipients.map((x) => x.text)).toEqual(['Hola', '  Hola\nAna  ']);
  });

  it('a missing message column makes every record EMPTY_MESSAGE (docs/format.md)', async () => {
    const r = await read('telefono;nombre\n3001234567;Ana\n');
    expect(problems(r)).toEqual([[2, 'EMPTY_MESSAGE']]);
  });

  it('INVALID_MESSAGE_ID: more than 64 characters; 64 is fine', async () => {
    const r = await read(
      `numero;mensaje;id\n3001234567;Hola;${'a'.repeat(64)}\n3109876543;Hola;${'b'.repeat(65)}\n`,
    );
    expect(problems(r)).toEqual([[3, 'INVALID_MESSAGE_ID']]);
    expect(r.summary.errors[0]?.value).toBe('b'.repeat(65));
  });

  it('DUPLICATE_MESSAGE_ID names the line where the id was first used', async () => {
    const r = await read('numero;mensaje;id\n3001234567;Uno;A-1\n3109876543;Dos;A-2\n3151112233;Tres;A-1\n');
    expect(problems(r)).toEqual([[4, 'DUPLICATE_MESSAGE_ID']]);
    expect(r.summary.errors[0]?.message).toContain('line 2');
    expect(r.summary.invalid).toBe(1);
  });

  it('check order: the messageId before the number, the number before the message', async () => {
    const r = await read('numero;mensaje;id\n3001234567;Uno;A\n12;;A\n12;;B\n3109876543;;C\n');
    expect(problems(r)).toEqual([
      [3, 'DUPLICATE_MESSAGE_ID'],
      [4, 'INVALID_NUMBER'],
      [5, 'EMPTY_MESSAGE'],
    ]);
  });
});

describe('docs/format.md "Bulk layout": bulk', () => {
  it('the first record is the message (the whole line); numbers separated by ; , | TAB', async () => {
    const r = await read(
      'Recordatorio: su factura vence el viernes; responda SALIR.\n573001234567\n3109876543;3151112233,+57 320 444 5566|300-555-1234\t301 555 1234\n',
    );
    expect(r.summary.layout).toBe('bulk');
    expect(r.summary.message).toBe('Recordatorio: su factura vence el viernes; responda SALIR.');
    expect(r.recipients.map((x) => [x.line, x.k, x.number])).toEqual([
      [2, 1, '573001234567'],
      [3, 1, '573109876543'],
      [3, 2, '573151112233'],
      [3, 3, '573204445566'],
      [3, 4, '573005551234'],
      [3, 5, '573015551234'],
    ]);
    expect(new Set(r.recipients.map((x) => x.text))).toEqual(new Set([r.summary.message]));
    expect(r.summary.records).toBe(2);
  });

  it('a quoted message may span lines', async () => {
    const r = await read('"Hola,\nsu factura; vence hoy"\n3001234567\n');
    expect(r.summary.message).toBe('Hola,\nsu factura; vence hoy');
    expect(sent(r)).toEqual([[3, '573001234567', 'Hola,\nsu factura; vence hoy']]);
  });

  it('empty entries between separators are skipped (docs/format.md)', async () => {
    const r = await read('Hola\n3001234567;;3109876543;\n');
    expect(r.recipients.map((x) => x.k)).toEqual([1, 2]);
    expect(r.summary.invalid).toBe(0);
  });

  it('NO_MESSAGE: a first record that is itself a valid number list', async () => {
    for (const first of ['3001234567', '3001234567;3109876543', '+57 300 123 4567, 6015551234']) {
      const r = await read(`${first}\n3151112233\n`, { layout: 'bulk' });
      expect(r.summary.rejection?.code, first).toBe('NO_MESSAGE');
      expect(r.summary.accepted).toBe(false);
    }
  });

  it('a message with digits in it is still a message', async () => {
    const r = await read('Llame al 3001234567 hoy\n3109876543\n');
    expect(r.summary.accepted).toBe(true);
    expect(r.summary.message).toBe('Llame al 3001234567 hoy');
  });

  it('an empty quoted message is no message', async () => {
    const r = await read('""\n3001234567\n');
    expect(r.summary.rejection?.code).toBe('NO_MESSAGE');
  });
});

describe('docs/format.md "How dropline tells the layouts apart": layout choice', () => {
  it('a personalized first record without SEP: the first record that has one decides (docs/format.md)', async () => {
    const r = await read('3001234567\n3109876543|Hola, Ana\n', { layout: 'personalized' });
    expect(r.summary.separator).toBe('|');
    expect(problems(r)).toEqual([[1, 'EMPTY_MESSAGE']]);
    expect(sent(r)).toEqual([[2, '573109876543', 'Hola, Ana']]);
  });

  it('the configured layout first, then the name, then the content', async () => {
    const text = 'Hola a todos\n3001234567;Hola\n';
    expect((await read(text, { layout: 'personalized', name: 'x.bulk.txt' })).summary.layout).toBe(
      'personalized',
    );
    expect((await read(text, { layout: 'bulk', name: 'x.personalized.txt' })).summary.layout).toBe('bulk');
    expect((await read(text, { name: 'x.personalized.txt' })).summary.layout).toBe('personalized');
    expect((await read(text)).summary.layout).toBe('bulk');
  });

  it('a header line: personalized', async () => {
    const r = await read('Celular|Texto\n3001234567|Hola\n');
    expect(r.summary).toMatchObject({ layout: 'personalized', header: true, separator: '|' });
  });

  it.each([
    ['3001234567;Hola', 'personalized'],
    ['+57 (300) 123-45.67;Hola', 'personalized'],
    ['3001234567 ;Hola', 'personalized'], // a space is part of the token
    ['3001234567\tHola', 'personalized'],
    ['3001234567,Hola', 'personalized'],
    ['3001234567|Hola', 'personalized'],
    ['1234567;Hola', 'personalized'], // 7 digits
    ['123456;Hola', 'bulk'], // 6 digits
    ['300\t1234567;Hola', 'bulk'], // a TAB is never part of the token
    ['Tel 3001234567;Hola', 'bulk'],
    ['3001234567x;Hola', 'bulk'],
    ['3001234567', 'bulk'], // no SEP after it
    ['Hola a todos', 'bulk'],
  ])('%j is %s', async (first, layout) => {
    const r = await read(`${first}\n3109876543;x\n`);
    expect(r.summary.layout).toBe(layout);
    expect(r.summary.header).toBe(false);
  });

  it('a header is recognised even when the layout is configured personalized, never when bulk', async () => {
    expect((await read('numero;mensaje\n3001234567;Hola\n', { layout: 'personalized' })).summary.header).toBe(
      true,
    );
    const bulk = await read('numero;mensaje\n3001234567\n', { layout: 'bulk' });
    expect(bulk.summary).toMatchObject({ layout: 'bulk', header: false, message: 'numero;mensaje' });
  });
});

describe('docs/format.md "Numbers" through the reader: number errors, SUPPRESSED, COUNTRY_NOT_ALLOWED', () => {
  it('INVALID_NUMBER and NOT_MOBILE carry the value as written', async () => {
    const r = await read('3001234567;ok\n57300123;Hola\n601 555 1234;Hola\n');
    expect(problems(r)).toEqual([
      [2, 'INVALID_NUMBER'],
      [3, 'NOT_MOBILE'],
    ]);
    expect(r.summary.errors.map((e) => e.value)).toEqual(['57300123', '601 555 1234']);
  });

  it('SUPPRESSED: reported, not sent, not invalid, in any written form', async () => {
    const suppression = await suppressionOf('573109876543\n+52 1 55 1234 5678\n');
    const r = await read('3001234567;Uno\n310 987 6543;Dos\n5215512345678;Tres\n', { suppression });
    expect(problems(r)).toEqual([
      [2, 'SUPPRESSED'],
      [3, 'SUPPRESSED'],
    ]);
    expect(r.skipped.map((s) => s.number)).toEqual(['573109876543', '5215512345678']);
    expect(counts(r.summary)).toEqual({ records: 3, valid: 1, invalid: 0, duplicates: 0, suppressed: 2 });
    expect(r.summary.errors).toEqual([]);
    expect(r.summary.accepted).toBe(true);
  });

  it('SUPPRESSED in a bulk file', async () => {
    const suppression = await suppressionOf('3109876543\n');
    const r = await read('Hola\n3001234567;3109876543\n', { suppression });
    expect(r.skipped.map((s) => [s.line, s.k, s.code])).toEqual([[2, 2, 'SUPPRESSED']]);
  });

  it('COUNTRY_NOT_ALLOWED', async () => {
    const r = await read('3001234567;Hola\n+52 1 55 1234 5678;Hola\n', {
      numberRules: makeNumberRules('CO', ['CO']),
      maxInvalidRatio: 1,
    });
    expect(problems(r)).toEqual([[2, 'COUNTRY_NOT_ALLOWED']]);
    expect(r.summary.errors[0]?.message).toContain('MX');
    expect(r.summary.countries).toEqual({ CO: 1 });
  });
});

describe('docs/format.md "Messages": messages', () => {
  it('EMPTY_MESSAGE: nothing, white space, or an empty quoted message', async () => {
    const r = await read('3001234567;\n3109876543;   \n3151112233;""\n3204445566\n3005551234;" "\n', {
      maxInvalidRatio: 1,
    });
    expect(problems(r)).toEqual([
      [1, 'EMPTY_MESSAGE'],
      [2, 'EMPTY_MESSAGE'],
      [3, 'EMPTY_MESSAGE'],
      [4, 'EMPTY_MESSAGE'],
      [5, 'EMPTY_MESSAGE'],
    ]);
    expect(r.summary.records).toBe(5);
  });

  it('CONTROL_CHARS_REMOVED: C0 controls inside a quoted message removed, line breaks kept', async () => {
    const r = await read('3001234567;"Ho\u0007la\r\nmun\u000cdo\u001b"\n3109876543;Sin nada\n');
    expect(sent(r)).toEqual([
      [1, '573001234567', 'Hola\nmundo'],
      [3, '573109876543', 'Sin nada'],
    ]);
    expect(r.warnings.map((w) => [w.line, w.code])).toEqual([[1, 'CONTROL_CHARS_REMOVED']]);
    expect(r.summary.warnings.map((w) => [w.line, w.code])).toEqual([[1, 'CONTROL_CHARS_REMOVED']]);
  });

  it('CONTROL_CHARS_REMOVED in a bulk message', async () => {
    const r = await read('"Hola\u0007 a todos"\n3001234567\n');
    expect(r.summary.message).toBe('Hola a todos');
    expect(r.summary.warnings.map((w) => [w.line, w.code])).toEqual([[1, 'CONTROL_CHARS_REMOVED']]);
  });

  it('LONG_MESSAGE above 500 characters, sent all the same', async () => {
    const r = await read(`3001234567;${'a'.repeat(500)}\n3109876543;${'b'.repeat(501)}\n`);
    expect(r.summary.valid).toBe(2);
    expect(r.warnings.map((w) => [w.line, w.code])).toEqual([[2, 'LONG_MESSAGE']]);
    expect(r.warnings[0]?.message).toContain('501');
    expect(r.recipients.map((x) => x.segments)).toEqual([4, 4]); // 500/153 and 501/153 → 4
  });

  it('segments: GSM-7 160/153 (extension characters count two), UCS-2 70/67', async () => {
    const r = await read(
      [
        `3001234567;${'a'.repeat(160)}`,
        `3109876543;${'a'.repeat(161)}`,
        `3151112233;${'a'.repeat(159)}€`, // € counts two: 161 septets
        `3204445566;${'a'.repeat(69)}á`,
        `3005551234;${'a'.repeat(70)}á`,
      ].join('\n'),
    );
    expect(r.recipients.map((x) => [x.segments, x.encoding])).toEqual([
      [1, 'gsm7'],
      [2, 'gsm7'],
      [2, 'gsm7'],
      [1, 'ucs2'],
      [2, 'ucs2'],
    ]);
    expect(r.summary.segments).toBe(8);
    expect(r.summary.encodings).toEqual({ gsm7: 3, ucs2: 2 });
  });

  it('UCS2_MESSAGE names the characters that forced it and the segments against GSM-7', async () => {
    const r = await read(`3001234567;Hola Ana, mañana í ó 😀 ${'x'.repeat(100)}\n3109876543;Señor, ¿sí?\n`);
    expect(r.warnings.map((w) => [w.line, w.code])).toEqual([
      [1, 'UCS2_MESSAGE'],
      [2, 'UCS2_MESSAGE'],
    ]);
    const first = r.warnings[0]!.message;
    for (const ch of ['í', 'ó', '😀']) expect(first).toContain(ch);
    expect(first).not.toContain('ñ'); // ñ is GSM-7
    expect(first).toMatch(/2 segment\(s\), 1 in GSM-7/);
    expect(r.warnings[1]!.message).toContain("'í'");
    expect(r.warnings[1]!.message).not.toContain('¿');
  });

  it('warnings go with sent records only; an invalid record gets its error alone', async () => {
    const r = await read('12;Hola á\n3001234567;Hola á\n3001234567;Hola á\n', { layout: 'personalized' });
    expect(r.summary.warnings.map((w) => [w.line, w.code])).toEqual([[2, 'UCS2_MESSAGE']]);
  });
});

describe('docs/format.md "Messages": duplicates', () => {
  it('personalized: the same sent number with the same text, reported with the first line', async () => {
    const r = await read(
      '3001234567;Hola\n573001234567;Hola\n+57 300 123 4567;Hola \n3001234567;Chao\n3109876543;Hola\n',
    );
    expect(r.skipped.map((s) => [s.line, s.code, s.firstLine, s.number])).toEqual([
      [2, 'DUPLICATE', 1, '573001234567'],
      [3, 'DUPLICATE', 1, '573001234567'],
    ]);
    expect(r.skipped[0]?.message).toContain('line 1');
    expect(sent(r).map((s) => s[0])).toEqual([1, 4, 5]);
    expect(counts(r.summary)).toEqual({ records: 5, valid: 3, invalid: 0, duplicates: 2, suppressed: 0 });
    expect(r.summary.errors).toEqual([]);
  });

  it('the first line of a duplicate after a multi-line record is where that record starts', async () => {
    const r = await read('\n3001234567;"Hola\nAna"\n3001234567;"Hola\nAna"\n');
    expect(r.skipped.map((s) => [s.line, s.firstLine])).toEqual([[4, 2]]);
  });

  it('bulk: the same number, on a later line or the same one', async () => {
    const r = await read('Hola\n3001234567;3109876543\n573001234567;310 987 6543;3001234567\n');
    expect(r.skipped.map((s) => [s.line, s.k, s.code, s.firstLine])).toEqual([
      [3, 1, 'DUPLICATE', 2],
      [3, 2, 'DUPLICATE', 2],
      [3, 3, 'DUPLICATE', 2],
    ]);
    expect(r.summary.duplicates).toBe(3);
    expect(r.summary.valid).toBe(2);
  });

  it('hundreds of records mixing new, repeated, invalid and warned ones: every item in line order, each duplicate with its first line', async () => {
    // Recipients are checked against the duplicate index in batches: this crosses many.
    const lines: string[] = [];
    const firstOf = new Map<string, number>();
    const want: [number, string, number | undefined][] = [];
    for (let line = 1; line <= 600; line++) {
      let text: string;
      if (line % 13 === 0) {
        text = `12;Hola ${line}`;
        want.push([line, 'invalid', undefined]);
      } else {
        const n = line % 5 === 0 ? 3000000000 + ((line * 7) % 40) : 3000000000 + line * 100;
        const msg = line % 9 === 0 ? 'Hola ñandú ó' : `Hola ${n % 3}`;
        text = `${n};${msg}`;
        const key = `${n}|${msg}`;
        const first = firstOf.get(key);
        if (first === undefined) {
          firstOf.set(key, line);
          want.push([line, 'recipient', undefined]);
          if (msg.includes('ñ')) want.push([line, 'warning', undefined]);
        } else want.push([line, 'duplicate', first]);
      }
      lines.push(text);
    }
    const r = await read(`${lines.join('\n')}\n`, { layout: 'personalized' }, [64]);
    expect(r.items.map((i) => [i.line, i.kind, i.kind === 'duplicate' ? i.firstLine : undefined])).toEqual(
      want,
    );
    expect(r.summary.duplicates).toBe(want.filter((w) => w[1] === 'duplicate').length);
    expect(r.summary.errors.map((e) => e.line)).toEqual(
      want.filter((w) => w[1] === 'invalid').map((w) => w[0]),
    );
  });
});

describe('docs/format.md "When the whole file is rejected": whole-file outcomes', () => {
  it('EMPTY_FILE: no bytes, only comments and blanks, only a header, only a bulk message', async () => {
    for (const text of ['', '\n\n  \n', '# nada\n', 'numero;mensaje\n', 'Hola a todos\n', '\ufeff']) {
      const r = await read(text);
      expect(r.summary.rejection?.code, JSON.stringify(text)).toBe('EMPTY_FILE');
      expect(r.summary.accepted).toBe(false);
    }
  });

  it('TOO_MANY_INVALID: invalid / (valid + invalid) above the ratio; exactly the ratio passes', async () => {
    const file = (bad: number, good: number) =>
      [
        ...[3001234567, 3109876543, 3151112233, 3204445566].slice(0, good).map((n) => `${n};x`),
        ...Array.from({ length: bad }, () => '12;x'),
      ].join('\n');
    const at = await read(file(1, 4)); // 0.2
    expect(at.summary.accepted).toBe(true);
    const over = await read(file(2, 3)); // 0.4
    expect(over.summary.rejection?.code).toBe('TOO_MANY_INVALID');
    expect(over.summary.rejection?.message).toContain('2 of 5');
    expect((await read(file(1, 4), { maxInvalidRatio: 0.19 })).summary.rejection?.code).toBe(
      'TOO_MANY_INVALID',
    );
    expect((await read(file(1, 1), { maxInvalidRatio: 0.5 })).summary.accepted).toBe(true);
    expect((await read(file(1, 4), { maxInvalidRatio: 0 })).summary.accepted).toBe(false);
    expect((await read(file(0, 1), { maxInvalidRatio: 0 })).summary.accepted).toBe(true);
  });

  it('TOO_MANY_INVALID does not count duplicates and suppressed', async () => {
    const suppression = await suppressionOf('3109876543\n');
    const text = '3001234567;x\n3001234567;x\n3001234567;x\n3109876543;x\n3109876543;y\n3151112233;x\n12;x\n';
    const r = await read(text, { suppression, maxInvalidRatio: 0.34 });
    expect(counts(r.summary)).toEqual({ records: 7, valid: 2, invalid: 1, duplicates: 2, suppressed: 2 });
    expect(r.summary.accepted).toBe(true); // 1 / 3
  });

  it('FILE_TOO_LARGE: more bytes than maxFileBytes, nothing read', async () => {
    const text = '3001234567;Hola\n'; // 16 bytes
    expect((await read(text, { maxFileBytes: 16 })).summary.accepted).toBe(true);
    const r = await read(text, { maxFileBytes: 15 });
    expect(r.items).toEqual([]);
    expect(r.summary.rejection?.code).toBe('FILE_TOO_LARGE');
    expect(r.summary.rejection?.message).toContain('15');
    expect(r.summary.records).toBe(0);
  });

  it('a rejected file still reports every record (the counts are complete)', async () => {
    const r = await read('Hola\n3001234567\n3109876543;12;13\n');
    expect(r.summary.rejection?.code).toBe('TOO_MANY_INVALID');
    expect(r.summary.errors.map((e) => [e.line, e.code])).toEqual([
      [3, 'INVALID_NUMBER'],
      [3, 'INVALID_NUMBER'],
    ]);
  });
});

describe('docs/format.md "Proving a file is complete: trailer": EOF / EOF;n', () => {
  it.each(['EOF', 'eof', 'EOF;2', 'Eof|2', 'EOF\t2', 'eof,2', ' EOF ; 2 '])(
    '%j is a trailer, not a record',
    async (trailer) => {
      const r = await read(`3001234567;Uno\n3109876543;Dos\n${trailer}\n`);
      expect(r.summary.accepted).toBe(true);
      expect(r.summary.records).toBe(2);
      expect(r.summary.trailer?.line).toBe(3);
      expect(r.summary.invalid).toBe(0);
    },
  );

  it('any SEP, independent of the file’s separator', async () => {
    const r = await read('3001234567|Uno\nEOF;1\n');
    expect(r.summary.trailer).toEqual({ line: 2, count: 1 });
    expect(r.summary.accepted).toBe(true);
  });

  it('TRAILER_MISMATCH when the count differs from the data records read', async () => {
    const r = await read('3001234567;Uno\n3109876543;Dos\nEOF;3\n');
    expect(r.summary.rejection?.code).toBe('TRAILER_MISMATCH');
    expect(r.summary.rejection?.message).toContain('3');
    expect(r.summary.trailer).toEqual({ line: 3, count: 3 });
    expect(r.summary.valid).toBe(2);
  });

  it('the count includes invalid records, excludes the header, the bulk message and the trailer', async () => {
    expect(
      (await read('numero;mensaje\n3001234567;a\n12;b\nEOF;2\n', { maxInvalidRatio: 1 })).summary.accepted,
    ).toBe(true);
    // bulk: records, not numbers
    expect((await read('Hola\n3001234567;3109876543;3151112233\n3204445566\neof|2\n')).summary.accepted).toBe(
      true,
    );
    expect((await read('Hola\n3001234567;3109876543;3151112233\nEOF;3\n')).summary.rejection?.code).toBe(
      'TRAILER_MISMATCH',
    );
  });

  it('the last non-blank line that is not a comment; CRLF; blank lines and comments after it', async () => {
    const r = await read('3001234567;Uno\r\nEOF;1\r\n\r\n# fin\r\n  \r\n');
    expect(r.summary.trailer).toEqual({ line: 2, count: 1 });
    expect(r.summary.accepted).toBe(true);
  });

  it('an EOF line followed by data is an ordinary line', async () => {
    const r = await read('3001234567;Uno\nEOF;2\n3109876543;Dos\nEOF\n3151112233;Tres\n', {
      maxInvalidRatio: 1,
    });
    expect(problems(r)).toEqual([
      [2, 'INVALID_NUMBER'],
      [4, 'INVALID_NUMBER'],
    ]);
    expect(r.summary.trailer).toBeNull();
    expect(r.summary.records).toBe(5);
    const bulk = await read('Hola\n3001234567\nEOF;1\n3109876543\nEOF;3\n');
    expect(bulk.summary.trailer).toEqual({ line: 5, count: 3 });
    // the first EOF;1 is an ordinary numbers record: 'EOF' and '1', two invalid numbers
    expect(problems(bulk)).toEqual([
      [3, 'INVALID_NUMBER'],
      [3, 'INVALID_NUMBER'],
    ]);
    expect(bulk.summary.rejection?.code).toBe('TOO_MANY_INVALID');
  });

  it('EOF;0 on a file without recipients: the trailer matches, the file is still EMPTY_FILE', async () => {
    const r = await read('numero;mensaje\nEOF;0\n');
    expect(r.summary.rejection?.code).toBe('EMPTY_FILE');
  });
});

describe('errors and warnings are listed up to maxListed, counts stay complete', () => {
  it('errorsTruncated / warningsTruncated', async () => {
    const lines = [
      ...Array.from({ length: 5 }, (_, i) => `12${i};x`),
      ...Array.from({ length: 4 }, (_, i) => `300123456${i};á`),
    ];
    const r = await read(lines.join('\n'), { maxListed: 2, maxInvalidRatio: 1, layout: 'personalized' });
    expect(r.summary.errors).toHaveLength(2);
    expect(r.summary.errors.map((e) => e.line)).toEqual([1, 2]);
    expect(r.summary.errorsTruncated).toBe(true);
    expect(r.summary.invalid).toBe(5);
    expect(r.summary.errorCounts).toEqual({ INVALID_NUMBER: 5 });
    expect(r.summary.warnings).toHaveLength(2);
    expect(r.summary.warningsTruncated).toBe(true);
    expect(r.summary.warningCounts).toEqual({ UCS2_MESSAGE: 4 });
    expect(r.skipped).toHaveLength(5); // the items themselves are never capped
  });

  it('the default is 1000', async () => {
    const lines = Array.from({ length: 1001 }, (_, i) => `${1000 + i};x`);
    const r = await read(lines.join('\n'), { layout: 'personalized' }, []);
    expect(r.summary.errors).toHaveLength(1000);
    expect(r.summary.errorsTruncated).toBe(true);
    expect(r.summary.invalid).toBe(1001);
  });

  it('not truncated when everything fits', async () => {
    const r = await read('12;x\n', { maxListed: 1 });
    expect(r.summary.errorsTruncated).toBe(false);
  });

  it('items: false, more warnings than listed: the same summary (texts of unlisted warnings are never built)', async () => {
    const text = `3001234567;á\n3109876543;${'b'.repeat(501)}\n3151112233;ó ${'c'.repeat(600)}\n3204445566;ú\n`;
    const full = await read(text, { maxListed: 2 });
    const quiet = await read(text, { maxListed: 2, items: false });
    expect(quiet.summary).toEqual(full.summary);
    expect(quiet.summary.warningCounts).toEqual({ UCS2_MESSAGE: 3, LONG_MESSAGE: 2 });
    expect(quiet.summary.warnings.map((w) => [w.line, w.code])).toEqual([
      [1, 'UCS2_MESSAGE'],
      [2, 'LONG_MESSAGE'],
    ]);
    expect(quiet.summary.warnings[1]?.message).toBe('the message has 501 characters (over 500)');
    expect(quiet.summary.warningsTruncated).toBe(true);
  });

  it('items: false yields only the summary, with the same counts', async () => {
    const text = '3001234567;á\n12;x\n3001234567;á\n';
    const full = await read(text, { maxInvalidRatio: 1 });
    const quiet = await read(text, { maxInvalidRatio: 1, items: false });
    expect(quiet.items).toEqual([]);
    expect(quiet.summary).toEqual(full.summary);
  });
});

describe('docs/format.md "Templates": templates in a headed personalized file', () => {
  const rejection = (r: Read) =>
    r.summary.rejection && [r.summary.rejection.code, r.summary.rejection.message];

  it('{{column}} is replaced by the record’s value; names compared without case, accents or spaces', async () => {
    const r = await read(
      'Número;Primer Nombre;Dirección;Mensaje\n' +
        '3001234567;Ana;Calle 1;Hola {{ PRIMER NOMBRE }}, enviamos a {{direccion}}.\n' +
        '3109876543; Juan ;"Cra 7; Of. 2";Hola {{primernombre}}, enviamos a {{Dirección}}.\n',
    );
    expect(r.summary.accepted).toBe(true);
    expect(sent(r)).toEqual([
      [2, '573001234567', 'Hola Ana, enviamos a Calle 1.'],
      // an unquoted value is trimmed; a quoted one is inserted exactly, separator included
      [3, '573109876543', 'Hola Juan, enviamos a Cra 7; Of. 2.'],
    ]);
  });

  it('{{{{ writes a literal {{; a value is inserted as it is, never read as a template', async () => {
    const r = await read('numero;nombre;mensaje\n3001234567;{{x}};Use {{{{codigo}} para {{nombre}}\n');
    expect(r.summary.accepted).toBe(true);
    expect(r.recipients[0]?.text).toBe('Use {{codigo}} para {{x}}');
    expect(r.summary.templates).toEqual([
      { line: 2, template: 'Use {{{{codigo}} para {{nombre}}', example: 'Use {{codigo}} para {{x}}' },
    ]);
  });

  it('placeholders may name the number and messageId columns: their values as written', async () => {
    const r = await read('celular;id;mensaje\n300 123 4567;CRM-9;Su línea {{celular}}, caso {{ID}}\n');
    expect(r.recipients[0]?.text).toBe('Su línea 300 123 4567, caso CRM-9');
  });

  it('`#! message:` gives every record the template; the file needs no message column', async () => {
    const r = await read(
      '#! message: Hola {{nombre}}, su saldo es {{saldo}}.\nnumero;nombre;saldo\n3001234567;Ana;$20.000\n3109876543;Juan;$5.000\n',
    );
    expect(r.summary.accepted).toBe(true);
    expect(r.summary.directives.message).toEqual({
      line: 1,
      template: 'Hola {{nombre}}, su saldo es {{saldo}}.',
    });
    expect(sent(r)).toEqual([
      [3, '573001234567', 'Hola Ana, su saldo es $20.000.'],
      [4, '573109876543', 'Hola Juan, su saldo es $5.000.'],
    ]);
  });

  it('a non-empty message column wins over `#! message:`; an empty one takes the template', async () => {
    const r = await read(
      '#! message: Hola {{nombre}}\nnumero;nombre;mensaje\n3001234567;Ana;\n3109876543;Juan;Juan, llámenos\n3151112233;Luis;   \n',
    );
    expect(sent(r)).toEqual([
      [3, '573001234567', 'Hola Ana'],
      [4, '573109876543', 'Juan, llámenos'],
      [5, '573151112233', 'Hola Luis'],
    ]);
  });

  it('a quoted `#! message:` keeps a trailing separator a spreadsheet pad would lose', async () => {
    const quoted = await read('#! message: "Hola {{nombre}};"\nnumero;nombre\n3001234567;Ana\n');
    expect(quoted.recipients[0]?.text).toBe('Hola Ana;');
    const padded = await read('#! message: Hola {{nombre}};;\nnumero;nombre\n3001234567;Ana\n');
    expect(padded.recipients[0]?.text).toBe('Hola Ana');
  });

  it('UNKNOWN_PLACEHOLDER in `#! message:`: the directive’s line, the placeholder and the columns', async () => {
    const r = await read('#! message: Hola {{nmbre}}\nnumero;nombre\n3001234567;Ana\n3109876543;Juan\n');
    expect(rejection(r)).toEqual([
      'UNKNOWN_PLACEHOLDER',
      'line 1: {{nmbre}} names no column of the header (columns: numero, nombre)',
    ]);
    expect(r.summary.accepted).toBe(false);
    // The rest of the file is still read (validate shows every other problem at once).
    expect(r.summary.records).toBe(2);
  });

  it('UNKNOWN_PLACEHOLDER in a message column names the first line where it appears', async () => {
    const r = await read(
      'numero;nombre;mensaje\n3001234567;Ana;Hola {{nombre}}\n3109876543;Juan;Hola {{apellido}}\n3151112233;Luis;Hola {{apellido}}\n',
    );
    expect(rejection(r)).toEqual([
      'UNKNOWN_PLACEHOLDER',
      'line 3: {{apellido}} names no column of the header (columns: numero, nombre, mensaje)',
    ]);
  });

  it('UNKNOWN_PLACEHOLDER: the message column itself, and a {{ never closed', async () => {
    const self = await read('#! message: {{mensaje}}\nnumero;mensaje\n3001234567;\n');
    expect(rejection(self)?.[1]).toBe(
      'line 1: {{mensaje}} names the message column itself (columns: numero, mensaje)',
    );
    const open = await read('numero;nombre;mensaje\n3001234567;Ana;Hola {{nombre, bienvenida\n');
    expect(rejection(open)?.[0]).toBe('UNKNOWN_PLACEHOLDER');
    expect(rejection(open)?.[1]).toMatch(/^line 2: a `\{\{` is never closed/);
  });

  it('no columns to name: a placeholder in a headless or bulk file is UNKNOWN_PLACEHOLDER, not sent as written', async () => {
    const headless = await read('3001234567;Hola {{nombre}}\n3109876543;Hola\n');
    expect(rejection(headless)).toEqual([
      'UNKNOWN_PLACEHOLDER',
      'line 1: {{nombre}} names no column: the file has no header line (placeholders need a headed personalized file)',
    ]);
    const bulk = await read('Hola {{nombre}}, su factura vence hoy\n3001234567\n');
    expect(rejection(bulk)?.[0]).toBe('UNKNOWN_PLACEHOLDER');
    // `{{{{` is a literal `{{` in every layout.
    const literal = await read('Promo {{{{2x1}} hoy\n3001234567\n');
    expect(literal.summary.accepted).toBe(true);
    expect(literal.summary.message).toBe('Promo {{2x1}} hoy');
  });

  it('`#! message:` in a bulk or headless file: BAD_DIRECTIVE naming its line', async () => {
    const bulk = await read('#! message: Hola\nRecordatorio de pago\n3001234567\n');
    expect(rejection(bulk)?.[0]).toBe('BAD_DIRECTIVE');
    expect(rejection(bulk)?.[1]).toMatch(
      /^line 1: `#! message:` needs a personalized file with a header line/,
    );
    const headless = await read('# x\n#! message: Hola\n3001234567;\n');
    expect(rejection(headless)?.[1]).toMatch(
      /^line 2: `#! message:` needs .* personalized without a header$/,
    );
    expect((await read('#! message:  \nnumero;nombre\n3001234567;Ana\n')).summary.rejection?.message).toBe(
      'line 1: the `#! message:` template is empty',
    );
  });

  it('MISSING_FIELD: an empty, blank or absent value; the record is invalid and not sent', async () => {
    const r = await read(
      '#! message: Hola {{nombre}} de {{ciudad}}\nnumero;nombre;ciudad\n' +
        '3001234567;Ana;Cali\n3109876543;;Cali\n3151112233;"  ";Cali\n3204445566;Luis\n3005551234;Sofía;Pasto\n',
      { maxInvalidRatio: 1 },
    );
    expect(problems(r)).toEqual([
      [4, 'MISSING_FIELD'],
      [5, 'MISSING_FIELD'],
      [6, 'MISSING_FIELD'],
    ]);
    expect(sent(r).map((s) => s[0])).toEqual([3, 7]);
    expect(r.summary.errors.map((e) => [e.line, e.message, e.value])).toEqual([
      [4, 'the message uses {{nombre}} but this line has no value in column nombre', '{{nombre}}'],
      [5, 'the message uses {{nombre}} but this line has no value in column nombre', '{{nombre}}'],
      [6, 'the message uses {{ciudad}} but this line has no value in column ciudad', '{{ciudad}}'],
    ]);
    expect(r.summary.errors[0]?.hint).toBe(REASONS.MISSING_FIELD.hint);
    expect(r.skipped[0]?.number).toBe('573109876543');
    expect(counts(r.summary)).toEqual({ records: 5, valid: 2, invalid: 3, duplicates: 0, suppressed: 0 });
  });

  it('MISSING_FIELD counts in maxInvalidRatio (1 of 5 passes at 0.2, 2 of 5 is TOO_MANY_INVALID)', async () => {
    const file = (missing: number) =>
      `#! message: Hola {{nombre}}\nnumero;nombre\n${[
        '3001234567',
        '3109876543',
        '3151112233',
        '3204445566',
        '3005551234',
      ]
        .map((n, i) => `${n};${i < missing ? '' : 'Ana'}`)
        .join('\n')}\n`;
    expect((await read(file(1))).summary.accepted).toBe(true);
    const over = await read(file(2));
    expect(over.summary.rejection?.code).toBe('TOO_MANY_INVALID');
    expect(over.summary.rejection?.message).toContain('2 of 5');
  });

  it('check order: the number before MISSING_FIELD', async () => {
    const r = await read('#! message: Hola {{nombre}}\nnumero;nombre\n12;\n', { maxInvalidRatio: 1 });
    expect(problems(r)).toEqual([[3, 'INVALID_NUMBER']]);
  });

  it('segments, UCS2_MESSAGE and LONG_MESSAGE are decided on the merged text', async () => {
    const r = await read(
      `#! message: Hola {{nombre}}, ${'x'.repeat(140)}\nnumero;nombre\n3001234567;Ana\n3109876543;Maximiliano\n3151112233;Ramón\n3204445566;${'n'.repeat(400)}\n`,
    );
    // 146 + 3 = 149 (1 part); 146 + 11 = 157 (1); Ramón: UCS-2, 151 characters (3 parts); 546 (4)
    expect(r.recipients.map((x) => [x.line, x.segments, x.encoding])).toEqual([
      [3, 1, 'gsm7'],
      [4, 1, 'gsm7'],
      [5, 3, 'ucs2'],
      [6, 4, 'gsm7'],
    ]);
    expect(r.warnings.map((w) => [w.line, w.code])).toEqual([
      [5, 'UCS2_MESSAGE'],
      [6, 'LONG_MESSAGE'],
    ]);
    expect(r.warnings[0]?.message).toContain("'ó'");
    const long = await read(
      `#! message: Hola {{nombre}}${'x'.repeat(150)}\nnumero;nombre\n3001234567;Maximiliano\n`,
    );
    expect(long.recipients[0]?.segments).toBe(2); // 5 + 11 + 150 = 166 > 160
  });

  it('duplicates are decided on the merged text', async () => {
    const r = await read(
      '#! message: Hola {{nombre}}\nnumero;nombre\n3001234567;Ana\n573001234567;Ana\n3001234567;Juan\n',
    );
    expect(r.skipped.map((s) => [s.line, s.code, s.firstLine])).toEqual([[4, 'DUPLICATE', 3]]);
    expect(sent(r).map((s) => s[2])).toEqual(['Hola Ana', 'Hola Juan']);
  });

  it('summary.templates: one example per distinct template, from the first record that used it', async () => {
    const r = await read(
      '#! message: Hola {{nombre}}\nnumero;nombre;mensaje\n12;Pedro;\n3001234567;Ana;\n3109876543;Juan;Chao {{nombre}}\n3151112233;Luis;Chao {{nombre}}\n3204445566;Sofía;Sin plantilla\n',
      { maxInvalidRatio: 1 },
    );
    expect(r.summary.templates).toEqual([
      { line: 3, template: 'Hola {{nombre}}', example: 'Hola Pedro' },
      { line: 5, template: 'Chao {{nombre}}', example: 'Chao Juan' },
    ]);
    // A `#! message:` without placeholders is still the file's template.
    const fixed = await read('#! message: Hola a todos\nnumero;nombre\n3001234567;Ana\n');
    expect(fixed.summary.templates).toEqual([{ line: 3, template: 'Hola a todos', example: 'Hola a todos' }]);
    expect((await read('3001234567;Hola\n')).summary.templates).toEqual([]);
  });

  it('summary.templates lists at most 20 templates', async () => {
    const lines = Array.from({ length: 30 }, (_, i) => `${3001234500 + i};Ana;Hola {{nombre}} ${i}`);
    const r = await read(`numero;nombre;mensaje\n${lines.join('\n')}\n`, {}, []);
    expect(r.summary.valid).toBe(30);
    expect(r.summary.templates).toHaveLength(20);
    expect(r.summary.templates[19]).toEqual({
      line: 21,
      template: 'Hola {{nombre}} 19',
      example: 'Hola Ana 19',
    });
  });

  it('many distinct message-column templates (beyond the parse cache) all merge', async () => {
    const lines = Array.from({ length: 300 }, (_, i) => `${3001234000 + i};N${i};{{nombre}} ${i % 150}`);
    const r = await read(`numero;nombre;mensaje\n${lines.join('\n')}\n`, {}, []);
    expect(r.summary.valid).toBe(300);
    expect(r.recipients.map((x) => x.text)).toEqual(
      Array.from({ length: 300 }, (_, i) => `N${i} ${i % 150}`),
    );
  });
});

describe('transliterate and the cost of the file (segments by country, as written vs transliterated)', () => {
  const ramon = `Hola Ramón, ${'x'.repeat(88)}`; // 100 characters: 2 UCS-2 parts, 1 in GSM-7
  const file =
    `3001234567;${ramon}\n` +
    '3109876543;Hola\n' +
    `+52 1 55 1234 5678;${ramon}\n` +
    '3151112233;Hola 😀 á\n';

  it("'never' (default): the text as written is sent; the summary says what gsm7 would save", async () => {
    const r = await read(file);
    expect(r.recipients.map((x) => [x.text, x.segments, x.encoding])).toEqual([
      [ramon, 2, 'ucs2'],
      ['Hola', 1, 'gsm7'],
      [ramon, 2, 'ucs2'],
      ['Hola 😀 á', 1, 'ucs2'],
    ]);
    expect(r.summary.segments).toBe(6);
    expect(r.summary.segmentsByCountry).toEqual({ CO: 4, MX: 2 });
    expect(r.summary.transliteration).toEqual({
      mode: 'never',
      segmentsAsWritten: 6,
      segmentsTransliterated: 4,
      recipientsChanged: 2,
    });
  });

  it("'gsm7': look-alikes replaced, GSM-7 letters kept, a text with an emoji stays as written", async () => {
    const r = await read(file, { transliterate: 'gsm7' });
    expect(r.recipients.map((x) => [x.text, x.segments, x.encoding])).toEqual([
      [ramon.replace('ó', 'o'), 1, 'gsm7'],
      ['Hola', 1, 'gsm7'],
      [ramon.replace('ó', 'o'), 1, 'gsm7'],
      ['Hola 😀 á', 1, 'ucs2'],
    ]);
    expect(r.warnings.map((w) => [w.line, w.code])).toEqual([[4, 'UCS2_MESSAGE']]);
    expect(r.summary.segments).toBe(4);
    expect(r.summary.segmentsByCountry).toEqual({ CO: 3, MX: 1 });
    expect(r.summary.transliteration).toEqual({
      mode: 'gsm7',
      segmentsAsWritten: 6,
      segmentsTransliterated: 4,
      recipientsChanged: 2,
    });
    const spanish = await read('3001234567;“Señor Núñez”: su pingüino llegó… ¿Está ahí?\n', {
      transliterate: 'gsm7',
    });
    expect(spanish.recipients[0]?.text).toBe('"Señor Nuñez": su pingüino llego... ¿Esta ahi?');
    expect(spanish.recipients[0]?.encoding).toBe('gsm7');
  });

  it("'gsm7': duplicates are decided on the text sent; the bulk message and merged templates too", async () => {
    const dup = '3001234567;Hola Ramón\n3001234567;Hola Ramon\n';
    expect((await read(dup)).summary.duplicates).toBe(0);
    const g = await read(dup, { transliterate: 'gsm7' });
    expect(g.skipped.map((s) => [s.line, s.code])).toEqual([[2, 'DUPLICATE']]);
    const bulk = await read('Facturación lista\n3001234567;3109876543\n', { transliterate: 'gsm7' });
    expect(bulk.summary.message).toBe('Facturacion lista');
    expect(bulk.recipients.map((x) => x.text)).toEqual(['Facturacion lista', 'Facturacion lista']);
    expect(bulk.summary.transliteration).toMatchObject({ segmentsAsWritten: 2, recipientsChanged: 2 });
    const merged = await read('#! message: Hola {{nombre}}\nnumero;nombre\n3001234567;Ramón\n', {
      transliterate: 'gsm7',
    });
    expect(merged.recipients[0]?.text).toBe('Hola Ramon');
    expect(merged.summary.templates[0]?.example).toBe('Hola Ramon');
  });

  it('a file already in GSM-7: both counts are the segments, nothing changes', async () => {
    const r = await read('3001234567;Señor Núñez: ¿todo bien?\n'.replace('ú', 'u'));
    expect(r.summary.transliteration).toEqual({
      mode: 'never',
      segmentsAsWritten: 1,
      segmentsTransliterated: 1,
      recipientsChanged: 0,
    });
  });

  it('only valid recipients are counted (invalid, duplicate, suppressed ones cost nothing)', async () => {
    const r = await read(`3001234567;${ramon}\n3001234567;${ramon}\n12;${ramon}\n`, { maxInvalidRatio: 1 });
    expect(r.summary.segmentsByCountry).toEqual({ CO: 2 });
    expect(r.summary.transliteration).toMatchObject({
      segmentsAsWritten: 2,
      segmentsTransliterated: 1,
      recipientsChanged: 1,
    });
  });
});

describe('docs/format.md "Identifiers": identifiers (what the reader gives the pipeline)', () => {
  it('personalized recipients: line, k = 0, messageId from the column or null', async () => {
    const r = await read('3001234567;Uno\n\n3109876543;Dos\n');
    expect(r.recipients.map((x) => [x.line, x.k, x.messageId])).toEqual([
      [1, 0, null],
      [3, 0, null],
    ]);
    const headed = await read('numero;mensaje;id\n3001234567;Uno;CRM-1\n');
    expect(headed.recipients[0]?.messageId).toBe('CRM-1');
  });

  it('bulk recipients: k is the 1-based position of the number on its line; (line, k) unique', async () => {
    const r = await read('Hola\n3001234567;12;3109876543\n3151112233\n', { maxInvalidRatio: 1 });
    expect(r.recipients.map((x) => `${x.line}-${x.k}`)).toEqual(['2-1', '2-3', '3-1']);
    expect(r.skipped.map((x) => `${x.line}-${x.k}`)).toEqual(['2-2']);
  });

  it('hash: the sha256 of the content, the same for any chunking (fileId is derived from it)', async () => {
    const text = '3001234567;Hola\r\n';
    const r = await read(text, { hash: true });
    expect(r.summary.sha256).toBe(createHash('sha256').update(text).digest('hex'));
    expect(r.summary.bytes).toBe(17);
  });
});

describe('fixtures in real encodings (test/fixtures/format)', () => {
  const fixture = async (name: string) =>
    read(await readFile(join(FIXTURES, name)), { name }, [1, 5, [3, 64]]);

  it('windows-1252.txt: á 0xE1, € 0x80, ñ 0xF1', async () => {
    const r = await fixture('windows-1252.txt');
    expect(r.summary).toMatchObject({ encoding: 'windows-1252', layout: 'personalized', separator: ';' });
    expect(sent(r)).toEqual([
      [1, '573001234567', 'Hola María, su saldo está en 50€.'],
      [2, '573109876543', 'Señor Gómez, su pedido llegó.'],
    ]);
  });

  it('windows-1252-header.txt: Número;Mensaje in Windows-1252', async () => {
    const r = await fixture('windows-1252-header.txt');
    expect(r.summary).toMatchObject({
      encoding: 'windows-1252',
      header: true,
      columns: ['Número', 'Mensaje'],
    });
    expect(sent(r)).toEqual([
      [2, '573001234567', 'Hola Ana, su cita es mañana.'],
      [3, '573109876543', 'Pedido en camino: 20€'],
    ]);
  });

  it('utf8-header.txt and utf8-bom-header.txt: Número;Mensaje in UTF-8', async () => {
    const plain = await fixture('utf8-header.txt');
    expect(plain.summary).toMatchObject({ encoding: 'utf-8', header: true, columns: ['Número', 'Mensaje'] });
    expect(sent(plain)).toEqual([
      [2, '573001234567', 'Hola Ana, ¿confirma?'],
      [3, '573109876543', 'Gracias'],
    ]);
    const bom = await fixture('utf8-bom-header.txt');
    expect(bom.summary).toMatchObject({
      encoding: 'utf-8',
      header: true,
      columns: ['Número', 'Mensaje', 'Id'],
    });
    expect(bom.recipients.map((x) => [x.line, x.text, x.messageId])).toEqual([
      [2, 'Hola Ana', 'CRM-1'],
      [3, 'Hola Juan; llega hoy', 'CRM-2'],
    ]);
  });

  it('utf16le-bom.txt: a spreadsheet "Unicode text" export (TAB, CRLF, header)', async () => {
    const r = await fixture('utf16le-bom.txt');
    expect(r.summary).toMatchObject({ encoding: 'utf-16le', header: true, separator: '\t' });
    expect(sent(r)).toEqual([
      [2, '573001234567', 'Hola Ana, mañana a las 10.'],
      [3, '573109876543', 'Café gratis hoy'],
    ]);
  });

  it('utf16be-bom.txt: bulk', async () => {
    const r = await fixture('utf16be-bom.txt');
    expect(r.summary).toMatchObject({
      encoding: 'utf-16be',
      layout: 'bulk',
      message: 'Recordatorio: su factura vence el viernes.',
      records: 2,
      valid: 3,
    });
  });

  it('crlf.txt and cr-only.txt', async () => {
    const crlf = await fixture('crlf.txt');
    expect(sent(crlf).map((s) => [s[0], s[2]])).toEqual([
      [1, 'Primera línea'],
      [3, 'Segunda'],
      [4, 'Tercera'],
    ]);
    const cr = await fixture('cr-only.txt');
    expect(sent(cr).map((s) => [s[0], s[2]])).toEqual([
      [1, 'Uno'],
      [2, 'Dos'],
      [3, 'Tres'],
    ]);
  });

  it('quoted-multiline.txt: a quoted message over three lines with "" inside', async () => {
    const r = await fixture('quoted-multiline.txt');
    expect(sent(r)).toEqual([
      [1, '573001234567', 'Hola Sofía,\nsu cita quedó para el viernes.\n"Gracias"'],
      [4, '573109876543', 'Hola Juan'],
    ]);
  });
});

// ---------------------------------------------------------------------------------------
// Every reason code of src/errors.ts produced by a minimal file.

/** Decided by the pipeline (time-outs, earlier files, contact limits, the service's templates), never by the reader. */
const NOT_THE_READERS = [
  'MISSING_TRAILER',
  'MARKER_MISMATCH',
  'UNKNOWN_TEMPLATE',
  'TOO_MANY_ATTACHMENTS',
  'ATTACHMENTS_TOO_LARGE',
  'DUPLICATE_FILE',
  'CONTACT_LIMIT',
  'FILE_CHANGED',
  'NOT_A_REGULAR_FILE',
  'FILE_UNREADABLE',
] as const;
type ReaderCode = Exclude<ReasonCode, (typeof NOT_THE_READERS)[number]>;

const CODE_EXAMPLES: Record<ReaderCode, [string | Uint8Array, Options?]> = {
  LINE_TOO_LONG: [`3001234567;${'a'.repeat(100)}\n`, { maxLineLength: 50 }],
  MALFORMED_QUOTE: ['3001234567;"Hola\n'],
  TOO_MANY_FIELDS: ['numero;mensaje\n3001234567;Hola;Ana\n'],
  INVALID_EMAIL: [
    '#! channel: email\n#! templateId: welcome\nana@example.com\nana@\n',
    { maxInvalidRatio: 1 },
  ],
  MISSING_FIELD: [
    'numero;nombre;mensaje\n3001234567;Ana;Hola {{nombre}}\n3109876543;;Hola {{nombre}}\n',
    { maxInvalidRatio: 1 },
  ],
  INVALID_MESSAGE_ID: [`numero;mensaje;id\n3001234567;Hola;${'x'.repeat(65)}\n`],
  DUPLICATE_MESSAGE_ID: ['numero;mensaje;id\n3001234567;Hola;A\n3109876543;Hola;A\n'],
  INVALID_NUMBER: ['300;Hola\n', { layout: 'personalized' }],
  NOT_MOBILE: ['6015551234;Hola\n'],
  COUNTRY_NOT_ALLOWED: ['+52 1 55 1234 5678;Hola\n', { numberRules: makeNumberRules('CO', ['CO']) }],
  EMPTY_MESSAGE: ['3001234567;\n'],
  DUPLICATE: ['3001234567;Hola\n3001234567;Hola\n'],
  SUPPRESSED: ['3001234567;Hola\n'], // the list is added below
  NO_CONSENT: [
    '3001234567;Hola\n3109876543;Hola\n',
    { consent: parseConsentList('3109876543;sms\n', makeNumberRules(), new Set(CHANNELS)).forChannel('sms') },
  ],
  CONTROL_CHARS_REMOVED: ['3001234567;"Ho\u0007la"\n'],
  LONG_MESSAGE: [`3001234567;${'a'.repeat(501)}\n`],
  UCS2_MESSAGE: ['3001234567;Mañana sí\n'],
  EMPTY_FILE: [''],
  BINARY_FILE: [Buffer.from([0x33, 0x00, 0x0a])],
  NO_MESSAGE: ['3001234567\n3109876543\n'],
  TOO_MANY_INVALID: ['12;Hola\n', { layout: 'personalized' }],
  FILE_TOO_LARGE: ['3001234567;Hola\n', { maxFileBytes: 10 }],
  TRAILER_MISMATCH: ['3001234567;Hola\nEOF;5\n'],
  BAD_DIRECTIVE: ['#! prority: high\n3001234567;Hola\n'],
  UNKNOWN_PLACEHOLDER: ['#! message: Hola {{nmbre}}\nnumero;nombre\n3001234567;Ana\n'],
};

describe('consent lists (docs/opt-outs.md "Consent lists")', () => {
  const list = parseConsentList(
    [
      '# who agreed, and to what',
      '573001234567;sms,whatsapp',
      '3109876543 ; SMS',
      '3109876543;email',
      'Ana@Example.com;email',
      '',
      '3001234567',
      '12;sms',
      '3151234567;fax',
    ].join('\n'),
    makeNumberRules(),
    new Set(CHANNELS),
  );

  it('a line is a number (any form a drop file takes) or an address, and its channels; a bad line counts invalid, never half-read', () => {
    expect(list.size).toBe(3);
    expect(list.entryLines).toBe(4);
    expect(list.invalid).toBe(3);
    expect([...(list.channelsOf('573001234567') ?? [])]).toEqual(['sms', 'whatsapp']);
    expect([...(list.channelsOf('573109876543') ?? [])]).toEqual(['sms', 'email']);
    expect(list.forChannel('email').allows('ana@example.com')).toBe(true);
    expect(list.forChannel('sms').allows('573151234567')).toBe(false);
  });

  it("a file's recipients without consent for its channel are NO_CONSENT, counted suppressed; the others are read as before", async () => {
    const r = await read('3001234567;Hola\n3109876543;Hola\n3151234567;Hola\n3001234567;Hola\n', {
      consent: list.forChannel('whatsapp'),
    });
    expect(r.summary).toMatchObject({ records: 4, valid: 1, suppressed: 2, duplicates: 1 });
    expect(r.skipped.map((x) => [x.line, x.code])).toEqual([
      [2, 'NO_CONSENT'],
      [3, 'NO_CONSENT'],
      [4, 'DUPLICATE'],
    ]);
  });
});

describe('every reason code the reader decides is produced (src/errors.ts REASONS)', () => {
  it('the table names every code except the pipeline’s', () => {
    const expected = Object.keys(REASONS)
      .filter((c) => !(NOT_THE_READERS as readonly string[]).includes(c))
      .sort();
    expect(Object.keys(CODE_EXAMPLES).sort()).toEqual(expected);
  });

  it.each(Object.entries(CODE_EXAMPLES))('%s', async (code, [input, options]) => {
    const opts: Options = { ...options };
    if (code === 'SUPPRESSED') opts.suppression = await suppressionOf('3001234567\n');
    const r = await read(input, opts);
    const seen = new Set<string>([
      ...r.skipped.map((s) => s.code),
      ...r.warnings.map((w) => w.code),
      ...r.summary.errors.map((e) => e.code),
      ...r.summary.warnings.map((w) => w.code),
      ...(r.summary.rejection ? [r.summary.rejection.code] : []),
    ]);
    expect([...seen]).toContain(code);
    const scope = REASONS[code as ReaderCode].scope;
    if (scope === 'file') expect(r.summary.rejection?.code).toBe(code);
    if (scope === 'record') expect(r.summary.errorCounts[code as ReaderCode]).toBeGreaterThan(0);
    if (scope === 'warning') expect(r.summary.warningCounts[code as ReaderCode]).toBe(1);
  });
});

// ---------------------------------------------------------------------------------------
// Properties.

async function summaryOf(bytes: Uint8Array, chunking: Chunking, options: Options = {}): Promise<ReadSummary> {
  return (await readOnce(bytes, options, chunking)).summary;
}

/** Chunk sizes to cut the same bytes differently. */
const chunkingArb: fc.Arbitrary<Chunking> = fc.oneof(
  fc.constant<Chunking>('whole'),
  fc.integer({ min: 1, max: 16 }),
  fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 6 }),
);

const NUMBERS = [
  '3001234567',
  '573109876543',
  '+57 315 111 2233',
  '(320) 444-5566',
  '5215512345678',
  '6015551234', // landline
  '57300123', // too short
  'abc',
  '',
  '+44 7911 123456',
];
const MESSAGES = [
  'Hola',
  'Hola; Ana',
  'mañana sí',
  '"citado; ""x"""',
  '"dos\nlíneas"',
  '',
  '  ',
  '"nunca',
  'a,b|c',
];

/** A personalized line: a number, SEP and a message; or a blank, a comment, a quote. */
const lineArb = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(fc.constantFrom(...NUMBERS), fc.constantFrom(...MESSAGES))
      .map(([n, m]) => `${n};${m}`),
  },
  { weight: 1, arbitrary: fc.constantFrom('', '   ', '# comentario', '"', 'EOF;3', 'Hola') },
);
const personalizedArb = fc
  .tuple(
    fc.array(lineArb, { minLength: 1, maxLength: 25 }),
    fc.constantFrom('\n', '\r\n', '\r'),
    fc.boolean(),
  )
  .map(([lines, br, finalBreak]) => `3001234567;primera\n${lines.join(br)}${finalBreak ? br : ''}`);

describe('properties (fast-check)', () => {
  it('arbitrary bytes never throw and always end in exactly one summary as the last batch', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 200 }),
          fc.string({ unit: 'binary', maxLength: 120 }).map((s) => bytesOf(s)),
          fc
            .tuple(
              fc.constantFrom([0xff, 0xfe], [0xfe, 0xff], [0xef, 0xbb, 0xbf]),
              fc.uint8Array({ maxLength: 100 }),
            )
            .map(([bom, rest]) => Uint8Array.from([...bom, ...rest])),
        ),
        chunkingArb,
        fc.option(fc.constantFrom<'bulk' | 'personalized'>('bulk', 'personalized'), { nil: undefined }),
        async (bytes, chunking, layout) => {
          const r = await readOnce(bytes, { layout, maxLineLength: 50 }, chunking); // asserts the batches
          expect(r.summary.bytes).toBe(bytes.length);
          expect(r.summary.accepted).toBe(r.summary.rejection === null);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('personalized: records = valid + invalid + duplicates + suppressed; recipients = valid', async () => {
    const suppression = await suppressionOf('573151112233\n');
    await fc.assert(
      fc.asyncProperty(personalizedArb, async (text) => {
        const r = await readOnce(bytesOf(text), { suppression, layout: 'personalized' }, 'whole');
        const s = r.summary;
        expect(s.layout).toBe('personalized');
        expect(s.records).toBe(s.valid + s.invalid + s.duplicates + s.suppressed);
        expect(r.recipients).toHaveLength(s.valid);
        expect(r.skipped.filter((x) => x.kind === 'invalid')).toHaveLength(s.invalid);
        expect(r.skipped.filter((x) => x.kind === 'duplicate')).toHaveLength(s.duplicates);
        expect(r.skipped.filter((x) => x.kind === 'suppressed')).toHaveLength(s.suppressed);
        // one item per record, in line order
        const lines = [...r.recipients, ...r.skipped].map((x) => x.line);
        expect(new Set(lines).size).toBe(s.records);
        expect(r.items.filter((x) => x.kind !== 'warning').map((x) => x.line)).toEqual(
          [...lines].sort((a, b) => a - b),
        );
      }),
      { numRuns: 200 },
    );
  });

  it('chunking the same bytes differently gives the same summary', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          personalizedArb.map((t) => bytesOf(t)),
          personalizedArb.map((t) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(t, 'utf16le')])),
          personalizedArb.map((t) => Buffer.from(t, 'latin1')), // Windows-1252 when it has ñ or í
          fc.uint8Array({ maxLength: 120 }),
        ),
        chunkingArb,
        chunkingArb,
        async (bytes, a, b) => {
          expect(await summaryOf(bytes, a, { hash: true })).toEqual(
            await summaryOf(bytes, b, { hash: true }),
          );
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('email files (docs/format.md "Email files")', () => {
  const HTML = { html: '<p>Hola {{nombre}}, su factura de {{mes}}</p>' };

  it('a headed file: the address column, every other column a field, sent with the subject and the source html', async () => {
    const r = await read(
      [
        '#! channel: email',
        '#! subject: Su factura de {{Mes}}',
        'Correo;Nombre;Mes;messageId',
        'ana@example.com;Ana;enero;a-1',
        ' Luis@Example.COM ;"Luis; el de Cali";febrero;',
        'josé@bücher.de;José;marzo;',
        'no-es-correo;X;abril;',
        'ana@example.com;Ana;enero;a-2',
        'ana@example.com;Ana B;enero;',
        'pia@example.com;Pía;;',
      ].join('\n'),
      { email: HTML, maxInvalidRatio: 1 },
    );
    expect(r.summary.channel).toBe('email');
    expect(r.summary.email).toEqual({ templateId: null, subject: 'Su factura de {{Mes}}', html: HTML.html });
    expect(r.summary.accepted).toBe(true);
    expect(sent(r)).toEqual([
      [4, 'ana@example.com', '{"Nombre":"Ana","Mes":"enero"}'],
      [5, 'Luis@example.com', '{"Nombre":"Luis; el de Cali","Mes":"febrero"}'],
      [6, 'josé@xn--bcher-kva.de', '{"Nombre":"José","Mes":"marzo"}'],
      // The same address with other fields is another email, as a number with another text.
      [9, 'ana@example.com', '{"Nombre":"Ana B","Mes":"enero"}'],
    ]);
    expect(r.recipients[0]).toMatchObject({ messageId: 'a-1', country: '', segments: 0 });
    expect(problems(r)).toEqual([
      [7, 'INVALID_EMAIL'],
      [8, 'DUPLICATE'],
      [10, 'MISSING_FIELD'],
    ]);
    expect(r.skipped.find((s) => s.code === 'MISSING_FIELD')?.message).toBe(
      'the email uses {{Mes}} but this line has no value in column Mes',
    );
    expect(counts(r.summary)).toEqual({ records: 7, valid: 4, invalid: 2, duplicates: 1, suppressed: 0 });
    // One merged example of the subject; no SMS cost for email.
    expect(r.summary.templates).toEqual([
      { line: 4, template: 'Su factura de {{Mes}}', example: 'Su factura de enero' },
    ]);
    expect(r.summary.segments).toBe(0);
    expect(r.summary.countries).toEqual({});
  });

  it('a headed file with another separator: its fields split on it', async () => {
    const r = await read('email,nombre,mes\nana@example.com,Ana,enero\n', { channel: 'email', email: HTML });
    expect(r.summary.separator).toBe(',');
    expect(sent(r)).toEqual([[2, 'ana@example.com', '{"nombre":"Ana","mes":"enero"}']]);
    // Without content, the rejection's hint is about email, not an SMS message line.
    const none = await read('email;nombre\nana@example.com;Ana\n', { channel: 'email' });
    expect(none.summary.rejection?.hint).toContain('#! templateId:');
  });

  it('without a header: lists of addresses, several a line, no message record', async () => {
    const r = await read('ana@example.com\nluis@example.com; pia@example.com\nmal@\n', {
      channel: 'email',
      email: { templateId: 'welcome' },
      maxInvalidRatio: 1,
    });
    expect(r.summary).toMatchObject({ channel: 'email', layout: 'bulk', header: false, accepted: true });
    expect(r.summary.email).toEqual({ templateId: 'welcome', subject: null, html: null });
    expect(r.recipients.map((x) => [x.line, x.k, x.number, x.text])).toEqual([
      [1, 1, 'ana@example.com', ''],
      [2, 1, 'luis@example.com', ''],
      [2, 2, 'pia@example.com', ''],
    ]);
    expect(problems(r)).toEqual([[3, 'INVALID_EMAIL']]);
  });

  it('a field never carries a line break or control character to the service: a subject is one line (issue 32)', async () => {
    // `Ana\nBcc: …` in a subject's field reached the service as written: a second header line.
    const r = await read(
      [
        '#! channel: email',
        '#! subject: Hola {{Nombre}}',
        'Correo;Nombre;Mes',
        'ana@example.com;"Ana\nBcc: spy@example.net";enero',
        'luis@example.com;"Luis\r\nX-Evil: 1\u0007";"feb\trero"',
        'pia@example.com;Pía;marzo',
      ].join('\n'),
      { email: HTML },
    );
    expect(sent(r)).toEqual([
      [4, 'ana@example.com', '{"Nombre":"Ana Bcc: spy@example.net","Mes":"enero"}'],
      // (A record's line is its first: the line break inside the quotes counts.)
      [6, 'luis@example.com', '{"Nombre":"Luis X-Evil: 1","Mes":"febrero"}'],
      [8, 'pia@example.com', '{"Nombre":"Pía","Mes":"marzo"}'],
    ]);
    expect(r.warnings.map((w) => [w.line, w.code])).toEqual([
      [4, 'CONTROL_CHARS_REMOVED'],
      [6, 'CONTROL_CHARS_REMOVED'],
    ]);
    // validate's example of the merged subject is what is sent.
    expect(r.summary.templates[0]?.example).toBe('Hola Ana Bcc: spy@example.net');
    // A stored template's subject is not known here: its fields are cleaned the same way.
    const stored = await read(
      '#! channel: email\n#! templateId: invoice\nCorreo;Nombre\nana@example.com;"Ana\nBcc: x@y.co"\n',
    );
    expect(sent(stored)).toEqual([[4, 'ana@example.com', '{"Nombre":"Ana Bcc: x@y.co"}']]);
  });

  it('the file directives win over the source; content is required; placeholders must name columns', async () => {
    const file = 'email;nombre\nana@example.com;Ana\n';
    const fromFile = await read(`#! channel: email\n#! templateId: invoice\n${file}`, { email: HTML });
    expect(fromFile.summary.email).toEqual({ templateId: 'invoice', subject: null, html: null });

    const none = await read(`#! channel: email\n${file}`);
    expect(none.summary.rejection?.code).toBe('NO_MESSAGE');
    expect(none.summary.rejection?.message).toContain('`#! templateId:`');

    const unknown = await read(`#! channel: email\n#! subject: Hola {{apellido}}\n${file}`, { email: HTML });
    expect(unknown.summary.rejection?.code).toBe('UNKNOWN_PLACEHOLDER');
    expect(unknown.summary.rejection?.message).toMatch(
      /^line 2: the subject: \{\{apellido\}\} names no column/,
    );

    const both = await read(`#! channel: email\n#! subject: Hola\n#! templateId: invoice\n${file}`);
    expect(both.summary.rejection?.code).toBe('BAD_DIRECTIVE');

    const message = await read(`#! channel: email\n#! message: Hola\n#! subject: x\n${file}`, {
      email: HTML,
    });
    expect(message.summary.rejection).toMatchObject({ code: 'BAD_DIRECTIVE' });
    expect(message.summary.rejection?.message).toContain('`#! message:` is for sms');
  });

  it('email directives in an sms file, and a channel the service has not, reject the file', async () => {
    const sms = await read('#! subject: Hola\n3001234567;Hola\n');
    expect(sms.summary.rejection?.code).toBe('BAD_DIRECTIVE');
    expect(sms.summary.rejection?.message).toContain('is for email files');
    const fax = await read('#! channel: fax\n3001234567;Hola\n');
    expect(fax.summary.rejection?.code).toBe('BAD_DIRECTIVE');
    // RCS is read as sms is (test/unit/rcs-files.test.ts).
    const rcs = await read('#! channel: rcs\n3001234567;Hola\n');
    expect(rcs.summary.channel).toBe('rcs');
    expect(sent(rcs)).toEqual([[2, '573001234567', 'Hola']]);
    // A WhatsApp file is read, but without a template it sends nothing (whatsapp-files.test.ts).
    const whatsapp = await read('#! channel: whatsapp\n3001234567;Hola\n');
    expect(whatsapp.summary.channel).toBe('whatsapp');
    expect(whatsapp.summary.rejection?.code).toBe('NO_MESSAGE');
    // An sms file read for an email source by its directive is sms again.
    const back = await read('#! channel: sms\n3001234567;Hola\n', { channel: 'email' });
    expect(back.summary.channel).toBe('sms');
    expect(sent(back)).toEqual([[2, '573001234567', 'Hola']]);
  });
});

describe('a bulk message longer than the line-length limit (docs/format.md "Encoding and lines", "Bulk layout")', () => {
  it('rejects the file LINE_TOO_LONG naming the limit and advising to shorten the message; the message is no invalid recipient', async () => {
    const r = await read(`Hola ${'a'.repeat(200)}\n3001234567\n3109876543;3151112233\n`, {
      maxLineLength: 100,
    });
    const rejection = r.summary.rejection;
    expect(rejection?.code).toBe('LINE_TOO_LONG');
    expect(rejection?.message).toMatch(/^line 1: .*message.* longer than 100 characters/);
    expect(rejection?.hint).toMatch(/shorten the message/);
    expect(rejection?.hint).toMatch(/--max-line-length/);
    expect(rejection?.hint).not.toBe(REASONS.NO_MESSAGE.hint);
    // Its recipients are read for the counts; the message line is none of them.
    expect(problems(r)).toEqual([]);
    expect(counts(r.summary)).toEqual({ records: 2, valid: 3, invalid: 0, duplicates: 0, suppressed: 0 });
    expect(r.summary.errors).toEqual([]);
  });
});

describe('docs/format.md "Templates": two header columns with the same name', () => {
  it('a placeholder naming two columns rejects the file UNKNOWN_PLACEHOLDER naming the header line, the name and a hint to rename one', async () => {
    const r = await read('numero;nombre;Nombre;mensaje\n3001234567;Ana;Beto;Hola {{nombre}}\n');
    const rejection = r.summary.rejection;
    expect(r.summary.accepted).toBe(false);
    expect(rejection?.code).toBe('UNKNOWN_PLACEHOLDER');
    expect(rejection?.message).toMatch(/header on line 1/);
    expect(rejection?.message).toContain('{{nombre}}');
    expect(rejection?.message).toContain('`nombre` (column 2)');
    expect(rejection?.message).toContain('`Nombre` (column 3)');
    expect(rejection?.hint).toMatch(/rename one/);
  });

  it('names compared without accents or spaces, in `#! message:` too', async () => {
    const r = await read(
      '#! message: Hola {{primer nombre}}\nnumero;Primer Nombre;PrimerNómbre\n3001234567;Ana;Beto\n',
    );
    expect(r.summary.rejection?.code).toBe('UNKNOWN_PLACEHOLDER');
    expect(r.summary.rejection?.message).toMatch(/header on line 2/);
    expect(r.summary.rejection?.hint).toMatch(/rename one/);
  });

  it('a duplicated messageId column is ambiguous too; the number is the first column whatever its name', async () => {
    const r = await read('numero;mensaje;id;ID\n3001234567;Hola;A-1;B-1\n');
    expect(r.summary.rejection?.code).toBe('UNKNOWN_PLACEHOLDER');
    expect(r.summary.rejection?.message).toMatch(/^line 1: the messageId column/);
    expect(r.summary.rejection?.message).toContain('`ID` (column 4)');
    expect(r.summary.rejection?.hint).toMatch(/rename one/);
    const number = await read('Número;mensaje;numero\n3001234567;Hola;3109876543\n');
    expect(number.summary.accepted).toBe(true);
    expect(sent(number)).toEqual([[2, '573001234567', 'Hola']]);
  });

  it('a duplicate no placeholder uses (and not the number, message or messageId column) is accepted as before', async () => {
    const r = await read('numero;nombre;Nombre;mensaje\n3001234567;Ana;Beto;Hola a todos\n');
    expect(r.summary.accepted).toBe(true);
    expect(sent(r)).toEqual([[2, '573001234567', 'Hola a todos']]);
  });
});

describe('a directive value quoted in its BAD_DIRECTIVE message (shown on the dashboard and in the manifest)', () => {
  it('has any phone number in it masked, as pages mask numbers', async () => {
    for (const directive of [
      '#! expect: n573001234567',
      '#! priority: 573001234567',
      '#! sendAt: +573001234567',
      '#! 573001234567: x',
    ]) {
      const r = await read(`${directive}\n3001234567;Hola\n`);
      const message = r.summary.rejection?.message ?? '';
      expect(r.summary.rejection?.code, directive).toBe('BAD_DIRECTIVE');
      expect(message, directive).not.toMatch(/573001234567/);
      expect(message, directive).toMatch(/57300\*\*\*\*567/);
      expect(message, directive).toMatch(/^line 1: /);
    }
  });
});
