// Templates (docs/format.md "Templates"), the parse and the merge alone (src/format/template.ts); how
// the reader uses them (UNKNOWN_PLACEHOLDER, MISSING_FIELD, `#! message:`) is in format-reader.test.ts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compileTemplate,
  mergeTemplate,
  placeholderKey,
  templateColumns,
  trimText,
} from '../../src/format/template.ts';

const COLUMNS = templateColumns(['Número', 'Primer Nombre', 'Ciudad', 'Mensaje', 'nombre'], 3);
const merge = (source: string, fields: string[], quoted: boolean[] = []) =>
  mergeTemplate(compileTemplate(source, COLUMNS), fields, quoted);

describe('trimText', () => {
  it('is String.prototype.trim, whatever the ends (white space, line terminators, BOM, NBSP, none)', () => {
    const ends = fc.constantFrom(
      '',
      ' ',
      '\t',
      '\n',
      '\u00a0',
      '\ufeff',
      '\u2028',
      '\u3000',
      'a',
      '~',
      '!',
      'ñ',
    );
    fc.assert(
      fc.property(ends, fc.string({ unit: 'binary', maxLength: 20 }), ends, (a, middle, b) => {
        const s = a + middle + b;
        expect(trimText(s)).toBe(s.trim());
      }),
      { numRuns: 2000 },
    );
  });
});

describe('placeholder names', () => {
  it('compare like header names, and ignore every space', () => {
    for (const name of [
      'Primer Nombre',
      ' primer nombre ',
      'PRIMERNOMBRE',
      'primer  Nómbre',
      '"Primer Nombre"',
    ]) {
      expect(placeholderKey(name), name).toBe('primernombre');
    }
  });

  it('a placeholder naming two columns of the same name is a problem (the file is rejected)', () => {
    const t = compileTemplate('{{NOMBRE}}', templateColumns(['numero', 'Nombre', 'nombre'], -1, 1));
    expect(t.problem).toBe(
      '{{NOMBRE}} is ambiguous: the header on line 1 has 2 columns of that name: `Nombre` (column 2), `nombre` (column 3)',
    );
    expect(t.hint).toMatch(/rename one/);
  });
});

describe('compileTemplate', () => {
  it('literal parts around column indexes, parsed once', () => {
    const t = compileTemplate('Hola {{primer nombre}}, en {{ciudad}}.', COLUMNS);
    expect(t.literals).toEqual(['Hola ', ', en ', '.']);
    expect(t.cols).toEqual([1, 2]);
    expect(t.written).toEqual(['{{primer nombre}}', '{{ciudad}}']);
    expect(t.placeholders).toBe(2);
    expect(t.problem).toBeNull();
  });

  it('{{{{ is a literal {{ and takes no part in a placeholder; }} alone is text', () => {
    const t = compileTemplate('a {{{{ciudad}} b }} {{{{{{ciudad}}', COLUMNS);
    expect(t.placeholders).toBe(1);
    expect(mergeTemplate(t, ['', '', 'Cali'], [])).toBe('a {{ciudad}} b }} {{Cali');
  });

  it('a text without placeholders is one literal', () => {
    const t = compileTemplate('Hola a todos', COLUMNS);
    expect(t).toMatchObject({ literals: ['Hola a todos'], cols: [], placeholders: 0, problem: null });
  });

  it('the first problem is described; unknown placeholders stay in the text as written', () => {
    const t = compileTemplate('{{ciudad}} {{apellido}} {{x}}', COLUMNS);
    expect(t.problem).toBe(
      '{{apellido}} names no column of the header (columns: Número, Primer Nombre, Ciudad, Mensaje, nombre)',
    );
    expect(mergeTemplate(t, ['', '', 'Cali'], [])).toBe('Cali {{apellido}} {{x}}');
    expect(compileTemplate('{{}}', COLUMNS).problem).toMatch(/^\{\{\}\} names no column/);
    expect(compileTemplate('{{mensaje}}', COLUMNS).problem).toMatch(/names the message column itself/);
    expect(compileTemplate('Hola {{nombre', COLUMNS).problem).toMatch(/never closed/);
    expect(compileTemplate('{{{nombre}}}', COLUMNS).problem).toMatch(/^\{\{\{nombre\}\} names no column/);
    expect(compileTemplate('Hola {{nombre}}', null).problem).toMatch(/the file has no header line/);
  });
});

describe('mergeTemplate', () => {
  it('unquoted values are trimmed, quoted ones inserted exactly (line breaks and separators too)', () => {
    expect(merge('[{{ciudad}}]', ['', '', '  Cali  '])).toBe('[Cali]');
    expect(merge('[{{ciudad}}]', ['', '', ' Cali;\nsur '], [false, false, true])).toBe('[ Cali;\nsur ]');
  });

  it('a value is never evaluated', () => {
    expect(merge('{{ciudad}}', ['', '{{x}}', '{{primer nombre}} {{{{'])).toBe('{{primer nombre}} {{{{');
  });

  it('the index of the first placeholder whose value is empty, blank or absent', () => {
    expect(merge('{{ciudad}} {{nombre}}', ['', '', 'Cali', '', ''])).toBe(1);
    expect(merge('{{ciudad}} {{nombre}}', ['', '', ' \t '])).toBe(0);
    expect(merge('{{ciudad}} {{nombre}}', ['', '', '"  "'.slice(1, -1)], [false, false, true])).toBe(0);
    expect(merge('{{ciudad}} {{nombre}}', ['', '', 'Cali'])).toBe(1); // the record has no 5th field
  });

  it('property: merging is literal concatenation of the parts and the values', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.string().filter((s) => !s.includes('{') && !s.includes('}')),
          { minLength: 3, maxLength: 3 },
        ),
        fc.array(
          fc.string({ minLength: 1 }).filter((s) => s.trim() === s && s.length > 0),
          {
            minLength: 2,
            maxLength: 2,
          },
        ),
        ([a, b, c], [city, name]) => {
          const out = merge(`${a}{{ciudad}}${b}{{nombre}}${c}`, ['', '', city!, '', name!]);
          expect(out).toBe(`${a}${city}${b}${name}${c}`);
        },
      ),
    );
  });
});
