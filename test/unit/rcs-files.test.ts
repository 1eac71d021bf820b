// `#! channel: rcs` (or a source's channel rcs) and `#! flash:` as the reader decides them
// (docs/format.md "RCS files" and "Directives"): an RCS file is read exactly as an sms file
// (numbers, messages, templates, layouts, duplicates, suppression), but each recipient is one
// message (segments 1), never UCS2_MESSAGE, never transliterated; LONG_MESSAGE above 500
// characters, the service's recommendation. `#! flash:` is read for sms files only.
// Every read is also fed in 1-byte and 7-byte chunks and must give the very same items and summary.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toText } from '../../src/cli/commands/validate.ts';
import { makeNumberRules } from '../../src/format/numbers.ts';
import { type ReadOptions, type ReadSummary, refuseOtherChannel } from '../../src/format/reader.ts';
import { loadSuppressionList } from '../../src/format/suppression.ts';
import { toJson } from '../../src/format/validate.ts';
import { counts, problems, type Read, read, rejection } from '../helpers/read-drop.ts';

const ROOT = join(import.meta.dirname, '..', '..');

const CO = makeNumberRules();

/** [line, sent number, text] of every recipient. */
const sent = (r: Read) => r.recipients.map((x) => [x.line, x.number, x.text]);

const RCS = { channel: 'rcs' } as const;
const LONG = 'x'.repeat(501);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-rcs-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('RCS files: read as sms files', () => {
  it('`#! channel: rcs` and a source channel rcs read the same file the same way', async () => {
    const body = ['3001234567;Hola Ana', '3109876543;Su pedido salió hoy 📦'];
    const byDirective = await read(['#! channel: rcs', ...body]);
    const bySource = await read(body, RCS);
    expect(byDirective.summary.channel).toBe('rcs');
    expect(bySource.summary.channel).toBe('rcs');
    expect(byDirective.summary.accepted).toBe(true);
    expect(sent(byDirective)).toEqual([
      [2, '573001234567', 'Hola Ana'],
      [3, '573109876543', 'Su pedido salió hoy 📦'],
    ]);
    expect(sent(bySource)).toEqual(sent(byDirective).map(([line, n, t]) => [(line as number) - 1, n, t]));
    expect(bySource.summary.directives.channel).toBeNull();
    expect(byDirective.summary.directives.channel).toEqual({ line: 1, channel: 'rcs' });
    // The other summaries are for sms, email or whatsapp only.
    expect(byDirective.summary.email).toBeNull();
    expect(byDirective.summary.whatsapp).toBeNull();
  });

  it('a file `#! channel: sms` in an rcs source is sms again; `#! channel: RCS` in any case', async () => {
    const back = await read('#! channel: sms\n3001234567;Hola\n', RCS);
    expect(back.summary.channel).toBe('sms');
    const upper = await read('#! channel: RCS\n3001234567;Hola\n');
    expect(upper.summary.channel).toBe('rcs');
  });

  it('gives the same recipients, problems and counts as the sms reading, segments aside', async () => {
    const files = [
      // Personalized, with every kind of problem.
      [
        '3001234567;Hola',
        '3001234567;Hola',
        '3001234567;Hola otra vez',
        '6012345678;Fijo',
        'abc;Nada',
        '3109876543;',
        '3151112233;"Un mensaje; con separador"',
        '3161112233;Acentos: á é í ó ú, ñ',
      ],
      // Headed, with a messageId column and a template.
      [
        '#! message: Hola {{nombre}}, su saldo es {{saldo}}.',
        'Celular;Nombre;Saldo;Mensaje;messageId',
        '3001234567;Ana;$120.000;;a-1',
        '3109876543;Luis;;;a-2',
        '3151112233;Eva;$5;Eva, ya pagó. Gracias.;a-3',
        '3161112233;Eva;$5;;a-3',
        '3001234567;Ana;$120.000;;a-5',
      ],
      // Bulk, several numbers a line, a duplicate, a trailer.
      ['Recordatorio: su cita es mañana.', '3001234567;3109876543', '3001234567', '57 315 111 2233', 'EOF;3'],
    ];
    for (const lines of files) {
      const sms = await read(lines);
      const rcs = await read(lines, RCS);
      expect(rcs.skipped, lines[0]).toEqual(sms.skipped);
      expect(rcs.recipients, lines[0]).toEqual(sms.recipients.map((r) => ({ ...r, segments: 1 })));
      const same = (s: ReadSummary) => {
        const {
          channel: _c,
          segments: _s,
          segmentsByCountry: _b,
          transliteration: _t,
          warnings: _w,
          warningCounts: _wc,
          ...rest
        } = s;
        return rest;
      };
      expect(same(rcs.summary), lines[0]).toEqual(same(sms.summary));
      expect(rcs.summary.segments, lines[0]).toBe(rcs.summary.valid);
    }
  });

  it('each valid recipient is one message: segments 1, the encoding an SMS would need', async () => {
    const r = await read(
      [
        '3001234567;Hola',
        `3109876543;${'a'.repeat(400)}`,
        '3151112233;Ramón, su pedido 📦 salió',
        `3161112233;${'ó'.repeat(300)}`,
        '+5215512345678;Hola México',
      ],
      RCS,
    );
    expect(r.recipients.map((x) => [x.segments, x.encoding])).toEqual([
      [1, 'gsm7'],
      [1, 'gsm7'],
      [1, 'ucs2'],
      [1, 'ucs2'],
      [1, 'gsm7'],
    ]);
    expect(r.summary.segments).toBe(5);
    expect(r.summary.encodings).toEqual({ gsm7: 3, ucs2: 2 });
    expect(r.summary.countries).toEqual({ CO: 4, MX: 1 });
    expect(r.summary.segmentsByCountry).toEqual({ CO: 4, MX: 1 });
    // No UCS2_MESSAGE in an RCS file, whatever the characters.
    expect(r.summary.warningCounts).toEqual({});
    expect(r.warnings).toEqual([]);
  });

  it('LONG_MESSAGE above 500 characters (the service recommends fewer), 500 is none; segments stay 1', async () => {
    const r = await read([`3001234567;${'a'.repeat(500)}`, `3109876543;${'á'.repeat(1200)}`], RCS);
    expect(r.recipients.map((x) => x.segments)).toEqual([1, 1]);
    expect(r.warnings).toEqual([
      {
        kind: 'warning',
        line: 2,
        code: 'LONG_MESSAGE',
        message: 'the message has 1200 characters (over 500, the most the service recommends for RCS)',
      },
    ]);
    expect(r.summary.warnings[0]?.hint).toContain('recommends RCS messages under 500 characters');
    expect(r.summary.warningCounts).toEqual({ LONG_MESSAGE: 1 });
    expect(r.summary.accepted).toBe(true);
  });

  it('a bulk file: one message to every number, its LONG_MESSAGE once, no UCS2_MESSAGE', async () => {
    const r = await read([`Aviso 📢 ${LONG}`, '3001234567;3109876543', '3001234567'], RCS);
    expect(r.summary.layout).toBe('bulk');
    expect(r.summary.message).toBe(`Aviso 📢 ${LONG}`);
    expect(sent(r).map(([line, n]) => [line, n])).toEqual([
      [2, '573001234567'],
      [2, '573109876543'],
    ]);
    expect(problems(r)).toEqual([[3, 'DUPLICATE']]);
    expect(r.recipients.map((x) => [x.segments, x.encoding])).toEqual([
      [1, 'ucs2'],
      [1, 'ucs2'],
    ]);
    expect(r.warnings.map((w) => [w.line, w.code])).toEqual([[1, 'LONG_MESSAGE']]);
    expect(r.summary.segments).toBe(2);
    // A bulk file without its message is rejected as an sms one.
    expect((await read(['3001234567', '3109876543'], RCS)).summary.rejection?.code).toBe('NO_MESSAGE');
  });

  it('templates merge as in sms files; MISSING_FIELD, UNKNOWN_PLACEHOLDER and the examples too', async () => {
    const r = await read(
      [
        '#! channel: rcs',
        '#! message: Hola {{nombre}} 👋, su cita es el {{fecha}}.',
        'Celular;Nombre;Fecha',
        '3001234567;Ana;martes',
        '3109876543;Luis;',
        '3151112233;Eva;jueves',
      ],
      {},
    );
    expect(sent(r)).toEqual([
      [4, '573001234567', 'Hola Ana 👋, su cita es el martes.'],
      [6, '573151112233', 'Hola Eva 👋, su cita es el jueves.'],
    ]);
    expect(problems(r)).toEqual([[5, 'MISSING_FIELD']]);
    expect(r.summary.templates).toEqual([
      {
        line: 4,
        template: 'Hola {{nombre}} 👋, su cita es el {{fecha}}.',
        example: 'Hola Ana 👋, su cita es el martes.',
      },
    ]);
    expect(r.summary.segments).toBe(2);
    expect(r.summary.warningCounts).toEqual({});
    const unknown = await read(['#! message: Hola {{apellido}}', 'Celular;Nombre', '3001234567;Ana'], RCS);
    expect(unknown.summary.rejection?.code).toBe('UNKNOWN_PLACEHOLDER');
  });

  it('transliterate does not apply: the text is sent as written, Ramón and Ramon are two messages', async () => {
    const lines = ['3001234567;Hola Ramón', '3001234567;Hola Ramon', '3109876543;“Oferta” – 50%'];
    const rcs = await read(lines, { ...RCS, transliterate: 'gsm7' });
    expect(sent(rcs)).toEqual([
      [1, '573001234567', 'Hola Ramón'],
      [2, '573001234567', 'Hola Ramon'],
      [3, '573109876543', '“Oferta” – 50%'],
    ]);
    expect(rcs.summary.transliteration).toEqual({
      mode: 'never',
      segmentsAsWritten: 0,
      segmentsTransliterated: 0,
      recipientsChanged: 0,
    });
    // The same file for sms under gsm7: transliterated, one duplicate.
    const sms = await read(lines, { transliterate: 'gsm7' });
    expect(problems(sms)).toEqual([[2, 'DUPLICATE']]);
    expect(sms.summary.transliteration.mode).toBe('gsm7');
  });

  it('control characters are removed (CONTROL_CHARS_REMOVED), as from an sms message', async () => {
    const r = await read('3001234567;"Hola\tAna"\n', RCS);
    expect(sent(r)).toEqual([[1, '573001234567', 'HolaAna']]);
    expect(r.warnings.map((w) => w.code)).toEqual(['CONTROL_CHARS_REMOVED']);
  });

  it('suppression, TOO_MANY_INVALID, EMPTY_FILE and the trailer as in sms files', async () => {
    const path = join(dir, 'optouts.list');
    await writeFile(path, '3109876543\n');
    const suppression = await loadSuppressionList(path, CO);
    const r = await read(['3001234567;Hola', '3109876543;Hola', 'EOF;2'], { ...RCS, suppression });
    expect(problems(r)).toEqual([[2, 'SUPPRESSED']]);
    expect(counts(r.summary)).toEqual({ records: 2, valid: 1, invalid: 0, duplicates: 0, suppressed: 1 });
    expect(r.summary.segments).toBe(1);
    expect(r.summary.trailer).toEqual({ line: 3, count: 2 });
    const invalid = await read(['3001234567;Hola', 'abc;Hola', 'def;Hola'], RCS);
    expect(invalid.summary.rejection?.code).toBe('TOO_MANY_INVALID');
    expect((await read('#! channel: rcs\n', {})).summary.rejection?.code).toBe('EMPTY_FILE');
  });

  it('many UCS-2 texts past maxListed: no UCS2_MESSAGE counted, LONG_MESSAGE counted in full', async () => {
    const lines = Array.from({ length: 30 }, (_, i) => `300${String(1_000_000 + i)};Hola ñandú ${i} ${LONG}`);
    const r = await read(lines, { ...RCS, maxListed: 5 });
    expect(r.summary.warningCounts).toEqual({ LONG_MESSAGE: 30 });
    expect(r.summary.warnings).toHaveLength(5);
    expect(r.summary.warningsTruncated).toBe(true);
    expect(r.summary.segments).toBe(30);
  });

  it('the samples read as RCS give what they give as sms, segments aside', async () => {
    for (const name of (await readdir(join(ROOT, 'samples'))).filter(
      (n) => n.endsWith('.txt') && n !== 'email.txt' && n !== 'whatsapp.txt',
    )) {
      const text = await readFile(join(ROOT, 'samples', name), 'utf8');
      const sms = await read(text, { name });
      const rcs = await read(text, { name, ...RCS });
      expect(problems(rcs), name).toEqual(problems(sms));
      expect(sent(rcs), name).toEqual(sent(sms));
      expect(counts(rcs.summary), name).toEqual(counts(sms.summary));
      expect(rcs.summary.rejection, name).toEqual(sms.summary.rejection);
      expect(rcs.summary.segments, name).toBe(rcs.summary.valid);
    }
  });
});

