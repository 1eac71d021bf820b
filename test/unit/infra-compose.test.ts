// infra/ cannot run here (no Docker): this checks its files against each other instead.
// infra/README.md's tables are the reference: every service, port, volume and secret they
// name must be in compose.yaml (and the other way round), the dropline workers' config and
// mounts must refer to files that exist (or that secrets.sh makes), the two workers must be
// one definition on the postgres service's store (its URL, password included, in the store_url
// secret secrets.sh makes, which storeFile names), the balancer's nginx.conf must name both
// workers' ports, and the Dockerfile must be Node 24, multi-stage and non-root.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig, parseConfig } from '../../src/config/load.ts';
import { parseStoreUrl } from '../../src/store/url.ts';

const INFRA = resolve(import.meta.dirname, '../../infra');
const readme = readFileSync(join(INFRA, 'README.md'), 'utf8');
const dockerfile = readFileSync(join(INFRA, 'Dockerfile'), 'utf8');
const secretsScript = readFileSync(join(INFRA, 'secrets.sh'), 'utf8');
const nginxConf = readFileSync(join(INFRA, 'balancer', 'nginx.conf'), 'utf8');

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  entrypoint?: string[];
  command?: string[];
  hostname?: string;
  environment?: Record<string, string>;
  secrets?: string[];
  volumes?: string[];
  ports?: string[];
  network_mode?: string;
  networks?: unknown;
  depends_on?: string[] | Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  restart?: string;
  stop_grace_period?: string;
}
interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
  secrets?: Record<string, { file: string }>;
}
// Compose resolves YAML merge keys (`<<: *dropline`); the yaml package does when asked.
const compose = parse(readFileSync(join(INFRA, 'compose.yaml'), 'utf8'), { merge: true }) as Compose;
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

/** infra/secrets.sh, run in `dir` (its SECRETS_DIR). */
function runSecretsScript(dir: string, ...args: string[]) {
  return spawnSync('sh', [join(INFRA, 'secrets.sh'), ...args], {
    env: { ...process.env, SECRETS_DIR: dir },
    encoding: 'utf8',
  });
}
function secretsScriptIn(dir: string, ...args: string[]): void {
  const run = runSecretsScript(dir, ...args);
  expect(run.status, `secrets.sh: ${run.stderr}`).toBe(0);
}

