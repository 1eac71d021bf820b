import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DroplineError } from '../../src/errors.ts';
import { makeNumberRules, type NumberRules, normalizeNumber, sentValue } from '../../src/format/numbers.ts';
import { loadSuppressionList, readSuppressionList } from '../../src/format/suppression.ts';
import { prng } from '../helpers/prng.ts';

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

describe('suppression list (SUPPRESSED, docs/opt-outs.md "The file"): one number per line, same normalisation', () => {
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

  it('a line over 1024 characters is invalid however the bytes are cut into chunks', async () => {
    // A number padded with spaces past the limit: not read, in one chunk as in many.
    const text = `3001234567${' '.repeat(2000)}\n3109876543\n`;
    for (const size of [1, 512, text.length]) {
      const list = await readSuppressionList(pieces(Buffer.from(text), size));
      expect([list.size, list.invalid, list.has('573001234567')]).toEqual([1, 1, false]);
      expect(list.has('573109876543')).toBe(true);
    }
    // A comment is skipped however long, and however cut: after the file's BOM too.
    const comment = `# ${'x'.repeat(3000)}\n3001234567\n# ${'y'.repeat(3000)}`;
    for (const text of [comment, `\ufeff${comment}`, `\ufeff# ${'ñ'.repeat(1500)}\n3001234567`])
      for (const size of [1, 2, 512, text.length]) {
        const list = await readSuppressionList(pieces(Buffer.from(text), size));
        expect([list.size, list.invalid], `${text.slice(0, 3)}… in ${size}-byte chunks`).toEqual([1, 0]);
      }
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

  it.each([1, 2, 5, 64])(
    'a stream that reuses one buffer for every chunk (as a local file is read), %i bytes at a time',
    async (size) => {
      // Each chunk overwrites the last: whatever the reader keeps of a line begun in one
      // chunk (or of a first chunk shorter than a BOM) must be its own copy.
      async function* reused(bytes: Buffer): AsyncGenerator<Uint8Array> {
        const buffer = Buffer.alloc(size); // a Buffer, as fs gives: its slice() is a view
        for (let i = 0; i < bytes.length; i += size) {
          const n = Math.min(size, bytes.length - i);
          buffer.set(bytes.subarray(i, i + n));
          yield buffer.subarray(0, n);
        }
        buffer.fill(0x39); // '9': a reader holding a view would now read other numbers
      }
      for (const bytes of [
        Buffer.from(text, 'utf8'),
        Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text.slice(1), 'utf16le')]),
      ]) {
        const list = await readSuppressionList(reused(bytes));
        expect([list.size, list.invalid]).toEqual([4, 0]);
        for (const n of expected) expect(list.has(n), n).toBe(true);
      }
    },
  );

  it('the size hint (the room made for the numbers at once) changes nothing, right or wrong', async () => {
    const many = Array.from({ length: 5000 }, (_, i) => `30${String(10_000_000 + i)}`).join('\n');
    for (const size of [undefined, 0, 1, many.length, 10 * many.length]) {
      const list = await readSuppressionList(
        pieces(Buffer.from(many), 4096),
        makeNumberRules(),
        'list',
        size,
      );
      expect([list.size, list.invalid], `size ${size}`).toEqual([5000, 0]);
      expect(list.has('573010000000') && list.has('573010004999')).toBe(true);
    }
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

// ---- The list's fast paths (Collector.simple, HashedNumbers, hasValues) against normalizeNumber ----

describe('readSuppressionList fast paths against normalizeNumber, line by line', () => {
  const pick = <T>(rand: () => number, list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
  const digits = (rand: () => number, n: number) =>
    Array.from({ length: n }, () => Math.floor(rand() * 10)).join('');

  /** A number's digits written the ways people write them (what the fast path must read as formatting). */
  function formatted(rand: () => number, d: string): string {
    switch (Math.floor(rand() * 9)) {
      case 0:
        return `${d.slice(0, 3)} ${d.slice(3, 6)} ${d.slice(6)}`;
      case 1:
        return `${d.slice(0, 3)}-${d.slice(3, 6)}-${d.slice(6)}`;
      case 2:
        return `(${d.slice(0, 3)}) ${d.slice(3, 6)}.${d.slice(6)}`;
      case 3:
        return `  ${d}  `;
      case 4:
        return `${d.slice(0, 2)} ${d.slice(2)}`;
      case 5:
        return `${d.slice(0, 5)}\u00a0${d.slice(5)}`; // NBSP: formatting, but not the fast path's
      case 6:
        return `${d}\t`; // a TAB after the number: white space at the end
      case 7:
        return d.split('').join(rand() < 0.5 ? ' ' : '.');
      default:
        return d;
    }
  }

  /** One line of a list: numbers of every form docs/format.md "Numbers" reads, and what is not one. */
  function line(rand: () => number, earlier: readonly string[]): string {
    const r = rand();
    if (r < 0.08 && earlier.length > 0) return pick(rand, earlier); // a duplicate line
    const mobile = `3${digits(rand, 9)}`;
    if (r < 0.3) return formatted(rand, mobile); // 10 digits starting with 3
    if (r < 0.45) return formatted(rand, `57${mobile}`); // 12 digits, 573…
    if (r < 0.5) return `+57 ${formatted(rand, mobile)}`;
    if (r < 0.53) return `0057${mobile}`;
    if (r < 0.58) return formatted(rand, `57${pick(rand, ['6', '1', '0', '9', '2'])}${digits(rand, 9)}`); // 57 not then 3
    if (r < 0.62)
      return formatted(rand, `${pick(rand, ['6', '60', '1', '2', '9'])}${digits(rand, 9)}`.slice(0, 10));
    if (r < 0.7)
      return pick(rand, [
        '+52 55 1234 5678',
        '5215512345678',
        '+52 1 55 1234 5678',
        '+44 7400 123456',
        '447400123456',
        '+1 212 555 0100',
        '0034 612 345 678',
        '+593 99 123 4567',
        '55 1234 5678', // a Mexican national number (MX default), junk for CO
        '7400 123456', // a British national number without its 0
        '07400 123456',
        '612 345 678',
        '(212) 555-0100',
      ]);
    if (r < 0.76) return formatted(rand, digits(rand, Math.floor(rand() * 17))); // any length, any head
    if (r < 0.8) return `57${mobile}${digits(rand, 1 + Math.floor(rand() * 3))}`; // 573… too long
    if (r < 0.83) return `${mobile.slice(0, 3)} ${mobile.slice(3)} # pidió la baja`;
    if (r < 0.86) return pick(rand, ['# comentario', '   # sangrado', '#3001234567', '#', '']);
    if (r < 0.89) return pick(rand, ['', '   ', '\t', ' \u00a0 ']);
    if (r < 0.93)
      return pick(rand, [
        'no es un número',
        '300123456x',
        '---',
        '( )',
        '.',
        '+',
        '++573001234567',
        '３００１２３４５６７',
        '300\t1234567',
        '57300123456a',
      ]);
    if (r < 0.96) return `${mobile}\u2028`; // a Unicode line separator: white space at the end, not a break
    return `\ufeff${mobile}`; // a stray BOM inside the file
  }

  /** What the general code (Collector.line) decides for a whole text: the oracle. */
  function expected(
    text: string,
    rules: NumberRules,
  ): { numbers: Set<string>; invalid: number; verdicts: Map<string, string | null> } {
    const listRules = { ...rules, allowedCountries: null };
    const numbers = new Set<string>();
    const verdicts = new Map<string, string | null>();
    let invalid = 0;
    for (const l of text.replace(/^\ufeff/, '').split(/\r\n|\r|\n/)) {
      const hash = l.indexOf('#');
      const body = hash >= 0 ? l.slice(0, hash) : l;
      if (body.trim() === '') continue;
      const r = normalizeNumber(body, listRules);
      verdicts.set(l, r.ok ? r.number : null);
      if (r.ok) numbers.add(r.number);
      else invalid++;
    }
    return { numbers, invalid, verdicts };
  }

  function listText(rand: () => number, count: number): string {
    const lines: string[] = [];
    for (let i = 0; i < count; i++) lines.push(line(rand, lines));
    let text = rand() < 0.2 ? '\ufeff' : '';
    for (let i = 0; i < lines.length; i++) {
      text += lines[i]!;
      if (i < lines.length - 1 || rand() < 0.5) text += pick(rand, ['\n', '\n', '\r\n', '\r']);
    }
    return text;
  }

  /** The bytes in pieces cut at random places (inside CRLFs and UTF-8 sequences too). */
  async function* cut(bytes: Buffer, rand: () => number, max: number): AsyncGenerator<Uint8Array> {
    let i = 0;
    while (i < bytes.length) {
      const n = 1 + Math.floor(rand() * max);
      yield new Uint8Array(bytes.subarray(i, i + n));
      i += n;
    }
  }

  async function* whole(bytes: Buffer): AsyncGenerator<Uint8Array> {
    yield new Uint8Array(bytes);
  }

  /** Numbers to ask the list: the lines' own, their neighbours, and others. */
  function probes(rand: () => number, oracle: ReturnType<typeof expected>): string[] {
    const out = new Set<string>();
    for (const n of oracle.numbers) {
      out.add(n);
      out.add(String(Number(n) + 1));
      out.add(String(Number(n) - 1));
    }
    for (let i = 0; i < 200; i++) out.add(`573${digits(rand, 9)}`);
    for (let i = 0; i < 50; i++) out.add(digits(rand, 1 + Math.floor(rand() * 15)));
    return [...out];
  }

  /** The list read from `text` agrees with the oracle on every line, every probe, size and invalid. */
  async function checkList(text: string, rules: NumberRules, rand: () => number, label: string) {
    const oracle = expected(text, rules);
    const bytes = Buffer.from(text, 'utf8');
    const list = await readSuppressionList(whole(bytes), rules);
    expect(list.size, `size: ${label}`).toBe(oracle.numbers.size);
    expect(list.invalid, `invalid: ${label}`).toBe(oracle.invalid);
    for (const [l, number] of oracle.verdicts) {
      if (number !== null) expect(list.has(number), `line ${JSON.stringify(l)}: ${label}`).toBe(true);
    }
    const asked = probes(rand, oracle);
    const want = asked.map((n) => oracle.numbers.has(n));
    expect(
      asked.map((n) => list.has(n)),
      `has: ${label}`,
    ).toEqual(want);

    // hasValues, in batches of any size (the reader's are up to 64), the array reused.
    const values = Float64Array.from(asked, sentValue);
    const out = new Uint8Array(values.length);
    for (let start = 0; start < values.length; ) {
      const n = Math.min(values.length - start, 1 + Math.floor(rand() * 100));
      list.hasValues!(values.subarray(start, start + n), n, out.subarray(start, start + n));
      start += n;
    }
    expect(
      [...out].map((b) => b === 1),
      `hasValues: ${label}`,
    ).toEqual(want);

    // The same bytes cut anywhere: the same list.
    for (const max of [1, 3, 17, 4096]) {
      const other = await readSuppressionList(cut(bytes, rand, max), rules);
      expect([other.size, other.invalid], `chunks up to ${max}: ${label}`).toEqual([list.size, list.invalid]);
      expect(
        asked.map((n) => other.has(n)),
        `chunks up to ${max}: ${label}`,
      ).toEqual(want);
    }
    return list;
  }

  it('seeded random lists, default country CO', async () => {
    const rand = prng(0x0b1e);
    for (let run = 0; run < 40; run++) {
      const text = listText(rand, 1 + Math.floor(rand() * 120));
      await checkList(text, makeNumberRules(), rand, `CO run ${run}: ${JSON.stringify(text)}`);
    }
  });

  it.each(['MX', 'US', 'GB', 'ES', 'EC'])(
    'seeded random lists, default country %s (no Colombian national form)',
    async (country) => {
      const rand = prng(country.charCodeAt(0) * 256 + country.charCodeAt(1));
      const rules = makeNumberRules(country);
      for (let run = 0; run < 8; run++) {
        const text = listText(rand, 1 + Math.floor(rand() * 80));
        await checkList(text, rules, rand, `${country} run ${run}: ${JSON.stringify(text)}`);
      }
      // The Colombian ten-digit form is not read as Colombian here.
      const list = await readSuppressionList(whole(Buffer.from('3001234567\n573109876543\n')), rules);
      expect(list.has('573001234567')).toBe(false);
      expect(list.has('573109876543')).toBe(true);
    },
  );

  it('allowedCountries is ignored, whatever the form (fast or not)', async () => {
    const rand = prng(7);
    const text = listText(rand, 200);
    for (const rules of [makeNumberRules('CO', ['MX']), makeNumberRules('MX', ['US'])]) {
      await checkList(text, rules, rand, `allowed ${[...rules.allowedCountries!].join()}`);
    }
  });

  it('hand-picked lines: each alone, with and without a final line break', async () => {
    const rand = prng(11);
    const lines = [
      '3001234567',
      '300 123 4567',
      '(300) 123-4567',
      '300.123.4567',
      ' 3 0 0 1 2 3 4 5 6 7 ',
      '573001234567',
      '57 300 123 4567',
      '57-3001234567',
      '576012345678', // 57 then 6: a landline
      '5730012345678', // 13 digits
      '57300123456', // 11 digits starting 57
      '3001234567890',
      '300123456',
      '6012345678',
      '0573001234567',
      '+573001234567',
      '+57 (300) 123 4567',
      '00573001234567',
      '3001234567 # nota',
      '3001234567#',
      '3001234567\t',
      '\t3001234567',
      '300\t1234567',
      '300\u00a0123\u00a04567',
      '300\u2009123\u20094567',
      '3001234567\u2028',
      '\ufeff3001234567',
      '3001234567\u000b',
      '5215512345678',
      '+52 1 55 1234 5678',
      '525512345678',
      '447400123456',
      '999999999999',
      '573999999999',
      '579999999999',
      '3999999999',
      '0000000000',
      '000000000000',
    ];
    for (const l of lines) {
      for (const end of ['', '\n', '\r\n', '\r']) {
        for (const country of ['CO', 'MX']) {
          await checkList(
            `${l}${end}`,
            makeNumberRules(country),
            rand,
            `${country} ${JSON.stringify(l + end)}`,
          );
        }
      }
    }
    await checkList(lines.join('\n'), makeNumberRules(), rand, 'all the lines');
    await checkList(lines.join('\r\n') + '\r\n', makeNumberRules('GB'), rand, 'all the lines, GB');
  });

  // A list is most often one export, every line laid out the same: such lines are read by
  // matching the line before (ListLines #alike). Runs of one layout, each line of them
  // possibly changed in one byte (a letter, a comment, a digit's place, another head).
  it('runs of lines laid out alike, and lines that nearly match them', async () => {
    const rand = prng(0xa11e);
    const layouts: ((d: string) => string)[] = [
      (d) => d,
      (d) => `${d.slice(0, 2)} ${d.slice(2)}`,
      (d) => `${d.slice(0, 3)}-${d.slice(3, 6)}-${d.slice(6)}`,
      (d) => `(${d.slice(0, 3)}) ${d.slice(3, 6)}.${d.slice(6)}`,
      (d) => ` ${d} `,
    ];
    const swaps = ['x', '#', ' ', '-', 'é', '\u0663', '+', '\t', '0', '9'];
    for (let run = 0; run < 60; run++) {
      let text = '';
      for (let r = 0, runs = 1 + Math.floor(rand() * 4); r < runs; r++) {
        const layout = pick(rand, layouts);
        const head = pick(rand, ['3', '573', '574', '576', '3', '573']);
        const size = head.length === 1 ? 10 : 12;
        const end = pick(rand, ['\n', '\n', '\r\n', '\r']);
        for (let i = 0, n = 1 + Math.floor(rand() * 30); i < n; i++) {
          let l = layout(head + digits(rand, size - head.length));
          if (rand() < 0.15) {
            const at = Math.floor(rand() * l.length);
            l = l.slice(0, at) + pick(rand, swaps) + l.slice(at + 1);
          }
          text += l + end;
        }
      }
      for (const country of ['CO', 'MX'])
        await checkList(
          text,
          makeNumberRules(country),
          rand,
          `${country} run ${run}: ${JSON.stringify(text)}`,
        );
    }
  });

  it('a line split across chunks, and a CRLF split across chunks, go the slow way to the same list', async () => {
    const rand = prng(13);
    const text = '3001234567\r\n573109876543\r\n(315) 111-2233\r\n';
    const bytes = Buffer.from(text);
    for (let a = 1; a < bytes.length; a++) {
      async function* two(): AsyncGenerator<Uint8Array> {
        yield new Uint8Array(bytes.subarray(0, a));
        yield new Uint8Array(bytes.subarray(a));
      }
      const list = await readSuppressionList(two(), makeNumberRules());
      expect([list.size, list.invalid], `cut at ${a}`).toEqual([3, 0]);
      for (const n of ['573001234567', '573109876543', '573151112233'])
        expect(list.has(n), `cut at ${a}`).toBe(true);
    }
    await checkList(text, makeNumberRules(), rand, 'crlf');
  });

  it('many duplicates of a few numbers (large buckets), and a larger list: has and hasValues agree', async () => {
    const rand = prng(17);
    const few = ['3001234567', '573001234567', '3109876543', '+57 315 111 2233', '5215512345678'];
    const lines: string[] = [];
    for (let i = 0; i < 400; i++) lines.push(pick(rand, few));
    const dup = await checkList(lines.join('\n'), makeNumberRules(), rand, 'duplicates');
    expect(dup.size).toBe(4);

    const big: string[] = [];
    for (let i = 0; i < 20_000; i++) big.push(rand() < 0.5 ? `3${digits(rand, 9)}` : `573${digits(rand, 9)}`);
    await checkList(big.join('\n'), makeNumberRules(), rand, 'big');
  });

  it('an empty list: has and hasValues say no', async () => {
    const list = await readSuppressionList(whole(Buffer.alloc(0)), makeNumberRules());
    const values = Float64Array.from(['573001234567', '0', '999999999999999'], sentValue);
    const out = new Uint8Array(3).fill(1);
    list.hasValues!(values, 3, out);
    expect([...out]).toEqual([0, 0, 0]);
    expect(list.has('573001234567')).toBe(false);
  });
});
