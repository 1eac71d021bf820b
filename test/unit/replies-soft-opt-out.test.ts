// looksLikeOptOut (docs/opt-outs.md "Flagged for review"): replies that read like a request to
// stop without being a keyword are flagged, and ordinary replies are not.
import { describe, expect, it } from 'vitest';
import { DEFAULT_KEYWORDS } from '../../src/replies/keywords.ts';
import { looksLikeOptOut } from '../../src/replies/soft-opt-out.ts';

const KW = DEFAULT_KEYWORDS.optOut;

describe('looksLikeOptOut', () => {
  it.each([
    'no me escriban más',
    'No me escriban mas!!',
    'ya no quiero mensajes',
    'Ya no quiero recibir más mensajes, gracias',
    'dejen de escribir',
    'Dejen de escribirme por favor',
    'no me envíen más publicidad',
    'NO ME LLAMEN',
    'quítenme de la lista',
    'borren mi número',
    'Quiero darme de baja',
    'stop please',
    'STOP!!! please',
    'please stop texting me',
    "don't text me",
    'unsubscribe',
    'quiero salir',
    'SALIR YA',
    'no más mensajes',
  ])('%j is flagged', (text) => {
    expect(looksLikeOptOut(text, KW)).toBe(true);
  });

  it.each([
    'SI',
    'Sí, confirmo mi cita',
    'No gracias, ya pagué',
    'no sé',
    'gracias',
    '¿Cuándo abren?',
    'No puedo ir el martes',
    '',
    '🙏',
    'Salida a las 3',
  ])('%j is not', (text) => {
    expect(looksLikeOptOut(text, KW)).toBe(false);
  });

  it('uses the configured opt-out keywords for the words it looks for', () => {
    expect(looksLikeOptOut('quiero PARAR ya', ['PARAR'])).toBe(true);
    expect(looksLikeOptOut('quiero salir', ['PARAR'])).toBe(false);
  });
});

describe('looksLikeOptOut: its documented limits (docs/opt-outs.md "Flagged for review")', () => {
  it('flags some replies that are no request to stop: a person looks, nothing is applied', () => {
    expect(looksLikeOptOut('¿Cómo cancelar mi cita?', KW)).toBe(true);
    expect(looksLikeOptOut('no me mandaron el código', KW)).toBe(true);
  });

  it('misses what it has no words for', () => {
    expect(looksLikeOptOut('no me escrivan', KW)).toBe(false);
    expect(looksLikeOptOut('ya bastaaa', KW)).toBe(false);
  });
});
