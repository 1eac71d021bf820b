// The `transliterate: gsm7` table (src/format/transliterate.ts): what is replaced, what must
// stay, and that the result is GSM-7 whenever every character has a look-alike.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countSegments, gsm7Septets } from '../../src/format/segments.ts';
import {
  lookAlikes,
  transliterate,
  transliteratedSegments,
  transliteratedSegmentsOf,
} from '../../src/format/transliterate.ts';

const isGsm = (s: string) => [...s].every((ch) => ch.length === 1 && gsm7Septets(ch.charCodeAt(0)) > 0);

describe('the look-alike table', () => {
  it('replaces only characters outside GSM-7, always by GSM-7 text', () => {
    const pairs = lookAlikes();
    expect(pairs.length).toBeGreaterThan(150);
    for (const [from, to] of pairs) {
      expect(gsm7Septets(from.charCodeAt(0)), `${from} must not be GSM-7`).toBe(0);
      expect(isGsm(to), `${from} → ${JSON.stringify(to)}`).toBe(true);
    }
  });

  it('Spanish vowels with an acute accent lose it', () => {
    expect(transliterate('á é í ó ú Á É Í Ó Ú')).toBe('a é i o u A É I O U');
    expect(transliterate('Información: acción, línea, útil, Ángela, Óscar, Úrsula, Íñigo')).toBe(
      'Informacion: accion, linea, util, Angela, Oscar, Ursula, Iñigo',
    );
  });

  it('characters GSM-7 has stay: ñ Ñ é É ü Ü ä Ä ö Ö à è ì ò ù Ç ¿ ¡ € £ ß Å Ø', () => {
    const keep = 'ñÑéÉüÜäÄöÖàèìòùÇ¿¡€£ßÅåØøÆæ¥§¤@$_{}[]~^|\\';
    expect(transliterate(keep)).toBe(keep);
    expect(transliterate(`${keep} á`)).toBe(`${keep} a`);
  });

  it('quotes, dashes, ellipsis, spaces and other punctuation', () => {
    expect(transliterate('“Hola” „así“ «ya» ‘sí’ ´x` l’Oréal')).toBe(`"Hola" "asi" "ya" 'si' 'x' l'Oréal`);
    expect(transliterate('10–12 — fin − 1 • punto')).toBe('10-12 - fin - 1 - punto');
    expect(transliterate('Espere…')).toBe('Espere...');
    expect(transliterate('a\u00a0b\u202fc\u2009d\u200be\u00adf\ufeffg')).toBe('a b c de' + 'fg');
    expect(transliterate('1º 2ª N° 25°')).toBe('1o 2a No 25o');
    expect(transliterate('ç ê ô â ã õ œ Œ À È Ì Ò Ù')).toBe('c e o a a o oe OE A E I O U');
  });

  it('the result is GSM-7: the Spanish campaign costs GSM-7 segments', () => {
    const text = `Señor Núñez: su cita médica quedó para el miércoles… “confírmela” — gracias. ${'x'.repeat(60)}`;
    expect(countSegments(text)).toMatchObject({ encoding: 'ucs2', segments: 3 });
    const t = transliterate(text);
    expect(t).toBe(
      `Señor Nuñez: su cita médica quedo para el miércoles... "confirmela" - gracias. ${'x'.repeat(60)}`,
    );
    expect(countSegments(t)).toMatchObject({ encoding: 'gsm7', segments: 1 });
  });
});

describe('texts that are left as written', () => {
  it('a text already in GSM-7 is returned as is (the same string)', () => {
    for (const text of ['Hola Ana', 'Señor Müller, ¿esta ahi? 5€', ''])
      expect(transliterate(text)).toBe(text);
  });

  it('a text with a character that has no look-alike (emoji, CJK, Cyrillic) keeps all its accents', () => {
    for (const text of ['Hola Ramón 😀', 'Pedido 注文 listo, José', 'Привет, qué tal', 'flor 🌸 “hoy”']) {
      expect(transliterate(text)).toBe(text);
    }
  });

  it('decomposed accents (NFD, as macOS writes) are composed first: é stays é, ó becomes o', () => {
    const nfd = 'Jose\u0301 Rami\u0301rez, cancio\u0301n, n\u0303'; // José Ramírez, canción, ñ
    expect(transliterate(nfd)).toBe('José Ramirez, cancion, ñ');
    expect(transliterate('x\u0301')).toBe('x'); // no precomposed form: the base letter
    expect(transliterate('o\u0301 😀')).toBe('o\u0301 😀');
  });

  it('property: the result is either the text itself or all GSM-7, never longer than 3× (…)', () => {
    const chars = fc.constantFrom(...'aeiouáéíóúñÑüÜç“”‘’–—…😀中 \u00a0'.split(''), '😀');
    fc.assert(
      fc.property(
        fc.array(chars, { maxLength: 40 }).map((a) => a.join('')),
        (text) => {
          const t = transliterate(text);
          expect(t === text || isGsm(t)).toBe(true);
          if (t !== text) expect(t.length).toBeLessThanOrEqual(3 * text.length);
          expect(transliterate(t)).toBe(t); // idempotent
        },
      ),
    );
  });
});

describe('the segments a text would cost transliterated (what `never` reports gsm7 would save)', () => {
  const expected = (text: string) => {
    const t = transliterate(text);
    return t === text ? -1 : countSegments(t).segments;
  };

  it('counts without building the text, and agrees with transliterate + countSegments', () => {
    for (const text of [
      'Hola Ramón',
      `${'á'.repeat(160)}`,
      `${'á'.repeat(161)}`,
      `Espere${'…'.repeat(60)}`, // 1 UCS-2 part, 3 GSM-7 parts once … is ...
      `${'x'.repeat(150)}¦ ${'ó'.repeat(10)}`, // the replacement is an extension character
      'Hola 😀 á',
      'Hola Ana',
      'Señor Müller',
      'cancio\u0301n',
    ]) {
      expect(transliteratedSegments(text), text).toBe(expected(text));
      expect(transliteratedSegmentsOf(text, countSegments(text)), text).toBe(expected(text));
    }
    expect(expected(`Espere${'…'.repeat(60)}`)).toBe(2);
  });

  it('property: for any mix of GSM-7, look-alike, extension and foreign characters', () => {
    const chars = fc.constantFrom(...'aáóñ€[…—“ \u00a0¦œx'.split(''), '😀', 'e\u0301');
    fc.assert(
      fc.property(
        fc.array(chars, { maxLength: 400 }).map((a) => a.join('')),
        (text) => {
          expect(transliteratedSegments(text)).toBe(expected(text));
          expect(transliteratedSegmentsOf(text, countSegments(text))).toBe(expected(text));
        },
      ),
      { numRuns: 300 },
    );
  });
});
