// The `replies` section and its older spelling `optOut` (docs/replies.md "Configuration").
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { DroplineError } from '../../src/errors.ts';

const smpp = { host: '127.0.0.1', systemId: 'demo', password: 'demo' };

describe('replies configuration', () => {
  it('has its defaults when neither replies nor optOut is given', () => {
    const { replies } = parseConfig({});
    expect(replies).toEqual({
      smpp: null,
      windowHours: 72,
      keywords: {
        optOut: ['SALIR', 'STOP', 'BAJA', 'CANCELAR', 'NO'],
        optIn: ['ALTA', 'START', 'UNSTOP', 'INICIAR'],
        help: ['AYUDA', 'HELP'],
      },
      helpText: null,
      confirmOptOut: null,
      confirmOptIn: null,
      byShortCode: {},
    });
  });

  it('reads optOut (the older spelling) as replies: keywords become the opt-out keywords', () => {
    const config = parseConfig({ optOut: { keywords: ['PARE'], smpp } });
    expect(config.replies.keywords.optOut).toEqual(['PARE']);
    expect(config.replies.keywords.optIn).toEqual(['ALTA', 'START', 'UNSTOP', 'INICIAR']);
    expect(config.replies.smpp).toEqual({ ...smpp, port: 6900, tls: false });
    expect(config.replies.windowHours).toBe(72);
    expect('optOut' in config).toBe(false);
  });

  it('takes replies as written', () => {
    const config = parseConfig({
      replies: { smpp, windowHours: 24, keywords: { optOut: ['BASTA'] }, helpText: 'Escribe SALIR' },
    });
    expect(config.replies).toMatchObject({
      windowHours: 24,
      helpText: 'Escribe SALIR',
      keywords: { optOut: ['BASTA'], help: ['AYUDA', 'HELP'] },
    });
  });

  it('refuses both replies and optOut', () => {
    let error: unknown = null;
    try {
      parseConfig({ replies: { windowHours: 24 }, optOut: { keywords: ['PARE'] } });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(DroplineError);
    expect((error as DroplineError).code).toBe('DROPLINE_ERR_CONFIG');
    expect((error as Error).message).toContain('give replies or its older spelling optOut, not both');
  });

  it('an sms source may set a short code of 3 to 10 digits', () => {
    const config = parseConfig({ sources: [{ name: 'a', type: 'local', path: './a', shortCode: '89911' }] });
    expect(config.sources[0]?.shortCode).toBe('89911');
    expect(() =>
      parseConfig({ sources: [{ name: 'a', type: 'local', path: './a', shortCode: '12' }] }),
    ).toThrow(DroplineError);
  });
});
