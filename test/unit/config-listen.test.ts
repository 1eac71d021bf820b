// Listen addresses and the notify token are checked when the configuration loads, before
// anything starts (issue 10 item 10): a mistake is a DROPLINE_ERR_CONFIG naming the key.
import { describe, expect, it } from 'vitest';
import { loadConfig, parseConfig, splitListen } from '../../src/config/load.ts';
import { DroplineError } from '../../src/errors.ts';

function configError(raw: unknown): string {
  try {
    parseConfig(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(DroplineError);
    expect((err as DroplineError).code).toBe('DROPLINE_ERR_CONFIG');
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('listen addresses in the configuration', () => {
  it.each([
    ['ops', 'localhost'],
    ['ops', '127.0.0.1:99999'],
    ['ops', '127.0.0.1:'],
    ['ops', '127.0.0.1:80a'],
    ['ops', ':8080'],
    ['ops', 'a b:8080'],
    ['notify', '::1:8081'],
    ['notify', '[::1:8081'],
    ['notify', ''],
  ])('%s.listen %j is refused at load', (key, listen) => {
    const raw = key === 'ops' ? { ops: { listen } } : { notify: { listen } };
    expect(configError(raw)).toMatch(new RegExp(`${key}\\.listen`));
  });

  it.each([
    ['127.0.0.1:8080', '127.0.0.1', 8080],
    ['0.0.0.0:0', '0.0.0.0', 0],
    ['localhost:8080', 'localhost', 8080],
    ['[::1]:8081', '::1', 8081],
    ['dropline.internal:65535', 'dropline.internal', 65535],
  ] as const)('%s is host %s port %d', (listen, host, port) => {
    // Off loopback the ops API needs a token (issue 10 item 16): given here, so only the address is under test.
    const config = parseConfig({ ops: { listen, token: 'x'.repeat(32) }, notify: { listen } });
    expect(splitListen(config.ops.listen, 'ops.listen')).toEqual([host, port]);
  });
});

describe('the notify token', () => {
  it('an empty token is refused at load', () => {
    expect(configError({ notify: { token: '' } })).toMatch(/notify\.token/);
  });
});

describe('ops.tokenFile', () => {
  it('is read when the configuration loads; an empty one is refused there', async () => {
    const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = await mkdtemp(join(tmpdir(), 'dropline-ops-token-'));
    try {
      const tokenFile = join(dir, 'ops_token');
      const config = join(dir, 'dropline.config.json');
      await writeFile(config, JSON.stringify({ ops: { listen: '0.0.0.0:8080', tokenFile } }));
      const env = { DROPLINE_NOTIFY_TOKEN: 'n'.repeat(24) };
      await writeFile(tokenFile, 'the-ops-token-0123456789\n');
      expect(loadConfig({ path: config, env }).secrets.opsToken).toBe('the-ops-token-0123456789');
      await writeFile(tokenFile, '\n');
      expect(() => loadConfig({ path: config, env })).toThrow(/ops\.tokenFile/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
