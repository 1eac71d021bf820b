// Issue 12: `accounts` and `sources[].account`. A key that would do nothing is refused at load
// (the other channels arrive later), and a source names only an account that exists.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from '../../src/config/load.ts';
import { DroplineError } from '../../src/errors.ts';

const URL_ = 'https://sms.example.co';
let dir: string | null = null;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = null;
});

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DroplineError);
    expect((err as DroplineError).code).toBe('DROPLINE_ERR_CONFIG');
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
}

function load(raw: unknown) {
  dir = mkdtempSync(join(tmpdir(), 'dropline-accounts-'));
  const path = join(dir, 'dropline.config.json');
  writeFileSync(path, JSON.stringify(raw));
  return loadConfig({ path, env: {} });
}

describe('accounts', () => {
  it('a source without account is sent with "default"; one naming an account gets it', () => {
    const config = parseConfig({
      accounts: { alfa: { baseUrl: URL_, username: 'alfa', password: 'x' } },
      sources: [
        { name: 'a', type: 'local', path: './a' },
        { name: 'b', type: 'local', path: './b', account: 'alfa' },
      ],
    });
    expect(config.sources.map((s) => s.account)).toEqual(['default', 'alfa']);
    expect(config.accounts.alfa).toMatchObject({ channel: 'sms', username: 'alfa' });
  });

  it('a source naming an undefined account is refused, with the accounts there are', () => {
    expect(
      configError(() =>
        parseConfig({
          accounts: { alfa: { baseUrl: URL_, username: 'alfa', password: 'x' } },
          sources: [{ name: 'a', type: 'local', path: './a', account: 'beta' }],
        }),
      ),
    ).toContain('sources.0.account: no account "beta" (accounts: default, alfa)');
  });

  it.each([
    [{ channel: 'fax' }, 'channel'],
    // A WhatsApp account needs its sending number.
    [{ channel: 'whatsapp' }, 'source'],
    [{ apiKey: 'k' }, 'apiKey'],
    [{ baseUrl: 'not a url' }, 'baseUrl'],
  ])('a key that would do nothing or cannot work is refused: %j', (extra, message) => {
    expect(
      configError(() =>
        parseConfig({ accounts: { alfa: { baseUrl: URL_, username: 'alfa', password: 'x', ...extra } } }),
      ),
    ).toContain(message);
  });

  it('an account name is letters, digits, _ and -', () => {
    expect(
      configError(() =>
        parseConfig({ accounts: { 'a b': { baseUrl: URL_, username: 'u', password: 'x' } } }),
      ),
    ).toContain('letters, digits');
  });

  it('passwords: from password or passwordFile, required, never both', () => {
    const ok = load({ accounts: { alfa: { baseUrl: URL_, username: 'alfa', password: 'clave' } } });
    expect(ok.secrets.accountPasswords).toEqual({ alfa: 'clave' });
    expect(configError(() => load({ accounts: { alfa: { baseUrl: URL_, username: 'alfa' } } }))).toContain(
      'accounts.alfa.password: required (or accounts.alfa.passwordFile)',
    );
    dir = mkdtempSync(join(tmpdir(), 'dropline-accounts-'));
    const file = join(dir, 'alfa.password');
    writeFileSync(file, 'desde-archivo\n', { mode: 0o600 });
    const path = join(dir, 'c.json');
    writeFileSync(
      path,
      JSON.stringify({ accounts: { alfa: { baseUrl: URL_, username: 'alfa', passwordFile: file } } }),
    );
    expect(loadConfig({ path, env: {} }).secrets.accountPasswords.alfa).toBe('desde-archivo');
    writeFileSync(
      path,
      JSON.stringify({
        accounts: { alfa: { baseUrl: URL_, username: 'alfa', password: 'x', passwordFile: file } },
      }),
    );
    expect(configError(() => loadConfig({ path, env: {} }))).toContain(
      'give password or passwordFile, not both',
    );
  });
});

