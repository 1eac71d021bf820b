// infra/ cannot run here (no Docker): this checks its files against each other instead.
// infra/README.md's tables are the reference: every service, port, volume and secret they
// name must be in compose.yaml (and the other way round), the dropline service's config and
// mounts must refer to files that exist (or that secrets.sh makes), and the Dockerfile must
// be Node 24, multi-stage and non-root.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../src/config/load.ts';

const INFRA = resolve(import.meta.dirname, '../../infra');
const readme = readFileSync(join(INFRA, 'README.md'), 'utf8');
const dockerfile = readFileSync(join(INFRA, 'Dockerfile'), 'utf8');
const secretsScript = readFileSync(join(INFRA, 'secrets.sh'), 'utf8');

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  secrets?: string[];
  volumes?: string[];
  ports?: string[];
  network_mode?: string;
  depends_on?: string[] | Record<string, { condition: string }>;
}
interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
  secrets?: Record<string, { file: string }>;
}
const compose = parse(readFileSync(join(INFRA, 'compose.yaml'), 'utf8')) as Compose;
const config = JSON.parse(readFileSync(join(INFRA, 'dropline.config.json'), 'utf8')) as Record<
  string,
  unknown
>;

/** The rows of the first markdown table after `## <heading>`, keyed by its header cells. */
function table(heading: string): Record<string, string>[] {
  const start = readme.indexOf(`\n## ${heading}\n`);
  expect(start, `infra/README.md has a "## ${heading}" section`).toBeGreaterThan(-1);
  const lines = readme.slice(start).split('\n').slice(2);
  const first = lines.findIndex((l) => l.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );
  }
  const [header, , ...body] = rows;
  return body.map((r) => Object.fromEntries(header!.map((h, i) => [h, (r[i] ?? '').replaceAll('`', '')])));
}

const services = compose.services;
const dropline = services.dropline!;

describe('infra/README.md against compose.yaml', () => {
  it('names every service, and every service is named', () => {
    const named = table('Services').map((r) => r.service);
    expect(named.sort()).toEqual(Object.keys(services).sort());
    for (const r of table('Services')) {
      const image = services[r.service!]!.image ?? '';
      // "minio/minio" in the README, "minio/minio:latest" in compose; the repo's own image by name.
      expect(image.startsWith(r.image!.split(' ')[0]!)).toBe(true);
    }
  });

  it('every port it names is published by that service (or, unpublished, is where the service listens)', () => {
    const rows = table('Ports');
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      const s = services[r.service!];
      expect(s, `service ${r.service}`).toBeDefined();
      if (r['host port'] === 'none') {
        expect(s!.ports ?? []).toEqual([]);
        expect(s!.command ?? []).toContain(r['container port']);
      } else {
        expect(s!.ports, `${r.service} ports`).toContain(`${r['host port']}:${r['container port']}`);
      }
    }
    const documented = new Set(rows.map((r) => `${r.service} ${r['host port']}:${r['container port']}`));
    for (const [name, s] of Object.entries(services))
      for (const p of s.ports ?? [])
        expect(documented.has(`${name} ${p}`), `${name} ${p} documented`).toBe(true);
  });

  it('every volume it names exists and is mounted where it says; every named volume is documented', () => {
    const rows = table('Volumes');
    for (const r of rows) {
      expect(compose.volumes, 'top-level volumes').toHaveProperty(r.volume!);
      const mounts = services[r.service!]!.volumes ?? [];
      expect(
        mounts.some(
          (m) => m === `${r.volume}:${r['mounted at']}` || m.startsWith(`${r.volume}:${r['mounted at']}:`),
        ),
        `${r.service} mounts ${r.volume} at ${r['mounted at']}`,
      ).toBe(true);
    }
    expect(rows.map((r) => r.volume).sort()).toEqual(Object.keys(compose.volumes ?? {}).sort());
  });

  it('every secret it names is defined and given to the services that use it', () => {
    const rows = table('Secrets');
    expect(rows.map((r) => r.secret).sort()).toEqual(Object.keys(compose.secrets ?? {}).sort());
    for (const r of rows) {
      const users = r['used by']!.split(',').map((u) => u.trim());
      for (const u of users) expect(services[u]!.secrets, `${u} has ${r.secret}`).toContain(r.secret);
    }
  });

  it('the sandbox is reachable where the configuration says', () => {
    const sandbox = services.sandbox!;
    expect(sandbox.command?.slice(0, 3)).toEqual(['sandbox', '--port', '9090']);
    expect(sandbox.network_mode).toBe('service:dropline');
    const api = config.api as { baseUrl: string };
    expect(api.baseUrl).toBe('http://127.0.0.1:9090');
  });
});

