// A private PostgreSQL 15 cluster from the Debian binaries (docs/architecture.md "Tests"), with no
// vitest in it so a bench can start one as well as a test harness: initdb and pg_ctl as the `postgres`
// user (PostgreSQL refuses root) through setpriv, data and socket directories in a temp dir that
// user owns, a free port on 127.0.0.1, trust authentication for the `app` superuser.
// Commits are durable unless `fsync: false` is asked for (tests that only need correctness):
// a bench measures what a production server pays for every COMMIT.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './sandbox-process.ts';

const run = promisify(execFile);

export const PG_BIN = '/usr/lib/postgresql/15/bin';
const USER = 'postgres';

/** Why PostgreSQL cannot be started here, or null when it can. */
export async function postgresUnavailable(): Promise<string | null> {
  for (const bin of ['initdb', 'pg_ctl', 'postgres']) {
    if (!existsSync(join(PG_BIN, bin)))
      return `${join(PG_BIN, bin)} is missing: apt-get install -y --no-install-recommends postgresql`;
  }
  try {
    await run('id', ['-u', USER]);
  } catch {
    return `there is no "${USER}" user to run PostgreSQL as (the postgresql package creates it)`;
  }
  if (typeof process.getuid === 'function' && process.getuid() !== 0)
    return 'PostgreSQL is started as the postgres user with setpriv: run as root';
  return null;
}

/** A PostgreSQL binary run as the postgres user, bounded in time. */
async function asPostgres(bin: string, args: string[], timeoutMs: number): Promise<string> {
  try {
    const { stdout } = await run(
      'setpriv',
      [`--reuid=${USER}`, `--regid=${USER}`, '--init-groups', join(PG_BIN, bin), ...args],
      { timeout: timeoutMs, env: { ...process.env, LC_ALL: 'C' } },
    );
    return stdout;
  } catch (err) {
    const e = err as Error & { stderr?: string; stdout?: string };
    throw new Error(`${bin} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

export interface ClusterOptions {
  maxConnections?: number;
  /** false: `fsync=off`, commits not durable (correctness tests only). Default: on. */
  fsync?: boolean;
}

export interface PostgresCluster {
  readonly port: number;
  /** postgres://app@127.0.0.1:<port>/postgres (trust: no password). */
  readonly url: string;
  /** Fast shutdown: connections are terminated (57P01), new ones refused until start(). */
  stop(): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
  running(): boolean;
  /** The server log so far. */
  log(): Promise<string>;
  /** Stops it and removes its directory. */
  close(): Promise<void>;
}

/** Starts a private cluster: initdb in a temp dir, then pg_ctl start. About a second. */
export async function startCluster(options: ClusterOptions = {}): Promise<PostgresCluster> {
  const why = await postgresUnavailable();
  if (why) throw new Error(`PostgreSQL cannot start: ${why}`);
  const dir = await mkdtemp(join(tmpdir(), 'dropline-pg-'));
  const data = join(dir, 'data');
  const sock = join(dir, 'sock');
  const logFile = join(dir, 'postgres.log');
  await mkdir(sock);
  const { stdout: uid } = await run('id', ['-u', USER]);
  const { stdout: gid } = await run('id', ['-g', USER]);
  for (const d of [dir, sock]) await chown(d, Number(uid), Number(gid));
  const port = await freePort();
  const settings = [
    `-p ${port}`,
    `-k ${sock}`,
    '-c listen_addresses=127.0.0.1',
    `-c max_connections=${options.maxConnections ?? 300}`,
    ...(options.fsync === false ? ['-c fsync=off'] : []),
  ];
  let up = false;
  const pgCtl = (args: string[]) => asPostgres('pg_ctl', ['-D', data, ...args], 60_000);
  const cluster: PostgresCluster = {
    port,
    url: `postgres://app@127.0.0.1:${port}/postgres`,
    async start() {
      await pgCtl(['-w', '-t', '30', '-l', logFile, '-o', settings.join(' '), 'start']);
      up = true;
    },
    async stop() {
      if (!up) return;
      await pgCtl(['-m', 'fast', '-w', '-t', '30', 'stop']);
      up = false;
    },
    running: () => up,
    log: () => readFile(logFile, 'utf8').catch(() => ''),
    async close() {
      try {
        await cluster.stop();
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
  try {
    // --no-sync only skips flushing initdb's own files (a cluster thrown away on a crash
    // anyway); it has no effect on the running server's commits.
    await asPostgres(
      'initdb',
      ['-D', data, '-U', 'app', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'],
      60_000,
    );
    await cluster.start();
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return cluster;
}
