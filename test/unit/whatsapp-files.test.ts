// `whatsapp` files as the reader decides them (docs/format.md "WhatsApp files"): numbers
// as SMS numbers, each recipient's text its template parameters as a JSON array, from the
// header's numbered columns, a `#! message:` mapping, or the fields after a headless number.
// Every read is also fed in 1-byte and 7-byte chunks and must give the very same items and summary.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeNumberRules } from '../../src/format/numbers.ts';
import { loadSuppressionList } from '../../src/format/suppression.ts';
import { counts, problems, type Read, read, rejection } from '../helpers/read-drop.ts';

const CO = makeNumberRules();

/** [line, sent number, parameters] of every recipient. */
const sent = (r: Read) => r.recipients.map((x) => [x.line, x.number, JSON.parse(x.text) as string[]]);

const WA = { channel: 'whatsapp', whatsapp: { templateId: 'factura' } } as const;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-whatsapp-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a headed WhatsApp file: the columns named 1, 2, … n are the parameters, in that order', () => {
  it('numbers as SMS numbers, other columns no parameters, duplicates by number and parameters', async () => {
    const r = await read(
      [
        '#! channel: whatsapp',
        '#! templateId: factura',
        'Celular;2;Nombre;1;id',
        '3001234567;$120.000;x;Ana;f-1',
        '+57 310 987 6543;"$80.000; en dos cuotas";x;Luis;',
        '3001234567;$120.000;y;Ana;',
        '3001234567;$99.000;x;Ana;',
        '6012345678;$1;x;Fijo;',
        '12;$1;x;Pia;',
        '3151112233;;x;Sin saldo;',
        '5215512345678;MX$10;x;Juan;',
      ],
      { maxInvalidRatio: 1 },
    );
    expect(r.summary).toMatchObject({
      channel: 'whatsapp',
      layout: 'personalized',
      header: true,
      accepted: true,
    });
    expect(r.summary.whatsapp).toEqual({ templateId: 'factura', source: null });
    expect(sent(r)).toEqual([
      [4, '573001234567', ['Ana', '$120.000']],
      // A quoted parameter is kept exactly, the separator in it included.
      [5, '573109876543', ['Luis', '$80.000; en dos cuotas']],
      // The same number with other parameters is another message, as an SMS with another text.
      [7, '573001234567', ['Ana', '$99.000']],
      [11, '5215512345678', ['Juan', 'MX$10']],
    ]);
    expect(r.recipients[0]).toMatchObject({ messageId: 'f-1', country: 'CO', k: 0, segments: 0 });
    expect(problems(r)).toEqual([
      [6, 'DUPLICATE'],
      [8, 'NOT_MOBILE'],
      [9, 'INVALID_NUMBER'],
      [10, 'MISSING_FIELD'],
    ]);
    expect(r.skipped.find((s) => s.code === 'DUPLICATE')?.firstLine).toBe(4);
    expect(r.skipped.find((s) => s.code === 'MISSING_FIELD')?.message).toBe(
      'parameter 2 has no value on this line (column 2)',
    );
    expect(counts(r.summary)).toEqual({ records: 8, valid: 4, invalid: 3, duplicates: 1, suppressed: 0 });
    // Countries are counted; segments and encodings are not (a WhatsApp template is no SMS).
    expect(r.summary.countries).toEqual({ CO: 3, MX: 1 });
    expect(r.summary.segments).toBe(0);
    expect(r.summary.encodings).toEqual({ gsm7: 0, ucs2: 0 });
    // One example for validate: how the parameters are read, and the first line's.
    expect(r.summary.templates).toEqual([
      { line: 4, template: '{{1}} | {{2}}', example: '["Ana","$120.000"]' },
    ]);
  });

  it('no UCS-2 or long-message warnings, no control-character removal: parameters go as written', async () => {
    const long = 'á'.repeat(600);
    const r = await read(['numero;1', `3001234567;Ramón ${long}`], WA);
    expect(r.summary.accepted).toBe(true);
    expect(sent(r)).toEqual([[2, '573001234567', [`Ramón ${long}`]]]);
    expect(r.warnings).toEqual([]);
    expect(r.summary.warnings).toEqual([]);
    // gsm7 transliteration is for SMS: the WhatsApp parameter keeps its accents.
    const gsm7 = await read(['numero;1', '3001234567;Ramón'], { ...WA, transliterate: 'gsm7' });
    expect(sent(gsm7)).toEqual([[2, '573001234567', ['Ramón']]]);
  });

  it('a header without numbered columns: every recipient is sent the template without parameters', async () => {
    const r = await read(['numero;nombre', '3001234567;Ana', '3109876543;Luis'], WA);
    expect(r.summary.accepted).toBe(true);
    expect(sent(r)).toEqual([
      [2, '573001234567', []],
      [3, '573109876543', []],
    ]);
  });

  it('a numbered column missing (2 but no 1), 0, or one number twice: UNKNOWN_PLACEHOLDER with the header line', async () => {
    const gap = await read(['#! templateId: t', 'numero;2;3', '3001234567;a;b'], { channel: 'whatsapp' });
    expect(rejection(gap)).toEqual([
      'UNKNOWN_PLACEHOLDER',
      "line 2: the template's parameter {{1}} has no column `1` (the numbered columns go up to 3: they must be 1 to n without a gap)",
    ]);
    expect(gap.summary.rejection?.hint).toContain('1, 2, … n without a gap');
    const zero = await read(['numero;0;1', '3001234567;a;b'], WA);
    expect(rejection(zero)).toEqual([
      'UNKNOWN_PLACEHOLDER',
      'line 1: column 2 `0`: parameters are numbered from 1',
    ]);
    const twice = await read(['numero;1;2; 1 ', '3001234567;a;b;c'], WA);
    expect(rejection(twice)).toEqual([
      'UNKNOWN_PLACEHOLDER',
      'line 1: columns 2 and 4 both name parameter 1 (`1`, `1`)',
    ]);
    // The rest of the file is still read, so validate shows every other problem at once.
    expect(twice.summary.records).toBe(1);
  });

  it('a message column is refused (BAD_DIRECTIVE naming it): a WhatsApp file never sends a text', async () => {
    const r = await read([
      '#! channel: whatsapp',
      '#! templateId: t',
      'numero;Mensaje;1',
      '3001234567;Hola;Ana',
    ]);
    expect(rejection(r)).toEqual([
      'BAD_DIRECTIVE',
      'line 3: column 2 `Mensaje` is a message text, which a WhatsApp file never sends (`#! channel: whatsapp` on line 1): it sends an approved template and its parameters',
    ]);
    expect(r.summary.rejection?.hint).toContain('#! message: {{nombre}} | {{saldo}}');
    // Read for a WhatsApp source, without the directive: the same refusal, naming the source.
    const bySource = await read(['numero;texto', '3001234567;Hola'], WA);
    expect(bySource.summary.rejection?.message).toBe(
      'line 1: column 2 `texto` is a message text, which a WhatsApp file never sends (its source sends whatsapp): it sends an approved template and its parameters',
    );
    // Mapped by `#! message:`, the column is a parameter like any other.
    const mapped = await read(['#! message: {{mensaje}}', 'numero;mensaje', '3001234567;Hola Ana'], WA);
    expect(mapped.summary.accepted).toBe(true);
    expect(sent(mapped)).toEqual([[3, '573001234567', ['Hola Ana']]]);
  });

  it('suppression lists apply as for SMS', async () => {
    const path = join(dir, 'optout.txt');
    await writeFile(path, '3109876543\n');
    const suppression = await loadSuppressionList(path, CO);
    const r = await read(['numero;1', '3001234567;Ana', '3109876543;Luis'], { ...WA, suppression });
    expect(sent(r)).toEqual([[2, '573001234567', ['Ana']]]);
    expect(problems(r)).toEqual([[3, 'SUPPRESSED']]);
    expect(r.summary.suppressed).toBe(1);
  });
});

