// Configuration: the file (when there is one) + environment → a validated, frozen Config,
// with secrets resolved from `…File` paths and DROPLINE_* variables.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { z } from 'zod';
import { CHANNEL_SETTINGS } from '../channels/names.ts';
import { DroplineError } from '../errors.ts';
import { makeNumberRules } from '../format/numbers.ts';
import { jsonProblem, withoutBom } from './json-problem.ts';
import { parseListenAddress } from './listen.ts';
import { type Config, configSchema, type SftpSourceConfig } from './schema.ts';

export const DEFAULT_CONFIG_PATH = './dropline.config.json';

export interface LoadedConfig {
  config: Config;
  /** The file read, or null for the embedded default. */
  path: string | null;
  /** Secrets, kept apart so nothing that prints the config can print them. */
  secrets: {
    apiPassword: string;
    /** Each of `accounts`' passwords, by account name (sms accounts). */
    accountPasswords: Readonly<Record<string, string>>;
    /** Each email account's x-api-key, by account name. */
    accountApiKeys: Readonly<Record<string, string>>;
    /**
     * notify.token as configured; null when none is: then one is generated and kept in the
     * store, shared by every process on it (openRuntime; docs/notify.md "The token").
     */
    notifyToken: string | null;
    opsToken: string | undefined;
    /** Each of `alerts`' signing keys, in their order (null: unsigned). */
    alertSecrets: readonly (string | null)[];
    /** replies.smpp's bind password (null: no SMPP receiver). */
    smppPassword: string | null;
  };
  /** The URL the service posts delivery reports to (token in the query string); null until the token is known. */
  notifyUrl: string | null;
}

/** The configuration with its notify token known (a runtime's): notifyUrl carries it. */
export interface ResolvedConfig extends LoadedConfig {
  secrets: LoadedConfig['secrets'] & { notifyToken: string };
  notifyUrl: string;
}

/** `loaded` with `token` as its notify token and in its notifyUrl: notify.publicUrl?token=… */
export function withNotifyToken(loaded: LoadedConfig, token: string): ResolvedConfig {
  const [host, port] = splitListen(loaded.config.notify.listen, 'notify.listen');
  const url = new URL(loaded.config.notify.publicUrl ?? `http://${dialable(host)}:${port}/notify`);
  url.searchParams.set('token', token);
  return { ...loaded, secrets: { ...loaded.secrets, notifyToken: token }, notifyUrl: url.toString() };
}

function describeIssue(issue: z.core.$ZodIssue, under: readonly PropertyKey[] = []): string {
  const path = [...under, ...issue.path];
  const key = path.length > 0 ? path.join('.') : '(root)';
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    // Zod says only "Invalid input" of a value no option takes. The issue that reached
    // deepest into the value says what is wrong in it; when none got past the value itself,
    // what each option expects is what is allowed.
    const deepest = issue.errors
      .flat()
      .reduce<z.core.$ZodIssue | null>((a, b) => (a === null || b.path.length > a.path.length ? b : a), null);
    if (deepest && deepest.path.length > 0) return describeIssue(deepest, path);
    const expected = issue.errors.map((issues) => (issues[0]?.message ?? '').replace(/^Invalid input: /, ''));
    return `${key}: ${[...new Set(expected)].join('; or ')}`;
  }
  return `${key}: ${issue.message}`;
}

function readSecretFile(path: string, key: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw new DroplineError(
      'DROPLINE_ERR_CONFIG',
      `${key}: cannot read ${path} (${(err as NodeJS.ErrnoException).code})`,
    );
  }
}

export function parseConfig(raw: unknown): Config {
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    throw new DroplineError(
      'DROPLINE_ERR_CONFIG',
      result.error.issues.map((i) => describeIssue(i)).join('; '),
    );
  }
  const config = result.data;
  // Decided on what was written: `store` has a default the parsed config cannot tell apart.
  if (config.storeFile !== undefined && (raw as { store?: unknown }).store !== undefined)
    throw new DroplineError('DROPLINE_ERR_CONFIG', 'storeFile: give store or storeFile, not both');
  const names = new Set<string>();
  for (const s of config.sources) {
    if (names.has(s.name))
      throw new DroplineError('DROPLINE_ERR_CONFIG', `sources: the name "${s.name}" is used twice`);
    names.add(s.name);
    // The rules the pipeline makes of them at ingest, made once here: a bad code stops the
    // start instead of leaving every file of the source stuck in `validating`.
    const key = `sources.${s.name}`;
    try {
      makeNumberRules(s.defaultCountry);
    } catch (err) {
      throw new DroplineError('DROPLINE_ERR_CONFIG', `${key}.defaultCountry: ${withoutLabel(err)}`);
    }
    try {
      makeNumberRules('CO', s.allowedCountries);
    } catch (err) {
      throw new DroplineError('DROPLINE_ERR_CONFIG', `${key}.allowedCountries: ${withoutLabel(err)}`);
    }
  }
  return config;
}