describe('the dropline service', () => {
  const configMount = (dropline.volumes ?? []).find((v) => v.startsWith('./dropline.config.json:'));

  it('mounts the configuration its command names, and only files that exist in infra/', () => {
    expect(configMount).toBeDefined();
    const target = configMount!.split(':')[1]!;
    const cmd = dropline.command ?? [];
    expect(cmd[cmd.indexOf('--config') + 1]).toBe(target);
    expect(cmd.at(-1)).toBe('run');
    for (const v of dropline.volumes ?? []) {
      const src = v.split(':')[0]!;
      if (src.startsWith('.')) expect(existsSync(join(INFRA, src)), `${src} exists in infra/`).toBe(true);
      else expect(compose.volumes).toHaveProperty(src);
    }
  });

  it('its configuration parses, publishes the ops and notify ports, and reads secrets it is given', () => {
    const parsed = parseConfig(config);
    const port = (listen: string) => listen.slice(listen.lastIndexOf(':') + 1);
    expect(dropline.ports).toContain(`${port(parsed.ops.listen)}:${port(parsed.ops.listen)}`);
    expect(dropline.ports).toContain(`${port(parsed.notify.listen)}:${port(parsed.notify.listen)}`);
    expect(parsed.ops.listen.startsWith('0.0.0.0:')).toBe(true);
    // No inline secret: the api password and notify token come from files.
    expect(config.api).not.toHaveProperty('password');
    expect(config.notify).not.toHaveProperty('token');
    const paths: string[] = [];
    const walk = (v: unknown): void => {
      if (typeof v === 'string' && v.startsWith('/run/secrets/')) paths.push(v);
      else if (v && typeof v === 'object') for (const x of Object.values(v)) walk(x);
    };
    walk(config);
    walk(dropline.environment);
    expect(paths.length).toBeGreaterThanOrEqual(4);
    for (const p of paths) expect(dropline.secrets, p).toContain(p.slice('/run/secrets/'.length));
  });

  it('every secret and bind-mounted file under secrets/ is one secrets.sh writes', () => {
    const files = [
      ...Object.values(compose.secrets ?? {}).map((s) => s.file),
      ...Object.values(services).flatMap((s) => (s.volumes ?? []).map((v) => v.split(':')[0]!)),
    ].filter((f) => f.startsWith('./secrets/'));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const name = f.slice('./secrets/'.length);
      const base = name.replace(/\.pub$/, '');
      expect(secretsScript.includes(`$dir/${name}`) || secretsScript.includes(`$dir/${base}`), name).toBe(
        true,
      );
    }
  });
});

describe('infra/Dockerfile', () => {
  const lines = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const args = Object.fromEntries(
    lines
      .filter((l) => l.startsWith('ARG ') && l.includes('='))
      .map((l) => l.slice(4).split('=') as [string, string]),
  );
  const froms = lines
    .filter((l) => l.startsWith('FROM '))
    .map((l) => l.split(/\s+/)[1]!.replace(/^\$\{(\w+)\}$/, (_, k: string) => args[k] ?? ''));

  it('is multi-stage on a Node 24 base', () => {
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const f of froms) expect(f).toMatch(/^node:24(\b|[-.])/);
  });

  it('installs production dependencies with npm ci in the build stage', () => {
    expect(lines.some((l) => l.startsWith('RUN ') && l.includes('npm ci --omit=dev'))).toBe(true);
  });

  it('runs as a non-root user, dropline as entry point, the compile cache writable, with a health check', () => {
    const finalStage = lines.slice(lines.findLastIndex((l) => l.startsWith('FROM ')));
    const user = finalStage.filter((l) => l.startsWith('USER ')).at(-1);
    expect(user).toBeDefined();
    expect(user!.slice(5).trim()).not.toMatch(/^(root|0)(:|$)/);
    const entry = finalStage.find((l) => l.startsWith('ENTRYPOINT '))!;
    expect(entry).toContain('bin/dropline.js');
    expect(finalStage.find((l) => l.startsWith('CMD '))).toContain('"run"');
    const cache = finalStage
      .find((l) => l.includes('NODE_COMPILE_CACHE='))!
      .match(/NODE_COMPILE_CACHE=(\S+)/)![1]!;
    const chown = finalStage.find((l) => l.startsWith('RUN ') && l.includes('chown'))!;
    expect(chown).toContain(cache.split('/').slice(0, 4).join('/'));
    expect(finalStage.find((l) => l.startsWith('HEALTHCHECK '))).toContain('/healthz');
  });
});

describe('infra/secrets.sh', () => {
  const hasKeygen = (() => {
    try {
      execFileSync('ssh-keygen', ['-?'], { stdio: 'ignore' });
      return true;
    } catch (err) {
      // ssh-keygen -? exits 1 after printing its usage: present.
      return (err as NodeJS.ErrnoException).code !== 'ENOENT';
    }
  })();

  it.skipIf(!hasKeygen)(
    'writes every file compose needs and pins the new host key in the config',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'dropline-infra-'));
      try {
        const cfg = join(dir, 'dropline.config.json');
        await copyFile(join(INFRA, 'dropline.config.json'), cfg);
        execFileSync('sh', [join(INFRA, 'secrets.sh')], {
          env: { ...process.env, SECRETS_DIR: join(dir, 'secrets'), CONFIG: cfg },
          stdio: 'pipe',
        });
        const made = new Set(await readdir(join(dir, 'secrets')));
        const needed = [
          ...Object.values(compose.secrets ?? {}).map((s) => s.file),
          ...Object.values(services).flatMap((s) => (s.volumes ?? []).map((v) => v.split(':')[0]!)),
        ]
          .filter((f) => f.startsWith('./secrets/'))
          .map((f) => f.slice('./secrets/'.length));
        for (const f of needed) expect(made.has(f), f).toBe(true);
        const pinned = JSON.parse(readFileSync(cfg, 'utf8')) as { sources: { hostKeySha256?: string }[] };
        const fingerprint = execFileSync('ssh-keygen', [
          '-l',
          '-E',
          'sha256',
          '-f',
          join(dir, 'secrets', 'sftp_host_ed25519_key.pub'),
        ])
          .toString()
          .split(' ')[1];
        expect(pinned.sources.find((s) => s.hostKeySha256)?.hostKeySha256).toBe(fingerprint);
        const creds = readFileSync(join(dir, 'secrets', 'aws_credentials'), 'utf8');
        expect(creds).toContain(readFileSync(join(dir, 'secrets', 'minio_root_password'), 'utf8').trim());
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
