// End-to-end harness for the pipeline (issue 4 "Tests"): a temp dir with a dropline.config.json,
// the sandbox running in the test process, and `dropline run` as a child process. Tests act as
// a user would: drop files, run commands, read the ops server, the folders and the sandbox.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Manifest, type ReportKind, reportFileName } from '../../src/pipeline/reports.ts';
import type { LedgerEntry } from '../../src/sandbox/ledger.ts';
import type { MoLedgerEntry } from '../../src/sandbox/mo-ledger.ts';
import type { NotificationAttempt } from '../../src/sandbox/notifier.ts';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/server.ts';
import { openStore } from '../../src/store/index.ts';
import type { ChunkRecord, FileRecord } from '../../src/store/store.ts';
import { BIN, REPO } from './cli.ts';
import { type TestStore, testStore } from './test-store.ts';

export { BIN, REPO };

/**
 * The ports freePort hands out: below the kernel's ephemeral range (32768 and up), so no
 * outbound connection of a test running beside takes one between freePort and the daemon's
 * bind (EADDRINUSE, seen in CI), and a block of its own for each vitest worker of each project
 * (the sqlite and postgres projects run at once), so two workers never hand out the same one;
 * within the block in turn, from a random place (test files that ran before in this worker may
 * still hold some).
 */
const PORT_BLOCK = 1000;
const PORT_LANE =
  (Number(process.env.VITEST_POOL_ID ?? 0) % 10) + (process.env.DROPLINE_TEST_STORE === 'postgres' ? 10 : 0);
const PORT_BASE = 10_000 + PORT_LANE * PORT_BLOCK;
let nextPort = Math.floor(Math.random() * PORT_BLOCK);