// The files the containers read, as secrets.sh makes them: the store's URL is one of them.
const made = mkdtempSync(join(tmpdir(), 'dropline-infra-'));
afterAll(() => rmSync(made, { recursive: true, force: true }));
const madeSecrets = join(made, 'secrets');
/** The file secrets.sh made for a compose secret, by the secret's name. */
const secretFile = (name: string) =>
  join(
    madeSecrets,
    compose.secrets?.[name]?.file.replace(/^\.\/secrets\//, '') ?? `(no secret ${name} in compose.yaml)`,
  );
/** The secret a `/run/secrets/<name>` path of the configuration names. */
const secretName = (path: string) => path.replace(/^\/run\/secrets\//, '');
/** What the workers' storeFile holds (their `store`, were it given inline instead). */
let storeUrl: string;
try {
  secretsScriptIn(madeSecrets);
  storeUrl =
    typeof config.storeFile === 'string'
      ? readFileSync(secretFile(secretName(config.storeFile)), 'utf8').trim()
      : String(config.store);
} catch (err) {
  // afterAll does not run when the file fails to load.
  rmSync(made, { recursive: true, force: true });
  throw err;
}

const services = compose.services;
/** The dropline workers: services of this repo's image whose command is `run`. */
const workerNames = Object.keys(services).filter(
  (n) => services[n]!.image === 'dropline:local' && services[n]!.command?.at(-1) === 'run',
);
const workers = workerNames.map((n) => services[n]!);
const dropline = workers[0]!;
const parsedConfig = parseConfig(config);
const listenPort = (listen: string) => listen.slice(listen.lastIndexOf(':') + 1);
const opsPort = listenPort(parsedConfig.ops.listen);
const notifyPort = listenPort(parsedConfig.notify.listen);

/** The services a service waits for, with the condition (`service_started` for the short form). */
function dependsOn(s: Service): Record<string, string> {
  const d = s.depends_on ?? [];
  return Array.isArray(d)
    ? Object.fromEntries(d.map((n) => [n, 'service_started']))
    : Object.fromEntries(Object.entries(d).map(([n, c]) => [n, c.condition]));
}

/** The mount of a file of infra/ (`./x:/target[:ro]`) in a service: its target. */
function mountTarget(s: Service, file: string): string | undefined {
  return (s.volumes ?? []).find((v) => v.startsWith(`${file}:`))?.split(':')[1];
}

// ---- balancer/nginx.conf, as a tree of directives ----
interface Directive {
  name: string;
  args: string[];
  block?: Directive[];
}

/** nginx's syntax as far as this file needs it: words, quoted strings, `;`, `{ }`, comments. */
function parseNginx(text: string): Directive[] {
  const tokens = [...text.matchAll(/#[^\n]*|'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|([{};])|([^\s{};'"#]+)/g)]
    .filter((m) => !m[0].startsWith('#'))
    .map((m) => ({ text: m[1] ?? m[2] ?? m[3] ?? m[4]!, punct: m[3] !== undefined }));
  let i = 0;
  const block = (): Directive[] => {
    const out: Directive[] = [];
    while (i < tokens.length) {
      const t = tokens[i++]!;
      if (t.punct && t.text === '}') return out;
      const d: Directive = { name: t.text, args: [] };
      while (i < tokens.length && !tokens[i]!.punct) d.args.push(tokens[i++]!.text);
      const end = tokens[i++];
      if (end?.text === '{') d.block = block();
      else expect(end?.text, `nginx.conf: ${d.name} ends with ;`).toBe(';');
      out.push(d);
    }
    return out;
  };
  return block();
}
const nginx = parseNginx(nginxConf);
const nginxHttp = nginx.find((d) => d.name === 'http')?.block ?? [];
const all = (ds: Directive[], name: string) => ds.filter((d) => d.name === name);
const one = (ds: Directive[], name: string) => all(ds, name)[0];
/** upstream name → its servers (`dropline-1:8081`). */
const upstreams = Object.fromEntries(
  all(nginxHttp, 'upstream').map((u) => [u.args[0]!, all(u.block ?? [], 'server').map((s) => s.args[0]!)]),
);
/** listen port → the server block's `location /`. */
const nginxServers = Object.fromEntries(
  all(nginxHttp, 'server').map((srv) => {
    const location = all(srv.block ?? [], 'location').find((l) => l.args[0] === '/');
    return [one(srv.block ?? [], 'listen')?.args[0] ?? '', location?.block ?? []];
  }),
);

/** `host:port` of everything a service of the stack dials: the configuration's URLs, the balancer's upstreams. */
const dialed = new Set<string>([
  ...[storeUrl, (config.api as { baseUrl: string }).baseUrl, parsedConfig.notify.publicUrl!].map((u) => {
    const url = new URL(u);
    return `${url.hostname}:${url.port || (url.protocol.startsWith('postgres') ? '5432' : '80')}`;
  }),
  ...Object.values(upstreams).flat(),
]);

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

  it('every port it names is published by that service (or, unpublished, is where another service dials it)', () => {
    const rows = table('Ports');
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      const s = services[r.service!];
      expect(s, `service ${r.service}`).toBeDefined();
      if (r['host port'] === 'none') {
        // Not published, and something in the stack dials it there.
        expect(
          publishedPorts(s!).map((p) => p.split(':')[1]),
          `${r.service} ports`,
        ).not.toContain(r['container port']);
        expect(dialed, `something dials ${r.service}:${r['container port']}`).toContain(
          `${r.service}:${r['container port']}`,
        );
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
    // And every port a service dials inside the stack, published or not.
    const inside = new Set(rows.map((r) => `${r.service}:${r['container port']}`));
    for (const address of dialed)
      if (services[address.split(':')[0]!] !== undefined)
        expect(inside.has(address), `${address} documented`).toBe(true);
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

  it('the sandbox listens where both workers reach it, on the network they share', () => {
    const sandbox = services.sandbox!;
    const cmd = sandbox.command ?? [];
    expect(cmd[0]).toBe('sandbox');
    // Every interface of its own container: the workers are other containers.
    expect(cmd[cmd.indexOf('--host') + 1]).toBe('0.0.0.0');
    const api = new URL((config.api as { baseUrl: string }).baseUrl);
    expect(`${api.protocol}//${api.hostname}`).toBe('http://sandbox');
    expect(cmd[cmd.indexOf('--port') + 1]).toBe(api.port);
    // No shared namespace, no separate networks: every service is on the stack's default one.
    for (const [name, s] of Object.entries(services)) {
      expect(s.network_mode, name).toBeUndefined();
      expect(s.networks, name).toBeUndefined();
    }
    expect(sandbox.ports ?? []).toEqual([]);
  });
});

describe('the dropline workers', () => {
  const configMount = (dropline.volumes ?? []).find((v) => v.startsWith('./dropline.config.json:'));

  it('are two services of one definition, told apart by their hostname, published only through the balancer', () => {
    expect([...workerNames].sort()).toEqual(['dropline-1', 'dropline-2']);
    const [a, b] = workers as [Service, Service];
    for (const key of [
      'build',
      'image',
      'entrypoint',
      'command',
      'environment',
      'secrets',
      'volumes',
      'depends_on',
      'restart',
      'stop_grace_period',
    ] as const)
      expect(b[key], key).toEqual(a[key]);
    for (const name of workerNames) {
      expect(services[name]!.hostname).toBe(name);
      expect(services[name]!.ports ?? [], name).toEqual([]);
      expect(services[name]!.restart).toBe('unless-stopped');
    }
  });

  it('mount the configuration their command names, and only files that exist in infra/ (or secrets.sh makes)', () => {
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

  it('their configuration parses, listens where the balancer reaches it, and reads secrets they are given', () => {
    // Every interface of the container: the balancer is another container.
    expect(parsedConfig.ops.listen.startsWith('0.0.0.0:')).toBe(true);
    expect(parsedConfig.notify.listen.startsWith('0.0.0.0:')).toBe(true);
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
    expect(paths).toContain('/run/secrets/store_url');
    expect(paths.length).toBeGreaterThanOrEqual(5);
    for (const w of workerNames)
      for (const p of paths)
        expect(services[w]!.secrets, `${w}: ${p}`).toContain(p.slice('/run/secrets/'.length));
  });

  it('read their store URL from storeFile, a secret every worker is given (and no other copy of the password)', () => {
    expect(config).not.toHaveProperty('store');
    const storeFile = config.storeFile as string;
    expect(storeFile.startsWith('/run/secrets/'), storeFile).toBe(true);
    const name = secretName(storeFile);
    expect(name).toBe('store_url');
    expect(compose.secrets?.[name]?.file).toBe(`./secrets/${name}`);
    for (const w of workerNames) {
      expect(services[w]!.secrets, w).toContain(name);
      // The URL holds the password: the workers need nothing else of PostgreSQL's.
      expect(services[w]!.secrets, w).not.toContain('postgres_password');
    }
  });

  it("run the image's own entry point, with no password or PG* variable in their environment", () => {
    for (const w of workerNames) {
      const s = services[w]!;
      expect(s.entrypoint, w).toBeUndefined();
      expect(
        (s.volumes ?? []).filter((v) => /\.sh(:|$)/.test(v.split(':')[0]!)),
        w,
      ).toEqual([]);
      for (const [key, value] of Object.entries(s.environment ?? {})) {
        expect(key, `${w}: ${key}`).not.toMatch(/^PG|PASSWORD|PASSWD|SECRET|TOKEN/i);
        // No URL with credentials (user:password@) and no password value.
        expect(String(value), `${w}: ${key}`).not.toMatch(/:\/\/[^/\s]*@/);
        expect(String(value), `${w}: ${key}`).not.toContain(
          readFileSync(secretFile('postgres_password'), 'utf8'),
        );
      }
    }
  });

  it('share the postgres service as their store, with its password, once it is healthy', () => {
    const store = parseStoreUrl(storeUrl);
    expect(store.kind).toBe('postgres');
    const url = new URL(storeUrl);
    const pg = services.postgres!;
    expect(url.hostname).toBe('postgres');
    expect(url.port || '5432').toBe('5432');
    expect(url.username).toBe(pg.environment?.POSTGRES_USER);
    expect(url.pathname).toBe(`/${pg.environment?.POSTGRES_DB}`);
    // The password postgres is given (POSTGRES_PASSWORD_FILE) is the URL's.
    const pgSecret = pg.environment!.POSTGRES_PASSWORD_FILE!;
    expect(pg.secrets).toContain(secretName(pgSecret));
    expect(url.password).toBe(readFileSync(secretFile(secretName(pgSecret)), 'utf8').trim());
    for (const w of workerNames) expect(dependsOn(services[w]!).postgres, w).toBe('service_healthy');
  });

  it('load their configuration from the files compose gives them, as secrets.sh makes them', () => {
    // Each path the worker sees (a secret under /run/secrets/, a bind mount) → the file here.
    const here = new Map<string, string>();
    for (const name of dropline.secrets ?? []) here.set(`/run/secrets/${name}`, secretFile(name));
    for (const v of dropline.volumes ?? []) {
      const [src, target] = v.split(':') as [string, string];
      if (src.startsWith('./secrets/')) here.set(target, join(madeSecrets, src.slice('./secrets/'.length)));
    }
    const paths = (v: unknown): unknown =>
      typeof v === 'string'
        ? (here.get(v) ?? v)
        : Array.isArray(v)
          ? v.map(paths)
          : v && typeof v === 'object'
            ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, paths(x)]))
            : v;
    const file = join(made, 'dropline.config.json');
    writeFileSync(file, JSON.stringify(paths(config)));
    const loaded = loadConfig({ path: file, env: {} });
    expect(loaded.config.store).toBe(storeUrl);
    expect(loaded.config.store).toMatch(/^postgres:\/\/dropline:[0-9a-f]+@postgres:5432\/dropline$/);
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

describe('the postgres service', () => {
  const pg = services.postgres!;

  it('runs the official image at a pinned version, its password from a secret, its data in a named volume', () => {
    expect(pg.image).toMatch(/^postgres:\d+\.\d+/);
    expect(pg.environment?.POSTGRES_PASSWORD_FILE).toBe('/run/secrets/postgres_password');
    expect(pg.environment).not.toHaveProperty('POSTGRES_PASSWORD');
    expect(pg.secrets).toContain('postgres_password');
    expect(pg.volumes).toContain('postgres-data:/var/lib/postgresql/data');
    expect(compose.volumes).toHaveProperty('postgres-data');
    expect(pg.ports ?? []).toEqual([]);
  });

  it("is healthy once pg_isready answers over TCP for dropline's user and database", () => {
    const test = pg.healthcheck?.test ?? [];
    expect(test.slice(0, 2)).toEqual(['CMD', 'pg_isready']);
    const flag = (f: string) => test[test.indexOf(f) + 1];
    expect(flag('-h')).toBe('127.0.0.1');
    expect(flag('-U')).toBe(pg.environment?.POSTGRES_USER);
    expect(flag('-d')).toBe(pg.environment?.POSTGRES_DB);
  });
});

describe('the balancer', () => {
  const balancer = services.balancer!;

  it('runs a pinned nginx with infra/balancer/nginx.conf, publishes the ops and notify ports, after both workers', () => {
    expect(balancer.image).toMatch(/^nginx:\d+\.\d+\.\d+/);
    expect(mountTarget(balancer, './balancer/nginx.conf')).toBe('/etc/nginx/nginx.conf');
    expect(publishedPorts(balancer).sort()).toEqual(
      [`${opsPort}:${opsPort}`, `${notifyPort}:${notifyPort}`].sort(),
    );
    expect(Object.keys(dependsOn(balancer)).sort()).toEqual([...workerNames].sort());
  });

  it('sends each port to both workers, and delivery reports to the other worker when one refuses', () => {
    for (const port of [opsPort, notifyPort]) {
      const location = nginxServers[port];
      expect(location, `a server listening on ${port}`).toBeDefined();
      const target = one(location!, 'proxy_pass')!.args[0]!;
      const servers = upstreams[target.replace(/^http:\/\//, '')];
      expect(servers?.sort(), `${target}`).toEqual(workerNames.map((w) => `${w}:${port}`).sort());
    }
    const next = one(nginxServers[notifyPort]!, 'proxy_next_upstream')?.args ?? [];
    for (const reason of ['error', 'timeout', 'non_idempotent']) expect(next).toContain(reason);
    // No worker left: 503, which the service retries (a 502 would lose the report).
    const errorPage = one(nginxServers[notifyPort]!, 'error_page')?.args ?? [];
    expect(errorPage).toEqual(expect.arrayContaining(['502', '504']));
    const fallback = all(nginxHttp, 'server')
      .flatMap((srv) => all(srv.block ?? [], 'location'))
      .find((l) => l.args[0] === errorPage.at(-1));
    expect(one(fallback?.block ?? [], 'return')?.args[0]).toBe('503');
  });

  it('passes the dashboard the Host the browser used (its actions check Origin against it), and its file check', () => {
    const ops = nginxServers[opsPort]!;
    const headers = all(ops, 'proxy_set_header').map((d) => d.args);
    expect(headers).toContainEqual(['Host', '$http_host']);
    expect(headers).toContainEqual(['X-Forwarded-Proto', '$scheme']);
    // An action is never sent to a second worker.
    expect(one(ops, 'proxy_next_upstream')?.args).not.toContain('non_idempotent');
    const opsServer = all(nginxHttp, 'server').find(
      (srv) => one(srv.block ?? [], 'listen')?.args[0] === opsPort,
    );
    expect(one(opsServer?.block ?? [], 'client_max_body_size')?.args[0]).toBe('64m');
  });

  it('is where notify.publicUrl points', () => {
    const url = new URL(parsedConfig.notify.publicUrl!);
    expect(url.hostname).toBe('balancer');
    expect(url.port).toBe(notifyPort);
  });

  it('keeps the notify token (a query string) out of its logs', () => {
    const formats = all(nginxHttp, 'log_format');
    const access = one(nginxHttp, 'access_log')!;
    const format = formats.find((f) => f.args[0] === access.args[1]);
    expect(format, 'access_log names a log_format of its own').toBeDefined();
    const text = format!.args.slice(1).join('');
    // $request and $request_uri hold the query string; $uri is the path alone.
    expect(text).not.toMatch(/\$\{?(request|request_uri|args|query_string|is_args|arg_\w+)\b/);
    expect(text).toContain('$uri');
    // Error messages quote the request line: only crit and worse are logged.
    expect(['crit', 'alert', 'emerg']).toContain(one(nginx, 'error_log')?.args[1]);
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

  it('packs the package in a build stage and installs that tarball, not the source tree', () => {
    const finalStage = lines.slice(lines.findLastIndex((l) => l.startsWith('FROM ')));
    const buildStages = lines.slice(
      0,
      lines.findLastIndex((l) => l.startsWith('FROM ')),
    );
    expect(buildStages.some((l) => l.startsWith('RUN ') && l.includes('npm pack'))).toBe(true);
    const install = finalStage.find((l) => l.startsWith('RUN ') && l.includes('npm install --global'));
    expect(install).toMatch(/--omit=dev .*\.tgz/);
    expect(finalStage.filter((l) => l.startsWith('COPY ') && /\bsrc\b|node_modules/.test(l))).toEqual([]);
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
      // The containers' users (uid 1000) read the PostgreSQL password and the store URL.
      for (const f of ['postgres_password', 'store_url'])
        expect(statSync(join(secrets, f)).mode & 0o777, f).toBe(0o644);
      const creds = readFileSync(join(secrets, 'aws_credentials'), 'utf8');
      expect(creds).toContain(readFileSync(join(secrets, 'minio_root_password'), 'utf8').trim());
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("writes store_url: the postgres service's address, user and database, with postgres_password's password", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dropline-infra-'));
    const secrets = join(dir, 'secrets');
    try {
      secretsScriptIn(secrets);
      const password = readFileSync(join(secrets, 'postgres_password'), 'utf8');
      expect(password).toMatch(/^[0-9a-f]{48}$/);
      const text = readFileSync(join(secrets, 'store_url'), 'utf8').trim();
      expect(parseStoreUrl(text).kind).toBe('postgres');
      const url = new URL(text);
      expect(url.protocol).toBe('postgres:');
      expect(url.hostname).toBe('postgres');
      expect(url.port).toBe('5432');
      expect(url.username).toBe('dropline');
      expect(url.pathname).toBe('/dropline');
      // Hex: written as it is, nothing to percent-decode.
      expect(url.password).toBe(password);
      expect(decodeURIComponent(url.password)).toBe(password);
      expect(url.search).toBe('');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('run again without --force, adds what an older run did not make, consistent with what it keeps', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dropline-infra-'));
    const secrets = join(dir, 'secrets');
    const read = (f: string) => readFileSync(join(secrets, f), 'utf8');
    const passwordOf = (f: string) => new URL(read(f).trim()).password;
    const mode = (f: string) => statSync(join(secrets, f)).mode & 0o777;
    try {
      secretsScriptIn(secrets);
      const token = read('notify_token');
      const password = read('postgres_password');
      const storeUrlText = read('store_url');
      secretsScriptIn(secrets);
      expect(read('postgres_password')).toBe(password);
      expect(read('store_url')).toBe(storeUrlText);
      // Made before storeFile: the password, and no store_url. Its URL has that password.
      await rm(join(secrets, 'store_url'));
      secretsScriptIn(secrets);
      expect(read('postgres_password')).toBe(password);
      expect(read('store_url')).toBe(storeUrlText);
      expect(mode('store_url')).toBe(0o644);
      // Made before the stack had PostgreSQL: neither. A new password, and its URL.
      await rm(join(secrets, 'postgres_password'));
      await rm(join(secrets, 'store_url'));
      secretsScriptIn(secrets);
      const renewed = read('postgres_password');
      expect(renewed).toMatch(/^[0-9a-f]{48}$/);
      expect(renewed).not.toBe(password);
      expect(passwordOf('store_url')).toBe(renewed);
      expect(mode('postgres_password')).toBe(0o644);
      expect(mode('store_url')).toBe(0o644);
      // A new password is never left beside an old URL.
      await rm(join(secrets, 'postgres_password'));
      secretsScriptIn(secrets);
      expect(passwordOf('store_url')).toBe(read('postgres_password'));
      expect(read('notify_token')).toBe(token);
      // A password it cannot put into a URL as it is: refused, no store_url written.
      await rm(join(secrets, 'store_url'));
      writeFileSync(join(secrets, 'postgres_password'), 'p@ss/word');
      const refused = runSecretsScript(secrets);
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toContain('not a hex password');
      expect(existsSync(join(secrets, 'store_url'))).toBe(false);
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
