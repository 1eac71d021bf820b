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
    [{ channel: 'whatsapp' }, 'only "sms" is supported so far'],
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
