// A real OpenSSH sshd on 127.0.0.1 for SFTP tests (docs/architecture.md "Tests"): a dedicated user made
// with useradd, a generated ed25519 host key and client key, a config of its own in a temp dir,
// `ForceCommand internal-sftp`. It runs unprivileged (setpriv as the user) unless password
// login is wanted: sshd can only check a password as root (it reads /etc/shadow), so then it
// runs as root with its own config, touching no system file. Nothing here is committed: keys
// are generated per harness and removed with it.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import SftpClient from 'ssh2-sftp-client';
import { silentLogger } from '../../src/log.ts';
import { SftpSource, type SftpSourceOptions } from '../../src/sources/sftp-source.ts';
import { freePort, waitFor } from './pipeline-harness.ts';

const run = promisify(execFile);

export const SSHD = '/usr/sbin/sshd';

/** Why SFTP tests cannot run here, or null when they can. */
export function sshdUnavailable(): string | null {
  if (!existsSync(SSHD))
    return `${SSHD} is missing (apt-get install -y --no-install-recommends openssh-server)`;
  if (typeof process.getuid === 'function' && process.getuid() !== 0)
    return 'the sshd harness creates a dedicated user with useradd: run the tests as root';
  return null;
}

export interface SshdOptions {
  /** Also allow password login with this password (sshd then runs as root, see above). */
  password?: string;
  /** Encrypt the client key with this passphrase. */
  keyPassphrase?: string;
}

export interface Sshd {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly user: string;
  /** The user's home: the SFTP login directory (absolute, also on this machine). */
  readonly home: string;
  /** The host key's fingerprint as `ssh-keygen -lf` prints it (`SHA256:…`). */
  readonly hostKeySha256: string;
  /** The client's private key (authorized for `user`). */
  readonly clientKeyPath: string;
  readonly keyPassphrase: string | undefined;
  readonly password: string | undefined;
  /** sshd's stderr so far (-e). */
  output(): string;
  /** Kills sshd and every session it forked (connections drop at once). */
  stop(): Promise<void>;
  /** Starts sshd again on the same port. */
  start(): Promise<void>;
  /** SIGSTOP to sshd and every session: connections stay open, nothing answers. */
  freeze(): Promise<void>;
  /** SIGCONT: a frozen sshd answers again. */
  thaw(): Promise<void>;
  running(): boolean;
  /** A partner's own SFTP connection (key login), to upload the way a partner does. */
  partner(): Promise<SftpClient>;
  close(): Promise<void>;
}

/** Pids of every descendant of `pid` (sshd sessions call setsid: process groups miss them). */
async function descendants(pid: number): Promise<number[]> {
  const parents = new Map<number, number[]>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid …; comm may hold spaces and parentheses.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const kids = parents.get(ppid) ?? [];
      kids.push(Number(name));
      parents.set(ppid, kids);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const k of parents.get(p) ?? []) {
      out.push(k);
      walk(k);
    }
  };
  walk(pid);
  return out;
}