describe('`#! message:` maps named columns to the parameters', () => {
  it('parameters separated by |, each trimmed and merged per line; || is a literal |; numbered columns unused', async () => {
    const r = await read(
      [
        '#! channel: whatsapp',
        '#! templateId: saldo',
        '#! message: {{Nómbre}} | {{saldo}} COP || contado | Use {{{{codigo}}',
        'numero;nombre;saldo;1',
        '3001234567;Ana;120.000;no es parámetro',
        '3109876543;"Luis | el de Cali";80.000;',
        '3151112233;Pía;;',
      ],
      { maxInvalidRatio: 1 },
    );
    expect(r.summary.accepted).toBe(true);
    expect(sent(r)).toEqual([
      [5, '573001234567', ['Ana', '120.000 COP | contado', 'Use {{codigo}}']],
      [6, '573109876543', ['Luis | el de Cali', '80.000 COP | contado', 'Use {{codigo}}']],
    ]);
    expect(problems(r)).toEqual([[7, 'MISSING_FIELD']]);
    expect(r.skipped[0]?.message).toBe(
      'parameter 2 uses {{saldo}} but this line has no value in column saldo',
    );
    expect(r.summary.templates).toEqual([
      {
        line: 5,
        template: '{{Nómbre}} | {{saldo}} COP || contado | Use {{{{codigo}}',
        example: '["Ana","120.000 COP | contado","Use {{codigo}}"]',
      },
    ]);
  });

  it('a placeholder naming no column: UNKNOWN_PLACEHOLDER; an empty parameter: BAD_DIRECTIVE', async () => {
    const unknown = await read(
      ['#! message: {{nombre}} | {{apellido}}', 'numero;nombre', '3001234567;Ana'],
      WA,
    );
    expect(rejection(unknown)).toEqual([
      'UNKNOWN_PLACEHOLDER',
      'line 1: parameter 2: {{apellido}} names no column of the header (columns: numero, nombre)',
    ]);
    const empty = await read(['#! message: {{nombre}} | | x', 'numero;nombre', '3001234567;Ana'], WA);
    expect(rejection(empty)).toEqual([
      'BAD_DIRECTIVE',
      'line 1: parameter 2 of `#! message:` is empty (parameters are separated by |; a literal | is written ||)',
    ]);
  });
});