/** A port nothing listens on now, from this worker's block. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < PORT_BLOCK; tries++) {
    const port = PORT_BASE + (nextPort++ % PORT_BLOCK);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port in ${PORT_BASE}–${PORT_BASE + PORT_BLOCK - 1}`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((done) => {
    const srv = createServer();
    srv.once('error', () => done(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => done(true)));
  });
}

/** Polls `fn` until it returns a value other than undefined/false, or fails with `what`. */
export async function waitFor<T>(
  what: string | (() => string),
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let lastErr: unknown = null;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) {
      const label = typeof what === 'string' ? what : what();
      throw new Error(
        `timed out waiting for ${label}${lastErr ? ` (last error: ${(lastErr as Error).message})` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface HarnessOptions {
  sandbox?: SandboxOptions;
  /** Merged over the api section (retry replaces the harness's retry when given). */
  api?: Record<string, unknown>;
  /** Merged over the local source's settings. */
  source?: Record<string, unknown>;
  /** Merged over the ops section (e.g. a token). */
  ops?: Record<string, unknown>;
  /** Merged over the top level (after api/source); a function gets the sandbox (its SMPP port). */
  config?: Record<string, unknown> | ((sandbox: Sandbox) => Record<string, unknown>);
  /** The store's backend whatever the vitest project (default: the project's). */
  store?: 'sqlite' | 'postgres';
}

export interface LedgerAnswer {
  destinations: number;
  accepted: number;
  duplicates: number;
  entries: LedgerEntry[];
}

export class PipelineHarness {
  readonly dir: string;
  readonly drop: string;
  readonly configPath: string;
  readonly sandbox: Sandbox;
  readonly notifyPort: number;
  readonly opsPort: number;
  readonly opsUrl: string;
  readonly config: Record<string, unknown>;
  daemon: ChildProcess | null = null;
  daemonOutput = '';
  private readonly children = new Set<ChildProcess>();
  /** The store under the daemon (its URL is config.store). */
  readonly testStore: TestStore;

  private constructor(init: {
    dir: string;
    sandbox: Sandbox;
    notifyPort: number;
    opsPort: number;
    config: Record<string, unknown>;
    store: TestStore;
  }) {
    this.dir = init.dir;
    this.drop = join(init.dir, 'drop');
    this.configPath = join(init.dir, 'dropline.config.json');
    this.sandbox = init.sandbox;
    this.notifyPort = init.notifyPort;
    this.opsPort = init.opsPort;
    this.opsUrl = `http://127.0.0.1:${init.opsPort}`;
    this.config = init.config;
    this.testStore = init.store;
  }

  static async create(options: HarnessOptions = {}): Promise<PipelineHarness> {
    const dir = await mkdtemp(join(tmpdir(), 'dropline-e2e-'));
    const sandbox = await startSandbox({ timeScale: 0.01, deliveryDelayMs: 200, ...options.sandbox });
    const notifyPort = await freePort();
    let opsPort = await freePort();
    while (opsPort === notifyPort) opsPort = await freePort();
    const store = await testStore(dir, options.store);
    const config: Record<string, unknown> = {
      api: {
        baseUrl: sandbox.url,
        username: 'demo',
        password: 'demo',
        chunkSize: 500,
        concurrency: 2,
        timeoutMs: 2000,
        retry: { baseMs: 20, maxMs: 200, maxAttempts: 8 },
        ...options.api,
      },
      notify: { listen: `127.0.0.1:${notifyPort}`, token: 'e2e-notify-token' },
      store: store.url,
      ops: { listen: `127.0.0.1:${opsPort}`, ...options.ops },
      leaseMs: 1500,
      sources: [
        {
          name: 'local',
          type: 'local',
          path: join(dir, 'drop'),
          stableMs: 200,
          pollMs: 100,
          ...options.source,
        },
      ],
      ...(typeof options.config === 'function' ? options.config(sandbox) : options.config),
    };
    const h = new PipelineHarness({ dir, sandbox, notifyPort, opsPort, config, store });
    await writeFile(h.configPath, `${JSON.stringify(config, null, 2)}\n`);
    return h;
  }

  /** The notify token the daemon checks (in the notifyUrl's query string). */
  get notifyToken(): string {
    return 'e2e-notify-token';
  }

  /**
   * Starts `dropline run` and waits for its "dropline is running" line. `umask`: through sh,
   * the way a service manager with its own umask starts it; `wrap`: a command the daemon
   * runs under (e.g. setpriv with fewer capabilities).
   */
  async start(options: { umask?: number; wrap?: string[] } = {}): Promise<void> {
    if (this.daemon) throw new Error('the daemon runs already');
    const argv = [process.execPath, BIN, '--config', this.configPath, 'run'];
    const umask =
      options.umask === undefined
        ? []
        : ['/bin/sh', '-c', `umask ${options.umask.toString(8).padStart(3, '0')} && exec "$@"`, 'sh'];
    const [command, ...args] = [...umask, ...(options.wrap ?? []), ...argv];
    const child = spawn(command!, args, {
      cwd: this.dir,
      env: { ...process.env, DROPLINE_LOG_LEVEL: process.env.DROPLINE_LOG_LEVEL ?? 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.daemon = child;
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    let ready = false;
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (s: string) => {
      this.daemonOutput += s;
      if (s.includes('dropline is running')) ready = true;
    });
    child.stderr.on('data', (s: string) => {
      this.daemonOutput += s;
    });
    // A daemon that exits before it runs (a start-up error) is said at once, not at the deadline.
    // ('close': after its output was all read, so a line printed just before it exited counts.)
    // ('error': it could not be started at all, and 'close' may never come.)
    let closed = false;
    child.once('close', () => {
      closed = true;
    });
    child.once('error', (err) => {
      this.daemonOutput += `\n${err.message}`;
      closed = true;
    });
    await waitFor(
      () => `"dropline is running"; output so far:\n${this.daemonOutput.slice(-3000)}`,
      () => ready || closed,
      { timeoutMs: 20_000 },
    );
    if (!ready)
      throw new Error(
        `dropline run exited ${child.exitCode ?? child.signalCode} before it was running; output:\n${this.daemonOutput.slice(-3000)}`,
      );
  }

  /** SIGTERM to the daemon; resolves with its exit code once it has exited. */
  async stop(): Promise<number | null> {
    const child = this.daemon;
    if (!child) return null;
    this.daemon = null;
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  }

  /** Drops a file into the inbox the way a careful writer does: a temp name, then rename. */
  async dropFile(name: string, content: string | Buffer): Promise<void> {
    const tmp = join(this.drop, 'inbox', `.${name}.tmp`);
    await writeFile(tmp, content);
    await rename(tmp, join(this.drop, 'inbox', name));
  }

  /** Runs a dropline command in the temp dir with the harness's config. */
  cli(args: string[], options: { timeoutMs?: number } = {}): Promise<CliResult> {
    return new Promise((done, fail) => {
      const child = spawn(process.execPath, [BIN, '--config', this.configPath, ...args], {
        cwd: this.dir,
        env: { ...process.env, DROPLINE_LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      this.children.add(child);
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8');
      child.stderr.setEncoding('utf8');
      child.stdout.on('data', (s: string) => {
        stdout += s;
      });
      child.stderr.on('data', (s: string) => {
        stderr += s;
      });
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        fail(new Error(`dropline ${args.join(' ')} took longer than ${options.timeoutMs ?? 30_000} ms`));
      }, options.timeoutMs ?? 30_000);
      child.once('error', fail);
      child.once('close', (code) => {
        clearTimeout(timer);
        this.children.delete(child);
        done({ code: code ?? -1, stdout, stderr });
      });
    });
  }

  /** `dropline status --json` (every file, newest first). */
  async statusJson(): Promise<Manifest[]> {
    const r = await this.cli(['status', '--json']);
    if (r.code !== 0) throw new Error(`status exited ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout) as Manifest[];
  }

  async opsGet(path: string): Promise<{ status: number; body: unknown }> {
    const token = (this.config.ops as { token?: string }).token;
    const res = await fetch(`${this.opsUrl}${path}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    return { status: res.status, body: await res.json() };
  }

  /** Manifests from the running daemon's ops server, newest first. */
  async files(): Promise<Manifest[]> {
    const r = await this.opsGet('/api/files');
    if (r.status !== 200) throw new Error(`/api/files answered ${r.status}`);
    return r.body as Manifest[];
  }

  /** The manifest of the file named `name` (the newest one), from the ops server. */
  async fileNamed(name: string): Promise<Manifest | undefined> {
    return (await this.files()).find((m) => m.name === name);
  }

  /** Waits until the newest file named `name` is in one of `states` (via the ops server). */
  async waitForState(
    name: string,
    states: string | readonly string[],
    options: { timeoutMs?: number; where?: (m: Manifest) => boolean } = {},
  ): Promise<Manifest> {
    const wanted = typeof states === 'string' ? [states] : states;
    let last: Manifest | undefined;
    return waitFor(
      () =>
        `${name} in ${wanted.join('|')} (last: ${last ? `${last.state} ${JSON.stringify(last.counts)} ${last.reason ?? ''}` : 'not seen'})\n${this.daemonOutput.slice(-2000)}`,
      async () => {
        const files = await this.files();
        const m = options.where ? files.find(options.where) : files.find((f) => f.name === name);
        last = m;
        return m && wanted.includes(m.state) ? m : undefined;
      },
      { timeoutMs: options.timeoutMs ?? 40_000, intervalMs: 100 },
    );
  }

  /** Waits for the file with this fileId to be in one of `states` (via the ops server). */
  async waitForFile(
    fileId: string,
    states: string | readonly string[],
    options: { timeoutMs?: number } = {},
  ): Promise<Manifest> {
    const wanted = typeof states === 'string' ? [states] : states;
    let last: Manifest | undefined;
    return waitFor(
      () =>
        `${fileId} in ${wanted.join('|')} (last: ${last ? `${last.state} ${JSON.stringify(last.counts)} ${last.reason ?? ''}` : 'not seen'})\n${this.daemonOutput.slice(-2000)}`,
      async () => {
        const r = await this.opsGet(`/api/files/${fileId}`);
        if (r.status !== 200) return undefined;
        last = r.body as Manifest;
        return wanted.includes(last.state) ? last : undefined;
      },
      { timeoutMs: options.timeoutMs ?? 40_000, intervalMs: 100 },
    );
  }

  async ledger(bulkId?: string): Promise<LedgerAnswer> {
    const q = bulkId ? `?bulkId=${encodeURIComponent(bulkId)}` : '';
    const res = await fetch(`${this.sandbox.url}/_sandbox/ledger${q}`);
    return (await res.json()) as LedgerAnswer;
  }

  /** What the sandbox took on POST /momessage (answers to replies), in the order taken. */
  async moLedger(): Promise<MoLedgerEntry[]> {
    const res = await fetch(`${this.sandbox.url}/_sandbox/momessage/ledger`);
    return ((await res.json()) as { entries: MoLedgerEntry[] }).entries;
  }

  async notifications(): Promise<{ pending: number; attempts: NotificationAttempt[] }> {
    const res = await fetch(`${this.sandbox.url}/_sandbox/notifications`);
    return (await res.json()) as { pending: number; attempts: NotificationAttempt[] };
  }

  /** POST /_sandbox/faults (replaces every rule; `{}` clears them). */
  async faults(body: unknown): Promise<void> {
    const res = await fetch(`${this.sandbox.url}/_sandbox/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 200) throw new Error(`faults answered ${res.status}: ${await res.text()}`);
  }

  /** The store's own view of a file and its chunks (lease holder, chunks in flight). */
  async stored(fileId: string): Promise<{ file: FileRecord | null; chunks: ChunkRecord[] }> {
    const store = await openStore(String(this.config.store));
    try {
      return { file: await store.getFile(fileId), chunks: await store.listChunks(fileId) };
    } finally {
      await store.close();
    }
  }

  /**
   * Waits until no worker drives the file (its lease released) and none of its chunks is in
   * flight: what the ledger holds for it then stays.
   */
  async waitIdle(fileId: string): Promise<Manifest> {
    await waitFor(`${fileId} idle`, async () => {
      const { file, chunks } = await this.stored(fileId);
      return file !== null && file.leaseOwner === null && chunks.every((c) => c.state !== 'inflight');
    });
    const r = await this.opsGet(`/api/files/${fileId}`);
    return r.body as Manifest;
  }

  /**
   * Waits until the file named `name` has a `reports/<base>.<fileId>.manifest.json` in one of
   * `states`: the reports are written after the original was moved and its errors.csv
   * written, so the folders are complete then.
   */
  async waitForReport(name: string, states: string | readonly string[]): Promise<Manifest> {
    const wanted = typeof states === 'string' ? [states] : states;
    return waitFor(`reports/ manifest of ${name} in ${wanted.join('|')}`, async () => {
      for (const entry of await readdir(join(this.drop, 'reports'))) {
        if (entry.startsWith('.') || !entry.endsWith('.manifest.json')) continue;
        const m = JSON.parse(await this.readDrop(`reports/${entry}`)) as Manifest;
        if (m.name === name && wanted.includes(m.state)) return m;
      }
      return undefined;
    });
  }

  /** `reports/<name>.<fileId>.report.csv` (or the manifest) of a file, as text. */
  async readReport(m: Pick<Manifest, 'name' | 'fileId'>, kind: ReportKind = 'report.csv'): Promise<string> {
    return this.readDrop(
      `${kind === 'errors.csv' ? 'failed' : 'reports'}/${reportFileName(m.name, m.fileId, kind)}`,
    );
  }

  async readDrop(path: string): Promise<string> {
    return readFile(join(this.drop, path), 'utf8');
  }

  /** Kills every child still running, stops the sandbox, removes the temp dir. */
  async close(): Promise<void> {
    await this.stop().catch(() => {});
    for (const c of this.children) c.kill('SIGKILL');
    this.children.clear();
    await this.sandbox.close().catch(() => {});
    await this.testStore.close().catch(() => {});
    if (!process.env.DROPLINE_KEEP_E2E) await rm(this.dir, { recursive: true, force: true });
  }
}

/** Parses a CSV produced by dropline (quoted cells with "" escapes, no line breaks in cells assumed). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          cell += '"';
          i++;
        } else quoted = false;
      } else cell += ch;
      continue;
    }
    if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else if (ch !== '\r') cell += ch;
  }
  if (cell !== '' || row.length > 0) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

/** CSV text → objects keyed by the header row. */
export function csvRecords(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text);
  if (!header) return [];
  return rows.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i] ?? ''])));
}

// ---- drop files with their expected outcome ----

export interface ExpectedRecipient {
  /** messageId without the `<fileId>-` prefix (`<line>` or `<line>-<k>`), or the id column's value. */
  idSuffix: string;
  /** The sent form of the number. */
  to: string;
  text: string;
  line: number;
}

export interface GeneratedFile {
  content: string;
  records: number;
  valid: ExpectedRecipient[];
  /** Line numbers of invalid records (personalized) or invalid numbers (bulk, one per number). */
  invalidLines: number[];
  duplicateLines: number[];
  /** Whether messageIds come from an id column (used as is, no fileId prefix). */
  idColumn: boolean;
}

/** The messageId dropline gives an expected recipient of file `fileId`. */
export function expectedMessageId(file: GeneratedFile, fileId: string, r: ExpectedRecipient): string {
  return file.idColumn ? r.idSuffix : `${fileId}-${r.idSuffix}`;
}

/**
 * A personalized file without header: `lines` records, every 97th invalid (INVALID_NUMBER),
 * every 89th a copy of the previous valid record (DUPLICATE), every 5th valid one with a
 * shared text, some numbers written +57 with spaces. `seed` varies the numbers.
 */
export function personalizedFile(lines: number, seed = 0): GeneratedFile {
  const out: string[] = [];
  const valid: ExpectedRecipient[] = [];
  const invalidLines: number[] = [];
  const duplicateLines: number[] = [];
  let lastValid: string | null = null;
  for (let i = 1; i <= lines; i++) {
    if (i % 97 === 0) {
      out.push(`${10_000 + i};Hola, este número está incompleto.`);
      invalidLines.push(i);
      continue;
    }
    if (i % 89 === 0 && lastValid !== null) {
      out.push(lastValid);
      duplicateLines.push(i);
      continue;
    }
    const national = `3${String(100_000_000 + seed * 1_000_000 + i)}`;
    const text = i % 5 === 0 ? 'Promo de noviembre: 2x1 en todo.' : `Hola cliente ${i}, su cita es el lunes.`;
    const written = i % 7 === 0 ? `+57 ${national.slice(0, 3)} ${national.slice(3)}` : national;
    const line = `${written};${text}`;
    out.push(line);
    lastValid = line;
    valid.push({ idSuffix: String(i), to: `57${national}`, text, line: i });
  }
  return {
    content: `${out.join('\n')}\n`,
    records: lines,
    valid,
    invalidLines,
    duplicateLines,
    idColumn: false,
  };
}

/** A headed personalized file (`numero;mensaje;id`) whose id column gives the messageIds. */
export function headedFile(lines: number, seed = 0): GeneratedFile {
  const out = ['numero;mensaje;id'];
  const valid: ExpectedRecipient[] = [];
  for (let i = 1; i <= lines; i++) {
    const national = `3${String(200_000_000 + seed * 1_000_000 + i)}`;
    const text = `Hola, su pedido CRM-${i} fue despachado.`;
    out.push(`${national};"${text}";CRM-${seed}-${i}`);
    valid.push({ idSuffix: `CRM-${seed}-${i}`, to: `57${national}`, text, line: i + 1 });
  }
  return {
    content: `${out.join('\n')}\n`,
    records: lines,
    valid,
    invalidLines: [],
    duplicateLines: [],
    idColumn: true,
  };
}

export const BULK_TEXT = 'Recordatorio: su factura vence el viernes. Responda SALIR para no recibir mas.';

/**
 * A bulk file: the message, then `numbers` numbers `perLine` to a line (`;`-separated); every
 * 150th number invalid, every 211th a repeat of the first one (DUPLICATE).
 */
export function bulkFile(numbers: number, perLine = 10, seed = 0): GeneratedFile {
  const out = [BULK_TEXT];
  const valid: ExpectedRecipient[] = [];
  const invalidLines: number[] = [];
  const duplicateLines: number[] = [];
  let first: string | null = null;
  let tokens: string[] = [];
  for (let j = 1; j <= numbers; j++) {
    const line = out.length + 1;
    const k = tokens.length + 1;
    if (j % 150 === 0) {
      tokens.push(`99${j}`);
      invalidLines.push(line);
    } else if (j % 211 === 0 && first !== null) {
      tokens.push(first);
      duplicateLines.push(line);
    } else {
      const national = `3${String(300_000_000 + seed * 1_000_000 + j)}`;
      first ??= national;
      tokens.push(national);
      valid.push({ idSuffix: `${line}-${k}`, to: `57${national}`, text: BULK_TEXT, line });
    }
    if (tokens.length === perLine || j === numbers) {
      out.push(tokens.join(';'));
      tokens = [];
    }
  }
  return {
    content: `${out.join('\n')}\n`,
    records: out.length - 1,
    valid,
    invalidLines,
    duplicateLines,
    idColumn: false,
  };
}
