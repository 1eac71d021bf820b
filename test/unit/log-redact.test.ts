// The process logger removes secrets by key wherever a log call passes one, at the top or one
// level down (test/adversarial/log-hygiene.test.ts checks what the daemon logs as a whole).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const LOG = join(import.meta.dirname, '..', '..', 'src', 'log.ts');

describe('createLogger', () => {
  it('redacts every secret key, also one level down, and keeps the rest', () => {
    const script = `
      const { createLogger } = await import(${JSON.stringify(LOG)});
      const log = createLogger({ level: 'info' });
      const keys = ['password', 'passphrase', 'token', 'accessToken', 'refreshToken', 'authorization',
        'notifyUrl', 'apiKey', 'secret', 'secretAccessKey', 'x-api-key'];
      const secrets = Object.fromEntries(keys.map((k) => [k, 'S3CR3T-' + k]));
      log.info({ ...secrets, nested: { ...secrets }, kept: 'visible' }, 'line');
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    const line = JSON.parse(r.stderr.trim()) as Record<string, unknown>;
    expect(line.kept).toBe('visible');
    expect(line.apiKey).toBe('[redacted]');
    expect((line.nested as Record<string, unknown>)['x-api-key']).toBe('[redacted]');
    expect(r.stderr).not.toContain('S3CR3T');
  });
});
