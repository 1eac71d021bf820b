// `dropline sandbox`: the messaging-service sandbox alone (docs/contract.md "Sandbox"), until
// SIGINT or SIGTERM.
import { readFileSync } from 'node:fs';
import { type Command, InvalidArgumentError } from 'commander';
import { DroplineError } from '../../errors.ts';
import type { SetExit } from './options.ts';
import { jsonHelp, numberOption as number } from './options.ts';

/** A listen address as Node's `server.listen` takes it: an IP or a name, never empty. */
function host(value: string): string {
  const h = value.trim();
  if (h === '') throw new InvalidArgumentError('expected an address to listen on, such as 0.0.0.0');
  return h;
}

interface SandboxFlags {
  host: string;
  port: number;
  accounts?: string;
  timeScale: number;
  deliveryDelayMs: number;
  failureRatio: number;
  tokenLifetimeS: number;
  notifications: boolean;
  smppPort?: number;
  smppRedeliveryMs: number;
  smppTlsKey?: string;
  smppTlsCert?: string;
  allowIp?: string[];
  json?: boolean;
}

export function registerSandbox(program: Command, setExit: SetExit): void {
  program
    .command('sandbox')
    .description('run the messaging-service sandbox (token, /mtmessage/massive, status notifications)')
    // Loopback unless told otherwise: the sandbox has no access control of its own, and its
    // test surface (/_sandbox/) shows every message it was sent.
    .option('--host <address>', 'address to listen on (0.0.0.0: every interface)', host, '127.0.0.1')
    .option('--port <n>', 'port on --host (0: a free one)', number(0, 65535, true), 0)
    .option(
      '--accounts <file>',
      'JSON accounts: [{"username","password"}] or {"user":"password"} (default demo/demo)',
    )
    .option(
      '--time-scale <x>',
      'multiplies every sandbox delay and the notification retry schedule',
      number(0, 1000),
      1,
    )
    .option(
      '--delivery-delay-ms <ms>',
      'from acceptance to the status notification (× time scale)',
      number(0, 86_400_000),
      1000,
    )
    .option('--failure-ratio <r>', 'share of NO_SUCCESS reports, 0 to 1', number(0, 1), 0)
    .option(
      '--token-lifetime-s <s>',
      'token lifetime, reported as expires_in',
      number(0.001, 10 * 365 * 86_400),
      14_400,
    )
    .option('--no-notifications', 'accept and record, but send no status notification')
    .option(
      '--smpp-port <n>',
      "also serve users' replies over SMPP (receiver binds) on this port of --host (0: a free one)",
      number(0, 65535, true),
    )
    .option(
      '--smpp-redelivery-ms <ms>',
      'an unacknowledged deliver_sm is sent again after this (× time scale)',
      number(1, 86_400_000),
      5000,
    )
    .option('--smpp-tls-key <file>', 'PEM key: the SMPP server speaks TLS (with --smpp-tls-cert)')
    .option('--smpp-tls-cert <file>', 'PEM certificate chain for --smpp-tls-key')
    .option(
      '--allow-ip <list>',
      'answer only these client addresses (IPs or CIDR ranges, comma-separated, repeatable); others get 403',
      (value: string, previous: string[] | undefined) => [
        ...(previous ?? []),
        ...value
          .split(',')
          .map((v) => v.trim())
          .filter((v) => v !== ''),
      ],
    )
    .option('--json', jsonHelp('the listening line'))
    .action(async (flags: SandboxFlags) => {
      const { ipAllowList, readAccountsFile, startSandbox } = await import('../../sandbox/server.ts');
      if (flags.allowIp !== undefined) {
        try {
          if (flags.allowIp.length === 0) throw new Error('no address given');
          ipAllowList(flags.allowIp);
        } catch (err) {
          throw new DroplineError('DROPLINE_ERR_CONFIG', `--allow-ip: ${(err as Error).message}`);
        }
      }
      let accounts: { username: string; password: string }[] | undefined;
      if (flags.accounts !== undefined) {
        try {
          accounts = readAccountsFile(flags.accounts);
        } catch (err) {
          const why = err instanceof Error ? err.message : String(err);
          throw new DroplineError('DROPLINE_ERR_CONFIG', `--accounts ${flags.accounts}: ${why}`);
        }
      }
      if ((flags.smppTlsKey === undefined) !== (flags.smppTlsCert === undefined))
        throw new DroplineError('DROPLINE_ERR_CONFIG', '--smpp-tls-key and --smpp-tls-cert go together');
      if (flags.smppTlsKey !== undefined && flags.smppPort === undefined)
        throw new DroplineError('DROPLINE_ERR_CONFIG', '--smpp-tls-key needs --smpp-port');
      let tls: { key: Buffer; cert: Buffer } | undefined;
      if (flags.smppTlsKey !== undefined && flags.smppTlsCert !== undefined) {
        const read = (flag: string, path: string): Buffer => {
          try {
            return readFileSync(path);
          } catch (err) {
            const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
            throw new DroplineError('DROPLINE_ERR_CONFIG', `${flag} ${path}: ${why}`);
          }
        };
        tls = {
          key: read('--smpp-tls-key', flags.smppTlsKey),
          cert: read('--smpp-tls-cert', flags.smppTlsCert),
        };
      }
      const sandbox = await startSandbox({
        host: flags.host,
        port: flags.port,
        accounts,
        timeScale: flags.timeScale,
        deliveryDelayMs: flags.deliveryDelayMs,
        failureRatio: flags.failureRatio,
        tokenLifetimeS: flags.tokenLifetimeS,
        notify: flags.notifications,
        allowIps: flags.allowIp,
        smpp:
          flags.smppPort === undefined
            ? undefined
            : { port: flags.smppPort, tls, redeliveryMs: flags.smppRedeliveryMs },
      }).catch((err: NodeJS.ErrnoException & { port?: number }) => {
        // A listen error names its port: the HTTP one, or the SMPP one.
        const where = `${flags.host.includes(':') ? `[${flags.host}]` : flags.host}:${err.port ?? flags.port}`;
        throw new DroplineError('DROPLINE_ERR_SANDBOX', `${where}: ${err.code ?? err.message}`);
      });
      // One line (two with --smpp-port: the first unchanged, for scripts that read it).
      process.stdout.write(
        flags.json
          ? `${JSON.stringify(sandbox.smpp ? { listening: sandbox.url, smpp: sandbox.smpp.url } : { listening: sandbox.url })}\n`
          : `sandbox listening on ${sandbox.url}\n${sandbox.smpp ? `sandbox smpp listening on ${sandbox.smpp.url}\n` : ''}`,
      );
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await sandbox.close();
      setExit(0);
    });
}