describe('refuseOtherChannel with RCS', () => {
  it('an rcs file in an sms source, and an sms file in an rcs source, are BAD_DIRECTIVE', async () => {
    const rcsFile = (await read('#! channel: rcs\n3001234567;Hola\n')).summary;
    refuseOtherChannel(rcsFile, 'sms');
    expect(rcsFile.rejection?.message).toBe(
      'line 1: this source sends sms, not rcs: drop the file in a source whose account sends rcs',
    );
    const smsFile = (await read('#! channel: sms\n3001234567;Hola\n', RCS)).summary;
    refuseOtherChannel(smsFile, 'rcs');
    expect(smsFile.rejection?.code).toBe('BAD_DIRECTIVE');
    const own = (await read('3001234567;Hola\n', RCS)).summary;
    refuseOtherChannel(own, 'rcs');
    expect(own.accepted).toBe(true);
  });
});

describe('`#! flash:`', () => {
  it('true or false in any case, exposed with its line; absent: null', async () => {
    const on = await read('# campaña\n#! Flash:  TRUE \n3001234567;Hola\n');
    expect(on.summary.accepted).toBe(true);
    expect(on.summary.directives.flash).toEqual({ line: 2, flash: true });
    expect(sent(on)).toEqual([[3, '573001234567', 'Hola']]);
    const off = await read('#! flash: false;;\nHola a todos\n3001234567\n');
    expect(off.summary.accepted).toBe(true);
    expect(off.summary.directives.flash).toEqual({ line: 1, flash: false });
    expect((await read('3001234567;Hola\n')).summary.directives.flash).toBeNull();
    // In an sms source's file without `#! channel:`, and in one that says sms.
    const said = await read('#! channel: sms\n#! flash: true\n3001234567;Hola\n', { channel: 'sms' });
    expect(said.summary.directives.flash).toEqual({ line: 2, flash: true });
  });

  it('anything but true or false, twice, or forbidden by the source: BAD_DIRECTIVE with the line', async () => {
    for (const value of ['yes', '1', '', 'verdadero']) {
      const r = await read(`#! flash: ${value}\n3001234567;Hola\n`);
      expect(rejection(r), value).toEqual([
        'BAD_DIRECTIVE',
        `line 1: flash must be true or false, not \`${value}\``,
      ]);
      expect(r.summary.records).toBe(1);
    }
    expect(rejection(await read('#! flash: true\n#! flash: false\n3001234567;Hola\n'))).toEqual([
      'BAD_DIRECTIVE',
      'line 2: `flash` is given twice',
    ]);
    expect(
      rejection(await read('#! flash: true\n3001234567;Hola\n', { allowDirectives: ['priority'] })),
    ).toEqual(['BAD_DIRECTIVE', 'line 1: this source does not allow the `flash` directive']);
    expect(
      (await read('#! flash: true\n3001234567;Hola\n', { allowDirectives: ['flash'] })).summary.accepted,
    ).toBe(true);
  });

  it('in an rcs, email or whatsapp file (by directive or source), true or false: BAD_DIRECTIVE naming the channel', async () => {
    const cases: [string, Partial<ReadOptions>, string][] = [
      [
        '#! channel: rcs\n#! flash: true\n3001234567;Hola\n',
        {},
        'line 2: `#! flash:` is for sms files (`#! channel: sms`); this file is for rcs',
      ],
      [
        '#! flash: false\n3001234567;Hola\n',
        RCS,
        'line 1: `#! flash:` is for sms files (`#! channel: sms`); this file is for rcs',
      ],
      [
        '#! channel: email\n#! flash: true\n#! templateId: t1\nfoo@example.com\n',
        {},
        'line 2: `#! flash:` is for sms files (`#! channel: sms`); this file is for email',
      ],
      [
        '#! flash: false\n3001234567\n',
        { channel: 'whatsapp', whatsapp: { templateId: 'factura' } },
        'line 1: `#! flash:` is for sms files (`#! channel: sms`); this file is for whatsapp',
      ],
    ];
    for (const [text, options, message] of cases) {
      const r = await read(text, options);
      expect(rejection(r), text).toEqual(['BAD_DIRECTIVE', message]);
      expect(r.summary.directives.flash, text).not.toBeNull();
    }
  });
});

