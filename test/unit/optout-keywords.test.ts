// isOptOut (docs/opt-outs.md, "Keywords"): the whole reply, normalised, equals a keyword.
import { describe, expect, it } from 'vitest';
import { isOptOut, normaliseReply } from '../../src/replies/keywords.ts';

const DEFAULTS = ['SALIR', 'STOP', 'BAJA', 'CANCELAR', 'NO'] as const;

describe('isOptOut', () => {
  it.each([
    'SALIR',
    'salir',
    'Salir.',
    ' stop ',
    'BAJA!',
    'cancelár',
    'Cancelar',
    '¡Baja!',
    '¿salir?',
    '"STOP"',
    'No.',
    'no',
    'NO!!!',
    '  \t salir \n',
    'SALIR 🙏',
    '\u200bstop\u200b',
    'ＳＴＯＰ', // full-width
    'Sálír',
    '...baja...',
  ])('%j opts out', (text) => {
    expect(isOptOut(text, DEFAULTS)).toBe(true);
  });

  it.each([
    'No gracias',
    'no, gracias',
    'quiero salir',
    'SALIR YA',
    'STOPS',
    'Nop',
    'nó pues',
    'S A L I R',
    'S.A.L.I.R',
    '',
    '   ',
    '!!!',
    'Hola',
  ])('%j does not', (text) => {
    expect(isOptOut(text, DEFAULTS)).toBe(false);
  });

  it('normalises the keywords too, and ignores one that is only punctuation', () => {
    expect(isOptOut('darse de baja', ['Darse de  BAJA.'])).toBe(true);
    expect(isOptOut('DARSE  DE\tBAJA', ['darse de baja'])).toBe(true);
    expect(isOptOut('no más', ['NO MAS'])).toBe(true);
    expect(isOptOut('!', ['!'])).toBe(false);
    expect(isOptOut('SALIR', [])).toBe(false);
  });

  it('normaliseReply: NFKD, no marks, upper case, edges trimmed, inner spaces collapsed', () => {
    expect(normaliseReply('  ¡Cancelár,  por favor! ')).toBe('CANCELAR, POR FAVOR');
    expect(normaliseReply('ñandú')).toBe('NANDU');
  });
});