/** makeNumberRules' message without its `default country: ` label (the key replaces it). */
function withoutLabel(err: unknown): string {
  return (err as Error).message.replace(/^[a-z ]+: /, '');
}

export interface ReadConfigOptions {
  path?: string | undefined;
  env?: NodeJS.ProcessEnv;
  /**
   * Each SFTP source's `hostKeyFile` read into its `hostKeySha256` (a public key, not a
   * secret), as the daemon does: for a command that connects to an SFTP source (`validate`
   * reading an opt-out list on one). A hostKeyFile that cannot be read is then an error.
   */
  pinHostKeys?: boolean;
}

/**
 * The configuration file and what it says, without resolving a secret or writing anything
 * (`validate` reads it too): `path`, else DROPLINE_CONFIG, else ./dropline.config.json when
 * present, else the embedded default (path null).
 */
export function readConfigFile(options: ReadConfigOptions = {}): {
  config: Config;
  path: string | null;
} {
  const read = readConfigText(options);
  if (options.pinHostKeys)
    read.config.sources = read.config.sources.map((s) => (s.type === 'sftp' ? pinHostKeyFile(s) : s));
  return read;
}

function readConfigText(options: ReadConfigOptions): { config: Config; path: string | null } {
  const env = options.env ?? process.env;
  let raw: unknown = {};
  const named = options.path ?? (env.DROPLINE_CONFIG || undefined);
  const candidate = named ?? (existsSync(DEFAULT_CONFIG_PATH) ? DEFAULT_CONFIG_PATH : null);
  if (candidate === null) return { config: parseConfig(raw), path: null };
  const path = resolve(candidate);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const via = options.path === undefined && named !== undefined ? ' (DROPLINE_CONFIG)' : '';
    throw new DroplineError(
      'DROPLINE_ERR_CONFIG',
      `cannot read ${candidate}${via} (${(err as NodeJS.ErrnoException).code})`,
    );
  }
  // A byte-order mark (what some Windows editors write first) is not JSON, nor meant as text.
  const body = withoutBom(text);
  try {
    raw = JSON.parse(body);
  } catch (err) {
    throw new DroplineError(
      'DROPLINE_ERR_CONFIG',
      `${candidate} is not valid JSON: ${jsonProblem(err, body)}`,
    );
  }
  return { config: parseConfig(raw), path };
}

