// infra/ cannot run here (no Docker): this checks its files against each other instead.
// infra/README.md's tables are the reference: every service, port, volume and secret they
// name must be in compose.yaml (and the other way round), the dropline service's config and
// mounts must refer to files that exist (or that secrets.sh makes), and the Dockerfile must
// be Node 24, multi-stage and non-root.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig, parseConfig } from '../../src/config/load.ts';

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

/** `${DROPLINE_PUBLISH_ADDR:-127.0.0.1}:8080:8080` → { address: '127.0.0.1', ports: '8080:8080' }. */
function published(spec: string): { address: string | null; ports: string } {
  const m = /^(?:\$\{DROPLINE_PUBLISH_ADDR:-([^}]+)\}|(\d+\.\d+\.\d+\.\d+)):(\d+:\d+)$/.exec(spec);
  return m ? { address: m[1] ?? m[2]!, ports: m[3]! } : { address: null, ports: spec };
}
const publishedPorts = (s: Service) => (s.ports ?? []).map((p) => published(p).ports);

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
        expect(publishedPorts(s!), `${r.service} ports`).toContain(
          `${r['host port']}:${r['container port']}`,
        );
      }
    }
    const documented = new Set(rows.map((r) => `${r.service} ${r['host port']}:${r['container port']}`));
    for (const [name, s] of Object.entries(services))
      for (const p of publishedPorts(s))
        expect(documented.has(`${name} ${p}`), `${name} ${p} documented`).toBe(true);
  });

  it('publishes every port on 127.0.0.1 unless DROPLINE_PUBLISH_ADDR says otherwise', () => {
    const specs = Object.values(services).flatMap((s) => s.ports ?? []);
    expect(specs.length).toBeGreaterThan(0);
    for (const spec of specs) expect(published(spec).address, spec).toBe('127.0.0.1');
    expect(readme).toContain('DROPLINE_PUBLISH_ADDR');
  });

  it('pins every image it pulls to a version (no latest, no floating tag)', () => {
    const pulled = Object.values(services)
      .filter((s) => s.build === undefined)
      .map((s) => s.image!);
    expect(pulled.length).toBeGreaterThan(0);
    for (const image of pulled) {
      const tag = image.split(':')[1] ?? '';
      expect(tag, image).toMatch(/\d/);
      expect(tag, image).not.toMatch(/latest/);
    }
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

  it('mounts the configuration its command names, and only files that exist in infra/ (or secrets.sh makes)', () => {
    expect(configMount).toBeDefined();
    const target = configMount!.split(':')[1]!;
    const cmd = dropline.command ?? [];
    expect(cmd[cmd.indexOf('--config') + 1]).toBe(target);
    expect(cmd.at(-1)).toBe('run');
    for (const v of dropline.volumes ?? []) {
      const src = v.split(':')[0]!;
      // Files under secrets/ are secrets.sh's (checked below).
      if (src.startsWith('./secrets/')) continue;
      if (src.startsWith('.')) expect(existsSync(join(INFRA, src)), `${src} exists in infra/`).toBe(true);
      else expect(compose.volumes).toHaveProperty(src);
    }
  });

  it('its configuration parses, publishes the ops and notify ports, and reads secrets it is given', () => {
    const parsed = parseConfig(config);
    const port = (listen: string) => listen.slice(listen.lastIndexOf(':') + 1);
    expect(publishedPorts(dropline)).toContain(`${port(parsed.ops.listen)}:${port(parsed.ops.listen)}`);
    expect(publishedPorts(dropline)).toContain(`${port(parsed.notify.listen)}:${port(parsed.notify.listen)}`);
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

  it('its SFTP and S3 sources wait for a marker, as docs/sources.md advises for partners', () => {
    const remote = parseConfig(config).sources.filter((s) => s.type !== 'local');
    expect(remote.map((s) => s.type).sort()).toEqual(['s3', 'sftp']);
    for (const s of remote) expect(s.readiness, s.name).toBe('marker');
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
  const tracked = () =>
    readdirSync(INFRA, { recursive: true, encoding: 'utf8' })
      .filter((f) => !f.startsWith('secrets') && statSync(join(INFRA, f)).isFile())
      .map((f) => `${f} ${readFileSync(join(INFRA, f), 'utf8')}`)
      .sort();

  it('writes every file compose needs, edits no tracked file, and keeps keys OpenSSH will load', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dropline-infra-'));
    const secrets = join(dir, 'secrets');
    try {
      const before = tracked();
      execFileSync('sh', [join(INFRA, 'secrets.sh')], {
        env: { ...process.env, SECRETS_DIR: secrets },
        stdio: 'pipe',
      });
      expect(tracked()).toEqual(before);
      const made = new Set(await readdir(secrets));
      const needed = [
        ...Object.values(compose.secrets ?? {}).map((s) => s.file),
        ...Object.values(services).flatMap((s) => (s.volumes ?? []).map((v) => v.split(':')[0]!)),
      ]
        .filter((f) => f.startsWith('./secrets/'))
        .map((f) => f.slice('./secrets/'.length));
      for (const f of needed) expect(made.has(f), f).toBe(true);
      // Nobody else on the host can enter the folder; the keys used from the host are 0600.
      expect(statSync(secrets).mode & 0o777).toBe(0o700);
      for (const key of ['partner_key', 'sftp_host_ed25519_key'])
        expect(statSync(join(secrets, key)).mode & 0o777, key).toBe(0o600);
      // The README's `sftp -i infra/secrets/partner_key`: OpenSSH refuses a key others can read.
      const derived = execFileSync('ssh-keygen', ['-y', '-f', join(secrets, 'partner_key')]).toString();
      const pub = readFileSync(join(secrets, 'partner_key.pub'), 'utf8');
      expect(derived.split(' ').slice(0, 2)).toEqual(pub.split(' ').slice(0, 2));
      const creds = readFileSync(join(secrets, 'aws_credentials'), 'utf8');
      expect(creds).toContain(readFileSync(join(secrets, 'minio_root_password'), 'utf8').trim());
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the host key it writes is what dropline pins through hostKeyFile', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dropline-infra-'));
    const secrets = join(dir, 'secrets');
    try {
      execFileSync('sh', [join(INFRA, 'secrets.sh')], { env: { ...process.env, SECRETS_DIR: secrets } });
      const pub = join(secrets, 'sftp_host_ed25519_key.pub');
      const sftp = (config.sources as { type: string; hostKeyFile?: string }[]).find(
        (s) => s.type === 'sftp',
      )!;
      // compose mounts the key where the configuration reads it.
      expect(dropline.volumes).toContain(`./secrets/sftp_host_ed25519_key.pub:${sftp.hostKeyFile}:ro`);
      const file = join(dir, 'dropline.config.json');
      writeFileSync(
        file,
        JSON.stringify({
          store: `sqlite:${join(dir, 'state.db')}`,
          sources: [{ ...sftp, hostKeyFile: pub }],
        }),
      );
      const loaded = loadConfig({ path: file, env: { DROPLINE_NOTIFY_TOKEN: 'x'.repeat(24) } });
      const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', pub])
        .toString()
        .split(' ')[1];
      expect(loaded.config.sources[0]).toMatchObject({ hostKeySha256: fingerprint });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
