// matchKeyword and replySettings (docs/opt-outs.md "Keywords"): the whole reply, normalised,
// against the opt-out, opt-in and help keywords of the short code it was sent to.
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { DEFAULT_KEYWORDS, matchKeyword } from '../../src/replies/keywords.ts';
import { replySettings } from '../../src/replies/settings.ts';

describe('matchKeyword', () => {
  it.each([
    ['Salir.', 'opt_out', 'SALIR'],
    ['¡Baja!', 'opt_out', 'BAJA'],
    ['no', 'opt_out', 'NO'],
    ['alta', 'opt_in', 'ALTA'],
    [' Start! ', 'opt_in', 'START'],
    ['unstop', 'opt_in', 'UNSTOP'],
    ['Iniciár', 'opt_in', 'INICIAR'],
    ['ayuda?', 'help', 'AYUDA'],
    ['¿Ayuda?', 'help', 'AYUDA'],
    ['HELP 🙏', 'help', 'HELP'],
    ['ＡＬＴＡ', 'opt_in', 'ALTA'],
  ])('%j is %s (%s)', (text, kind, keyword) => {
    expect(matchKeyword(text, DEFAULT_KEYWORDS)).toEqual({ kind, keyword });
  });

  it.each(['quiero alta', 'ALTA YA', 'ayuda por favor', 'No gracias', '', '...', 'A.L.T.A'])(
    '%j is no keyword',
    (text) => {
      expect(matchKeyword(text, DEFAULT_KEYWORDS)).toBeNull();
    },
  );

  it('opt-out wins over a word also listed as opt-in, and multi-word keywords match whole', () => {
    const sets = { optOut: ['FIN'], optIn: ['fin', 'volver a empezar'], help: [] };
    expect(matchKeyword('fin', sets)).toEqual({ kind: 'opt_out', keyword: 'FIN' });
    expect(matchKeyword('Volver  a empezar!', sets)).toEqual({ kind: 'opt_in', keyword: 'VOLVER A EMPEZAR' });
  });
});

describe('replySettings', () => {
  const parse = (raw: Record<string, unknown>) => configSchema.parse({ api: API, ...raw });
  const API = { baseUrl: 'http://127.0.0.1:1', username: 'u', password: 'p' };

  it('defaults: the contract keywords, no texts', () => {
    expect(replySettings(parse({}), '890123')).toEqual({
      keywords: DEFAULT_KEYWORDS,
      helpText: null,
      confirmOptOut: null,
      confirmOptIn: null,
    });
  });

  it('optOut.keywords is the older spelling of replies.keywords.optOut; giving both is refused', () => {
    expect(replySettings(parse({ optOut: { keywords: ['PARE'] } }), '1').keywords.optOut).toEqual(['PARE']);
    expect(() =>
      parse({ optOut: { keywords: ['PARE'] }, replies: { keywords: { optOut: ['FIN'] } } }),
    ).toThrow(/give replies or its older spelling optOut, not both/);
  });

  it('a short code overrides the global settings key by key; null turns a text off', () => {
    const config = parse({
      replies: {
        helpText: 'Acme: ayuda en acme.co',
        confirmOptOut: 'No recibirás más mensajes',
        keywords: { help: ['AYUDA'] },
        byShortCode: {
          '890123': {
            helpText: 'Cobros: 601 555 0000',
            confirmOptOut: null,
            keywords: { optIn: ['VOLVER'] },
          },
        },
      },
    });
    expect(replySettings(config, '890123')).toEqual({
      keywords: { optOut: DEFAULT_KEYWORDS.optOut, optIn: ['VOLVER'], help: ['AYUDA'] },
      helpText: 'Cobros: 601 555 0000',
      confirmOptOut: null,
      confirmOptIn: null,
    });
    expect(replySettings(config, '85000')).toMatchObject({
      helpText: 'Acme: ayuda en acme.co',
      confirmOptOut: 'No recibirás más mensajes',
    });
  });

  it('refuses a keyword in two lists, a short code that is not digits, an unknown key', () => {
    expect(() => parse({ replies: { keywords: { optOut: ['Salir'], optIn: ['SALIR'] } } })).toThrow(
      /in two keyword lists: SALIR/,
    );
    expect(() => parse({ replies: { byShortCode: { acme: {} } } })).toThrow(/3 to 10 digits/);
    expect(() => parse({ replies: { helpTxt: 'x' } })).toThrow();
  });
});