export function loadConfig(
  options: { path?: string | undefined; env?: NodeJS.ProcessEnv } = {},
): LoadedConfig {
  const env = options.env ?? process.env;
  const { config, path } = readConfigFile({ ...options, pinHostKeys: true });

  // The environment wins (the file is not even read then); empty is unset, there and in the file.
  const written = (): string | undefined => {
    const file = config.api.passwordFile;
    if (!file) return config.api.password;
    const password = readSecretFile(file, 'api.passwordFile');
    if (password === '') throw new DroplineError('DROPLINE_ERR_CONFIG', `api.passwordFile: ${file} is empty`);
    return password;
  };
  const apiPassword =
    env.DROPLINE_API_PASSWORD || written() || (config.api.baseUrl === 'sandbox' ? 'demo' : undefined);
  if (apiPassword === undefined) {
    throw new DroplineError(
      'DROPLINE_ERR_CONFIG',
      'api.password: required for a real service (or api.passwordFile, or DROPLINE_API_PASSWORD)',
    );
  }
  const accountPasswords: Record<string, string> = {};
  const accountApiKeys: Record<string, string> = {};
  for (const [name, account] of Object.entries(config.accounts)) {
    const key = `accounts.${name}`;
    // Each channel says which secret its accounts take: a password, or an API key (email).
    const kind = CHANNEL_SETTINGS[account.channel].secret;
    const fields = account as Partial<Record<'password' | 'passwordFile' | 'apiKey' | 'apiKeyFile', string>>;
    const given = fields[kind];
    const file = fields[`${kind}File`];
    if (given !== undefined && file !== undefined)
      throw new DroplineError('DROPLINE_ERR_CONFIG', `${key}: give ${kind} or ${kind}File, not both`);
    const secret = file ? readSecretFile(file, `${key}.${kind}File`) : given;
    if (secret === undefined || secret === '')
      throw new DroplineError('DROPLINE_ERR_CONFIG', `${key}.${kind}: required (or ${key}.${kind}File)`);
    (kind === 'apiKey' ? accountApiKeys : accountPasswords)[name] = secret;
  }
  // An email source's HTML body from its file, read once here (a missing file is a start-up error).
  for (const [i, source] of config.sources.entries()) {
    const email = source.email;
    if (email?.htmlFile === undefined) continue;
    try {
      email.html = readFileSync(email.htmlFile, 'utf8');
    } catch (err) {
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        `sources[${i}].email.htmlFile: cannot read ${email.htmlFile} (${(err as NodeJS.ErrnoException).code})`,
      );
    }
    delete email.htmlFile;
  }
  if (config.storeFile !== undefined) {
    // The URL of a store with a password is a secret: never in the configuration file itself.
    config.store = readSecretFile(config.storeFile, 'storeFile');
    if (config.store === '')
      throw new DroplineError('DROPLINE_ERR_CONFIG', `storeFile: ${config.storeFile} is empty`);
  }
  const notifyToken =
    env.DROPLINE_NOTIFY_TOKEN ??
    (config.notify.tokenFile
      ? readSecretFile(config.notify.tokenFile, 'notify.tokenFile')
      : config.notify.token) ??
    null;
  if (notifyToken === '') {
    throw new DroplineError(
      'DROPLINE_ERR_CONFIG',
      'notify.token: must not be empty (DROPLINE_NOTIFY_TOKEN or notify.tokenFile): anyone could post reports',
    );
  }

  const opsToken = config.ops.tokenFile
    ? readSecretFile(config.ops.tokenFile, 'ops.tokenFile')
    : config.ops.token;
  if (opsToken === '')
    throw new DroplineError('DROPLINE_ERR_CONFIG', `ops.tokenFile: ${config.ops.tokenFile} is empty`);

  const alertSecrets = config.alerts.map((a, i) => {
    if (a.secret !== undefined && a.secretFile !== undefined)
      throw new DroplineError('DROPLINE_ERR_CONFIG', `alerts.${i}: give secret or secretFile, not both`);
    return a.secretFile ? readSecretFile(a.secretFile, `alerts.${i}.secretFile`) : (a.secret ?? null);
  });
  const smpp = config.replies.smpp;
  let smppPassword: string | null = null;
  if (smpp) {
    if (smpp.password !== undefined && smpp.passwordFile !== undefined)
      throw new DroplineError('DROPLINE_ERR_CONFIG', 'replies.smpp: give password or passwordFile, not both');
    smppPassword = smpp.passwordFile
      ? readSecretFile(smpp.passwordFile, 'replies.smpp.passwordFile')
      : (smpp.password ?? null);
    if (!smppPassword)
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        'replies.smpp.password: required (or replies.smpp.passwordFile)',
      );
  }
  // Checked now: a mistake in it stops the command before anything opens.
  splitListen(config.notify.listen, 'notify.listen');
  const loaded: LoadedConfig = {
    config: Object.freeze(config),
    path,
    secrets: {
      apiPassword,
      accountPasswords,
      accountApiKeys,
      notifyToken,
      opsToken,
      alertSecrets,
      smppPassword,
    },
    notifyUrl: null,
  };
  return notifyToken === null ? loaded : withNotifyToken(loaded, notifyToken);
}

/**
 * `hostKeyFile` → `hostKeySha256`: the fingerprint `ssh-keygen -lf` prints (SHA256 of the key
 * blob, unpadded base64), so a deployment can pin the key file it already has instead of
 * copying a fingerprint into the configuration.
 */
function pinHostKeyFile(source: SftpSourceConfig): SftpSourceConfig {
  if (source.hostKeyFile === undefined) return source;
  const key = `sources.${source.name}.hostKeyFile`;
  if (source.hostKeySha256 !== undefined)
    throw new DroplineError('DROPLINE_ERR_CONFIG', `${key}: give hostKeySha256 or hostKeyFile, not both`);
  const fields = readSecretFile(source.hostKeyFile, key).split(/\s+/);
  const blob = fields[fields.findIndex((f) => /^(ssh-|ecdsa-|sk-)/.test(f)) + 1] ?? '';
  if (!/^[A-Za-z0-9+/]+=*$/.test(blob))
    throw new DroplineError(
      'DROPLINE_ERR_CONFIG',
      `${key}: ${source.hostKeyFile} holds no public key (expected a .pub file or a known_hosts line)`,
    );
  const digest = createHash('sha256').update(Buffer.from(blob, 'base64')).digest('base64');
  return { ...source, hostKeySha256: `SHA256:${digest.replace(/=+$/, '')}` };
}

/** A wildcard listen address is not something a client can dial: the loopback instead. */
function dialable(host: string): string {
  const h = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return h.includes(':') ? `[${h}]` : h;
}

/** `host:port` (validated when the configuration loaded) → [host, port]. */
export function splitListen(listen: string, key: string): [string, number] {
  const parsed = parseListenAddress(listen);
  if (typeof parsed === 'string') throw new DroplineError('DROPLINE_ERR_CONFIG', `${key}: ${parsed}`);
  return parsed;
}