describe('a WhatsApp list of numbers (no message record): the same parameters for everyone', () => {
  it('numbers only, several a line: parameters from `#! message:` constants, or none', async () => {
    const r = await read(
      ['#! message: Black Friday | 30%', '3001234567', '3109876543; 315 111 2233', '3001234567'],
      {
        ...WA,
        maxInvalidRatio: 1,
      },
    );
    expect(r.summary).toMatchObject({ layout: 'bulk', header: false, message: null, accepted: true });
    expect(r.recipients.map((x) => [x.line, x.k, x.number, x.text])).toEqual([
      [2, 1, '573001234567', '["Black Friday","30%"]'],
      [3, 1, '573109876543', '["Black Friday","30%"]'],
      [3, 2, '573151112233', '["Black Friday","30%"]'],
    ]);
    expect(problems(r)).toEqual([[4, 'DUPLICATE']]);
    const none = await read(['3001234567;3109876543'], WA);
    expect(none.summary.layout).toBe('bulk');
    expect(sent(none)).toEqual([
      [1, '573001234567', []],
      [1, '573109876543', []],
    ]);
    expect(none.summary.templates).toEqual([{ line: 1, template: '', example: '[]' }]);
  });

  it('a placeholder has no column to name: UNKNOWN_PLACEHOLDER; a line of text is no message, but an invalid number', async () => {
    const placeholder = await read(['#! message: Hola {{nombre}}', '3001234567'], WA);
    expect(placeholder.summary.rejection?.code).toBe('UNKNOWN_PLACEHOLDER');
    expect(placeholder.summary.rejection?.message).toMatch(
      /^line 1: parameter 1: \{\{nombre\}\} names no column/,
    );
    const text = await read(['Hola a todos', '3001234567', '3109876543'], { ...WA, maxInvalidRatio: 1 });
    expect(problems(text)).toEqual([[1, 'INVALID_NUMBER']]);
    expect(sent(text)).toEqual([
      [2, '573001234567', []],
      [3, '573109876543', []],
    ]);
  });
});

describe('a headless WhatsApp file: the fields after the number are the parameters', () => {
  it('in order; the first line sets how many; more is TOO_MANY_FIELDS, fewer MISSING_FIELD', async () => {
    const r = await read(
      [
        '3001234567;Ana;"$120.000; contado"',
        '3109876543;Luis;$80.000;',
        '3151112233;Pía',
        '3201234567;Juan;$1;extra',
        '3001234567;Ana;"$120.000; contado"',
      ],
      { ...WA, maxInvalidRatio: 1 },
    );
    expect(r.summary).toMatchObject({ layout: 'personalized', header: false, separator: ';' });
    expect(sent(r)).toEqual([
      [1, '573001234567', ['Ana', '$120.000; contado']],
      // One trailing separator is dropped as from an SMS message (docs/format.md "Personalized layout").
      [2, '573109876543', ['Luis', '$80.000']],
    ]);
    expect(problems(r)).toEqual([
      [3, 'MISSING_FIELD'],
      [4, 'TOO_MANY_FIELDS'],
      [5, 'DUPLICATE'],
    ]);
    expect(r.skipped.map((s) => s.message).slice(0, 2)).toEqual([
      'parameter 2 (field 3) has no value on this line',
      'the line has 3 parameters after the number, the first line 2 (quote a parameter that holds the separator)',
    ]);
    expect(r.summary.templates[0]).toEqual({
      line: 1,
      template: 'fields 2 to 3 of each line',
      example: '["Ana","$120.000; contado"]',
    });
  });

  it('a first line of numbers only is a list, unless the name or the layout says personalized', async () => {
    const list = await read(['3001234567;3109876543'], WA);
    expect(sent(list)).toEqual([
      [1, '573001234567', []],
      [1, '573109876543', []],
    ]);
    const named = await read(['3001234567;3109876543'], { ...WA, name: 'llamar.personalized.txt' });
    expect(named.summary.layout).toBe('personalized');
    expect(sent(named)).toEqual([[1, '573001234567', ['3109876543']]]);
  });

  it('`#! message:` has no columns to map here: BAD_DIRECTIVE', async () => {
    const r = await read(['#! message: {{nombre}}', '3001234567;Ana'], WA);
    expect(r.summary.rejection?.code).toBe('BAD_DIRECTIVE');
    expect(r.summary.rejection?.message).toMatch(
      /^line 1: `#! message:` maps the columns of a WhatsApp file with a header line/,
    );
  });
});