describe('email accounts and sources (issue 15)', () => {
  const mail = { channel: 'email', baseUrl: 'https://email.example.co', from: 'avisos@empresa.co' };

  it('an email account takes apiKey or apiKeyFile (required, never both), from and fromName', () => {
    const ok = load({
      accounts: { mail: { ...mail, apiKey: 'clave', fromName: 'Empresa' } },
      sources: [{ name: 'e', type: 'local', path: './e', channel: 'email', account: 'mail' }],
    });
    expect(ok.secrets.accountApiKeys).toEqual({ mail: 'clave' });
    expect(ok.secrets.accountPasswords).toEqual({});
    expect(ok.config.accounts.mail).toMatchObject({ channel: 'email', from: 'avisos@empresa.co' });
    expect(configError(() => load({ accounts: { mail } }))).toContain(
      'accounts.mail.apiKey: required (or accounts.mail.apiKeyFile)',
    );
    const file = join(dir!, 'mail.key');
    writeFileSync(file, 'del-archivo\n', { mode: 0o600 });
    expect(load({ accounts: { mail: { ...mail, apiKeyFile: file } } }).secrets.accountApiKeys.mail).toBe(
      'del-archivo',
    );
    expect(
      configError(() => load({ accounts: { mail: { ...mail, apiKey: 'k', apiKeyFile: file } } })),
    ).toContain('give apiKey or apiKeyFile, not both');
    // An SMS key on an email account does nothing: refused.
    expect(
      configError(() => parseConfig({ accounts: { mail: { ...mail, apiKey: 'k', username: 'u' } } })),
    ).toContain('username');
  });

  it("a source's channel is its account's: sms with an email account, or the reverse, is refused", () => {
    const accounts = { mail: { ...mail, apiKey: 'k' } };
    expect(
      configError(() =>
        parseConfig({ accounts, sources: [{ name: 'a', type: 'local', path: './a', account: 'mail' }] }),
      ),
    ).toContain('the source sends sms, account "mail" sends email');
    expect(
      configError(() =>
        parseConfig({ sources: [{ name: 'a', type: 'local', path: './a', channel: 'email' }] }),
      ),
    ).toContain('the source sends email, account "default" sends sms');
    expect(
      configError(() =>
        parseConfig({ sources: [{ name: 'a', type: 'local', path: './a', email: { templateId: 'x' } }] }),
      ),
    ).toContain('only for channel "email"');
  });

  it('email.htmlFile is read at load; a missing one is a start-up error', () => {
    dir = mkdtempSync(join(tmpdir(), 'dropline-accounts-'));
    const html = join(dir, 'body.html');
    writeFileSync(html, '<p>Hola {{nombre}}</p>');
    const source = { name: 'e', type: 'local', path: './e', channel: 'email', account: 'mail' };
    const path = join(dir, 'c.json');
    const write = (htmlFile: string) =>
      writeFileSync(
        path,
        JSON.stringify({
          accounts: { mail: { ...mail, apiKey: 'k' } },
          sources: [{ ...source, email: { subject: 'Factura', htmlFile } }],
        }),
      );
    write(html);
    expect(loadConfig({ path, env: {} }).config.sources[0]?.email).toEqual({
      subject: 'Factura',
      html: '<p>Hola {{nombre}}</p>',
    });
    write(join(dir, 'missing.html'));
    expect(configError(() => loadConfig({ path, env: {} }))).toContain(
      'sources[0].email.htmlFile: cannot read',
    );
  });
});