export async function startSshd(options: SshdOptions = {}): Promise<Sshd> {
  const why = sshdUnavailable();
  if (why) throw new Error(why);
  const dir = await mkdtemp(join(tmpdir(), 'dropline-sshd-'));
  await chmod(dir, 0o755);
  const user = `dlsftp${randomBytes(4).toString('hex')}`;
  const home = join(dir, 'home');
  await run('useradd', ['--no-create-home', '--home-dir', home, '--shell', '/usr/sbin/nologin', user]);
  const cleanupUser = async () => {
    await run('userdel', [user]).catch(() => {});
  };
  try {
    // A user without a password is "locked" to sshd; '*' is no password but not locked.
    if (options.password !== undefined) {
      // A test-only password: as an argument is fine here.
      const { stdout } = await run('openssl', ['passwd', '-6', options.password]);
      await run('usermod', ['-p', stdout.trim(), user]);
    } else await run('usermod', ['-p', '*', user]);
    const { stdout: idOut } = await run('id', ['-u', user]);
    const uid = Number(idOut.trim());
    const { stdout: gidOut } = await run('id', ['-g', user]);
    const gid = Number(gidOut.trim());

    await mkdir(home);
    await chown(home, uid, gid);
    const etc = join(dir, 'etc');
    await mkdir(join(etc, 'authorized_keys'), { recursive: true });
    const hostKey = join(etc, 'host_ed25519');
    await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'dropline-test-host', '-f', hostKey]);
    const clientKeyPath = join(dir, 'client_ed25519');
    await run('ssh-keygen', [
      '-q',
      '-t',
      'ed25519',
      '-N',
      options.keyPassphrase ?? '',
      '-C',
      'dropline-test-client',
      '-f',
      clientKeyPath,
    ]);
    await writeFile(join(etc, 'authorized_keys', user), await readFile(`${clientKeyPath}.pub`));
    const { stdout: fp } = await run('ssh-keygen', ['-lf', `${hostKey}.pub`]);
    const hostKeySha256 = fp.split(' ')[1]!;
    if (!hostKeySha256.startsWith('SHA256:')) throw new Error(`unexpected ssh-keygen -lf output: ${fp}`);

    const asRoot = options.password !== undefined;
    const port = await freePort();
    const config = join(etc, 'sshd_config');
    await writeFile(
      config,
      [
        `Port ${port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${hostKey}`,
        'PidFile none',
        `AuthorizedKeysFile ${join(etc, 'authorized_keys')}/%u`,
        'StrictModes no',
        'UsePAM no',
        `PasswordAuthentication ${asRoot ? 'yes' : 'no'}`,
        'KbdInteractiveAuthentication no',
        `AllowUsers ${user}`,
        'Subsystem sftp internal-sftp',
        'ForceCommand internal-sftp',
        'LogLevel INFO',
        '',
      ].join('\n'),
    );
    if (asRoot) {
      // Privilege separation wants its empty directory (the openssh-server package makes it).
      await mkdir('/run/sshd', { recursive: true, mode: 0o755 });
    } else {
      // The unprivileged sshd reads its host key: the user owns it, mode 0600.
      for (const f of [etc, join(etc, 'authorized_keys'), hostKey, `${hostKey}.pub`, config])
        await chown(f, uid, gid);
    }

    let child: ChildProcess | null = null;
    let output = '';
    const launch = async (): Promise<void> => {
      const argv = [SSHD, '-D', '-e', '-f', config];
      const p = asRoot
        ? spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] })
        : spawn('setpriv', [`--reuid=${uid}`, `--regid=${gid}`, '--init-groups', ...argv], {
            stdio: ['ignore', 'ignore', 'pipe'],
          });
      child = p;
      // A test process that dies without close() must not leave sshd behind.
      const onExit = () => p.kill('SIGKILL');
      process.once('exit', onExit);
      p.once('exit', () => process.removeListener('exit', onExit));
      const from = output.length;
      p.stderr!.setEncoding('utf8');
      p.stderr!.on('data', (s: string) => {
        output += s;
      });
      await waitFor(
        () => `sshd listening on ${port}; output:\n${output.slice(-2000)}`,
        () => {
          if (p.exitCode !== null) throw new Error(`sshd exited ${p.exitCode}: ${output.slice(-2000)}`);
          return output.slice(from).includes(`Server listening on 127.0.0.1 port ${port}`);
        },
        { timeoutMs: 10_000, intervalMs: 10 },
      );
    };

    const stop = async (): Promise<void> => {
      const p = child;
      child = null;
      if (!p || p.exitCode !== null || p.signalCode !== null || p.pid === undefined) return;
      const exited = new Promise<void>((done) => p.once('exit', () => done()));
      // Sessions first (by pid: they left sshd's process group), then the listener.
      for (const pid of await descendants(p.pid)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      p.kill('SIGKILL');
      await exited;
    };

    const signalAll = async (signal: NodeJS.Signals): Promise<void> => {
      const p = child as ChildProcess | null;
      if (!p || p.pid === undefined) return;
      for (const pid of [p.pid, ...(await descendants(p.pid))]) {
        try {
          process.kill(pid, signal);
        } catch {
          // already gone
        }
      }
    };

    await launch();
    const sshd: Sshd = {
      host: '127.0.0.1',
      port,
      user,
      home,
      hostKeySha256,
      clientKeyPath,
      keyPassphrase: options.keyPassphrase,
      password: options.password,
      output: () => output,
      stop,
      start: launch,
      freeze: () => signalAll('SIGSTOP'),
      thaw: () => signalAll('SIGCONT'),
      running: () => child !== null && child.exitCode === null,
      async partner() {
        const client = new SftpClient('partner', { error: () => {}, end: () => {}, close: () => {} });
        await client.connect({
          host: '127.0.0.1',
          port,
          username: user,
          privateKey: await readFile(clientKeyPath),
          ...(options.keyPassphrase ? { passphrase: options.keyPassphrase } : {}),
          readyTimeout: 10_000,
        });
        return client;
      },
      async close() {
        await signalAll('SIGCONT');
        await stop();
        await cleanupUser();
        await rm(dir, { recursive: true, force: true });
      },
    };
    return sshd;
  } catch (err) {
    await cleanupUser();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Uploads `content` to `home`-relative `path` through a partner connection (parents created). */
export async function sftpPut(client: SftpClient, remote: string, content: string | Buffer): Promise<void> {
  await client.mkdir(dirname(remote), true);
  await client.put(Buffer.from(content), remote);
}

/**
 * A configuration's SFTP source (`sources[]` entry) logging in to this server as its user,
 * the folder `path` under its home; `extra` adds or overrides keys (stableMs, pollMs…).
 */
export function sftpSourceConfig(s: Sshd, path: string, extra: Record<string, unknown> = {}) {
  return {
    name: 'partner',
    type: 'sftp' as const,
    host: s.host,
    port: s.port,
    username: s.user,
    privateKeyPath: s.clientKeyPath,
    hostKeySha256: s.hostKeySha256,
    path,
    ...extra,
  };
}

/** dropline's SFTP source logged in to this server as its user (fast reconnects for tests). */
export async function sftpSourceFor(
  s: Sshd,
  path: string,
  extra: Partial<SftpSourceOptions> = {},
): Promise<SftpSource> {
  return new SftpSource({
    name: 'partner',
    host: s.host,
    port: s.port,
    username: s.user,
    privateKey: await readFile(s.clientKeyPath),
    hostKeySha256: s.hostKeySha256,
    path,
    logger: silentLogger,
    initialBackoffMs: 50,
    maxBackoffMs: 400,
    ...extra,
  });
}