describe('the template and the sending number: the file directives win over the source', () => {
  const file = ['numero;1', '3001234567;Ana'];

  it('`#! templateId:` and `#! source:` over the source; a leading + dropped; null: the account’s own', async () => {
    const options = {
      channel: 'whatsapp',
      whatsapp: { templateId: 'cfg', source: '+573009998877' },
    } as const;
    expect((await read(file, options)).summary.whatsapp).toEqual({
      templateId: 'cfg',
      source: '573009998877',
    });
    const fromFile = await read(['#! templateId: promo', '#! source: +573001112233', ...file], options);
    expect(fromFile.summary.whatsapp).toEqual({ templateId: 'promo', source: '573001112233' });
    expect(fromFile.summary.directives.source).toEqual({ line: 2, number: '573001112233' });
    const own = await read(['#! channel: whatsapp', '#! templateId: promo', ...file]);
    expect(own.summary.whatsapp).toEqual({ templateId: 'promo', source: null });
    expect(own.summary.accepted).toBe(true);
  });

  it('no template anywhere: NO_MESSAGE with a WhatsApp hint; nothing is sent', async () => {
    const r = await read(['#! channel: whatsapp', '#! source: 573001112233', ...file]);
    expect(r.summary.accepted).toBe(false);
    expect(rejection(r)).toEqual([
      'NO_MESSAGE',
      "a WhatsApp file needs a template: `#! templateId:` or its source's `whatsapp.templateId`",
    ]);
    expect(r.summary.rejection?.hint).toContain('#! templateId: <id>');
    expect(r.summary.whatsapp).toBeNull();
  });

  it('`#! source:` must be 8 to 15 digits; it and `#! subject:` are refused where they do not apply', async () => {
    for (const bad of ['1234567', '1234567890123456', '57 300 111 2233', 'abc', '++573001112233']) {
      const r = await read([`#! source: ${bad}`, ...file], WA);
      expect(r.summary.rejection?.code, bad).toBe('BAD_DIRECTIVE');
      expect(r.summary.rejection?.message, bad).toMatch(
        /^line 1: source is the WhatsApp sending number, 8 to 15 digits/,
      );
    }
    const email = await read([
      '#! channel: email',
      '#! templateId: t',
      '#! source: 573001112233',
      'ana@example.com',
    ]);
    expect(rejection(email)).toEqual([
      'BAD_DIRECTIVE',
      'line 3: `#! source:` is for whatsapp files (`#! channel: whatsapp`); this file is for email',
    ]);
    const sms = await read(['#! templateId: t', '3001234567;Hola']);
    expect(rejection(sms)).toEqual([
      'BAD_DIRECTIVE',
      'line 1: `#! templateId:` is for email and whatsapp files (`#! channel: email` or `#! channel: whatsapp`); this file is for sms',
    ]);
    const subject = await read(['#! subject: Hola', ...file], WA);
    expect(rejection(subject)).toEqual([
      'BAD_DIRECTIVE',
      'line 1: `#! subject:` is for email files (`#! channel: email`); this file is for whatsapp',
    ]);
    // A WhatsApp source's file that says `#! channel: sms` is an SMS file again.
    const back = await read(['#! channel: sms', '3001234567;Hola'], WA);
    expect(back.summary.channel).toBe('sms');
    expect(back.summary.whatsapp).toBeNull();
    expect(back.recipients.map((x) => x.text)).toEqual(['Hola']);
  });
});