describe('validate shows channel rcs and flash', () => {
  it('text: `channel rcs` with its messages, no segments or transliteration; `flash`', async () => {
    const r = await read(['#! channel: rcs', '3001234567;Hola 😀', `3109876543;${LONG}`]);
    const text = toText('rcs.txt', r.summary);
    expect(text).toContain(
      '  channel rcs: 2 message(s), one a recipient (no segments; sent as written); countries CO 2\n',
    );
    expect(text).not.toContain('segments 2');
    expect(text).not.toContain('transliteration');
    expect(text).toContain('LONG_MESSAGE the message has 501 characters');
    expect(text).not.toContain('UCS2_MESSAGE');
    expect(text).not.toContain('flash');
    const flash = await read('#! flash: true\n3001234567;Hola\n');
    expect(toText('flash.txt', flash.summary)).toContain('  flash true (#! flash:)\n');
    const off = await read('#! flash: false\n3001234567;Hola\n');
    expect(toText('off.txt', off.summary)).toContain('  flash false (#! flash:)\n');
    expect(toText('none.txt', (await read('3001234567;Hola\n')).summary)).not.toContain('flash');
  });

  it('JSON: channel rcs, segments, and directives.flash', async () => {
    const json = toJson('f.txt', (await read('#! flash: true\n3001234567;Hola\n')).summary);
    expect(json.channel).toBe('sms');
    expect((json.directives as ReadSummary['directives']).flash).toEqual({ line: 1, flash: true });
    const rcs = toJson('r.txt', (await read('3001234567;Hola ñandú\n', RCS)).summary);
    expect(rcs).toMatchObject({ channel: 'rcs', segments: 1, encodings: { gsm7: 0, ucs2: 1 } });
    expect((rcs.directives as ReadSummary['directives']).flash).toBeNull();
  });
});
