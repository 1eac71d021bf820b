// What loading the configuration checks before anything runs: a source's country codes (an
// unknown one would leave every file stuck in `validating`) and the store's folder.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openRuntime } from '../../src/app/runtime.ts';
import { loadConfig, parseConfig } from '../../src/config/load.ts';
import { DroplineError, type ErrorCode } from '../../src/errors.ts';
import { silentLogger } from '../../src/log.ts';

let dir: string | null = null;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = null;
});

function errorOf(fn: () => unknown, code: ErrorCode = 'DROPLINE_ERR_CONFIG'): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DroplineError);
    expect((err as DroplineError).code).toBe(code);
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
}

const source = (extra: Record<string, unknown>) => ({
  sources: [
    { name: 'ok', type: 'local', path: './ok' },
    { name: 'partner', type: 'local', path: './partner', ...extra },
  ],
});

describe("a source's country codes", () => {
  it('known codes are accepted, in any case', () => {
    const config = parseConfig(source({ defaultCountry: 'mx', allowedCountries: ['CO', 'us'] }));
    expect(config.sources[1]?.defaultCountry).toBe('mx');
  });

  it('an unknown defaultCountry names the key and what is allowed', () => {
    expect(errorOf(() => parseConfig(source({ defaultCountry: 'XX' })))).toMatch(
      /sources\.partner\.defaultCountry: "XX" is not an ISO 3166 alpha-2 country code \(e\.g\. CO, MX, US\)/,
    );
  });

  it('an unknown code in allowedCountries names the key and the code', () => {
    expect(errorOf(() => parseConfig(source({ allowedCountries: ['CO', 'ZZ'] })))).toMatch(
      /sources\.partner\.allowedCountries: "ZZ" is not an ISO 3166 alpha-2 country code/,
    );
  });

  it('an empty allowedCountries is refused (it would reject every number)', () => {
    expect(errorOf(() => parseConfig(source({ allowedCountries: [] })))).toMatch(
      /sources\.partner\.allowedCountries: the list is empty/,
    );
  });
});

describe("the store's folder", () => {
  // Checked when a command opens the store (the notify token is kept in the store now, no
  // longer in a file that loading the configuration wrote beside it).
  it('under a regular file: DROPLINE_ERR_STORE naming the path, not a raw ENOTDIR', async () => {
    dir = mkdtempSync(join(tmpdir(), 'dropline-config-'));
    writeFileSync(join(dir, 'a-file'), 'not a folder\n');
    const path = join(dir, 'dropline.config.json');
    writeFileSync(path, JSON.stringify({ store: `sqlite:${join(dir, 'a-file', 'x', 'state.db')}` }));
    const opening = openRuntime(loadConfig({ path, env: {} }), { logger: silentLogger, sandbox: 'share' });
    const err = await opening.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DroplineError);
    expect((err as DroplineError).code).toBe('DROPLINE_ERR_STORE');
    expect((err as Error).message).toMatch(/a-file\/x.*a path in it is a file, not a folder \(ENOTDIR\)/);
  });
});