describe('WhatsApp accounts and sources (issue 15)', () => {
  const wa = { channel: 'whatsapp', baseUrl: 'https://wa.example.co', username: 'empresa' };
  const source = { name: 'w', type: 'local', path: './w', channel: 'whatsapp', account: 'wa' };

  it('a WhatsApp account takes Basic credentials (password or passwordFile) and its sending number', () => {
    const ok = load({
      accounts: { wa: { ...wa, password: 'clave', source: '+573001112233' } },
      sources: [{ ...source, whatsapp: { templateId: 'factura', source: '573009998877' } }],
    });
    expect(ok.secrets.accountPasswords).toEqual({ wa: 'clave' });
    // The `+` is dropped: the service takes the number's digits.
    expect(ok.config.accounts.wa).toMatchObject({ channel: 'whatsapp', source: '573001112233' });
    expect(ok.config.sources[0]?.whatsapp).toEqual({ templateId: 'factura', source: '573009998877' });
    expect(configError(() => load({ accounts: { wa: { ...wa, source: '573001112233' } } }))).toContain(
      'accounts.wa.password: required (or accounts.wa.passwordFile)',
    );
    expect(
      configError(() => parseConfig({ accounts: { wa: { ...wa, password: 'x', source: '300-111' } } })),
    ).toContain('8 to 15 digits');
    // An email key on a WhatsApp account does nothing: refused.
    expect(
      configError(() =>
        parseConfig({ accounts: { wa: { ...wa, password: 'x', source: '573001112233', apiKey: 'k' } } }),
      ),
    ).toContain('apiKey');
  });

  it('a WhatsApp source needs a WhatsApp account; `whatsapp` is only for channel whatsapp', () => {
    const accounts = { wa: { ...wa, password: 'x', source: '573001112233' } };
    expect(configError(() => parseConfig({ accounts, sources: [{ ...source, channel: 'sms' }] }))).toContain(
      'the source sends sms, account "wa" sends whatsapp',
    );
    expect(
      configError(() =>
        parseConfig({ sources: [{ name: 'a', type: 'local', path: './a', whatsapp: { templateId: 'x' } }] }),
      ),
    ).toContain('only for channel "whatsapp"');
  });
});

describe('storeFile: the store URL (and its password) from a secret file', () => {
  it('is read into store; store and storeFile together, or an empty file, are refused', () => {
    dir = mkdtempSync(join(tmpdir(), 'dropline-store-file-'));
    const file = join(dir, 'store_url');
    writeFileSync(file, 'postgres://dropline:s3cr3t@db.internal:5432/dropline\n', { mode: 0o600 });
    const path = join(dir, 'c.json');
    writeFileSync(path, JSON.stringify({ storeFile: file }));
    expect(loadConfig({ path, env: {} }).config.store).toBe(
      'postgres://dropline:s3cr3t@db.internal:5432/dropline',
    );
    for (const store of ['postgres://db.internal/dropline', 'sqlite:./.dropline/state.db']) {
      writeFileSync(path, JSON.stringify({ store, storeFile: file }));
      expect(configError(() => loadConfig({ path, env: {} }))).toContain('give store or storeFile, not both');
    }
    writeFileSync(file, '\n');
    writeFileSync(path, JSON.stringify({ storeFile: file }));
    expect(configError(() => loadConfig({ path, env: {} }))).toContain('is empty');
  });
});

describe('the contact ledger (issue 35): contactLimit, accounts.<name>.entity, consent', () => {
  it('contactLimit takes channelsPerWeek and a default entity; an account of any channel names its own', () => {
    const config = parseConfig({
      contactLimit: { perDay: 1, channelsPerWeek: 1 },
      consent: { list: './consent.txt' },
      accounts: {
        aliado: { baseUrl: URL_, username: 'aliado', password: 'x', entity: 'partner-co' },
        wa: {
          channel: 'whatsapp',
          baseUrl: URL_,
          username: 'w',
          password: 'x',
          source: '573001112233',
          entity: 'partner-co',
        },
      },
    });
    expect(config.contactLimit).toEqual({
      perDay: 1,
      channelsPerWeek: 1,
      entity: 'default',
      timezone: 'America/Bogota',
    });
    expect(config.consent).toEqual({ list: './consent.txt' });
    expect(config.accounts.aliado?.entity).toBe('partner-co');
    expect(config.accounts.wa?.entity).toBe('partner-co');
    expect(parseConfig({ contactLimit: { perDay: 2 } }).contactLimit?.channelsPerWeek).toBeNull();
  });

  it('a bad entity name, channelsPerWeek 0 and a consent list without its location are refused', () => {
    expect(configError(() => parseConfig({ contactLimit: { perDay: 1, entity: 'a b' } }))).toMatch(
      /contactLimit\.entity/,
    );
    expect(configError(() => parseConfig({ contactLimit: { perDay: 1, channelsPerWeek: 0 } }))).toMatch(
      /contactLimit\.channelsPerWeek/,
    );
    expect(configError(() => parseConfig({ consent: {} }))).toMatch(/consent\.list/);
  });
});
