// Messages and template values are hashed from the file's bytes where the decoded text is
// them exactly (an ASCII piece, a line read whole from it), from the strings elsewhere
// (dedupe.ts scanTextAt, hashJoined). test/helpers/byte-check.ts has every byte hash
// compared with its string hash; here files mix both kinds of piece, and copies of a line
// land in either kind: each copy must still be a duplicate, however the bytes are cut.
import { describe, expect, it } from 'vitest';
import { byteCheck } from '../../src/format/dedupe.ts';
import { makeNumberRules } from '../../src/format/numbers.ts';
import { type ReadSummary, readDropFile } from '../../src/format/reader.ts';
import { prng } from '../helpers/prng.ts';

type Rand = () => number;
const pick = <T>(rand: Rand, list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;

async function summaryOf(text: string, chunk: number): Promise<ReadSummary> {
  const bytes = new TextEncoder().encode(text);
  const open = () =>
    (async function* () {
      for (let i = 0; i < bytes.length; i += chunk) yield bytes.subarray(i, i + chunk);
    })();
  let summary: ReadSummary | null = null;
  for await (const batch of readDropFile(open, {
    name: 'drop.txt',
    numberRules: makeNumberRules(),
    items: false,
  })) {
    const last = batch.at(-1);
    if (last?.kind === 'summary') summary = last;
  }
  return summary!;
}

/** A text written as people write them: with spaces around it, accents now and then. */
function text(rand: Rand, i: number): string {
  const core = `${pick(rand, ['Hola', 'Buenas', 'Estimado'])} cliente ${i}, ${pick(rand, ['su factura', 'su cita', 'su pedido'])} ${pick(rand, ['ya esta lista', 'es manana', 'llega hoy'])}.`;
  // An accent now and then: the piece of bytes it is in is not ASCII, the others are.
  return i % 1500 === 700 ? `${core} Gracias, señor.` : core;
}

/** Writes `core` as a field again, differently: what the reader reads as the same text. */
function around(rand: Rand, core: string, quotes: boolean): string {
  if (quotes && rand() < 0.2) return `"${core.replaceAll('"', '""')}"`;
  return `${pick(rand, ['', '', ' ', '  ', '\t'])}${core}${pick(rand, ['', '', ' ', '\t '])}`;
}

/**
 * `records` lines of `line(i)`, each also written again, elsewhere, now and then: the
 * copies (the number and text of an earlier record, written differently) are duplicates.
 */
function withCopies(
  rand: Rand,
  records: number,
  line: (i: number, again: boolean) => string,
): { body: string[]; copies: number } {
  const body: string[] = [];
  let copies = 0;
  for (let i = 0; i < records; i++) {
    body.push(line(i, false));
    if (i > 50 && rand() < 0.05) {
      body.push(line(Math.floor(rand() * i), true));
      copies++;
    }
  }
  return { body, copies };
}

function joinLines(rand: Rand, lines: readonly string[]): string {
  const end = pick(rand, ['\n', '\r\n', '\r']);
  return lines.join(end) + end;
}

/** The same file read whole and in pieces of other sizes: the same answer, its copies duplicates. */
async function check(label: string, file: string, copies: number, records: number): Promise<void> {
  const before = byteCheck.checked;
  const whole = await summaryOf(file, 1 << 20);
  expect(whole.duplicates, label).toBe(copies);
  expect(whole.valid, label).toBe(records);
  expect(whole.invalid, label).toBe(0);
  for (const chunk of [65_536, 4093, 977]) {
    const cut = await summaryOf(file, chunk);
    expect([cut.valid, cut.duplicates, cut.segments, cut.encodings], `${label}, pieces of ${chunk}`).toEqual([
      whole.valid,
      whole.duplicates,
      whole.segments,
      whole.encodings,
    ]);
  }
  // Most texts were read from the bytes (and checked against their strings).
  expect(byteCheck.checked - before, label).toBeGreaterThan(records);
}

describe('texts hashed from the bytes, where they are the text, and from the strings elsewhere', () => {
  it('is on in these tests (test/helpers/byte-check.ts)', () => {
    expect(byteCheck.on).toBe(true);
  });

  it('headless personalized files: a copy of a line is a duplicate, whichever piece it is in', async () => {
    const rand = prng(0xb17e);
    for (let run = 0; run < 4; run++) {
      const texts: string[] = [];
      const { body, copies } = withCopies(rand, 4000, (i, again) => {
        if (!again) texts[i] = text(rand, i);
        const message = again ? around(rand, texts[i]!, true) : texts[i]!;
        return `57300${String(1_000_000 + i).slice(1)}0;${message}${rand() < 0.1 ? ';' : ''}`;
      });
      await check(`run ${run}`, joinLines(rand, body), copies, 4000);
    }
  });

  it('headed files with a message column: the same', async () => {
    const rand = prng(0xc01);
    const texts: string[] = [];
    const { body, copies } = withCopies(rand, 4000, (i, again) => {
      if (!again) texts[i] = text(rand, i);
      const message = again ? around(rand, texts[i]!, true) : texts[i]!;
      return `57300${String(1_000_000 + i).slice(1)}0;${message};x`;
    });
    await check('message column', joinLines(rand, ['numero;mensaje;otro', ...body]), copies, 4000);
  });

  it('headed files with a template: a copy of a line is a duplicate, its values written otherwise', async () => {
    const rand = prng(0x7e3);
    const names: string[] = [];
    const { body, copies } = withCopies(rand, 4000, (i, again) => {
      if (!again) names[i] = `${i % 1500 === 700 ? 'José' : pick(rand, ['Ana', 'Luis', 'Marta'])} ${i}`;
      const name = again ? around(rand, names[i]!, true) : names[i]!;
      const month = again ? pick(rand, ['enero', ' enero', 'enero ', '"enero"']) : 'enero';
      return `57300${String(1_000_000 + i).slice(1)}0;${name};${month}`;
    });
    const file = joinLines(rand, [
      '#! message: Hola {{nombre}}, su factura de {{mes}} ya esta lista.',
      'numero;nombre;mes',
      ...body,
    ]);
    await check('template', file, copies, 4000);
  });
});
