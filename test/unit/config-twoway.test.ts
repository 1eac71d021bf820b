// Issue 35: a two-way account (`channel: "twoway"`, the SMS host's credentials and a short
// code) and the sources' `shortCode`, allowed on sms and twoway sources only.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from '../../src/config/load.ts';
import { DroplineError } from '../../src/errors.ts';

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
  dir = mkdtempSync(join(tmpdir(), 'dropline-twoway-'));
  const path = join(dir, 'dropline.config.json');
  writeFileSync(path, JSON.stringify(raw));
  return loadConfig({ path, env: {} });
}

const account = {
  channel: 'twoway',
  baseUrl: 'https://sms.example.co',
  username: 'citas',
  shortCode: '890123',
};
const source = { name: 't', type: 'local', path: './t', channel: 'twoway', account: 'citas' };

describe('two-way accounts and short codes (issue 35)', () => {
  it('a two-way account takes a password (or passwordFile) and its short code', () => {
    const ok = load({ accounts: { citas: { ...account, password: 'clave' } }, sources: [source] });
    expect(ok.secrets.accountPasswords).toEqual({ citas: 'clave' });
    expect(ok.config.accounts.citas).toMatchObject({ channel: 'twoway', shortCode: '890123' });
    expect(configError(() => load({ accounts: { citas: account } }))).toContain(
      'accounts.citas.password: required (or accounts.citas.passwordFile)',
    );
    const { shortCode: _none, ...without } = account;
    expect(configError(() => parseConfig({ accounts: { citas: { ...without, password: 'x' } } }))).toContain(
      'shortCode',
    );
    expect(
      configError(() =>
        parseConfig({ accounts: { citas: { ...account, password: 'x', shortCode: '89-01' } } }),
      ),
    ).toContain('3 to 10 digits');
  });

  it('a twoway source needs a two-way account; shortCode only on sms and twoway sources', () => {
    const accounts = { citas: { ...account, password: 'x' } };
    expect(configError(() => parseConfig({ accounts, sources: [{ ...source, channel: 'sms' }] }))).toContain(
      'the source sends sms, account "citas" sends twoway',
    );
    const ok = parseConfig({
      accounts,
      sources: [
        { ...source, shortCode: '85000' },
        { name: 's', type: 'local', path: './s', shortCode: '890123' },
      ],
    });
    expect(ok.sources.map((s) => s.shortCode)).toEqual(['85000', '890123']);
    const rcs = { rcs: { channel: 'rcs', baseUrl: 'https://sms.example.co', username: 'u', password: 'x' } };
    expect(
      configError(() =>
        parseConfig({
          accounts: rcs,
          sources: [
            { name: 'r', type: 'local', path: './r', channel: 'rcs', account: 'rcs', shortCode: '85000' },
          ],
        }),
      ),
    ).toContain('only for channels sms, twoway');
  });
});
