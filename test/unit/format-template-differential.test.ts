// The reader's template fast path (prepareMerged: hashJoined, countJoined, one message shared
// by the records of a template in items:false mode) against the general path: each random
// headed file whose messages come from a template (`#! message:` or a message column with
// placeholders) is read next to its "pre-merged" twin, where every line carries the merged
// text as a plain message. Both must say the same of every record, except what only a
// template has (summary.templates, directives.message, the columns).
import { describe, expect, it } from 'vitest';
import { makeNumberRules, type NumberRules } from '../../src/format/numbers.ts';
import { type ReadItem, type ReadOptions, type ReadSummary, readDropFile } from '../../src/format/reader.ts';
import { readSuppressionList, type SuppressionList } from '../../src/format/suppression.ts';
import { transliterate } from '../../src/format/transliterate.ts';
import { prng } from '../helpers/prng.ts';

type Rand = () => number;
const pick = <T>(rand: Rand, list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;

// ---- Writing the two files ----

/** A CSV field as the reader parses it: its value, and whether it was written in quotes. */
interface Field {
  value: string;
  quoted: boolean;
}

const csvQuote = (s: string) => `"${s.replaceAll('"', '""')}"`;
const needsQuotes = (s: string) => /[;\n\r]/.test(s) || s.startsWith('"');
const write = (f: Field) => (f.quoted ? csvQuote(f.value) : f.value);

/** A text as a message that merges to itself: each `{{` written `{{{{` (docs/format.md). */
function literalText(t: string): string {
  let out = '';
  for (let i = 0; i < t.length; i++) {
    if (t[i] === '{' && t[i + 1] === '{') {
      out += '{{{{';
      i++;
    } else out += t[i];
  }
  return out;
}

/** What the reader inserts for a value (templateValues): quoted exactly, else trimmed. */
const inserted = (f: Field) => (f.quoted ? f.value : f.value.trim());

/** A field for `value`: quoted when it must be, else quoted or not at random. */
function field(rand: Rand, value: string): Field {
  return { value, quoted: needsQuotes(value) || rand() < 0.3 };
}

const CONTROL_ALL = /[\x00-\x09\x0b-\x1f]/g;

/**
 * Whether a text the template reads unquoted (trimmed) may be written quoted (kept exactly)
 * in the pre-merged file with the same result: when trimming changes nothing at any step
 * of the message's preparation (as written, without control characters, transliterated).
 */
function trimNeutral(m: string): boolean {
  const noControl = m.replace(CONTROL_ALL, '');
  const translit = transliterate(noControl);
  return m.trim() === m && noControl.trim() === noControl && translit.trim() === translit;
}

// Values: plain ASCII, accents, GSM-7 extension characters, emoji, control characters,
// white space at the ends, look-alikes gsm7 replaces, characters it cannot, `{{`, quotes.
const VALUES = [
  'Ana',
  'Juan Carlos',
  'enero',
  'MARZO',
  '15/07',
  '$120.000',
  'Ramón',
  'Sofía',
  'Núñez',
  'José',
  'Ñandú',
  'Müller',
  'Peña',
  '€100',
  '[VIP]',
  'a|b',
  '~x^',
  '{x}',
  '{{x}}',
  '{{{{',
  '}}',
  '😀',
  'Ana 👍🏽',
  'Ana\tMaría',
  'x\u0001y',
  '\u0007',
  'fin\u000b',
  '  Ana  ',
  ' Luis',
  'Pedro ',
  '\u00a0Ana',
  'Ana\u00a0',
  'A\u200bna',
  '\u200b',
  '\u00ad',
  '“hola”',
  'œuvre',
  '…',
  '½',
  'ˆ',
  '¦',
  'e\u0301',
  'Jose\u0301',
  'Привет',
  '中文',
  'línea1\nlínea2',
  'a;b',
  'Dice "hola"',
  '"citado"',
  '#tag',
  'EOF',
  '\u0001',
  '  \u0002  ',
  '\u2028',
  'ç',
  '\u3000Ana',
];

const ATOMS = [...'abcdefghij ABC0123.,', ...'ñéáúí€{[~|😀“…\t\u0001\u00a0'];

function value(rand: Rand, lineBreaks: boolean): string {
  for (;;) {
    const r = rand();
    let v: string;
    if (r < 0.45) v = pick(rand, VALUES);
    else if (r < 0.7) {
      v = '';
      const n = 1 + Math.floor(rand() * 12);
      for (let i = 0; i < n; i++) v += pick(rand, ATOMS);
    } else if (r < 0.85) {
      // a filler of some length: merged texts on both sides of 70, 160, 306, 500…
      v = pick(rand, ['x', 'ñ', 'á', '€', 'ab ']).repeat(1 + Math.floor(rand() * (rand() < 0.3 ? 320 : 90)));
    } else v = 'Ana';
    if (!lineBreaks && /[\n\r]/.test(v)) continue;
    return v;
  }
}

const LITERALS = [
  '',
  '',
  'Hola ',
  ', su pago de ',
  ' vence en ',
  '.',
  ' ',
  'Señor ',
  'Atención: ',
  '€ ',
  'ú',
  '😀 ',
  'x'.repeat(150),
  'a'.repeat(60),
  'z'.repeat(230),
  '{{{{codigo}}',
  '…',
  '“',
  ' ¡Gracias!',
  'ñandú ',
  '[ok] ',
  'Ramón ',
  'ˆ',
  '\u0007',
  'Привет ',
  '中文 ',
  'e\u0301',
  '½ ',
  '\u00a0',
  '\u200b',
  '  ',
  '"cita" ',
  "'",
  ' SALIR al 123',
  '\t',
  ';',
  '#',
];

function literal(rand: Rand): string {
  let s = '';
  const n = Math.floor(rand() * 4);
  for (let i = 0; i < n; i++) s += pick(rand, LITERALS);
  return s;
}

interface Template {
  /** The template as written (placeholders and `{{{{`). */
  source: string;
  /** Its literal parts, as merged (`{{{{` read as `{{`). */
  literals: [string, string, string];
  /** Which value each placeholder takes: 0 Nombre, 1 mes. */
  order: [number, number];
}

function template(rand: Rand, lineBreaks: boolean): Template {
  const literals: [string, string, string] = [literal(rand), literal(rand), literal(rand)];
  if (lineBreaks && rand() < 0.2) literals[1] += '\nPD: ';
  const order: [number, number] = rand() < 0.7 ? [0, 1] : [1, 0];
  const name = [
    pick(rand, ['{{Nombre}}', '{{ nombre }}', '{{NOMBRE}}']),
    pick(rand, ['{{mes}}', '{{ Mes }}']),
  ];
  // A literal ending in `{` would run into the placeholder's `{{`: not a template of this test.
  for (const [i, l] of literals.entries()) if (l.endsWith('{')) literals[i] = `${l} `;
  const source =
    literalText(literals[0]) +
    name[order[0]]! +
    literalText(literals[1]) +
    name[order[1]]! +
    literalText(literals[2]);
  return { source, literals, order };
}

/** `#! message: …`, quoted when the line would otherwise lose something (docs/format.md). */
function directive(rand: Rand, t: Template): string {
  const s = t.source;
  const quote = s.trim() !== s || /[;,|\t]$/.test(s) || s.startsWith('"') || rand() < 0.2;
  return `#! message: ${quote ? csvQuote(s) : s}`;
}

const MOBILES = [
  '3001234567',
  '3109876543',
  '3151112233',
  '3204445566',
  '3005551234',
  '3012223344',
  '3175550000',
  '3159990001',
  '3112345678',
  '3223334444',
];
const NUMBER_FORMS = [
  (m: string) => m,
  (m: string) => `57${m}`,
  (m: string) => `+57 ${m.slice(0, 3)} ${m.slice(3)}`,
  (m: string) => `${m.slice(0, 3)} ${m.slice(3, 6)} ${m.slice(6)}`,
];
const OTHER_NUMBERS = [
  '+52 1 55 1234 5678',
  '5215512345678',
  '+44 7400 123456',
  '+1 212 555 0100',
  '12',
  'abc',
  '6012345678',
  '576012345678',
  '',
];

interface Case {
  name: string;
  template: string;
  premerged: string;
  /** Numbers (any form) to put on a suppression list. */
  suppress: string[];
}

/**
 * A random headed personalized file and its pre-merged twin. mode 'directive': `#! message:`
 * (the message column absent, or present and empty on the lines that take the template);
 * 'column': each line's message column holds one of a few templates. Some lines carry a
 * message of their own (no placeholders): the same in both files.
 */
function drawCase(rand: Rand, run: number): Case {
  const mode = rand() < 0.5 ? 'directive' : 'column';
  const withColumn = mode === 'column' || rand() < 0.5;
  const templates = Array.from({ length: mode === 'column' ? 1 + Math.floor(rand() * 3) : 1 }, () =>
    template(rand, mode === 'column'),
  );
  const columnQuoted = templates.map((t) => needsQuotes(t.source) || rand() < 0.4);
  const head = mode === 'directive' ? directive(rand, templates[0]!) : '# plantillas por línea';
  const header = withColumn ? 'numero;Nombre;mes;mensaje' : 'numero;Nombre;mes';
  const tLines = [head, header];
  const pLines = ['# pre-merged', 'numero;mensaje'];

  /** Values used by earlier lines: repeated to make identical merged texts and duplicates. */
  const earlier: { number: string; values: [Field, Field]; t: number; message: string }[] = [];
  const common: [Field, Field] = [field(rand, value(rand, false)), field(rand, value(rand, false))];
  const rows = 5 + Math.floor(rand() * 40);
  for (let row = 0; row < rows; row++) {
    let number: string;
    const r = rand();
    if (r < 0.12 && earlier.length > 0) number = pick(rand, earlier).number;
    else if (r < 0.8) number = pick(rand, NUMBER_FORMS)(pick(rand, MOBILES));
    else number = pick(rand, OTHER_NUMBERS);

    if (withColumn && rand() < 0.15) {
      // A line with its own message: the values are not used (and may be blank).
      const blank = rand() < 0.3;
      const v = blank ? ['', '  '] : [value(rand, false), value(rand, false)];
      const values = v.map((x) => write(field(rand, x))).join(';');
      if (earlier.length > 0 && rand() < 0.5) {
        // The text an earlier line's template made, written out, to the same number: a
        // duplicate only if the merged text hashes as the written one does.
        const e = pick(rand, earlier);
        tLines.push(`${e.number};${values};${e.message}`);
        pLines.push(`${e.number};${e.message}`);
        continue;
      }
      const own = field(rand, literalText(value(rand, true)));
      if (own.value.trim() === '') continue;
      tLines.push(`${number};${values};${write(own)}`);
      pLines.push(`${number};${write(own)}`);
      continue;
    }

    for (let attempt = 0; ; attempt++) {
      const k = Math.floor(rand() * templates.length);
      const t = templates[k]!;
      let values: [Field, Field];
      const s = rand();
      if (s < 0.15 && earlier.length > 0) {
        const e = pick(rand, earlier);
        values = e.values;
        if (rand() < 0.5) number = e.number; // the same number and text: a duplicate
      } else if (s < 0.4) values = common;
      else {
        const lineBreaks = rand() < 0.2;
        values = [field(rand, value(rand, lineBreaks)), field(rand, value(rand, lineBreaks))];
      }
      // Never blank: a blank value is MISSING_FIELD, which the pre-merged file cannot say.
      if (values.some((f) => f.value.trim() === '')) continue;
      const merged =
        t.literals[0] +
        inserted(values[t.order[0]]!) +
        t.literals[1] +
        inserted(values[t.order[1]]!) +
        t.literals[2];
      const quoted = mode === 'column' && columnQuoted[k]!;
      const text = literalText(merged);
      let message: string;
      if (quoted) message = csvQuote(text);
      else if (!needsQuotes(text)) message = text;
      else if (trimNeutral(merged)) message = csvQuote(text);
      else if (attempt < 20) continue;
      else break; // no twin for this line: leave it out of both files
      const written = `${number};${write(values[0])};${write(values[1])}`;
      let tail = '';
      if (mode === 'column') tail = `;${quoted ? csvQuote(t.source) : t.source}`;
      else if (withColumn) tail = pick(rand, [';', ';   ', '', ';""']);
      tLines.push(written + tail);
      pLines.push(`${number};${message}`);
      earlier.push({ number, values, t: k, message });
      break;
    }
  }
  const end = pick(rand, ['\n', '\r\n']);
  const suppress = [...MOBILES.filter(() => rand() < 0.3), '+52 1 55 1234 5678'];
  return {
    name: `run ${run} (${mode})`,
    template: tLines.join(end) + end,
    premerged: pLines.join(end) + end,
    suppress,
  };
}

// ---- Reading and comparing ----

async function readAll(
  text: string,
  options: Partial<ReadOptions>,
  chunk: number,
): Promise<{ items: ReadItem[]; summary: ReadSummary }> {
  const bytes = new TextEncoder().encode(text);
  const open = () =>
    (async function* () {
      for (let i = 0; i < bytes.length; i += chunk) yield bytes.subarray(i, i + chunk);
    })();
  const batches = [];
  for await (const batch of readDropFile(open, {
    name: 'drop.txt',
    numberRules: makeNumberRules(),
    ...options,
  })) {
    batches.push(batch);
  }
  const summary = batches.at(-1)![0] as ReadSummary;
  expect(summary.kind).toBe('summary');
  return { items: batches.slice(0, -1).flat() as ReadItem[], summary };
}

/** What both files must agree on: everything but what only a template has. */
function outcome(s: ReadSummary) {
  return {
    records: s.records,
    valid: s.valid,
    invalid: s.invalid,
    duplicates: s.duplicates,
    suppressed: s.suppressed,
    segments: s.segments,
    encodings: s.encodings,
    countries: s.countries,
    segmentsByCountry: s.segmentsByCountry,
    transliteration: s.transliteration,
    warningCounts: s.warningCounts,
    errorCounts: s.errorCounts,
    warnings: s.warnings.map((w) => ({ line: w.line, code: w.code, message: w.message, hint: w.hint })),
    // An EMPTY_MESSAGE's value is the message column as written: the template's, or the text.
    errors: s.errors.map((e) => ({
      line: e.line,
      code: e.code,
      message: e.message,
      value: e.code === 'EMPTY_MESSAGE' ? null : e.value,
    })),
    warningsTruncated: s.warningsTruncated,
    errorsTruncated: s.errorsTruncated,
    accepted: s.accepted,
    rejection: s.rejection,
    layout: s.layout,
    header: s.header,
    separator: s.separator,
    encoding: s.encoding,
  };
}

function itemsOf(items: ReadItem[]) {
  return items.map((i) => {
    if (i.kind === 'invalid' || i.kind === 'duplicate' || i.kind === 'suppressed') {
      return { ...i, value: i.code === 'EMPTY_MESSAGE' ? null : i.value };
    }
    return i;
  });
}

/** A list without hasValues: the reader asks has() one number at a time. */
function hasOnly(list: SuppressionList): SuppressionList {
  return { has: (n) => list.has(n), size: list.size, invalid: list.invalid };
}

async function listOf(numbers: readonly string[]): Promise<SuppressionList> {
  async function* bytes() {
    yield new TextEncoder().encode(numbers.join('\n'));
  }
  return readSuppressionList(bytes(), makeNumberRules());
}

/**
 * Reads the template file and its pre-merged twin with every combination of options, and
 * expects the same outcome; items:true and items:false must agree with each other too.
 */
async function compare(c: Case, rand: Rand, rulesList: NumberRules[] = [makeNumberRules()]): Promise<void> {
  const list = await listOf(c.suppress);
  for (const numberRules of rulesList) {
    for (const transliterate of ['never', 'gsm7'] as const) {
      for (const [which, suppression] of [
        ['no list', null],
        ['list', list],
        ['has() only', hasOnly(list)],
      ] as const) {
        const maxListed = rand() < 0.25 ? 2 : 1000;
        const maxInvalidRatio = rand() < 0.5 ? 1 : 0.2;
        const chunk = rand() < 0.2 ? 1 + Math.floor(rand() * 16) : 1 << 20;
        const label = `${c.name}, ${transliterate}, ${which}, maxListed ${maxListed}, chunks of ${chunk}\n--- template file:\n${c.template}\n--- pre-merged:\n${c.premerged}`;
        const base = { transliterate, suppression, maxListed, maxInvalidRatio, numberRules };
        const t = await readAll(c.template, { ...base, items: true }, chunk);
        const p = await readAll(c.premerged, { ...base, items: true }, chunk);
        const tq = await readAll(c.template, { ...base, items: false }, chunk);
        const pq = await readAll(c.premerged, { ...base, items: false }, chunk);
        expect(t.summary.rejection?.code, label).not.toBe('UNKNOWN_PLACEHOLDER');
        expect(outcome(t.summary), `items:true, ${label}`).toEqual(outcome(p.summary));
        expect(itemsOf(t.items), `items, ${label}`).toEqual(itemsOf(p.items));
        expect(outcome(tq.summary), `items:false, ${label}`).toEqual(outcome(pq.summary));
        expect(tq.items, label).toEqual([]);
        if (maxListed === 1000)
          expect(outcome(tq.summary), `items:false vs true, ${label}`).toEqual(outcome(t.summary));
        else {
          // Past maxListed, items:false counts warnings it does not write: the counts agree.
          expect(tq.summary.warningCounts, label).toEqual(t.summary.warningCounts);
          expect({ ...outcome(tq.summary), warningsTruncated: null }, label).toEqual({
            ...outcome(t.summary),
            warningsTruncated: null,
          });
        }
      }
    }
  }
}

describe('templates: the merged fast path reads like the same texts written out (pre-merged)', () => {
  it('seeded random files', async () => {
    const rand = prng(0x7e3_2026);
    let valid = 0;
    let templated = 0;
    for (let run = 0; run < 60; run++) {
      const c = drawCase(rand, run);
      await compare(c, rand);
      const r = await readAll(c.template, { items: false }, 1 << 20);
      valid += r.summary.valid;
      templated += r.summary.templates.length;
    }
    // The files hold recipients, and their templates were used.
    expect(valid).toBeGreaterThan(600);
    expect(templated).toBeGreaterThanOrEqual(60);
  });

  it('one shared message for many records: lengths around every limit, a long record among short ones with the same segment info', async () => {
    // GSM-7: 459 to 612 characters cost 4 segments, over 500 is LONG_MESSAGE; UCS-2 (the
    // literal's ú): 470 to 536 cost 8 segments, 4 in GSM-7. The values are plain: records
    // share one SegmentInfo, only the length tells a LONG one. With `…` (three characters
    // under gsm7) 150 and 159 characters cost the same as written but not transliterated;
    // `€` and the emoji need the greedy count past 160 septets / 70 units.
    const lengths = [
      20, 480, 480, 510, 480, 520, 470, 20, 20, 600, 470, 470, 499, 500, 501, 480, 69, 70, 71, 70, 134, 135,
      150, 158, 159, 160, 159, 150, 161, 162, 306, 307, 459, 460, 612, 613,
    ];
    for (const literal of ['Hola ', 'Hola ú ', 'Hola … ', 'Hola ½ ', 'Hola € ', 'Hola 😀 ', 'Hola ñ ']) {
      const lines: string[] = [];
      const pre: string[] = [];
      lengths.forEach((total, i) => {
        const name = 'n'.repeat(Math.max(1, total - literal.length - 5));
        const number = `300${String(1000000 + i)}`;
        lines.push(`${number};${name};abcde`);
        pre.push(`${number};${literal}${name}abcde`);
      });
      const c: Case = {
        name: `shared ${literal}`,
        template: `#! message: ${literal}{{Nombre}}{{mes}}\nnumero;Nombre;mes\n${lines.join('\n')}\n`,
        premerged: `# x\nnumero;mensaje\n${pre.join('\n')}\n`,
        suppress: ['3001000003'],
      };
      await compare(c, prng(1));
      const r = await readAll(c.template, { items: false }, 1 << 20);
      const long = pre.filter((l) => l.length - 11 > 500).length;
      expect(r.summary.warningCounts.LONG_MESSAGE ?? 0).toBe(long);
      expect(r.summary.valid).toBe(lengths.length);
    }
  });

  it('an escape never split from its character: the greedy GSM-7 count of a merged text', async () => {
    const a = 'a'.repeat(152);
    const b = 'b'.repeat(151);
    await compare(
      {
        name: 'greedy',
        template: `#! message: {{Nombre}}€{{mes}}\nnumero;Nombre;mes\n3001234567;${a};${a}\n3109876543;${b};${a}\n3151112233;${a};${b}\n`,
        premerged: `# x\nnumero;mensaje\n3001234567;${a}€${a}\n3109876543;${b}€${a}\n3151112233;${a}€${b}\n`,
        suppress: [],
      },
      prng(5),
    );
  });

  it('identical merged texts on many lines, then the same number again (a duplicate), then another text', async () => {
    const rows: string[] = [];
    const pre: string[] = [];
    for (let i = 0; i < 300; i++) {
      const number = MOBILES[i % MOBILES.length]!;
      const [name, month] =
        i % 7 === 0 ? ['Ramón', 'mayo'] : i % 11 === 0 ? ['Ana', 'x'.repeat(600)] : ['Ana', 'mayo'];
      rows.push(`${number};${name};${month}`);
      pre.push(`${number};Hola ${name}, su cita es en ${month}.`);
    }
    await compare(
      {
        name: 'identical texts',
        template: `#! message: Hola {{Nombre}}, su cita es en {{mes}}.\nnumero;Nombre;mes\n${rows.join('\n')}\n`,
        premerged: `# x\nnumero;mensaje\n${pre.join('\n')}\n`,
        suppress: ['3109876543'],
      },
      prng(2),
      [makeNumberRules(), makeNumberRules('CO', ['MX'])],
    );
  });

  it('hand-picked lines: white space and control characters at the ends, quoted and not', async () => {
    const cases: [string, string, string][] = [
      // [template row fields after the number, template, expected merged text as a plain message]
      ['"  Ana  ";mayo', '{{Nombre}}{{mes}}', '  Ana  mayo'],
      ['" Ana";mayo', 'Hola {{Nombre}} {{mes}}', 'Hola  Ana mayo'],
      ['"Ana\t";"\u0001mayo"', '{{Nombre}}{{mes}}', 'Ana\t\u0001mayo'],
      ['"\u00a0Ana";mayo', '{{Nombre}} {{mes}}', '\u00a0Ana mayo'],
      ['Ana;"mayo\u200b"', '{{Nombre}} {{mes}}', 'Ana mayo\u200b'],
      ['"\u0002";"\u0003"', '{{Nombre}}{{mes}}', '\u0002\u0003'],
      ['"\u0002 ";" x"', '{{Nombre}}{{mes}}', '\u0002  x'],
      ['Ana;"mayo\n2026"', 'Hola {{Nombre}}, {{mes}}', '"Hola Ana, mayo\n2026"'],
      ['"{{x}}";"{{{{"', '{{Nombre}}{{mes}}', '{{{{x}}{{{{{{{{'],
      ['Ramón;😀', 'ú {{Nombre}} {{mes}}', 'ú Ramón 😀'],
      ['José\u0301;“x”', '{{Nombre}} {{mes}}', 'José\u0301 “x”'],
    ];
    for (const [i, [fields, tpl, message]] of cases.entries()) {
      for (const quotedDirective of [false, true]) {
        await compare(
          {
            name: `hand-picked ${i}${quotedDirective ? ' (quoted directive)' : ''}`,
            template: `#! message: ${quotedDirective ? csvQuote(tpl) : tpl}\nnumero;Nombre;mes\n3001234567;${fields}\n3109876543;${fields}\n3001234567;${fields}\n`,
            premerged: `# x\nnumero;mensaje\n3001234567;${message}\n3109876543;${message}\n3001234567;${message}\n`,
            suppress: [],
          },
          prng(3 + i),
        );
      }
    }
  });
});
