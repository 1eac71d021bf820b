import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/errors.ts';
import { sqliteMigrations as loadMigrations } from '../../src/store/sqlite/connection.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { BIN, freePort } from '../helpers/pipeline-harness.ts';
import { BOUND_MS, runDaemon } from '../helpers/run-daemon.ts';

describe('dropline run: start-up errors end the process at once', () => {
  let dir = '';
  let held: Server;
  let heldPort = 0;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dropline-startup-'));
    held = createServer();
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', r));
    heldPort = (held.address() as { port: number }).port;
    await writeFile(join(dir, 'a-file'), 'not a folder\n');
    await mkdir(join(dir, 'drop'), { recursive: true });
    // A store folder whose notify-token is a folder, not the token file.
    await mkdir(join(dir, 'token-folder', 'notify-token'), { recursive: true });
  });
  afterAll(async () => {
    held.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function base(): Promise<Record<string, unknown>> {
    return {
      notify: { listen: `127.0.0.1:${await freePort()}`, token: 'a-long-enough-notify-token' },
      ops: { listen: `127.0.0.1:${await freePort()}` },
      store: `sqlite:${join(dir, 'state.db')}`,
      sources: [{ name: 'local', type: 'local', path: join(dir, 'drop') }],
    };
  }

  const cases: [string, (c: Record<string, unknown>) => void, RegExp][] = [
    [
      'notify port in use',
      (c) => {
        c.notify = { listen: `127.0.0.1:${heldPort}`, token: 'a-long-enough-notify-token' };
      },
      /DROPLINE_ERR_NOTIFY_LISTEN/,
    ],
    [
      'ops port in use',
      (c) => {
        c.ops = { listen: `127.0.0.1:${heldPort}` };
      },
      /DROPLINE_ERR_OPS_LISTEN/,
    ],
    [
      'ops.listen not host:port',
      (c) => {
        c.ops = { listen: 'localhost' };
      },
      /DROPLINE_ERR_CONFIG: .*ops\.listen/,
    ],
    [
      'ops.listen port out of range',
      (c) => {
        c.ops = { listen: '127.0.0.1:99999' };
      },
      /DROPLINE_ERR_CONFIG: .*ops\.listen/,
    ],
    [
      'notify.listen without a host',
      (c) => {
        c.notify = { listen: ':8081', token: 'a-long-enough-notify-token' };
      },
      /DROPLINE_ERR_CONFIG: .*notify\.listen/,
    ],
    [
      'an empty notify token',
      (c) => {
        (c.notify as Record<string, unknown>).token = '';
      },
      /DROPLINE_ERR_CONFIG: .*notify\.token/,
    ],
    [
      'a source path that is a file',
      (c) => {
        c.sources = [{ name: 'local', type: 'local', path: join(dir, 'a-file') }];
      },
      /DROPLINE_ERR_CONFIG: .*sources\.local/,
    ],
    [
      'a missing suppression list',
      (c) => {
        c.suppressionList = join(dir, 'no-such-optouts.txt');
      },
      /DROPLINE_ERR_SUPPRESSION_LIST/,
    ],
    [
      'a missing consent list',
      (c) => {
        c.consent = { list: join(dir, 'no-such-consent.txt') };
      },
      /DROPLINE_ERR_CONSENT_LIST: the consent list cannot be read: consent\.list \(/,
    ],
    [
      'a missing SFTP key',
      (c) => {
        c.sources = [
          {
            name: 'partner',
            type: 'sftp',
            host: '127.0.0.1',
            username: 'u',
            privateKeyPath: join(dir, 'no-such-key'),
            insecureSkipHostKeyCheck: true,
            path: '/drop',
          },
        ];
      },
      /DROPLINE_ERR_CONFIG: .*privateKeyPath/,
    ],
    [
      'a store under a regular file',
      (c) => {
        c.store = `sqlite:${join(dir, 'a-file')}/x/state.db`;
      },
      /DROPLINE_ERR_STORE: .*a-file\/x.*a file, not a folder/,
    ],
    [
      'a store under a regular file, the notify token generated',
      (c) => {
        c.store = `sqlite:${join(dir, 'a-file')}/x/state.db`;
        delete (c.notify as Record<string, unknown>).token;
      },
      /DROPLINE_ERR_STORE: .*a-file\/x.*a file, not a folder/,
    ],
    [
      'a notify-token that is a folder',
      (c) => {
        c.store = `sqlite:${join(dir, 'token-folder', 'state.db')}`;
        delete (c.notify as Record<string, unknown>).token;
      },
      /DROPLINE_ERR_STORE: .*notify-token.*a folder/,
    ],
    [
      "a source's unknown defaultCountry",
      (c) => {
        c.sources = [{ name: 'local', type: 'local', path: join(dir, 'drop'), defaultCountry: 'XX' }];
      },
      /DROPLINE_ERR_CONFIG: .*sources\.local\.defaultCountry: "XX"/,
    ],
    [
      "a source's unknown allowedCountries",
      (c) => {
        c.sources = [
          { name: 'local', type: 'local', path: join(dir, 'drop'), allowedCountries: ['CO', 'ZZ'] },
        ];
      },
      /DROPLINE_ERR_CONFIG: .*sources\.local\.allowedCountries: "ZZ"/,
    ],
    [
      "a source's empty allowedCountries",
      (c) => {
        c.sources = [{ name: 'local', type: 'local', path: join(dir, 'drop'), allowedCountries: [] }];
      },
      /DROPLINE_ERR_CONFIG: .*sources\.local\.allowedCountries: the list is empty/,
    ],
  ];

  it.each(cases)('%s', async (_name, edit, code) => {
    const config = await base();
    edit(config);
    const ended = await runDaemon(dir, config);
    expect(ended.hung, `still running after ${BOUND_MS} ms; stderr:\n${ended.stderr}`).toBe(false);
    expect(ended.code).not.toBe(0);
    expect(ended.stderr).toMatch(code);
    expect(ended.stderr).not.toMatch(/unexpected error/);
    expect(ended.stdout).not.toMatch(/dropline is running/);
  });

  it('dropline status with a store under a regular file: DROPLINE_ERR_STORE, no stack trace', async () => {
    const config = await base();
    config.store = `sqlite:${join(dir, 'a-file')}/x/state.db`;
    delete (config.notify as Record<string, unknown>).token;
    const path = join(dir, 'status-config.json');
    await writeFile(path, JSON.stringify(config));
    const r = await new Promise<{ code: number; stderr: string }>((done) => {
      execFile(
        process.execPath,
        [BIN, '--config', path, 'status'],
        { cwd: dir, timeout: BOUND_MS },
        (err, _out, stderr) =>
          done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr }),
      );
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/DROPLINE_ERR_STORE: .*a-file\/x/);
    expect(r.stderr).toContain(ERRORS.DROPLINE_ERR_STORE.hint);
    expect(r.stderr).not.toMatch(/unexpected error/);
  });

  it('a store whose schema is newer than this dropline: DROPLINE_ERR_STORE_SCHEMA with its hint', async () => {
    const config = await base();
    const path = join(dir, 'newer.db');
    config.store = `sqlite:${path}`;
    // A newer dropline migrated it one version further.
    const newer = new SqliteStore({
      path,
      migrations: [
        ...loadMigrations(),
        { version: 999, name: 'future', sql: 'CREATE TABLE future (x INTEGER)' },
      ],
    });
    await newer.migrate();
    await newer.close();
    const ended = await runDaemon(dir, config);
    expect(ended.hung, `still running after ${BOUND_MS} ms; stderr:\n${ended.stderr}`).toBe(false);
    expect(ended.code).not.toBe(0);
    expect(ended.stderr).toMatch(/DROPLINE_ERR_STORE_SCHEMA: .*schema version 999/);
    expect(ended.stderr).toContain(ERRORS.DROPLINE_ERR_STORE_SCHEMA.hint);
    expect(ended.stdout).not.toMatch(/dropline is running/);
  });
});