describe('the configuration file itself', () => {
  /** `text` in a fresh folder; `{store}` becomes a store there (its notify-token goes beside it). */
  function configFile(text: string): string {
    dir = mkdtempSync(join(tmpdir(), 'dropline-config-'));
    const path = join(dir, 'dropline.config.json');
    writeFileSync(path, text.replace('{store}', `sqlite:${join(dir, 'state.db')}`));
    return path;
  }

  it('not JSON: says where, and never quotes the text (a password written without its quotes)', () => {
    const path = configFile('{\n  "api": { "baseUrl": "https://api.example", "password": Zq7secretpw }\n}\n');
    const message = errorOf(() => loadConfig({ path, env: {} }));
    expect(message).toMatch(/is not valid JSON: an unexpected character .* at line 2, column 58$/);
    expect(message).not.toMatch(/Zq7|secretpw/);
    const comma = configFile('{\n  "api": { "baseUrl": "https://api.example", },\n}\n');
    expect(errorOf(() => loadConfig({ path: comma, env: {} }))).toMatch(/at line 2, column \d+/);
  });

  it('a byte-order mark at the start (a Windows editor) is read as the JSON it precedes', () => {
    const path = configFile(`\uFEFF${JSON.stringify({ api: { baseUrl: 'sandbox' }, store: '{store}' })}`);
    expect(loadConfig({ path, env: {} }).config.api.baseUrl).toBe('sandbox');
  });

  it('an empty api.password for a real service is refused as a missing one', () => {
    const path = configFile(JSON.stringify({ api: { baseUrl: 'https://api.example', password: '' } }));
    expect(errorOf(() => loadConfig({ path, env: {} }))).toMatch(/api\.password: required/);
    const set = configFile(
      JSON.stringify({ api: { baseUrl: 'https://api.example', password: 'pw' }, store: '{store}' }),
    );
    // DROPLINE_API_PASSWORD wins: a password file is then not read at all (here it is missing).
    const viaFile = configFile(
      JSON.stringify({
        api: { baseUrl: 'https://api.example', passwordFile: join(tmpdir(), 'no-such-pw') },
        store: '{store}',
      }),
    );
    expect(
      loadConfig({ path: viaFile, env: { DROPLINE_API_PASSWORD: 'from-env' } }).secrets.apiPassword,
    ).toBe('from-env');
    const earlier = dir!;
    const emptyFile = join(earlier, 'empty-pw');
    writeFileSync(emptyFile, '\n');
    const empty = configFile(
      JSON.stringify({ api: { baseUrl: 'https://api.example', passwordFile: emptyFile } }),
    );
    expect(errorOf(() => loadConfig({ path: empty, env: {} }))).toMatch(
      /api\.passwordFile: .*empty-pw is empty/,
    );
    rmSync(earlier, { recursive: true, force: true });
    // An empty DROPLINE_API_PASSWORD is unset: the file's password is used.
    expect(loadConfig({ path: set, env: { DROPLINE_API_PASSWORD: '' } }).secrets.apiPassword).toBe('pw');
  });
});

describe('a value that fits none of the forms a key takes', () => {
  it.each([
    [
      'a window name',
      { sendWindow: 'colombia' },
      /sendWindow: expected "colombia-commercial"; or expected object/,
    ],
    [
      'a day of a rule',
      { sendWindow: { timezone: 'UTC', rules: [{ days: ['funday'], from: '07:00', to: '19:00' }] } },
      /sendWindow\.rules\.0\.days\.0: .*expected one of "sun"\|"mon"/,
    ],
    [
      'a directive name',
      { sources: [{ name: 'a', type: 'local', path: './a', allowDirectives: ['nope'] }] },
      /sources\.0\.allowDirectives\.0: .*expected one of "message"/,
    ],
    [
      'neither true, false nor a list',
      { sources: [{ name: 'a', type: 'local', path: './a', allowDirectives: 'yes' }] },
      /allowDirectives: expected boolean, received string; or expected array/,
    ],
  ])('%s: names the key and what is allowed, never a bare "Invalid input"', (_name, raw, message) => {
    const said = errorOf(() => parseConfig(raw));
    expect(said).toMatch(message);
    expect(said).not.toMatch(/: Invalid input$/);
  });
});

describe('the notify token, when none is configured', () => {
  /** A configuration without notify.token in a fresh folder, its store beside it. */
  function tokenless(): string {
    dir = mkdtempSync(join(tmpdir(), 'dropline-token-'));
    const path = join(dir, 'dropline.config.json');
    writeFileSync(
      path,
      JSON.stringify({
        api: { baseUrl: 'http://127.0.0.1:9', password: 'pw' },
        store: `sqlite:${join(dir, 'state.db')}`,
        sources: [{ name: 'local', type: 'local', path: join(dir, 'drop') }],
      }),
    );
    return path;
  }
  const tokenOf = async (path: string): Promise<string> => {
    const rt = await openRuntime(loadConfig({ path, env: {} }), { logger: silentLogger, sandbox: 'share' });
    try {
      expect(new URL(rt.loaded.notifyUrl).searchParams.get('token')).toBe(rt.loaded.secrets.notifyToken);
      return rt.loaded.secrets.notifyToken;
    } finally {
      await rt.close();
    }
  };

  it('is generated once and kept in the store: every process on it has the same, no file is written', async () => {
    const path = tokenless();
    const first = await tokenOf(path);
    expect(first.length).toBeGreaterThanOrEqual(32);
    expect(await tokenOf(path)).toBe(first);
    expect(existsSync(join(dir!, 'notify-token'))).toBe(false);
  });

  it('the notify-token file an older dropline left beside the store is the one kept', async () => {
    const path = tokenless();
    writeFileSync(join(dir!, 'notify-token'), 'an-older-generated-token-0123456789\n');
    expect(await tokenOf(path)).toBe('an-older-generated-token-0123456789');
  });
});
