// `dropline validate --source` answers what the daemon will do with a file of an email or
// WhatsApp source (issue 15): the source's channel and content apply, and an email file's
// templateId is checked against the account's stored templates (GET /email/v1/templates) as
// the daemon checks it. Real processes, a real config file, the sandbox on loopback.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/server.ts';
import { runCli } from '../helpers/cli.ts';
import { closedPort } from '../service/helpers.ts';

let dir = '';
let config = '';
let sandbox: Sandbox;

const validate = (...args: string[]) =>
  runCli(['validate', '--config', config, ...args], { cwd: dir, env: { DROPLINE_CONFIG: '' } });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-validate-channels-'));
  sandbox = await startSandbox({ notify: false });
  const drop = join(dir, 'drop');
  config = join(dir, 'dropline.config.json');
  await writeFile(
    config,
    JSON.stringify({
      accounts: {
        mail: { channel: 'email', baseUrl: sandbox.url, apiKey: 'demo-email-key', from: 'a@empresa.co' },
        lejos: {
          channel: 'email',
          baseUrl: `http://127.0.0.1:${await closedPort()}`,
          apiKey: 'k',
          from: 'a@empresa.co',
        },
        wa: {
          channel: 'whatsapp',
          baseUrl: sandbox.url,
          username: 'demo',
          password: 'demo',
          source: '573001112233',
        },
      },
      sources: [
        {
          name: 'correo',
          type: 'local',
          path: drop,
          channel: 'email',
          account: 'mail',
          email: { templateId: 'invoice' },
        },
        {
          name: 'lejano',
          type: 'local',
          path: drop,
          channel: 'email',
          account: 'lejos',
          email: { templateId: 'invoice' },
        },
        {
          name: 'wa',
          type: 'local',
          path: drop,
          channel: 'whatsapp',
          account: 'wa',
          whatsapp: { templateId: 'factura' },
        },
      ],
    }),
  );
  await writeFile(join(dir, 'correo.txt'), 'correo;nombre\nana@example.com;Ana\nluis@example.com;Luis\n');
  await writeFile(
    join(dir, 'vieja.txt'),
    '#! templateId: factura-vieja\ncorreo;nombre\nana@example.com;Ana\n',
  );
  await writeFile(join(dir, 'wa.txt'), 'numero;1;2\n3001234567;Ana;$1.000\n');
});

afterAll(async () => {
  await sandbox?.close();
  await rm(dir, { recursive: true, force: true });
});

it("an email source's file is read as email, with the source's template, checked on the service", async () => {
  const r = await validate('--source', 'correo', join(dir, 'correo.txt'));
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(r.stdout).toContain('ACCEPTED');
  expect(r.stdout).toContain('channel email');
  expect(r.stdout).toContain('template invoice (stored on the service; the account has it)');
  expect(r.stdout).toContain('2 valid');
});

it('a templateId the account does not have: REJECTED UNKNOWN_TEMPLATE naming its templates, exit 1', async () => {
  const r = await validate('--source', 'correo', '--json', join(dir, 'vieja.txt'));
  expect(r.code).toBe(1);
  const s = JSON.parse(r.stdout) as { accepted: boolean; rejection: { code: string; message: string } };
  expect(s.accepted).toBe(false);
  expect(s.rejection.code).toBe('UNKNOWN_TEMPLATE');
  expect(s.rejection.message).toContain(
    'line 1: the email account has no template factura-vieja (its templates: welcome, invoice)',
  );
});

it('the templates cannot be listed (the service away): the file is judged without them, and validate says so', async () => {
  const r = await validate('--source', 'lejano', join(dir, 'correo.txt'));
  expect(r.code).toBe(0);
  expect(r.stdout).toContain('ACCEPTED');
  expect(r.stdout).toMatch(/template invoice \(stored on the service; not checked: .+\)/);
});

it("a WhatsApp source's file takes the source's template", async () => {
  const r = await validate('--source', 'wa', join(dir, 'wa.txt'));
  expect(r.code).toBe(0);
  expect(r.stdout).toContain('channel whatsapp');
  expect(r.stdout).toContain('template factura');
});
